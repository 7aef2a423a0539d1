// The pooling ops on the device (kernels/Pool.h): maxpool, avgpool, their
// backward ops, global_avgpool and global_avgpool_backward. The window's
// attributes are read when the kernel is made, the sizes from each launch's
// operands.
#include "backends/cuda/device/Device.h"
#include "backends/cuda/device/kernels/Pool.h"
#include "ir/ops/ShapeUtil.h"

namespace dtnn::cuda {

namespace {

// The window of a maxpool or avgpool (or of its backward op), as the reference's poolGeom
// reads it: an empty stride is the kernel size; count_pad is true where the op has none.
PoolGeom windowOf(const ir::AttrMap &attrs) {
  auto kernel = *ir::expandInts(attrs.getInts("kernel"), 2);
  const std::vector<int64_t> &strideAttr = attrs.getInts("stride");
  auto stride = strideAttr.empty() ? kernel : *ir::expandInts(strideAttr, 2);
  auto pad = *ir::expandPad(attrs.getInts("pad"));
  PoolGeom g;
  g.kh = kernel[0], g.kw = kernel[1], g.sh = stride[0], g.sw = stride[1];
  g.padTop = pad[0], g.padLeft = pad[1], g.padBottom = pad[2], g.padRight = pad[3];
  if (const ir::AttrValue *cp = attrs.find("count_pad")) g.countPad = std::get<bool>(*cp);
  return g;
}

// The window with the sizes of x [N,C,H,W] and of y (or dy) [N,C,OH,OW].
PoolGeom sized(PoolGeom g, const runtime::TensorView &x, const runtime::TensorView &y) {
  g.planes = x.dim(0) * x.dim(1), g.h = x.dim(2), g.w = x.dim(3);
  g.oh = y.dim(2), g.ow = y.dim(3);
  return g;
}

// maxpool %x or avgpool %x {kernel, stride, pad, ceil[, count_pad]}.
template <typename T> class WindowPool final : public DeviceOp {
public:
  WindowPool(const DeviceKernelSpec &s, bool max) : window_(windowOf(s.op->attrs())), max_(max) {}

  Error launch(const runtime::KernelArgs &a, const Launch &l) override {
    PoolGeom g = sized(window_, a.in[0], a.out[0]);
    const T *x = a.in[0].as<const T>();
    T *y = a.out[0].as<T>();
    return max_ ? check(launchMaxPool<T>(x, y, g, l.stream), "maxpool")
                : check(launchAvgPool<T>(x, y, g, l.stream), "avgpool");
  }

private:
  PoolGeom window_;
  bool max_;
};

// maxpool_backward %dy, %x or avgpool_backward %dy, %x (x only for its shape) {as the forward}.
template <typename T> class WindowPoolBackward final : public DeviceOp {
public:
  WindowPoolBackward(const DeviceKernelSpec &s, bool max) : window_(windowOf(s.op->attrs())), max_(max) {}

  Error launch(const runtime::KernelArgs &a, const Launch &l) override {
    PoolGeom g = sized(window_, a.in[1], a.in[0]);
    const T *dy = a.in[0].as<const T>();
    T *dx = a.out[0].as<T>();
    if (max_)
      return check(launchMaxPoolBackward<T>(dy, a.in[1].as<const T>(), dx, g, l.stream), "maxpool_backward");
    return check(launchAvgPoolBackward<T>(dy, dx, g, l.stream), "avgpool_backward");
  }

private:
  PoolGeom window_;
  bool max_;
};

// global_avgpool %x, or global_avgpool_backward %dy, %x (x only for its shape).
template <typename T> class GlobalAvgPool final : public DeviceOp {
public:
  GlobalAvgPool(const DeviceKernelSpec &, bool backward) : backward_(backward) {}

  Error launch(const runtime::KernelArgs &a, const Launch &l) override {
    const runtime::TensorView &x = backward_ ? a.in[1] : a.in[0];
    const int64_t planes = x.dim(0) * x.dim(1), plane = x.dim(2) * x.dim(3);
    if (backward_)
      return check(launchGlobalAvgPoolBackward<T>(a.in[0].as<const T>(), a.out[0].as<T>(), planes, plane,
                                                  l.stream),
                   "global_avgpool_backward");
    return check(launchGlobalAvgPool<T>(a.in[0].as<const T>(), a.out[0].as<T>(), planes, plane, l.stream),
                 "global_avgpool");
  }

private:
  bool backward_;
};

// The maker of kernel K at the element type of the spec's operand 0 (the pooled tensor, or dy,
// which has its type).
template <template <typename> class K> DeviceKernelMaker floatMaker(bool flag) {
  return [flag](const DeviceKernelSpec &s) -> Expected<std::unique_ptr<DeviceKernel>> {
    if (!s.op || s.in.empty()) return Error::make("a pooling kernel without its op");
    switch (s.in[0].type.dtype) {
    case ir::DType::F32: return make<K<float>>(s, flag);
    case ir::DType::F64: return make<K<double>>(s, flag);
    default: return Error::make("the cuda " + s.kind + " takes f32 or f64, not " + s.in[0].type.str());
    }
  };
}

} // namespace

void registerPoolKernels(DeviceRegistry &r) {
  r.add("maxpool", floatMaker<WindowPool>(true));
  r.add("avgpool", floatMaker<WindowPool>(false));
  r.add("maxpool_backward", floatMaker<WindowPoolBackward>(true));
  r.add("avgpool_backward", floatMaker<WindowPoolBackward>(false));
  r.add("global_avgpool", floatMaker<GlobalAvgPool>(false));
  r.add("global_avgpool_backward", floatMaker<GlobalAvgPool>(true));
}

} // namespace dtnn::cuda
