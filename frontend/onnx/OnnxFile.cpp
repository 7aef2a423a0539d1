#include "frontend/onnx/OnnxFile.h"

#include "ir/Files.h"

#include <onnx/checker.h>
#include <onnx/shape_inference/implementation.h>

#include <cstring>
#include <limits>

namespace dtnn::onnximport {

namespace {

using TP = onnx::TensorProto;

// The file's bytes, or why they cannot be read.
Expected<std::string> readBytes(const std::string &path, const std::string &role) {
  uint64_t size = 0;
  auto file = openRegularFile(path, size, role);
  if (!file) return Error::make(path + ": " + file.error().message());
  if (size > kMaxOnnxBytes)
    return Error::make(path + ": is " + std::to_string(size) + " bytes; an ONNX file holds at most " +
                       std::to_string(kMaxOnnxBytes) + " (protobuf's limit)");
  std::string bytes(size, '\0');
  if (size && std::fread(bytes.data(), 1, size, file->get()) != size)
    return Error::make(path + ": cannot read: " + std::strerror(errno));
  return bytes;
}

bool isFloatType(int32_t t) {
  return t == TP::FLOAT || t == TP::DOUBLE || t == TP::FLOAT16 || t == TP::BFLOAT16;
}

bool isIntType(int32_t t) {
  switch (t) {
  case TP::INT8: case TP::INT16: case TP::INT32: case TP::INT64: case TP::UINT8:
  case TP::UINT16: case TP::UINT32: case TP::UINT64: case TP::BOOL:
    return true;
  default:
    return false;
  }
}

// The size of one element in raw_data.
size_t rawSize(int32_t t) {
  switch (t) {
  case TP::INT8: case TP::UINT8: case TP::BOOL: return 1;
  case TP::INT16: case TP::UINT16: case TP::FLOAT16: case TP::BFLOAT16: return 2;
  case TP::INT32: case TP::UINT32: case TP::FLOAT: return 4;
  default: return 8;
  }
}

double halfToDouble(uint16_t bits) { 
  _Float16 h;
  std::memcpy(&h, &bits, 2);
  return static_cast<double>(h);
}

double bf16ToDouble(uint16_t bits) {
  uint32_t wide = uint32_t{bits} << 16;
  float f;
  std::memcpy(&f, &wide, 4);
  return f;
}

// Element i of raw little-endian bytes of type t, as a double or an int.
template <typename T> T load(const char *p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

double rawFloat(int32_t t, const char *p) {
  switch (t) {
  case TP::FLOAT: return load<float>(p);
  case TP::DOUBLE: return load<double>(p);
  case TP::FLOAT16: return halfToDouble(load<uint16_t>(p));
  default: return bf16ToDouble(load<uint16_t>(p));
  }
}

Expected<int64_t> rawInt(int32_t t, const char *p) {
  switch (t) {
  case TP::INT8: return int64_t{load<int8_t>(p)};
  case TP::UINT8: return int64_t{load<uint8_t>(p)};
  case TP::BOOL: return int64_t{load<uint8_t>(p) != 0};
  case TP::INT16: return int64_t{load<int16_t>(p)};
  case TP::UINT16: return int64_t{load<uint16_t>(p)};
  case TP::INT32: return int64_t{load<int32_t>(p)};
  case TP::UINT32: return int64_t{load<uint32_t>(p)};
  case TP::INT64: return load<int64_t>(p);
  default: {
    uint64_t u = load<uint64_t>(p);
    if (u > uint64_t(std::numeric_limits<int64_t>::max()))
      return Error::make("holds the UINT64 value " + std::to_string(u) + ", beyond INT64");
    return int64_t(u);
  }
  }
}

} // namespace

bool TensorData::isFloat() const { return isFloatType(elemType); }

size_t TensorData::count() const { return isFloat() ? floats.size() : ints.size(); }

std::string elemTypeName(int32_t elemType) {
  if (onnx::TensorProto_DataType_IsValid(elemType))
    return onnx::TensorProto_DataType_Name(static_cast<onnx::TensorProto_DataType>(elemType));
  return "type " + std::to_string(elemType);
}

Expected<onnx::ModelProto> loadModel(const std::string &path) {
  auto bytes = readBytes(path, "ONNX model");
  if (!bytes) return bytes.takeError();
  onnx::ModelProto model;
  if (!model.ParseFromString(*bytes))
    return Error::make(path + ": is not an ONNX model (the protobuf does not parse as a ModelProto)");
  try {
    onnx::checker::check_model(model);
  } catch (const std::exception &e) {
    return Error::make(path + ": ONNX's checker refuses the model: " + e.what());
  }
  try {
    onnx::shape_inference::InferShapes(model, onnx::OpSchemaRegistry::Instance(),
                                       onnx::ShapeInferenceOptions(true, 1, true));
  } catch (const std::exception &e) {
    return Error::make(path + ": ONNX's shape inference fails: " + e.what());
  }
  return model;
}

Expected<onnx::TensorProto> loadTensor(const std::string &path) {
  auto bytes = readBytes(path, "ONNX tensor");
  if (!bytes) return bytes.takeError();
  onnx::TensorProto t;
  if (!t.ParseFromString(*bytes))
    return Error::make(path + ": is not an ONNX tensor (the protobuf does not parse as a TensorProto)");
  return t;
}

Expected<TensorData> readTensor(const TP &t) {
  std::string what = "tensor '" + t.name() + "'";
  auto fail = [&](const std::string &problem) { return Error::make(what + " " + problem); };
  if (t.data_location() == TP::EXTERNAL || t.external_data_size() > 0)
    return fail("keeps its data in an external file, which the importer does not read");
  TensorData d;
  d.elemType = t.data_type();
  if (!isFloatType(d.elemType) && !isIntType(d.elemType))
    return fail("has elements of type " + elemTypeName(d.elemType) + ", which dtnn has no use for");
  uint64_t count = 1;
  for (int64_t dim : t.dims()) {
    if (dim < 0) return fail("has a negative dimension " + std::to_string(dim));
    if (dim && count > (uint64_t{1} << 40) / uint64_t(dim))
      return fail("has more than 2^40 elements");
    count *= uint64_t(dim);
    d.dims.push_back(dim);
  }
  auto wrongCount = [&](size_t have) {
    return fail("holds " + std::to_string(have) + " values for its " + std::to_string(count) +
                " elements");
  };
  if (t.has_raw_data()) {
    const std::string &raw = t.raw_data();
    size_t size = rawSize(d.elemType);
    if (raw.size() != count * size) return wrongCount(raw.size() / size);
    for (uint64_t i = 0; i < count; ++i) {
      const char *p = raw.data() + i * size;
      if (d.isFloat()) {
        d.floats.push_back(rawFloat(d.elemType, p));
      } else {
        auto v = rawInt(d.elemType, p);
        if (!v) return fail(v.error().message());
        d.ints.push_back(*v);
      }
    }
    return d;
  }
  switch (d.elemType) {
  case TP::FLOAT:
    if (uint64_t(t.float_data_size()) != count) return wrongCount(t.float_data_size());
    d.floats.assign(t.float_data().begin(), t.float_data().end());
    break;
  case TP::DOUBLE:
    if (uint64_t(t.double_data_size()) != count) return wrongCount(t.double_data_size());
    d.floats.assign(t.double_data().begin(), t.double_data().end());
    break;
  case TP::INT64:
    if (uint64_t(t.int64_data_size()) != count) return wrongCount(t.int64_data_size());
    d.ints.assign(t.int64_data().begin(), t.int64_data().end());
    break;
  case TP::UINT32: case TP::UINT64:
    if (uint64_t(t.uint64_data_size()) != count) return wrongCount(t.uint64_data_size());
    for (uint64_t u : t.uint64_data()) {
      if (u > uint64_t(std::numeric_limits<int64_t>::max()))
        return fail("holds the value " + std::to_string(u) + ", beyond INT64");
      d.ints.push_back(int64_t(u));
    }
    break;
  default: // the types stored in int32_data
    if (uint64_t(t.int32_data_size()) != count) return wrongCount(t.int32_data_size());
    for (int32_t v : t.int32_data()) {
      if (d.elemType == TP::FLOAT16) d.floats.push_back(halfToDouble(uint16_t(v)));
      else if (d.elemType == TP::BFLOAT16) d.floats.push_back(bf16ToDouble(uint16_t(v)));
      else if (d.elemType == TP::BOOL) d.ints.push_back(v != 0);
      else d.ints.push_back(v);
    }
  }
  return d;
}

} // namespace dtnn::onnximport
