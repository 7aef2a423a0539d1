// Everything needed to run the graphs of one module on a set of backends:
// the parameters, the one arena all plans share, the communication queue
// and communicator, and a plan and executor for each graph and batch size
// met. Plans are built on first use; the first plan that reads a parameter
// fixes its layout, and the parameter store moves it there.
#pragma once

#include "runtime/Executor.h"

#include <map>
#include <memory>
#include <utility>

namespace dtnn::runtime {

class ModuleRunner {
public:
  // Allocates the parameters (zero, plain) in the primary backend's memory.
  // Collectives go through `comm`, which must outlive the runner; without
  // one, through a one-rank communicator of its own. Kernels of the compute
  // queues that reduce (synchronized batch norm) get a duplicate of it,
  // made here on every rank.
  ModuleRunner(const ir::Module &m, const BackendSet &backends, Communicator *comm = nullptr);
  // Whether making the compute queues' communicator failed (the runner
  // then runs no collective of a compute queue).
  const Error &setUpError() const { return setUpError_; }
  ~ModuleRunner();

  ParamStore &params() { return *params_; }
  const BackendSet &backends() const { return backends_; }
  Communicator &communicator() { return *comm_; }

  // The executor of `g` at `batch`. Before anything is allocated for a new
  // plan, checks that the parameters, the arena and the input buffers fit
  // the primary backend's memory.
  Expected<Executor *> executor(const ir::Graph &g, int64_t batch);
  // The plan of `g` at `batch` as built so far (null before executor()).
  const Plan *plan(const ir::Graph &g, int64_t batch) const;
  // The bytes held now: parameters, arena and input buffers.
  uint64_t heldBytes() const;

private:
  struct Entry {
    std::unique_ptr<Plan> plan;
    std::unique_ptr<Executor> exec;
  };
  const ir::Module &module_;
  const BackendSet &backends_;
  std::unique_ptr<Communicator> ownComm_;
  Communicator *comm_;
  std::unique_ptr<Communicator> computeComm_;
  std::unique_ptr<Queue> commQueue_;
  std::unique_ptr<ParamStore> params_;
  std::unique_ptr<Arena> arena_;
  PlanContext ctx_;
  uint64_t inputBytes_ = 0;
  Error setUpError_;
  std::map<std::pair<const ir::Graph *, int64_t>, Entry> entries_;
};

} // namespace dtnn::runtime
