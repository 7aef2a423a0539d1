// `dtnnc import`: an ONNX model as .dtnn source a person would write, and its weights under the
// names that source gives them. The source is compiled before it is returned, and every weight
// is checked against the parameter of that name, so a result always compiles and loads.
#pragma once

#include "frontend/onnx/Door.h"

#include <string>

namespace dtnn::onnximport {

// Imports the ONNX model at `path`; the module's entry point (libdtnn calls importOnnx).
// Unsupported operators and attributes fail naming the node, the operator and the opset.
Expected<ImportResult> importModel(const std::string &path, const ImportOptions &opts);

} // namespace dtnn::onnximport
