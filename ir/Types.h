// Element types and tensor types. A tensor dimension is either a static size
// or a multiple of the symbolic batch size N: kDynamic (-1, printed `?`) is N
// itself, and -k (printed `?*k`) is k·N, the size of an axis that a reshape or
// flatten merged from the batch axis and others of total size k.
#pragma once

#include "ir/Error.h"

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dtnn::ir {

// Token is not a tensor: a value that orders asynchronous work (the start
// and the wait of a collective). It has no dims and no storage.
// BF16 is bfloat16: float32's sign and 8-bit exponent with a 7-bit mantissa (the
// upper half of a float32), rounded to nearest even. Ops on it compute in float32
// and round what they store (docs/ir.md, "Element types").
enum class DType : uint8_t { F32, F64, I32, I64, U8, Bool, Token, BF16 };

std::string_view dtypeName(DType t);
std::optional<DType> parseDType(std::string_view name);
// Size in bytes of one element.
unsigned dtypeSize(DType t);
// The names of the tensor element types (not token), in the order the IR lists them.
std::vector<std::string> dtypeNames();

constexpr int64_t kDynamic = -1;

// Whether dimension `d` is a multiple of the batch size (`?` or `?*k`).
inline bool isBatchDim(int64_t d) { return d < 0; }
// k for the dimension `?*k` (1 for `?`), the dimension itself when static.
inline int64_t batchMultiple(int64_t d) { return d < 0 ? -d : d; }
// The dimension k·N, `?*k`.
inline int64_t batchDim(int64_t k) { return -k; }
// Dimension `d` for a batch of `batch` samples.
inline int64_t bindDim(int64_t d, int64_t batch) { return d < 0 ? -d * batch : d; }

struct TensorType {
  DType dtype = DType::F32;
  std::vector<int64_t> dims;

  TensorType() = default;
  TensorType(DType t, std::vector<int64_t> d) : dtype(t), dims(std::move(d)) {}

  size_t rank() const { return dims.size(); }
  bool isStatic() const;
  // Elements per sample: the product of the dimensions with each batch
  // dimension `?*k` counted as k (so the whole of a static type). Exact for
  // types within kMaxElements, which sizeProblem checks.
  int64_t staticElements() const;
  // Number of elements, or nullopt when a dimension is dynamic.
  std::optional<int64_t> numElements() const;
  bool operator==(const TensorType &o) const { return dtype == o.dtype && dims == o.dims; }
  bool operator!=(const TensorType &o) const { return !(*this == o); }
  bool isToken() const { return dtype == DType::Token; }
  // Text form, e.g. `f32[?,3,32,32]`, or `token`.
  std::string str() const;
};

// The largest tensor the IR describes: 2^40 in any dimension and in all. One
// limit, held by the front end, the text parser and the verifier alike, so that
// every module one tool writes the others read; within it an element count,
// and a sum of a million of them, stays well inside int64.
constexpr int64_t kMaxDim = int64_t{1} << 40;
constexpr int64_t kMaxElements = int64_t{1} << 40;

// Success when `t` is within the limit, else a failure saying why not: "dimension 2199023255553 of
// f32[2199023255553,4] is larger than the largest, 2^40 (1099511627776)" or
// "f32[1048576,2097152] has more than 2^40 (1099511627776) elements".
Error sizeProblem(const TensorType &t);

// a + b and the product of `factors` (each non-negative), at most INT64_MAX:
// counts over many tensors (MACs, parameters) that the limit above does not bound.
int64_t saturatingAdd(int64_t a, int64_t b);
int64_t saturatingProduct(std::initializer_list<int64_t> factors);

// Text form of one dimension, `7`, `?` or `?*197`, and of a dimension list,
// e.g. `[?,3,32,32]` or `[?*197,768]`.
std::string dimStr(int64_t d);
std::string dimsStr(const std::vector<int64_t> &dims);

} // namespace dtnn::ir
