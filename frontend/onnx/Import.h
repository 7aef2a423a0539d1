// `dtnnc import`: an ONNX model as .dtnn source a person would write, and its weights under the
// names that source gives them. The source is compiled before it is returned, and every weight
// is checked against the parameter of that name, so a result always compiles and loads.
#pragma once

#include "frontend/onnx/ImportContext.h"

#include <string>
#include <vector>

namespace dtnn::onnximport {

struct ImportResult {
  std::string source;
  std::vector<Weight> weights; // in the order the compiled model declares its parameters
};

struct ImportOptions {
  std::string modelName;  // the model's name; empty: from the graph's name
  std::string sourceName; // the file name the source is compiled under (for imports)
};

// Imports the ONNX model at `path`. Unsupported operators and attributes fail naming the node,
// the operator and the opset.
Expected<ImportResult> importModel(const std::string &path, const ImportOptions &opts);

} // namespace dtnn::onnximport
