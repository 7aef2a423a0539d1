// The step-time simulator (`dtnn-sim`): plays a data-parallel train step,
// as the passes scheduled it, on a model machine. Compute ops run one after
// another on the compute queue, for their per-op times (measured by
// `dtnn-run --op-profile-out`, or estimated); each allreduce_start hands its
// bucket to one communication channel, where buckets go one at a time for
// the α-β time of its algorithm (a ring over P ranks, or hierarchical over
// N nodes); each allreduce_wait holds the compute queue until its bucket is
// done.
#pragma once

#include "ir/IR.h"
#include "passes/CostModel.h"

#include <vector>

namespace dtnn::passes {

struct StepPrediction {
  double compute = 0;  // seconds of compute in the step
  double comm = 0;     // seconds the channel is busy
  double step = 0;     // seconds from the first op to the last
  double exposed = 0;  // step - compute: communication not hidden
  int buckets = 0;
};

// Plays graph `g` with per-op times `times` (one per op, collectives 0) on
// `ranks` ranks on `nodes` nodes of network `net`.
StepPrediction simulateStep(const ir::Graph &g, const std::vector<double> &times,
                            const NetModel &net, int ranks, int nodes = 1);

} // namespace dtnn::passes
