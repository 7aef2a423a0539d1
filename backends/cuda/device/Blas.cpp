// dense, its three gradients and matmul on the device, in f32 and f64:
// the products on cuBLAS (Blas.h), dense's bias and fused activation and
// dense_backward_bias on the family's own kernels (kernels/Blas.h).
//
// matmul's batch: the result's matrices are cut into groups of consecutive
// ones whose a and b matrices each lie a fixed stride apart (0 for an
// operand that broadcasts along the group), one strided-batched product a
// group; the groups are found when the kernel is made, from the offsets of
// each result matrix's operands as the reference computes them.
#include "backends/cuda/device/Blas.h"
#include "backends/cuda/device/kernels/Blas.h"
#include "ir/ops/FusedActivation.h"
#include "ir/ops/ShapeUtil.h"

#include <algorithm>
#include <climits>

namespace dtnn::cuda {

Error checkCublasBlock(const DeviceKernelSpec &s) {
  if (s.workspaceBytes >= kCublasBlockBytes) return Error::success();
  return Error::make("'" + s.kind + "' was planned with " + std::to_string(s.workspaceBytes) +
                     " bytes of workspace, fewer than cuBLAS's " + std::to_string(kCublasBlockBytes));
}

Error useCublasWorkspace(const Launch &l, void *workspace) {
  auto at = (reinterpret_cast<uintptr_t>(workspace) + 255) / 256 * 256;
  return check(cublasSetWorkspace(l.cublas, reinterpret_cast<void *>(at), kCublasWorkspaceBytes),
               "cublasSetWorkspace");
}

namespace {

template <typename T> struct CublasType;
template <> struct CublasType<float> {
  static constexpr cudaDataType data = CUDA_R_32F;
  static cublasComputeType_t compute() {
    return settings().tf32 == Tf32::All ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  }
};
template <> struct CublasType<double> {
  static constexpr cudaDataType data = CUDA_R_64F;
  static cublasComputeType_t compute() { return CUBLAS_COMPUTE_64F; }
};

} // namespace

template <typename T>
Error gemm(const Launch &l, const GemmShape &g, int64_t batch, T alpha, Strided<const T> a,
           Strided<const T> b, T beta, Strided<T> c) {
  constexpr cudaDataType type = CublasType<T>::data;
  // Column-major, cuBLAS computes C^T [n, m] = op(B)^T [n, k] op(A)^T [k, m]: B stored [k, n]
  // row-major is [n, k] column-major with leading dimension n, [n, k] row-major is transposed.
  return check(cublasGemmStridedBatchedEx(
                   l.cublas, g.tb ? CUBLAS_OP_T : CUBLAS_OP_N, g.ta ? CUBLAS_OP_T : CUBLAS_OP_N, int(g.n),
                   int(g.m), int(g.k), &alpha, b.data, type, int(g.tb ? g.k : g.n), b.stride, a.data, type,
                   int(g.ta ? g.m : g.k), a.stride, &beta, c.data, type, int(g.n), c.stride, int(batch),
                   CublasType<T>::compute(), CUBLAS_GEMM_DEFAULT),
               "cublasGemmStridedBatchedEx");
}

template Error gemm<float>(const Launch &, const GemmShape &, int64_t, float, Strided<const float>,
                           Strided<const float>, float, Strided<float>);
template Error gemm<double>(const Launch &, const GemmShape &, int64_t, double, Strided<const double>,
                            Strided<const double>, double, Strided<double>);

namespace {

// The rows of t [N, ..., K]: its elements in rows of its last dimension.
int64_t rowsOf(const ir::TensorType &t) {
  int64_t last = t.dims.back();
  return last ? elementsOf(t) / last : 0;
}

DenseAct denseActOf(const ir::Op &op) {
  std::string a = ir::fusedActivationOf(op);
  if (a == "relu") return DenseAct::Relu;
  if (a == "relu6") return DenseAct::Relu6;
  if (a == "sigmoid") return DenseAct::Sigmoid;
  if (a == "tanh") return DenseAct::Tanh;
  return DenseAct::None;
}

// y = act(x [rows, k] weight [m, k]^T + bias): the product, then the epilogue where there is a
// bias or an activation.
template <typename T> class Dense final : public DeviceOp {
public:
  explicit Dense(const DeviceKernelSpec &s)
      : shape_{rowsOf(s.in[0].type), s.in[1].type.dims[0], s.in[1].type.dims[1], false, true},
        bias_(s.in.size() > 2), act_(denseActOf(*s.op)) {}

  Error launch(const runtime::KernelArgs &a, const Launch &l) override {
    T *y = a.out[0].as<T>();
    if (Error e = useCublasWorkspace(l, a.workspace)) return e;
    if (Error e =
            gemm<T>(l, shape_, 1, T(1), {a.in[0].as<const T>(), 0}, {a.in[1].as<const T>(), 0}, T(0), {y, 0}))
      return e;
    if (!bias_ && act_ == DenseAct::None) return Error::success();
    return check(launchDenseEpilogue(y, bias_ ? a.in[2].as<const T>() : nullptr, shape_.m * shape_.n,
                                     shape_.n, act_, l.stream),
                 "dense's epilogue");
  }

private:
  GemmShape shape_;
  bool bias_;
  DenseAct act_;
};

// One product of operands 0 and 1 into result 0: dense_backward_data (dx = dy [rows, m]
// weight [m, k]) and dense_backward_weights (dweight = dy [rows, m]^T x [rows, k]).
template <typename T> class Product final : public DeviceOp {
public:
  explicit Product(const GemmShape &shape) : shape_(shape) {}

  Error launch(const runtime::KernelArgs &a, const Launch &l) override {
    if (Error e = useCublasWorkspace(l, a.workspace)) return e;
    return gemm<T>(l, shape_, 1, T(1), {a.in[0].as<const T>(), 0}, {a.in[1].as<const T>(), 0}, T(0),
                   {a.out[0].as<T>(), 0});
  }

private:
  GemmShape shape_;
};

GemmShape backwardDataShape(const DeviceKernelSpec &s) {
  const ir::TensorType &w = s.in[1].type;
  return {rowsOf(s.in[0].type), w.dims[1], w.dims[0], false, false};
}

GemmShape backwardWeightsShape(const DeviceKernelSpec &s) {
  const ir::TensorType &dy = s.in[0].type, &x = s.in[1].type;
  return {dy.dims.back(), x.dims.back(), rowsOf(dy), true, false};
}

// dbias [m] = the sum of dy [rows, m] over its rows, in as many segments of rows as the planned
// workspace holds partial rows for.
template <typename T> class DenseBackwardBias final : public DeviceOp {
public:
  explicit DenseBackwardBias(const DeviceKernelSpec &s)
      : rows_(rowsOf(s.in[0].type)), m_(s.in[0].type.dims.back()),
        segments_(std::max<int64_t>(
            1, int64_t(s.workspaceBytes / (sizeof(T) * uint64_t(std::max<int64_t>(m_, 1)))))) {}

  Error launch(const runtime::KernelArgs &a, const Launch &l) override {
    return check(launchColumnSums(a.in[0].as<const T>(), a.out[0].as<T>(), static_cast<T *>(a.workspace),
                                  rows_, m_, segments_, l.stream),
                 "dense_backward_bias");
  }

private:
  int64_t rows_, m_, segments_;
};

// Whether every group of `size` consecutive offsets steps by one stride, the same in all.
bool evenGroups(const std::vector<int64_t> &offsets, int64_t size) {
  int64_t stride = size > 1 ? offsets[1] - offsets[0] : 0;
  for (size_t i = 0; i < offsets.size(); ++i) {
    size_t first = i / size_t(size) * size_t(size);
    if (offsets[i] != offsets[first] + int64_t(i - first) * stride) return false;
  }
  return true;
}

// matmul a, b {transpose_a, transpose_b}: a strided-batched product per group of result matrices.
template <typename T> class Matmul final : public DeviceOp {
public:
  explicit Matmul(const DeviceKernelSpec &s) {
    const std::vector<int64_t> &ad = s.in[0].type.dims, &bd = s.in[1].type.dims, &yd = s.out[0].type.dims;
    shape_.ta = s.op->attrs().getBool("transpose_a");
    shape_.tb = s.op->attrs().getBool("transpose_b");
    shape_.m = yd[yd.size() - 2];
    shape_.n = yd.back();
    shape_.k = shape_.ta ? ad[ad.size() - 2] : ad.back();
    std::vector<int64_t> batch(yd.begin(), yd.end() - 2);
    offA_ = ir::batchOffsets(batch, {ad.begin(), ad.end() - 2}, shape_.m * shape_.k);
    offB_ = ir::batchOffsets(batch, {bd.begin(), bd.end() - 2}, shape_.k * shape_.n);
    // The longest groups: the trailing batch dimensions that the products can walk with strides.
    group_ = int64_t(offA_.size());
    for (size_t d = 0; !(evenGroups(offA_, group_) && evenGroups(offB_, group_)); ++d) group_ /= batch[d];
    strideA_ = group_ > 1 ? offA_[1] - offA_[0] : 0;
    strideB_ = group_ > 1 ? offB_[1] - offB_[0] : 0;
  }

  Error launch(const runtime::KernelArgs &a, const Launch &l) override {
    const T *pa = a.in[0].as<const T>(), *pb = a.in[1].as<const T>();
    T *py = a.out[0].as<T>();
    const int64_t matrix = shape_.m * shape_.n;
    if (Error e = useCublasWorkspace(l, a.workspace)) return e;
    for (size_t first = 0; first < offA_.size(); first += size_t(group_))
      if (Error e = gemm<T>(l, shape_, group_, T(1), {pa + offA_[first], strideA_},
                            {pb + offB_[first], strideB_}, T(0), {py + int64_t(first) * matrix, matrix}))
        return e;
    return Error::success();
  }

private:
  GemmShape shape_;
  std::vector<int64_t> offA_, offB_; // of each result matrix's operands
  int64_t group_ = 1, strideA_ = 0, strideB_ = 0;
};

// The maker of kernel K at the operand's element type, K made from the spec; `cublas`: K's
// workspace begins with the cuBLAS block.
template <template <typename> class K> DeviceKernelMaker makerOf(bool cublas) {
  return [cublas](const DeviceKernelSpec &s) -> Expected<std::unique_ptr<DeviceKernel>> {
    if (cublas)
      if (Error e = checkCublasBlock(s)) return e;
    switch (s.in[0].type.dtype) {
    case ir::DType::F32: return make<K<float>>(s);
    case ir::DType::F64: return make<K<double>>(s);
    default: return Error::make("the cuda " + s.kind + " takes f32 or f64, not " + s.in[0].type.str());
    }
  };
}

// The maker of a Product of the shape `shapeOf` gives.
DeviceKernelMaker productMaker(GemmShape (*shapeOf)(const DeviceKernelSpec &)) {
  return [shapeOf](const DeviceKernelSpec &s) -> Expected<std::unique_ptr<DeviceKernel>> {
    if (Error e = checkCublasBlock(s)) return e;
    switch (s.in[0].type.dtype) {
    case ir::DType::F32: return make<Product<float>>(shapeOf(s));
    case ir::DType::F64: return make<Product<double>>(shapeOf(s));
    default: return Error::make("the cuda " + s.kind + " takes f32 or f64, not " + s.in[0].type.str());
    }
  };
}

} // namespace

void registerBlasKernels(DeviceRegistry &r) {
  r.add("dense", makerOf<Dense>(true));
  r.add("dense_backward_data", productMaker(backwardDataShape));
  r.add("dense_backward_weights", productMaker(backwardWeightsShape));
  r.add("dense_backward_bias", makerOf<DenseBackwardBias>(false));
  r.add("matmul", makerOf<Matmul>(true));
}

} // namespace dtnn::cuda
