// Row-major matrix products on cuBLAS, shared by the dense and matmul
// kernels (Blas.cpp) and attention's (Attention.cpp). cuBLAS is
// column-major: a row-major C = op(A) op(B) is its C^T = op(B)^T op(A)^T,
// so B goes first and the sizes swap. Float products accumulate in float
// (CUBLAS_COMPUTE_32F), on TF32 tensor cores only when the run allows TF32
// everywhere; double ones in double. cuBLAS works in the block of
// workspace each kernel plans for it, so that nothing is allocated while a
// step is captured, and gives the same bits on every run for fixed sizes
// and workspace.
#pragma once

#include "backends/cuda/device/Device.h"

#include <cstdint>

namespace dtnn::cuda {

// The workspace cuBLAS gets (what it recommends on Hopper), and the block of a kernel's
// workspace that holds it: 256 bytes more, for the 256-byte alignment cuBLAS asks of it. The
// block is at the front of the workspace; ops/BlasOps.cpp and ops/AttentionOps.cpp plan it with
// the same size.
constexpr uint64_t kCublasWorkspaceBytes = uint64_t(32) << 20;
constexpr uint64_t kCublasBlockBytes = kCublasWorkspaceBytes + 256;

// Fails unless the kernel of `s` was planned with workspace for the cuBLAS block.
Error checkCublasBlock(const DeviceKernelSpec &s);
// Gives l.cublas the cuBLAS block at the front of `workspace`.
Error useCublasWorkspace(const Launch &l, void *workspace);

// One row-major product C [m, n] = alpha op(A) op(B) + beta C, op(A) [m, k] and op(B) [k, n]:
// A is stored [m, k], or [k, m] when `ta`; B [k, n], or [n, k] when `tb`. Every size is at most
// INT_MAX and positive.
struct GemmShape {
  int64_t m = 0, n = 0, k = 0;
  bool ta = false, tb = false;
};

// A matrix operand of a batch of products: product i reads (or writes) data + i * stride.
template <typename T> struct Strided {
  T *data;
  int64_t stride;
};

// `batch` products (at most INT_MAX) on l.stream, with l.cublas's workspace already set.
template <typename T>
Error gemm(const Launch &l, const GemmShape &g, int64_t batch, T alpha, Strided<const T> a,
           Strided<const T> b, T beta, Strided<T> c);

} // namespace dtnn::cuda
