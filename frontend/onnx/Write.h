// Writing the imported model as source: the blocks that folding made, then the model, each line
// `let var = head |> call  # the ONNX nodes`, single-use values piped into the next line.
#pragma once

#include "frontend/onnx/Fold.h"

#include <functional>
#include <string>
#include <vector>

namespace dtnn::onnximport {

struct ModelText {
  std::string header;                // the comment above everything
  std::string signature;             // "model M(x: f32[N, 3]) -> f32[N, 10]"
  std::vector<std::string> results;  // the vars it returns
};

// `fresh` makes a name no var of the source has (a loop's variable).
std::string writeSource(const ModelText &m, Folded folded, const std::function<std::string(const std::string &)> &fresh);

} // namespace dtnn::onnximport
