// oneDNN kernels of the convolution ops (ir/ops/Conv.cpp): the forward
// convolution, its data and weight gradients, and the bias gradient (a sum
// reduction). Grouped convolutions, depthwise ones included, have 5-d
// weights {G, K/G, C/G, KH, KW} in oneDNN, whose plain layout is the IR's
// [K, C/G, KH, KW].
#include "backends/onednn/Primitives.h"
#include "ir/ops/FusedActivation.h"
#include "ir/ops/ShapeUtil.h"

namespace dtnn::onednn {

namespace {

using dnnl::algorithm;
using dnnl::prop_kind;

struct ConvGeometry {
  memory::dims x, w, y, strides, dilates, padL, padR;
  bool grouped = false;
  memory::data_type dt; // the data's (f32 or bf16); oneDNN accumulates in f32 either way

  ConvGeometry(const ir::AttrMap &a, const ir::TensorType &xt, const ir::TensorType &wt,
               const ir::TensorType &yt) {
    auto stride = *ir::expandInts(a.getInts("stride"), 2);
    auto pad = *ir::expandPad(a.getInts("pad"));
    auto dil = *ir::expandInts(a.getInts("dilation"), 2);
    int64_t groups = a.getInt("groups");
    dt = dataTypeOf(xt.dtype);
    x = dimsOf(xt);
    y = dimsOf(yt);
    w = dimsOf(wt);
    if (groups > 1) {
      grouped = true;
      w = {groups, wt.dims[0] / groups, wt.dims[1], wt.dims[2], wt.dims[3]};
    }
    strides = {stride[0], stride[1]};
    dilates = {dil[0] - 1, dil[1] - 1};
    padL = {pad[0], pad[1]};
    padR = {pad[2], pad[3]};
  }
  dnnl::convolution_forward::desc forward(const memory::desc &src, const memory::desc &wts,
                                          const memory::desc &bias,
                                          const memory::desc &dst) const {
    return {prop_kind::forward_training, algorithm::convolution_direct, src, wts, bias, dst,
            strides, dilates, padL, padR};
  }
  // The forward descriptor backward primitives take as a hint.
  dnnl::convolution_forward::primitive_desc hint() const {
    return {forward(anyDesc(x, dt), anyDesc(w, dt), memory::desc(), anyDesc(y, dt)), engine()};
  }
};

// y = act(conv2d(x, w) + bias [+ residual]), the residual as a sum post-op
// and the activation as an eltwise post-op. The residual arrives in the
// result's layout; when the result did not take its storage, it is copied
// there first.
class ConvForward : public PrimitiveKernel {
public:
  explicit ConvForward(const KernelRequest &r) : PrimitiveKernel(r) {
    ConvGeometry g(r.op.attrs(), r.in[0].type, r.in[1].type, r.out[0]);
    size_t layer = ir::layerOperandCount(r.op);
    bool bias = layer > 2;
    memory::desc b = bias ? plainDesc({r.in[1].type.dims[0]}, g.dt) : memory::desc();
    auto pd = preferArriving<dnnl::convolution_forward::primitive_desc>(
        {{&r.in[0], g.x}, {&r.in[1], g.w}}, [&](const std::vector<memory::desc> &md) {
          return dnnl::convolution_forward::primitive_desc(
              g.forward(md[0], md[1], b, anyDesc(g.y, g.dt)),
              withFusedActivation(userScratchpad(), r.op),
              engine());
        });
    setDesc(pd);
    use(DNNL_ARG_SRC, 0, pd.src_desc());
    use(DNNL_ARG_WEIGHTS, 1, pd.weights_desc());
    if (bias) use(DNNL_ARG_BIAS, 2, b);
    give(DNNL_ARG_DST, 0, pd.dst_desc());
    if (ir::hasResidual(r.op)) {
      residual_ = layer;
      in_[layer] = bufferOf(pd.dst_desc(), in_[layer].type);
      from_ = memory(pd.dst_desc(), engine(), DNNL_MEMORY_NONE);
      to_ = memory(pd.dst_desc(), engine(), DNNL_MEMORY_NONE);
      copy_ = dnnl::reorder(from_, to_);
    }
  }

private:
  void before(const KernelArgs &a) override {
    if (!residual_ || a.in[residual_].data == a.out[0].data) return;
    from_.set_data_handle(a.in[residual_].data);
    to_.set_data_handle(a.out[0].data);
    copy_.execute(stream(), from_, to_);
  }
  size_t residual_ = 0; // the residual's operand index, 0 without one
  memory from_, to_;
  dnnl::reorder copy_;
};

// dx = conv2d_backward_data(dy, w, x); x gives the shape only.
class ConvBackwardData : public PrimitiveKernel {
public:
  explicit ConvBackwardData(const KernelRequest &r) : PrimitiveKernel(r) {
    ConvGeometry g(r.op.attrs(), r.in[2].type, r.in[1].type, r.in[0].type);
    auto hint = g.hint();
    auto pd = preferArriving<dnnl::convolution_backward_data::primitive_desc>(
        {{&r.in[0], g.y}, {&r.in[1], g.w}}, [&](const std::vector<memory::desc> &md) {
          dnnl::convolution_backward_data::desc d(algorithm::convolution_direct, anyDesc(g.x, g.dt),
                                                  md[1], md[0], g.strides, g.dilates, g.padL,
                                                  g.padR);
          return dnnl::convolution_backward_data::primitive_desc(d, userScratchpad(), engine(),
                                                                 hint);
        });
    setDesc(pd);
    use(DNNL_ARG_DIFF_DST, 0, pd.diff_dst_desc());
    use(DNNL_ARG_WEIGHTS, 1, pd.weights_desc());
    in_[2] = r.in[2];
    give(DNNL_ARG_DIFF_SRC, 0, pd.diff_src_desc());
  }
};

// dw = conv2d_backward_weights(dy, x, w); w gives the shape and, when it is
// in a oneDNN layout already, the layout dw is wanted in (the update's).
class ConvBackwardWeights : public PrimitiveKernel {
public:
  explicit ConvBackwardWeights(const KernelRequest &r) : PrimitiveKernel(r) {
    ConvGeometry g(r.op.attrs(), r.in[1].type, r.in[2].type, r.in[0].type);
    auto hint = g.hint();
    auto pd = preferArriving<dnnl::convolution_backward_weights::primitive_desc>(
        {{&r.in[0], g.y}, {&r.in[1], g.x}, {&r.in[2], g.w}},
        [&](const std::vector<memory::desc> &md) {
          dnnl::convolution_backward_weights::desc d(algorithm::convolution_direct, md[1], md[2],
                                                     md[0], g.strides, g.dilates, g.padL,
                                                     g.padR);
          return dnnl::convolution_backward_weights::primitive_desc(d, userScratchpad(),
                                                                    engine(), hint);
        });
    setDesc(pd);
    use(DNNL_ARG_DIFF_DST, 0, pd.diff_dst_desc());
    use(DNNL_ARG_SRC, 1, pd.src_desc());
    in_[2] = r.in[2];
    give(DNNL_ARG_DIFF_WEIGHTS, 0, pd.diff_weights_desc());
  }
};

} // namespace

void registerConvKernels(KernelList &r) {
  add(r, "conv2d", maker<ConvForward>(), claimsFusedActivation, withBf16());
  add(r, "conv2d_backward_data", maker<ConvBackwardData>(), nullptr, withBf16());
  add(r, "conv2d_backward_weights", maker<ConvBackwardWeights>(), nullptr, withBf16());
  add(r, "conv2d_backward_bias", maker<SumToChannels>());
}

} // namespace dtnn::onednn
