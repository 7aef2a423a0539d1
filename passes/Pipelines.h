// Named pass pipelines, kept as data so that they print with
// --print-pipeline and expand wherever a pass name is accepted.
#pragma once

#include <string>
#include <vector>

namespace dtnn::passes {

// A named, ordered list of pass names.
struct Pipeline {
  std::string name;
  std::string description;
  std::vector<std::string> passes;
};

// The built-in pipelines; "default" is what `dtnnc compile` runs.
const std::vector<Pipeline> &builtinPipelines();

// The built-in pipeline called `name`, or null.
const Pipeline *findPipeline(const std::string &name);

// One line per pipeline, `name: pass,pass,...`, in builtinPipelines() order.
std::string printPipelines();

} // namespace dtnn::passes
