// The built-in pipelines.
#include "passes/Pipelines.h"

namespace dtnn::passes {

const std::vector<Pipeline> &builtinPipelines() {
  static const std::vector<Pipeline> pipelines = {
      {"inference", "Cleans up a forward graph for inference and fuses its layers.",
       {"shape-infer", "repeat(canonicalize,cse,dce)", "fold-batchnorm", "fuse-activation",
        "fuse-residual-add", "fuse-elementwise"}},
      {"default", "The pipeline `dtnnc compile` runs.",
       {"shape-infer", "repeat(canonicalize,cse,dce)", "fold-batchnorm", "fuse-activation",
        "fuse-residual-add", "fuse-elementwise"}},
      // Fusion before autodiff serves the train step; after it, batch norm
      // folding and the fusion it enables serve the eval step.
      {"train", "Builds the train and eval steps: `dtnnc compile --emit=train-ir`, dtnn-run.",
       {"shape-infer", "repeat(canonicalize,cse,dce)", "fuse-activation", "fuse-residual-add",
        "autodiff", "fold-slice-gradients", "fold-batchnorm", "fuse-activation",
        "fuse-residual-add", "repeat(cse,dce)",
        "decompose-batchnorm", "fuse-elementwise"}},
  };
  return pipelines;
}

const Pipeline *findPipeline(const std::string &name) {
  for (const Pipeline &p : builtinPipelines())
    if (p.name == name) return &p;
  return nullptr;
}

std::string trainPipeline(const DataParallelOptions &o) {
  if (o.ranks <= 1 || !o.syncBatchNorm) return "train";
  // The batch norms are synchronized before decompose-batchnorm would take
  // them apart (it leaves synchronized ones to their kernels).
  std::string out;
  for (const std::string &p : findPipeline("train")->passes) {
    if (p == "decompose-batchnorm") out += "sync-batchnorm,";
    out += p + ",";
  }
  out.pop_back();
  return out;
}

std::string dataParallelPipeline(const DataParallelOptions &o) {
  if (o.ranks <= 1) return "";
  std::string bucket = "ranks=" + std::to_string(o.ranks);
  if (o.nodes > 1) bucket += " nodes=" + std::to_string(o.nodes);
  if (o.algorithm != "auto") bucket += " algorithm=" + o.algorithm;
  if (o.bucketBytes >= 0) bucket += " bytes=" + std::to_string(o.bucketBytes);
  if (o.localBatch > 0) bucket += " batch=" + std::to_string(o.localBatch);
  if (!o.netPath.empty()) bucket += " net=" + o.netPath;
  if (!o.profilePath.empty()) bucket += " profile=" + o.profilePath;
  return "insert-allreduce,bucket-allreduce{" + bucket + "},schedule-comm";
}

std::string updatePipeline() { return "fuse-updates"; }

std::string trainStepPipeline(const DataParallelOptions &o) {
  std::string pipeline = trainPipeline(o);
  if (std::string d = dataParallelPipeline(o); !d.empty()) pipeline += "," + d;
  return pipeline + "," + updatePipeline();
}

namespace {

// The items of a comma-separated list, splitting only outside parentheses and braces.
std::vector<std::string> topLevelItems(const std::string &list) {
  std::vector<std::string> items(1);
  int depth = 0;
  for (char c : list) {
    if (c == '(' || c == '{') ++depth;
    if (c == ')' || c == '}') --depth;
    if (c == ',' && depth == 0)
      items.emplace_back();
    else
      items.back() += c;
  }
  return items;
}

} // namespace

std::string withPrecision(const std::string &pipeline, const std::string &precision) {
  if (precision != "bf16") return pipeline;
  const std::string cleanup = "repeat(canonicalize,cse,dce)";
  std::string out;
  bool placed = false;
  for (const std::string &item : topLevelItems(pipeline)) {
    std::vector<std::string> passes = {item};
    if (const Pipeline *p = findPipeline(item)) passes = p->passes;
    for (const std::string &p : passes) {
      out += p + ",";
      if (!placed && p == cleanup) {
        out += "mixed-precision,";
        placed = true;
      }
    }
  }
  out.pop_back();
  return placed ? out : "shape-infer,mixed-precision," + out;
}

std::string printPipelines() {
  std::string out;
  for (const Pipeline &p : builtinPipelines()) {
    out += p.name + ":";
    for (size_t i = 0; i < p.passes.size(); ++i) out += (i ? "," : " ") + p.passes[i];
    out += "\n";
  }
  return out;
}

} // namespace dtnn::passes
