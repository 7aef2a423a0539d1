// oneDNN kernels of the activations (ir/ops/Activation.cpp), their backward
// ops, the softmax family, and scale. Each takes its input in the layout it
// arrives in and gives its result in the same one; a backward op wants dy in
// the layout of the saved forward value. oneDNN has no hard sigmoid in 2.6,
// so that one goes to the reference backend, and so does hard swish's
// gradient: at exactly x = -3 and x = 3 oneDNN's derivative takes the other
// side's value than PyTorch's (and the reference backend's).
#include "backends/onednn/Primitives.h"
#include "ir/ops/FusedActivation.h"

#include <map>

namespace dtnn::onednn {

namespace {

using dnnl::algorithm;
using dnnl::prop_kind;

struct Eltwise {
  algorithm forward, backward; // backward: the variant that matches the saved value
  float alpha = 0, beta = 0;
};

// The eltwise algorithm of activation `name` at attributes `a`. The backward
// ops save x, except sigmoid's and tanh's, which save y (docs/ops.md).
Eltwise eltwiseOf(const std::string &name, const ir::AttrMap &a) {
  if (name == "relu") return {algorithm::eltwise_relu, algorithm::eltwise_relu};
  if (name == "leaky_relu") {
    float alpha = static_cast<float>(a.getFloat("alpha"));
    return {algorithm::eltwise_relu, algorithm::eltwise_relu, alpha};
  }
  if (name == "relu6") return {algorithm::eltwise_clip_v2, algorithm::eltwise_clip_v2, 0, 6};
  if (name == "sigmoid")
    return {algorithm::eltwise_logistic, algorithm::eltwise_logistic_use_dst_for_bwd};
  if (name == "tanh") return {algorithm::eltwise_tanh, algorithm::eltwise_tanh_use_dst_for_bwd};
  if (name == "silu") return {algorithm::eltwise_swish, algorithm::eltwise_swish, 1};
  if (name == "hard_swish") return {algorithm::eltwise_hardswish, algorithm::eltwise_hardswish};
  if (name == "gelu") {
    algorithm g = a.getString("approximate") == "tanh" ? algorithm::eltwise_gelu_tanh
                                                        : algorithm::eltwise_gelu_erf;
    return {g, g};
  }
  // scale
  return {algorithm::eltwise_linear, algorithm::eltwise_linear,
          static_cast<float>(a.getFloat("factor"))};
}

// The same for an activation op or its backward op.
Eltwise eltwiseOf(const ir::Op &op) {
  std::string name = op.name();
  if (name.ends_with("_backward")) name.resize(name.size() - 9);
  return eltwiseOf(name, op.attrs());
}

// y = f(x), in x's layout.
class EltwiseForward : public PrimitiveKernel {
public:
  explicit EltwiseForward(const KernelRequest &r) : PrimitiveKernel(r) {
    Eltwise e = eltwiseOf(r.op);
    memory::desc md = descOf(r.in[0], dimsOf(r.in[0].type));
    dnnl::eltwise_forward::desc d(prop_kind::forward_training, e.forward, md, e.alpha, e.beta);
    dnnl::eltwise_forward::primitive_desc pd(d, userScratchpad(), engine());
    setDesc(pd);
    use(DNNL_ARG_SRC, 0, pd.src_desc());
    give(DNNL_ARG_DST, 0, pd.dst_desc());
  }
};

// dx = f'(saved) * dy, in the saved value's layout.
class EltwiseBackward : public PrimitiveKernel {
public:
  explicit EltwiseBackward(const KernelRequest &r) : PrimitiveKernel(r) {
    Eltwise e = eltwiseOf(r.op);
    memory::desc md = descOf(r.in[1], dimsOf(r.in[1].type));
    dnnl::eltwise_forward::primitive_desc hint(
        {prop_kind::forward_training, e.backward, md, e.alpha, e.beta}, engine());
    dnnl::eltwise_backward::desc d(e.backward, md, md, e.alpha, e.beta);
    dnnl::eltwise_backward::primitive_desc pd(d, userScratchpad(), engine(), hint);
    setDesc(pd);
    bool usesDst = e.backward == algorithm::eltwise_logistic_use_dst_for_bwd ||
                   e.backward == algorithm::eltwise_tanh_use_dst_for_bwd;
    use(DNNL_ARG_DIFF_DST, 0, pd.diff_dst_desc());
    use(usesDst ? DNNL_ARG_DST : DNNL_ARG_SRC, 1, md);
    give(DNNL_ARG_DIFF_SRC, 0, pd.diff_src_desc());
  }
};

int64_t softmaxAxis(const ir::Op &op, size_t rank) {
  int64_t axis = op.attrs().getInt("axis");
  return axis < 0 ? axis + static_cast<int64_t>(rank) : axis;
}

algorithm softmaxAlgorithm(const ir::Op &op) {
  return op.name().starts_with("log_") ? algorithm::softmax_log : algorithm::softmax_accurate;
}

// y = softmax(x) or log_softmax(x) along the axis.
class SoftmaxForward : public PrimitiveKernel {
public:
  explicit SoftmaxForward(const KernelRequest &r) : PrimitiveKernel(r) {
    memory::desc md = descOf(r.in[0], dimsOf(r.in[0].type));
    int axis = static_cast<int>(softmaxAxis(r.op, r.in[0].type.rank()));
    dnnl::softmax_v2_forward::desc d(prop_kind::forward_training, softmaxAlgorithm(r.op), md, md,
                                     axis);
    dnnl::softmax_v2_forward::primitive_desc pd(d, userScratchpad(), engine());
    setDesc(pd);
    use(DNNL_ARG_SRC, 0, pd.src_desc());
    give(DNNL_ARG_DST, 0, pd.dst_desc());
  }
};

// dx from dy and the forward result y, in y's layout.
class SoftmaxBackward : public PrimitiveKernel {
public:
  explicit SoftmaxBackward(const KernelRequest &r) : PrimitiveKernel(r) {
    memory::desc md = descOf(r.in[1], dimsOf(r.in[1].type));
    int axis = static_cast<int>(softmaxAxis(r.op, r.in[1].type.rank()));
    algorithm alg = softmaxAlgorithm(r.op);
    dnnl::softmax_v2_forward::primitive_desc hint(
        {prop_kind::forward_training, alg, md, md, axis}, engine());
    dnnl::softmax_v2_backward::desc d(alg, md, md, md, axis);
    dnnl::softmax_v2_backward::primitive_desc pd(d, userScratchpad(), engine(), hint);
    setDesc(pd);
    use(DNNL_ARG_DIFF_DST, 0, pd.diff_dst_desc());
    use(DNNL_ARG_DST, 1, pd.dst_desc());
    give(DNNL_ARG_DIFF_SRC, 0, pd.diff_src_desc());
  }
};

} // namespace

dnnl::primitive_attr withFusedActivation(dnnl::primitive_attr attr, const ir::Op &op) {
  std::string act = ir::fusedActivationOf(op);
  bool residual = ir::hasResidual(op);
  if (act.empty() && !residual) return attr;
  dnnl::post_ops post;
  if (residual) post.append_sum(1.0f);
  if (!act.empty()) {
    Eltwise e = eltwiseOf(act, {});
    post.append_eltwise(1.0f, e.forward, e.alpha, e.beta);
  }
  attr.set_post_ops(post);
  return attr;
}

// eltwiseOf maps every activation that fuses (ir/ops/FusedActivation.h).
bool claimsFusedActivation(const ir::Op &op, const std::vector<ir::TensorType> &) {
  std::string act = ir::fusedActivationOf(op);
  return act.empty() || ir::isFusableActivation(act);
}

void registerEltwiseKernels(KernelList &r) {
  for (const char *op : {"relu", "leaky_relu", "relu6", "sigmoid", "tanh", "silu", "hard_swish",
                         "gelu"}) {
    add(r, op, maker<EltwiseForward>(), nullptr, withBf16());
    if (std::string(op) != "hard_swish")
      add(r, std::string(op) + "_backward", maker<EltwiseBackward>(), nullptr, withBf16());
  }
  add(r, "scale", maker<EltwiseForward>(), nullptr, withBf16());
  for (const char *op : {"softmax", "log_softmax"}) {
    add(r, op, maker<SoftmaxForward>());
    add(r, std::string(op) + "_backward", maker<SoftmaxBackward>());
  }
}

} // namespace dtnn::onednn
