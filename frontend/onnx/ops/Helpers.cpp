#include "frontend/onnx/ops/Translators.h"

namespace dtnn::onnximport {

std::optional<ir::DType> dtypeOf(int32_t t) {
  switch (t) {
  case onnx::TensorProto::FLOAT: return ir::DType::F32;
  case onnx::TensorProto::DOUBLE: return ir::DType::F64;
  case onnx::TensorProto::INT32: return ir::DType::I32;
  case onnx::TensorProto::INT64: return ir::DType::I64;
  case onnx::TensorProto::UINT8: return ir::DType::U8;
  case onnx::TensorProto::BOOL: return ir::DType::Bool;
  case onnx::TensorProto::BFLOAT16: return ir::DType::BF16;
  default: return std::nullopt;
  }
}

Expected<int64_t> normalizeAxis(const Node &node, int64_t axis, int64_t rank) {
  int64_t a = axis < 0 ? axis + rank : axis;
  if (a < 0 || a >= rank)
    return node.fail("axis " + std::to_string(axis) + " is out of range for rank " +
                     std::to_string(rank));
  return a;
}

Expected<std::vector<int64_t>> broadcastDims(const Node &node, const std::vector<int64_t> &a,
                                             const std::vector<int64_t> &b) {
  size_t rank = std::max(a.size(), b.size());
  std::vector<int64_t> out(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t x = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t y = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (x == y || y == 1) out[i] = x;
    else if (x == 1) out[i] = y;
    else
      return node.fail("cannot broadcast [" + dimsText(a) + "] with [" + dimsText(b) + "]");
  }
  return out;
}

int64_t product(const std::vector<int64_t> &dims, size_t begin, size_t end) {
  int64_t p = 1;
  for (size_t i = begin; i < std::min(end, dims.size()); ++i) p *= ir::batchMultiple(dims[i]);
  return p;
}

Expected<Tensor> reshapeTo(Context &ctx, const Node &node, const Tensor &x,
                           const std::vector<int64_t> &dims, const std::string &output) {
  if (dims == x.dims) {
    ctx.bindTensor(output, x);
    return x;
  }
  std::vector<int64_t> shape = dims;
  int batchDims = 0;
  for (int64_t &d : shape)
    if (ir::isBatchDim(d)) ++batchDims, d = -1;
  if (batchDims > 1) return node.fail("its result has more than one dimension that depends on the batch size");
  return ctx.emit(node, node.op(), x.var, call("reshape", {intList(shape)}), {x.var}, x.dtype, dims,
                  output);
}

std::string call(const std::string &callee, const std::vector<std::string> &args) {
  std::string s;
  for (const auto &a : args)
    if (!a.empty()) s += (s.empty() ? "" : ", ") + a;
  return s.empty() ? callee : callee + "(" + s + ")";
}

Error onlyFirstOutput(const Node &node, const std::string &why) {
  for (size_t i = 1; i < node.outputs(); ++i)
    if (node.outputUsed(i))
      return node.fail("output " + std::to_string(i) + " ('" + node.proto().output(int(i)) +
                       "') is used, but " + why);
  return Error::success();
}

} // namespace dtnn::onnximport
