// oneDNN kernels of batch normalization (ir/ops/Norm.cpp), over [N,C] or
// [N,C,H,W] in the layout the input arrives in, and of batchnorm_fold. The IR keeps the batch's
// mean and 1/sqrt(var + eps) for the gradient, oneDNN the mean and the
// variance: batchnorm_train turns the variance into invstd (and updates the
// running statistics) after the primitive, and batchnorm_backward turns
// invstd back into a variance with eps the smallest normal float, so that
// oneDNN's 1/sqrt(var + eps) is the same invstd without cancellation (var is
// at least the forward eps, so adding it changes nothing). The eps is not 0:
// in a channel-blocked layout whose channels do not fill the last block,
// oneDNN computes the padded channels too, with variance 0, and 1/sqrt(0)
// would write NaN there, which the next convolution's gradient reads. A fused ReLU (act="relu") is
// oneDNN's fuse_norm_relu flag; the gradient takes relu_backward from the
// result (ir/ops/FusedActivation.h), so the flag's workspace of training
// serves the primitive only.
#include "backends/onednn/Primitives.h"
#include "ir/ops/FusedActivation.h"

#include <cmath>
#include <limits>

namespace dtnn::onednn {

namespace {

using dnnl::normalization_flags;
using dnnl::prop_kind;

const normalization_flags kAffine = normalization_flags::use_scale | normalization_flags::use_shift;

// The affine flags, with fuse_norm_relu when the op has a fused ReLU.
normalization_flags forwardFlags(const ir::Op &op) {
  return ir::fusedActivationOf(op) == "relu" ? kAffine | normalization_flags::fuse_norm_relu
                                             : kAffine;
}

// oneDNN fuses only ReLU into batch norm.
bool claimsNormActivation(const ir::Op &op) {
  std::string act = ir::fusedActivationOf(op);
  return act.empty() || act == "relu";
}

// oneDNN's scale, shift and statistics are float32, whatever the data's type (f32 or bf16): the
// operands after the data (after dy and x for a gradient) must be.
bool perChannelFloat32(const ir::Op &op, const std::vector<ir::TensorType> &in) {
  size_t first = op.name().starts_with("batchnorm_backward") ? 2 : 1;
  for (size_t i = first; i < in.size(); ++i)
    if (in[i].dtype != ir::DType::F32) return false;
  return true;
}

dnnl::batch_normalization_forward::primitive_desc forwardPd(prop_kind prop,
                                                             const memory::desc &md, float eps,
                                                             normalization_flags flags) {
  return {{prop, md, eps, flags}, userScratchpad(), engine()};
}

// y = (x - mean) / sqrt(var + eps) * gamma + beta, with the running statistics.
class BatchNormInference : public PrimitiveKernel {
public:
  explicit BatchNormInference(const KernelRequest &r) : PrimitiveKernel(r) {
    memory::desc md = descOf(r.in[0], dimsOf(r.in[0].type));
    float eps = static_cast<float>(r.op.attrs().getFloat("eps"));
    auto pd = forwardPd(prop_kind::forward_inference, md, eps,
                        forwardFlags(r.op) | normalization_flags::use_global_stats);
    setDesc(pd);
    memory::desc c = plainDesc({r.in[0].type.dims[1]});
    use(DNNL_ARG_SRC, 0, pd.src_desc());
    use(DNNL_ARG_SCALE, 1, c);
    use(DNNL_ARG_SHIFT, 2, c);
    use(DNNL_ARG_MEAN, 3, c);
    use(DNNL_ARG_VARIANCE, 4, c);
    give(DNNL_ARG_DST, 0, pd.dst_desc());
  }
};

// (y, mean, invstd) with batch statistics; the running mean and variance
// (operands 3 and 4, written in place) move toward them as in PyTorch.
class BatchNormTrain : public PrimitiveKernel {
public:
  explicit BatchNormTrain(const KernelRequest &r) : PrimitiveKernel(r) {
    memory::desc md = descOf(r.in[0], dimsOf(r.in[0].type));
    eps_ = r.op.attrs().getFloat("eps");
    momentum_ = r.op.attrs().getFloat("momentum");
    channels_ = r.in[0].type.dims[1];
    count_ = r.in[0].type.staticElements() / channels_;
    auto pd = forwardPd(prop_kind::forward_training, md, static_cast<float>(eps_),
                        forwardFlags(r.op));
    setDesc(pd);
    memory::desc c = plainDesc({channels_});
    var_ = temp(c);
    if (pd.workspace_desc().get_size() > 0) argTemp(DNNL_ARG_WORKSPACE, temp(pd.workspace_desc()));
    use(DNNL_ARG_SRC, 0, pd.src_desc());
    use(DNNL_ARG_SCALE, 1, c);
    use(DNNL_ARG_SHIFT, 2, c);
    give(DNNL_ARG_DST, 0, pd.dst_desc());
    argOut(DNNL_ARG_MEAN, 1, c);
    argTemp(DNNL_ARG_VARIANCE, var_);
  }

private:
  void after(const KernelArgs &a) override {
    const float *mean = a.out[1].as<float>(), *var = tempData(a, var_);
    float *invstd = a.out[2].as<float>();
    float *runMean = a.in[3].as<float>(), *runVar = a.in[4].as<float>();
    double unbias = count_ > 1 ? double(count_) / double(count_ - 1) : 1.0;
    for (int64_t c = 0; c < channels_; ++c) {
      invstd[c] = static_cast<float>(1 / std::sqrt(double(var[c]) + eps_));
      runMean[c] = static_cast<float>((1 - momentum_) * runMean[c] + momentum_ * mean[c]);
      runVar[c] = static_cast<float>((1 - momentum_) * runVar[c] + momentum_ * var[c] * unbias);
    }
  }
  double eps_ = 0, momentum_ = 0;
  int64_t channels_ = 0, count_ = 0;
  size_t var_ = 0;
};

// (dx, dgamma, dbeta) of batchnorm_train from dy, x, gamma, mean and invstd,
// or of inference batchnorm from dy, x, gamma, mean and var (frozen).
class BatchNormBackward : public PrimitiveKernel {
public:
  explicit BatchNormBackward(const KernelRequest &r) : PrimitiveKernel(r) {
    frozen_ = r.op.name() == "batchnorm_backward_frozen";
    memory::desc md = descOf(r.in[1], dimsOf(r.in[1].type));
    float eps = frozen_ ? static_cast<float>(r.op.attrs().getFloat("eps"))
                        : std::numeric_limits<float>::min();
    normalization_flags flags = frozen_ ? kAffine | normalization_flags::use_global_stats : kAffine;
    auto hint = forwardPd(prop_kind::forward_training, md, eps, flags);
    dnnl::batch_normalization_backward::desc d(prop_kind::backward, md, md, eps, flags);
    dnnl::batch_normalization_backward::primitive_desc pd(d, userScratchpad(), engine(), hint);
    setDesc(pd);
    channels_ = r.in[1].type.dims[1];
    memory::desc c = plainDesc({channels_});
    use(DNNL_ARG_DIFF_DST, 0, pd.diff_dst_desc());
    use(DNNL_ARG_SRC, 1, pd.src_desc());
    use(DNNL_ARG_SCALE, 2, c);
    // oneDNN asks for the shift too, though the gradient does not read it.
    argTemp(DNNL_ARG_SHIFT, temp(c));
    use(DNNL_ARG_MEAN, 3, c);
    if (frozen_) {
      use(DNNL_ARG_VARIANCE, 4, c);
    } else {
      var_ = temp(c); // from invstd (operand 4, plain), by before()
      argTemp(DNNL_ARG_VARIANCE, var_);
    }
    give(DNNL_ARG_DIFF_SRC, 0, pd.diff_src_desc());
    argOut(DNNL_ARG_DIFF_SCALE, 1, c);
    argOut(DNNL_ARG_DIFF_SHIFT, 2, c);
  }

private:
  void before(const KernelArgs &a) override {
    if (frozen_) return;
    const float *invstd = a.in[4].as<float>();
    float *var = tempData(a, var_);
    for (int64_t c = 0; c < channels_; ++c) var[c] = 1.f / (invstd[c] * invstd[c]);
  }
  bool frozen_ = false;
  int64_t channels_ = 0;
  size_t var_ = 0;
};

// batchnorm_fold in the weight's own layout: s = gamma / sqrt(var + eps)
// per output channel (computed on the host, as the reference kernel does),
// then w' = w * s by a reorder with per-channel output scales, from the
// layout the weight arrives in to the same one, so that the folded weight
// reaches the convolution without a layout conversion; b' = (bias - mean) *
// s + beta, plain. A grouped convolution's weight is 5-d {G, K/G, ...} in
// oneDNN: its output channels span the first two dims.
class BatchNormFold : public PrimitiveKernel {
public:
  explicit BatchNormFold(const KernelRequest &r) : PrimitiveKernel(r) {
    memory::desc w = descOf(r.in[0], dimsOf(r.in[0].type));
    channels_ = r.in[0].type.dims[0];
    eps_ = static_cast<float>(r.op.attrs().getFloat("eps"));
    bias_ = r.in.size() > 5;
    dnnl::primitive_attr attr = userScratchpad();
    attr.set_output_scales(w.dims().size() == 5 ? 0b11 : 0b1, {DNNL_RUNTIME_F32_VAL});
    dnnl::reorder::primitive_desc pd(engine(), w, engine(), w, attr);
    setDesc(pd);
    use(DNNL_ARG_FROM, 0, w);
    give(DNNL_ARG_TO, 0, w);
    scales_ = temp(plainDesc({channels_}));
    argTemp(DNNL_ARG_ATTR_OUTPUT_SCALES, scales_);
  }

private:
  void before(const KernelArgs &a) override {
    const float *gamma = a.in[1].as<float>(), *beta = a.in[2].as<float>();
    const float *mean = a.in[3].as<float>(), *var = a.in[4].as<float>();
    const float *bias = bias_ ? a.in[5].as<float>() : nullptr;
    float *s = tempData(a, scales_), *bf = a.out[1].as<float>();
    for (int64_t ch = 0; ch < channels_; ++ch) {
      s[ch] = gamma[ch] / std::sqrt(var[ch] + eps_);
      bf[ch] = ((bias ? bias[ch] : 0.f) - mean[ch]) * s[ch] + beta[ch];
    }
  }
  int64_t channels_ = 0;
  float eps_ = 0;
  bool bias_ = false;
  size_t scales_ = 0;
};

} // namespace

void registerNormKernels(KernelList &r) {
  add(r, "batchnorm_fold", maker<BatchNormFold>());
  add(r, "batchnorm", maker<BatchNormInference>(),
      [](const ir::Op &op, const std::vector<ir::TensorType> &in) {
        return claimsNormActivation(op) && perChannelFloat32(op, in);
      },
      withBf16());
  // Batch norm over the global batch (sync=true) stays on the reference
  // backend, whose kernels reduce their sums over the ranks.
  auto local = [](const ir::Op &op, const std::vector<ir::TensorType> &in) {
    return !op.attrs().getBool("sync") && perChannelFloat32(op, in);
  };
  add(r, "batchnorm_train", maker<BatchNormTrain>(),
      [](const ir::Op &op, const std::vector<ir::TensorType> &in) {
        return !op.attrs().getBool("sync") && claimsNormActivation(op) && perChannelFloat32(op, in);
      },
      withBf16());
  add(r, "batchnorm_backward", maker<BatchNormBackward>(), local, withBf16());
  add(r, "batchnorm_backward_frozen", maker<BatchNormBackward>(), perChannelFloat32, withBf16());
}

} // namespace dtnn::onednn
