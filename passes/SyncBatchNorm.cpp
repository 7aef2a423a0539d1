// sync-batchnorm: makes batch normalization in training use the statistics
// of the global batch of a data-parallel run instead of each rank's part.
//
// Algorithm: sets sync=true on every batchnorm_train and batchnorm_backward.
// Their kernels then reduce the per-channel sums over the ranks (two
// reductions forward, for the mean and then the variance; one backward, for
// the sums of dy and dy·x̂), weighting each rank by its share of the batch,
// so that a run on P ranks computes what one rank computes on the whole
// batch. Without this pass, batch norm uses per-rank statistics, as
// PyTorch's DistributedDataParallel does.
#include "passes/PassRegistry.h"

namespace dtnn::passes {

namespace {

class SyncBatchNormPass final : public GraphPass {
public:
  std::string_view name() const override { return "sync-batchnorm"; }
  std::string_view description() const override {
    return "Makes training batch norm use the global batch's statistics (sync=true).";
  }

  Expected<bool> runOnGraph(ir::Graph &g) override {
    bool changed = false;
    for (const auto &op : g.ops()) {
      if (op->name() != "batchnorm_train" && op->name() != "batchnorm_backward") continue;
      if (op->attrs().getBool("sync")) continue;
      op->attrs().set("sync", true);
      changed = true;
    }
    return changed;
  }
};

} // namespace

std::unique_ptr<Pass> createSyncBatchNormPass() { return std::make_unique<SyncBatchNormPass>(); }

} // namespace dtnn::passes
