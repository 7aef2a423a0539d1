// The executor: runs a plan's steps in order on its backend, over an arena it
// allocates and the module parameters held by a ParamStore.
#pragma once

#include "runtime/ParamStore.h"
#include "runtime/Plan.h"

namespace dtnn::runtime {

class Executor {
public:
  Executor(const Plan &plan, ParamStore &params, Backend &backend);
  ~Executor();
  Executor(const Executor &) = delete;
  Executor &operator=(const Executor &) = delete;

  const Plan &plan() const { return plan_; }
  // Copies host data into graph input i; `bytes` must match its type.
  void setInput(size_t i, const void *host, size_t bytes);
  // Runs every step once.
  void run();
  // Copies graph output i to the host.
  Tensor output(size_t i) const;
  // Reads a scalar f32 or f64 output as a double.
  double scalarOutput(size_t i) const;

private:
  TensorView view(int valueId) const;

  const Plan &plan_;
  ParamStore &params_;
  Backend &backend_;
  void *arena_ = nullptr;
  std::vector<void *> inputs_;
  std::vector<KernelArgs> args_;
};

} // namespace dtnn::runtime
