// Reading an ONNX file with the ONNX library: the protobuf parsed, checked by ONNX's checker, its
// shapes inferred by ONNX's shape inference, and its tensors (initializers, Constant nodes, the
// conformance suite's .pb files) read into host values.
#pragma once

#include "ir/Error.h"

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <string>
#include <vector>

namespace dtnn::onnximport {

// The largest ONNX file read, in bytes: protobuf's own limit for one message.
constexpr uint64_t kMaxOnnxBytes = (uint64_t{1} << 31) - 1;

// Reads, checks and shape-infers the model at `path`. Errors start with "<path>: ".
Expected<onnx::ModelProto> loadModel(const std::string &path);

// Reads one serialized TensorProto (a conformance test's input_0.pb). Errors start with "<path>: ".
Expected<onnx::TensorProto> loadTensor(const std::string &path);

// A tensor's elements as numbers, row-major: floating-point ones in `floats`, integers and bools
// in `ints` (the other stays empty).
struct TensorData {
  int32_t elemType = 0; // onnx::TensorProto_DataType
  std::vector<int64_t> dims;
  std::vector<double> floats;
  std::vector<int64_t> ints;
  bool isFloat() const;
  size_t count() const;
};

// Decodes `t` (typed fields or raw_data, little-endian); refuses external data, strings and
// the element types dtnn has no use for, naming the tensor.
Expected<TensorData> readTensor(const onnx::TensorProto &t);

// The ONNX name of an element type ("FLOAT", "INT64", ...).
std::string elemTypeName(int32_t elemType);

} // namespace dtnn::onnximport
