#include "ir/Types.h"

#include <algorithm>

namespace dtnn::ir {

namespace {
struct DTypeInfo {
  DType type;
  const char *name;
  unsigned size;
};
constexpr DTypeInfo kDTypes[] = {
    {DType::F32, "f32", 4}, {DType::BF16, "bf16", 2}, {DType::F64, "f64", 8}, {DType::I32, "i32", 4},
    {DType::I64, "i64", 8}, {DType::U8, "u8", 1},   {DType::Bool, "bool", 1},
    {DType::Token, "token", 0},
};
} // namespace

std::string_view dtypeName(DType t) {
  for (const auto &i : kDTypes)
    if (i.type == t) return i.name;
  return "?";
}

std::optional<DType> parseDType(std::string_view name) {
  for (const auto &i : kDTypes)
    if (name == i.name) return i.type;
  return std::nullopt;
}

unsigned dtypeSize(DType t) {
  for (const auto &i : kDTypes)
    if (i.type == t) return i.size;
  return 0;
}

std::vector<std::string> dtypeNames() {
  std::vector<std::string> out;
  for (const auto &i : kDTypes)
    if (i.type != DType::Token) out.push_back(i.name);
  return out;
}

bool TensorType::isStatic() const {
  for (int64_t d : dims)
    if (isBatchDim(d)) return false;
  return true;
}

int64_t TensorType::staticElements() const {
  int64_t n = 1;
  for (int64_t d : dims)
    n *= batchMultiple(d);
  return n;
}

std::optional<int64_t> TensorType::numElements() const {
  if (!isStatic()) return std::nullopt;
  return staticElements();
}

Error sizeProblem(const TensorType &t) {
  const std::string limit = "2^40 (" + std::to_string(kMaxElements) + ")";
  for (int64_t d : t.dims)
    if (batchMultiple(d) > kMaxDim)
      return Error::make("dimension " + dimStr(d) + " of " + t.str() +
                         " is larger than the largest, " + limit);
  if (std::count(t.dims.begin(), t.dims.end(), 0)) return Error::success();
  unsigned __int128 n = 1; // each factor is at most 2^40, so no product overflows
  for (int64_t d : t.dims) {
    n *= static_cast<uint64_t>(batchMultiple(d));
    if (n > static_cast<unsigned __int128>(kMaxElements)) return Error::make(t.str() + " has more than " + limit + " elements");
  }
  return Error::success();
}

int64_t saturatingAdd(int64_t a, int64_t b) {
  int64_t r = 0;
  return __builtin_add_overflow(a, b, &r) ? INT64_MAX : r;
}

int64_t saturatingProduct(std::initializer_list<int64_t> factors) {
  int64_t r = 1;
  for (int64_t f : factors)
    if (__builtin_mul_overflow(r, f, &r)) return INT64_MAX;
  return r;
}

std::string dimStr(int64_t d) {
  if (d == kDynamic) return "?";
  if (isBatchDim(d)) return "?*" + std::to_string(batchMultiple(d));
  return std::to_string(d);
}

std::string dimsStr(const std::vector<int64_t> &dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i) s += ',';
    s += dimStr(dims[i]);
  }
  return s + "]";
}

std::string TensorType::str() const {
  if (isToken()) return "token";
  return std::string(dtypeName(dtype)) + dimsStr(dims);
}

} // namespace dtnn::ir
