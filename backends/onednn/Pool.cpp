// oneDNN kernels of the pooling ops (ir/ops/Pool.cpp): max, average and
// global average pooling and their gradients. They take their input in the
// layout it arrives in. oneDNN's max pooling gradient needs the forward
// pass's workspace (where each maximum was), which the IR does not carry:
// maxpool_backward recomputes the forward pass into temporaries first.
// Windows in ceil mode go to the reference backend.
#include "backends/onednn/Primitives.h"
#include "ir/ops/ShapeUtil.h"

namespace dtnn::onednn {

namespace {

using dnnl::algorithm;
using dnnl::prop_kind;

struct PoolGeometry {
  memory::dims x, y, kernel, strides, dilation = {0, 0}, padL, padR;
  algorithm alg;

  // From the op's attributes; global pooling covers the whole plane.
  PoolGeometry(const ir::Op &op, const ir::TensorType &xt, const ir::TensorType &yt) {
    x = dimsOf(xt);
    y = dimsOf(yt);
    const std::string &name = op.name();
    if (name.starts_with("global_avgpool")) {
      kernel = {x[2], x[3]};
      strides = {1, 1};
      padL = padR = {0, 0};
      alg = algorithm::pooling_avg_exclude_padding;
      return;
    }
    const ir::AttrMap &a = op.attrs();
    auto k = *ir::expandInts(a.getInts("kernel"), 2);
    const std::vector<int64_t> &s = a.getInts("stride");
    auto stride = s.empty() ? k : *ir::expandInts(s, 2);
    auto pad = *ir::expandPad(a.getInts("pad"));
    kernel = {k[0], k[1]};
    strides = {stride[0], stride[1]};
    padL = {pad[0], pad[1]};
    padR = {pad[2], pad[3]};
    if (name.starts_with("maxpool"))
      alg = algorithm::pooling_max;
    else
      alg = a.getBool("count_pad") ? algorithm::pooling_avg_include_padding
                                   : algorithm::pooling_avg_exclude_padding;
  }
  dnnl::pooling_v2_forward::desc forward(prop_kind prop, const memory::desc &src,
                                         const memory::desc &dst) const {
    return {prop, alg, src, dst, strides, kernel, dilation, padL, padR};
  }
  dnnl::pooling_v2_forward::primitive_desc forwardPd(prop_kind prop, const memory::desc &src) const {
    return {forward(prop, src, anyDesc(y, src.data_type())), userScratchpad(), engine()};
  }
};

// The op's result or gradient as 4-d dims (global pooling gives [N,C,1,1]).
class PoolForward : public PrimitiveKernel {
public:
  explicit PoolForward(const KernelRequest &r) : PrimitiveKernel(r) {
    PoolGeometry g(r.op, r.in[0].type, r.out[0]);
    auto pd = g.forwardPd(prop_kind::forward_inference, descOf(r.in[0], g.x));
    setDesc(pd);
    use(DNNL_ARG_SRC, 0, pd.src_desc());
    give(DNNL_ARG_DST, 0, pd.dst_desc());
  }
};

// dx = avgpool_backward(dy, x) or global_avgpool_backward(dy, x): x gives
// the shape only.
class AvgPoolBackward : public PrimitiveKernel {
public:
  explicit AvgPoolBackward(const KernelRequest &r) : PrimitiveKernel(r) {
    PoolGeometry g(r.op, r.in[1].type, r.in[0].type);
    // Forward pooling wants a concrete source layout: dy's, at x's dims.
    memory::desc dy = descOf(r.in[0], g.y), x = sameLayout(dy, g.x);
    auto hint = g.forwardPd(prop_kind::forward_training, x);
    dnnl::pooling_v2_backward::desc d(g.alg, x, dy, g.strides, g.kernel, g.dilation, g.padL,
                                      g.padR);
    dnnl::pooling_v2_backward::primitive_desc pd(d, userScratchpad(), engine(), hint);
    setDesc(pd);
    use(DNNL_ARG_DIFF_DST, 0, pd.diff_dst_desc());
    in_[1] = r.in[1];
    give(DNNL_ARG_DIFF_SRC, 0, pd.diff_src_desc());
  }
};

// dx = maxpool_backward(dy, x): the forward pass (training, with its
// workspace) into temporaries, then the gradient from that workspace.
class MaxPoolBackward : public PrimitiveKernel {
public:
  explicit MaxPoolBackward(const KernelRequest &r) : PrimitiveKernel(r) {
    PoolGeometry g(r.op, r.in[1].type, r.in[0].type);
    auto fwd = g.forwardPd(prop_kind::forward_training, descOf(r.in[1], g.x));
    size_t y = temp(fwd.dst_desc()), ws = temp(fwd.workspace_desc());
    setDesc(fwd);
    use(DNNL_ARG_SRC, 1, fwd.src_desc());
    argTemp(DNNL_ARG_DST, y);
    argTemp(DNNL_ARG_WORKSPACE, ws);
    dnnl::pooling_v2_backward::desc d(g.alg, fwd.src_desc(), fwd.dst_desc(), g.strides, g.kernel,
                                      g.dilation, g.padL, g.padR);
    dnnl::pooling_v2_backward::primitive_desc pd(d, userScratchpad(), engine(), fwd);
    setDesc(pd);
    use(DNNL_ARG_DIFF_DST, 0, pd.diff_dst_desc());
    argTemp(DNNL_ARG_WORKSPACE, ws);
    give(DNNL_ARG_DIFF_SRC, 0, pd.diff_src_desc());
  }
};

// Pooling in ceil mode is left to the reference backend.
bool notCeil(const ir::Op &op, const std::vector<ir::TensorType> &) {
  const ir::AttrValue *ceil = op.attrs().find("ceil");
  return !ceil || !std::get<bool>(*ceil);
}

} // namespace

void registerPoolKernels(KernelList &r) {
  add(r, "maxpool", maker<PoolForward>(), notCeil, withBf16());
  add(r, "avgpool", maker<PoolForward>(), notCeil, withBf16());
  add(r, "global_avgpool", maker<PoolForward>(), nullptr, withBf16());
  add(r, "maxpool_backward", maker<MaxPoolBackward>(), notCeil, withBf16());
  add(r, "avgpool_backward", maker<AvgPoolBackward>(), notCeil, withBf16());
  add(r, "global_avgpool_backward", maker<AvgPoolBackward>(), nullptr, withBf16());
}

} // namespace dtnn::onednn
