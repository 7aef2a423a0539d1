// Helpers shared by the reference kernels: element-type dispatch and a
// parallel loop over independent output elements, and the offsets of batch
// matrices under broadcasting.
#pragma once

#include "backends/reference/KernelTable.h"
#include "ir/ops/ShapeUtil.h"
#include "runtime/BFloat16.h"

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <vector>

namespace dtnn::reference {

// Calls f(T{}) with T = float or double according to `t`.
template <typename F> void dispatchFloat(ir::DType t, F &&f) {
  if (t == ir::DType::F64)
    f(double{});
  else
    f(float{});
}

// Runs body(i) for i in [0, n) on the backend's threads. Every iteration
// must write its own outputs only, so results do not depend on the thread
// count: reductions over a batch run inside one iteration, never across.
template <typename Body> void parallelFor(int64_t n, Body &&body) {
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i) body(i);
}

// Runs body(begin, end) over blocks of [0, n) in parallel; blocks are
// contiguous so inner loops vectorize.
template <typename Body> void parallelBlocks(int64_t n, Body &&body) {
  constexpr int64_t kBlock = 4096;
  int64_t blocks = (n + kBlock - 1) / kBlock;
  parallelFor(blocks, [&](int64_t k) { body(k * kBlock, std::min(n, (k + 1) * kBlock)); });
}

using ir::batchOffsets; // the element offset of each batch matrix (ir/ops/ShapeUtil.h)

// Reads a scalar operand (learning rate, step count) of any numeric type.
inline double readScalar(const TensorView &v) {
  switch (v.type.dtype) {
  case ir::DType::F32: return *v.as<float>();
  case ir::DType::BF16: return runtime::widenBf16(*v.as<uint16_t>());
  case ir::DType::F64: return *v.as<double>();
  case ir::DType::I32: return *v.as<int32_t>();
  case ir::DType::I64: return static_cast<double>(*v.as<int64_t>());
  case ir::DType::U8: return *v.as<uint8_t>();
  case ir::DType::Bool: return *v.as<bool>();
  case ir::DType::Token: return 0;
  }
  return 0;
}

// Registers one kernel template instantiated for float and double, chosen by
// the dtype of operand 0 (or result 0 for ops without operands).
#define DTNN_REF_KERNEL(table, opName, fn)                                                     \
  (table).add(opName, [](const ::dtnn::runtime::KernelArgs &a) {                             \
    ::dtnn::ir::DType dt = a.in.empty() ? a.out[0].type.dtype : a.in[0].type.dtype;            \
    ::dtnn::reference::dispatchFloat(dt, [&](auto tag) { fn<decltype(tag)>(a); });            \
  })

} // namespace dtnn::reference
