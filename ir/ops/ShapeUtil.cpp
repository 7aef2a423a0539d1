#include "ir/ops/ShapeUtil.h"

#include "ir/Builder.h"

namespace dtnn::ir {

std::optional<std::vector<int64_t>> expandInts(const std::vector<int64_t> &v, size_t n) {
  if (v.size() == n) return v;
  if (v.size() == 1) return std::vector<int64_t>(n, v[0]);
  return std::nullopt;
}

std::optional<std::vector<int64_t>> expandPad(const std::vector<int64_t> &v) {
  if (v.size() == 1) return std::vector<int64_t>{v[0], v[0], v[0], v[0]};
  if (v.size() == 2) return std::vector<int64_t>{v[0], v[1], v[0], v[1]};
  if (v.size() == 4) return v;
  return std::nullopt;
}

int64_t windowOutDim(int64_t in, int64_t kernel, int64_t stride, int64_t padBegin, int64_t padEnd,
                     int64_t dilation, bool ceilMode) {
  // Attribute values from IR text can be huge; a sum that overflows cannot fit.
  int64_t span, room;
  if (__builtin_mul_overflow(dilation, kernel - 1, &span) ||
      __builtin_add_overflow(span, 1, &span) || __builtin_add_overflow(in, padBegin, &room) ||
      __builtin_add_overflow(room, padEnd, &room) || __builtin_sub_overflow(room, span, &room))
    return 0;
  if (room < 0) return 0;
  int64_t out = room / stride + (ceilMode && room % stride != 0) + 1;
  // With ceil mode the last window must start inside the input or left padding.
  int64_t lastStart;
  if (ceilMode &&
      (__builtin_mul_overflow(out - 1, stride, &lastStart) || lastStart >= in + padBegin))
    --out;
  return out;
}

std::optional<std::vector<int64_t>> broadcastDims(const std::vector<int64_t> &a,
                                                  const std::vector<int64_t> &b) {
  size_t n = std::max(a.size(), b.size());
  std::vector<int64_t> out(n);
  for (size_t i = 0; i < n; ++i) {
    int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    if (da == db || db == 1)
      out[i] = da;
    else if (da == 1)
      out[i] = db;
    else
      return std::nullopt;
  }
  return out;
}

std::optional<int64_t> normalizeAxis(int64_t axis, size_t rank) {
  int64_t r = static_cast<int64_t>(rank);
  if (axis < -r || axis >= r) return std::nullopt;
  return axis < 0 ? axis + r : axis;
}

int64_t batchFactor(const TensorType &t) {
  return t.rank() && isBatchDim(t.dims[0]) ? batchMultiple(t.dims[0]) : 1;
}

bool dimsAgree(int64_t a, int64_t b) { return a == b || isBatchDim(a) != isBatchDim(b); }

bool typesAgree(const TensorType &a, const TensorType &b) {
  if (a.dtype != b.dtype || a.rank() != b.rank()) return false;
  for (size_t i = 0; i < a.rank(); ++i)
    if (!dimsAgree(a.dims[i], b.dims[i])) return false;
  return true;
}

bool isFloatType(DType t) { return t == DType::F32 || t == DType::F64 || t == DType::BF16; }

DType statisticsType(DType t) { return t == DType::BF16 ? DType::F32 : t; }

bool isStatisticsTypeOf(DType p, DType x) { return p == x || p == statisticsType(x); }

Error sameAsFirstOperand(InferCtx &ctx) {
  ctx.results = {ctx.operands[0]};
  return Error::success();
}

OperandSpec reusable(std::string name, int result) {
  return {std::move(name), OperandSpec::Required, Effect::Read, result};
}

OperandSpec shapeOnly(std::string name) {
  return {std::move(name), OperandSpec::Required, Effect::Shape};
}

Value *reduceTo(Builder &b, Value *g, Value *operand) {
  if (!g || g->type() == operand->type()) return g;
  return b.create1("sum_like", {g, operand});
}

GradFn adjointGrad(std::string adjoint) {
  return [adjoint = std::move(adjoint)](GradCtx &ctx) {
    if (!ctx.dy[0] || !ctx.needed[0]) return Error::success();
    ctx.dx[0] = ctx.b.create1(adjoint, {ctx.dy[0], ctx.op.operand(0)});
    return ctx.dx[0] ? Error::success() : ctx.b.takeError();
  };
}

std::vector<int64_t> batchOffsets(const std::vector<int64_t> &out,
                                         const std::vector<int64_t> &dims, int64_t matrix) {
  int64_t count = 1;
  for (int64_t d : out) count *= d;
  std::vector<int64_t> offsets(size_t(count), 0);
  size_t lead = out.size() - dims.size();
  for (int64_t i = 0; i < count; ++i) {
    int64_t rest = i, offset = 0, stride = matrix;
    for (size_t d = out.size(); d-- > 0;) {
      int64_t index = rest % out[d];
      rest /= out[d];
      if (d >= lead) {
        int64_t size = dims[d - lead];
        if (size != 1) offset += index * stride;
        stride *= size;
      }
    }
    offsets[size_t(i)] = offset;
  }
  return offsets;
}

} // namespace dtnn::ir
