// layernorm and layernorm_backward on the device (kernels/LayerNorm.h): x is
// split into rows of its last `axes` dimensions and the launch geometry fixed
// when the kernel is made. With gamma, the backward's workspace holds each
// row's mean and invstd (two doubles a row), then the partial column sums of
// dgamma and dbeta (two doubles per segment and column) in as many segments
// of rows as the planned workspace has room for; without gamma, dgamma and
// dbeta are zero and no workspace is needed.
#include "backends/cuda/device/Device.h"
#include "backends/cuda/device/kernels/LayerNorm.h"

namespace dtnn::cuda {

namespace {

// The geometry of `x` normalized over its last `axes` attribute dimensions.
LayerNormPlan planOf(const DeviceKernelSpec &s, const ir::TensorType &x) {
  int64_t axes = s.op->attrs().getInt("axes"), width = 1;
  for (size_t d = x.rank() - size_t(axes); d < x.rank(); ++d) width *= x.dims[d];
  int64_t rows = width ? elementsOf(x) / width : 0;
  return planLayerNorm(rows, width, s.op->attrs().getFloat("eps"), deviceInfo().multiprocessors);
}

// layernorm %x [, @gamma, @beta] {axes, eps}.
template <typename T> class LayerNorm final : public DeviceOp {
public:
  explicit LayerNorm(const DeviceKernelSpec &s) : plan_(planOf(s, s.in[0].type)), affine_(s.in.size() == 3) {}

  Error launch(const runtime::KernelArgs &a, const Launch &l) override {
    const T *gamma = affine_ ? a.in[1].as<const T>() : nullptr,
            *beta = affine_ ? a.in[2].as<const T>() : nullptr;
    return check(launchLayerNorm(a.in[0].as<const T>(), gamma, beta, a.out[0].as<T>(), plan_, l.stream),
                 "layernorm");
  }

private:
  LayerNormPlan plan_;
  bool affine_;
};

// layernorm_backward %dy, %x [, @gamma] {axes, eps}: dx, dgamma, dbeta.
template <typename T> class LayerNormBackward final : public DeviceOp {
public:
  explicit LayerNormBackward(const DeviceKernelSpec &s, int64_t segments)
      : plan_(planOf(s, s.in[1].type)), affine_(s.in.size() == 3), segments_(segments) {}

  Error launch(const runtime::KernelArgs &a, const Launch &l) override {
    const T *dy = a.in[0].as<const T>(), *x = a.in[1].as<const T>();
    const T *gamma = affine_ ? a.in[2].as<const T>() : nullptr;
    T *dgamma = a.out[1].as<T>(), *dbeta = a.out[2].as<T>();
    double *stats = affine_ ? static_cast<double *>(a.workspace) : nullptr;
    if (Error e = check(launchLayerNormBackward(dy, x, gamma, a.out[0].as<T>(), stats, plan_, l.stream),
                        "layernorm_backward"))
      return e;
    if (affine_)
      return check(launchLayerNormParamGrads(dy, x, stats, dgamma, dbeta, stats + 2 * plan_.rows, plan_.rows,
                                             plan_.width, segments_, l.stream),
                   "layernorm_backward (dgamma, dbeta)");
    // No affine parameters: their gradients are zero (all bits clear in f32 and f64).
    size_t bytes = size_t(plan_.width) * sizeof(T);
    if (Error e = check(cudaMemsetAsync(dgamma, 0, bytes, l.stream), "cudaMemsetAsync")) return e;
    return check(cudaMemsetAsync(dbeta, 0, bytes, l.stream), "cudaMemsetAsync");
  }

private:
  LayerNormPlan plan_;
  bool affine_;
  int64_t segments_;
};

template <template <typename> class K, typename... A>
Expected<std::unique_ptr<DeviceKernel>> makeAt(const DeviceKernelSpec &s, ir::DType dtype, A... a) {
  switch (dtype) {
  case ir::DType::F32: return make<K<float>>(s, a...);
  case ir::DType::F64: return make<K<double>>(s, a...);
  default:
    return Error::make("the cuda " + s.kind + " takes f32 or f64, not " + std::string(ir::dtypeName(dtype)));
  }
}

Expected<std::unique_ptr<DeviceKernel>> makeLayerNorm(const DeviceKernelSpec &s) {
  return makeAt<LayerNorm>(s, s.in[0].type.dtype);
}

// The backward with the segments of rows its planned workspace holds partial sums for.
Expected<std::unique_ptr<DeviceKernel>> makeLayerNormBackward(const DeviceKernelSpec &s) {
  int64_t segments = 0;
  if (s.in.size() == 3) {
    LayerNormPlan p = planOf(s, s.in[1].type);
    uint64_t stats = uint64_t(p.rows) * 2 * sizeof(double),
             perSegment = uint64_t(p.width) * 2 * sizeof(double);
    if (s.workspaceBytes > stats && perSegment) segments = int64_t((s.workspaceBytes - stats) / perSegment);
    if (segments < 1 || segments > 65535)
      return Error::make(
          "'layernorm_backward' was planned with " + std::to_string(s.workspaceBytes) +
          " bytes of workspace, which do not hold the rows' statistics and 1 to 65535 segments "
          "of partial sums");
  }
  return makeAt<LayerNormBackward>(s, s.in[0].type.dtype, segments);
}

} // namespace

void registerLayerNormKernels(DeviceRegistry &r) {
  r.add("layernorm", makeLayerNorm);
  r.add("layernorm_backward", makeLayerNormBackward);
}

} // namespace dtnn::cuda
