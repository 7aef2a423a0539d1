// Named pass pipelines, kept as data so that they print with
// --print-pipeline and expand wherever a pass name is accepted.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace dtnn::passes {

// A named, ordered list of pass names and groups (`repeat(a,b)`, run to a
// fixed point).
struct Pipeline {
  std::string name;
  std::string description;
  std::vector<std::string> passes;
};

// The built-in pipelines; "default" is what `dtnnc compile` runs.
const std::vector<Pipeline> &builtinPipelines();

// The built-in pipeline called `name`, or null.
const Pipeline *findPipeline(const std::string &name);

// What makes a train step data-parallel.
struct DataParallelOptions {
  int ranks = 1;
  int nodes = 1;            // the nodes the ranks run on (buckets may go hierarchically)
  std::string algorithm = "auto"; // buckets' algorithm: auto (the cost model), flat, hierarchical
  int64_t bucketBytes = -1; // a fixed bucket size; -1: the cost model
  std::string netPath;      // the network model (α, β); "": 100 Gb/s defaults
  std::string profilePath;  // measured op times; "": estimates
  bool syncBatchNorm = false; // batch norm over the global batch
  int64_t localBatch = 0;     // samples a rank, for estimated op times (0: batch / ranks)
};
// The train pipeline for a run of `o.ranks` ranks: "train", with
// sync-batchnorm inserted where syncBatchNorm asks for it.
std::string trainPipeline(const DataParallelOptions &o);
// The passes that average gradients over `ranks` ranks, in buckets that
// overlap backward, to run after trainPipeline(o): "" for one rank.
std::string dataParallelPipeline(const DataParallelOptions &o);

// The passes that finish a train step after trainPipeline and
// dataParallelPipeline (or split-train-step), which need the buckets those
// make: "fuse-updates".
std::string updatePipeline();

// The whole train step of a run of `o.ranks` ranks: trainPipeline, dataParallelPipeline and
// updatePipeline in turn.
std::string trainStepPipeline(const DataParallelOptions &o);

// `pipeline` (pass names, groups and pipeline names, comma-separated) for a
// run in `precision` (the precision setting): as it is for f32; for bf16,
// with mixed-precision after the first cleanup (repeat(canonicalize,cse,dce))
// of the pipelines it names, so that the pass sees the forward graph
// before fusion and autodiff.
std::string withPrecision(const std::string &pipeline, const std::string &precision);

// One line per pipeline, `name: pass,pass,...`, in builtinPipelines() order.
std::string printPipelines();

} // namespace dtnn::passes
