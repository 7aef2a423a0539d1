// The module's parameters and buffers (weights, running statistics,
// optimizer state) in the memory of the run's primary backend, by name.
// Plans of every graph of the module bind to the same storage, so a train
// step updates the weights the eval step reads. Each starts plain; plan
// building moves it to the layout its kernels want (setLayout), while reads
// and writes from the host (initialization, checkpoints) stay canonical:
// plain row-major in host memory.
#pragma once

#include "ir/IR.h"
#include "runtime/BackendRegistry.h"

#include <map>
#include <string>

namespace dtnn::runtime {

class ParamStore {
public:
  // Allocates zero-filled plain storage for every parameter of `m`, whose
  // types must be static.
  ParamStore(const ir::Module &m, const BackendSet &backends);
  // The bytes the plain storage of `m`'s parameters and buffers takes.
  static uint64_t bytesNeeded(const ir::Module &m);
  ~ParamStore();
  ParamStore(const ParamStore &) = delete;
  ParamStore &operator=(const ParamStore &) = delete;

  const ir::Module &module() const { return module_; }
  bool has(const std::string &name) const { return storage_.count(name) != 0; }
  // The storage of a parameter in its current layout; the name must exist.
  TensorView view(const std::string &name) const;
  const BufferDesc &desc(const std::string &name) const;
  // The bytes held now, in the current layouts.
  uint64_t bytes() const;
  // Changes whenever a parameter's storage moves (setLayout).
  uint64_t generation() const { return generation_; }
  // Changes whenever parameter values may have changed: write(), setLayout()
  // and touch(), which whoever writes through view() calls (an executor
  // after a run of a plan that writes parameters, a broadcast). Executors
  // keep what they compute from parameters alone until it changes.
  uint64_t version() const { return version_; }
  void touch() { ++version_; }

  // Moves parameter `name` to `desc` (same type), converting its values.
  Error setLayout(const std::string &name, const BufferDesc &desc);
  // Canonical host copies in and out.
  Expected<Tensor> read(const std::string &name) const;
  Error write(const std::string &name, const Tensor &t);

private:
  struct Slot {
    BufferDesc desc;
    void *data = nullptr;
  };
  const ir::Module &module_;
  const BackendSet &backends_;
  std::map<std::string, Slot> storage_;
  uint64_t generation_ = 0;
  uint64_t version_ = 0;
};

} // namespace dtnn::runtime
