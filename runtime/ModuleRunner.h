// Everything needed to run the graphs of one module on a set of backends:
// the parameters, the arena of each memory space that all plans share, the
// communication queue
// and communicator, and a plan and executor for each graph and batch size
// met. Plans are built on first use; the first plan that reads a parameter
// fixes its layout, and the parameter store moves it there.
#pragma once

#include "runtime/ResourceLimits.h"
#include "runtime/Executor.h"

#include <map>
#include <memory>
#include <string>
#include <utility>

namespace dtnn::runtime {

// How messages name the step a graph computes: "the eval step of LeNet",
// "the forward pass of LeNet".
std::string stepName(const ir::Graph &g);

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
  // the primary backend's memory, and that what the plan adds fits what the
  // address-space limit leaves (addressSpaceNeed), before its kernels are
  // bound.
  Expected<Executor *> executor(const ir::Graph &g, int64_t batch);
  // The address space that binding `plan` (built up to its buffers) and
  // making its executor add to what the runner holds: its kernels' generated
  // code, the arena's growth and the plan's cache, its input buffers, and
  // parameters moved to new layouts. With another `batch` than the plan's,
  // what a plan of the same graph at `batch` would add: the same kernels,
  // values and inputs in proportion.
  SpaceNeed addressSpaceNeed(const Plan &plan, int64_t batch) const;
  // The same for a plan of `g` at `batch` not built yet, from the largest plan
  // of `g` built so far (no part when there is none).
  SpaceNeed addressSpaceNeed(const ir::Graph &g, int64_t batch) const;
  // What the process holds besides the runner, which a refusal for lack of
  // address space names (SpaceNeed::note): "52.4 MiB of it for the data set".
  void setSpaceNote(std::string note) { spaceNote_ = std::move(note); }
  // The plan of `g` at `batch` as built so far (null before executor()).
  const Plan *plan(const ir::Graph &g, int64_t batch) const;
  // The bytes held now: parameters, arenas and input buffers.
  uint64_t heldBytes() const;
  // Whether plans that can be replayed are (CUDA graphs); on by default.
  void setReplay(bool on) { replay_ = on; }

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
  std::array<std::unique_ptr<Arena>, kMemorySpaces> arenas_;
  PlanContext ctx_;
  uint64_t inputBytes_ = 0;
  std::string spaceNote_;
  Error setUpError_;
  bool replay_ = true;
  std::map<std::pair<const ir::Graph *, int64_t>, Entry> entries_;
};

} // namespace dtnn::runtime
