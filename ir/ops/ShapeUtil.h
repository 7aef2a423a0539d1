// Helpers shared by the shape rules and layer builders of the op table.
#pragma once

#include "ir/OpDef.h"

#include <optional>
#include <string>
#include <vector>

namespace dtnn::ir {

// Expands an int list given with 1 entry (or `n` entries) to `n` entries;
// nullopt when the length is neither 1 nor n.
std::optional<std::vector<int64_t>> expandInts(const std::vector<int64_t> &v, size_t n);

// Expands a padding list of 1 (all sides), 2 (height, width) or 4
// (top, left, bottom, right) entries to the 4-entry form.
std::optional<std::vector<int64_t>> expandPad(const std::vector<int64_t> &v);

// Output size of a sliding window along a static axis.
// Returns a value < 1 (as-is) when the window does not fit, and 0 when the
// arithmetic would overflow.
int64_t windowOutDim(int64_t in, int64_t kernel, int64_t stride, int64_t padBegin, int64_t padEnd,
                     int64_t dilation, bool ceilMode);

// Numpy-style broadcast of two dimension lists; nullopt if incompatible.
std::optional<std::vector<int64_t>> broadcastDims(const std::vector<int64_t> &a,
                                                  const std::vector<int64_t> &b);

// Normalizes a possibly negative axis for a tensor of rank `rank`; nullopt if out of range.
std::optional<int64_t> normalizeAxis(int64_t axis, size_t rank);

// How many of t's leading rows one sample holds: k when t's first dimension is
// `?*k`, else 1. The MAC counts are per sample, read from the dimensions after
// the first; this factor scales them for an input whose batch axis was merged.
int64_t batchFactor(const TensorType &t);

// True when two dimensions can be equal: they are, or one is static and the
// other a multiple of the batch size, which may be bound to it.
bool dimsAgree(int64_t a, int64_t b);

// True when two types have the same element type and rank and every pair of
// dimensions agrees in the sense of dimsAgree.
bool typesAgree(const TensorType &a, const TensorType &b);

// True for the floating-point element types (f32, f64, bf16).
bool isFloatType(DType t);
// The type that statistics and per-channel parameters of data of type t are
// kept in: float32 for bf16 data (a batch norm's mean, scale and running
// statistics), t itself otherwise.
DType statisticsType(DType t);
// Whether a per-channel operand of type p may go with data of type x: x's
// own type or its statistics type.
bool isStatisticsTypeOf(DType p, DType x);

// An operand whose storage result `result` may take when the op is its last
// user (an elementwise op writing element i after reading it).
OperandSpec reusable(std::string name, int result = 0);
// An operand the op reads only the type of.
OperandSpec shapeOnly(std::string name);

// Shape rule of ops whose single result has the type of operand 0.
Error sameAsFirstOperand(InferCtx &ctx);

class Builder;

// The gradient with respect to an operand of a broadcasting op whose result
// gradient is g: g summed down to the operand's type where it was broadcast
// (sum_like), or g itself (null stays null).
Value *reduceTo(Builder &b, Value *g, Value *operand);

// The gradient rule dx = adjoint(dy, x) of operand 0 alone: sum_like's
// gradient broadcasts dy back to x (broadcast_like), broadcast_like's and
// reduce_sum's sum it down (or back up) to x's type.
GradFn adjointGrad(std::string adjoint);

// v converted to element type t by a cast op (v itself when it has type t);
// null when the builder failed.
Value *castTo(Builder &b, Value *v, DType t);

// The element offset of each of `out`'s batch matrices in a tensor of batch
// dimensions `dims` (aligned right, size 1 broadcasting), whose matrices hold
// `matrix` elements.
std::vector<int64_t> batchOffsets(const std::vector<int64_t> &out,
                                  const std::vector<int64_t> &dims, int64_t matrix);

} // namespace dtnn::ir
