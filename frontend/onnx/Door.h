// The ONNX door as libdtnn sees it. The importer, the only code that links the ONNX library and
// protobuf, is a module of its own (libdtnn-onnx.so, beside libdtnn) that libdtnn loads the
// first time a model is imported, so that a program that imports nothing (dtnn-run, a training
// run under a tight address-space limit) never maps them.
#pragma once

#include "ir/Error.h"
#include "ir/IR.h"

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace dtnn::onnximport {

// A weight of the imported source's layers and params, under its dtnn name.
struct Weight {
  std::string name;
  std::vector<int64_t> dims;
  std::vector<float> data;
};

struct ImportResult {
  std::string source;
  std::vector<Weight> weights; // in the order the compiled model declares its parameters
  std::vector<std::string> notes; // what the import chose not to do, and why
};

struct ImportOptions {
  std::string modelName;  // the model's name; empty: from the graph's name
  std::string sourceName; // the file name the source is compiled under (for imports)
  // Graph inputs bound to known values: (input name, a serialized TensorProto file). Each
  // becomes a constant of the import, as an initializer would be (the shapes, axes and
  // indices that dtnn needs known when compiling), and is no longer an input of the model.
  std::vector<std::pair<std::string, std::string>> constants;
  // Whether repeated structure is folded into blocks and loops (frontend/onnx/Fold.h).
  bool fold = true;
};

// Imports the ONNX model at `path` through the module: .dtnn source a person would write and
// its weights. Unsupported operators and attributes fail naming the node, the operator and the
// opset; a module that cannot be loaded fails saying why.
Expected<ImportResult> importOnnx(const std::string &path, const ImportOptions &opts);

// What `dtnnc export` writes: the opset, and the producer's name for the file.
struct ExportOptions {
  int opset = 17;
};

// The values of a module's parameters, by name, as float32 (what export writes as initializers).
struct ExportWeights {
  std::map<std::string, std::vector<float>> values;
};

// Writes the inference graph of `m` (its forward graph) with `weights` as an ONNX model,
// serialized; checked by ONNX's checker. An op with no ONNX form fails naming it.
Expected<std::string> exportOnnx(const ir::Module &m, const ExportWeights &weights, const ExportOptions &opts);

// What the module hands libdtnn. The version changes with this struct and the ones above.
struct OnnxApi {
  static constexpr int kVersion = 3;
  int version = kVersion;
  Expected<ImportResult> (*importModel)(const std::string &path, const ImportOptions &opts);
  Expected<std::string> (*exportModel)(const ir::Module &m, const ExportWeights &weights, const ExportOptions &opts);
};

// The module's one exported symbol, and its file name beside libdtnn.
inline constexpr const char *kOnnxSymbol = "dtnn_onnx_api";
inline constexpr const char *kOnnxModule = "libdtnn-onnx.so";

} // namespace dtnn::onnximport
