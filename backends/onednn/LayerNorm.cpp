// oneDNN kernels of layernorm and its backward op (ir/ops/LayerNorm.cpp). The normalized
// shape, the last `axes` dimensions, is one axis of a plain [rows, width] matrix to oneDNN's
// layer normalization. The forward op is its inference form (which trains and infers alike);
// the backward op recomputes each row's mean and variance from x, as the IR op states, into
// the workspace before oneDNN's backward primitive reads them. Without gamma and beta the
// backward op's dgamma and dbeta, which nothing reads, are zero.
#include "backends/onednn/Primitives.h"

#include <algorithm>
#include <cmath>

namespace dtnn::onednn {

namespace {

using dnnl::normalization_flags;
using dnnl::prop_kind;

// The rows of x and their width, the size of the normalized shape.
memory::dims rowsAndWidth(const ir::TensorType &x, int64_t axes) {
  int64_t width = 1;
  for (size_t i = x.rank() - size_t(axes); i < x.rank(); ++i) width *= x.dims[i];
  return {x.staticElements() / std::max<int64_t>(width, 1), width};
}

normalization_flags flagsOf(bool affine) {
  return affine ? normalization_flags::use_scale | normalization_flags::use_shift
                : normalization_flags::none;
}

dnnl::layer_normalization_forward::primitive_desc forwardDesc(const memory::dims &rw, float eps,
                                                              prop_kind kind, bool affine) {
  dnnl::layer_normalization_forward::desc d(kind, plainDesc(rw), eps, flagsOf(affine));
  return {d, userScratchpad(), engine()};
}

class LayerNormForward : public PrimitiveKernel {
public:
  explicit LayerNormForward(const KernelRequest &r) : PrimitiveKernel(r) {
    memory::dims rw = rowsAndWidth(r.in[0].type, r.op.attrs().getInt("axes"));
    float eps = float(r.op.attrs().getFloat("eps"));
    bool affine = r.in.size() == 3;
    setDesc(forwardDesc(rw, eps, prop_kind::forward_inference, affine));
    argIn(DNNL_ARG_SRC, 0, plainDesc(rw));
    if (affine) {
      argIn(DNNL_ARG_SCALE, 1, plainDesc({rw[1]}));
      argIn(DNNL_ARG_SHIFT, 2, plainDesc({rw[1]}));
    }
    argOut(DNNL_ARG_DST, 0, plainDesc(rw));
  }
};

class LayerNormBackward : public PrimitiveKernel {
public:
  explicit LayerNormBackward(const KernelRequest &r) : PrimitiveKernel(r) {
    rw_ = rowsAndWidth(r.in[1].type, r.op.attrs().getInt("axes"));
    float eps = float(r.op.attrs().getFloat("eps"));
    memory::desc data = plainDesc(rw_), stat = plainDesc({rw_[0]}), affine = plainDesc({rw_[1]});
    affine_ = r.in.size() == 3;
    mean_ = temp(stat);
    variance_ = temp(stat);
    auto hint = forwardDesc(rw_, eps, prop_kind::forward_training, affine_);
    dnnl::layer_normalization_backward::desc d(affine_ ? prop_kind::backward
                                                       : prop_kind::backward_data,
                                               data, data, stat, eps, flagsOf(affine_));
    setDesc(
        dnnl::layer_normalization_backward::primitive_desc(d, userScratchpad(), engine(), hint));
    argIn(DNNL_ARG_DIFF_DST, 0, data);
    argIn(DNNL_ARG_SRC, 1, data);
    if (affine_) {
      argIn(DNNL_ARG_SCALE, 2, affine);
      // oneDNN 2.6 wants the shift bound in the backward pass too, though no result depends
      // on it (dbeta is the sum of dy): gamma stands in for beta, which the op does not take.
      argIn(DNNL_ARG_SHIFT, 2, affine);
      argOut(DNNL_ARG_DIFF_SCALE, 1, affine);
      argOut(DNNL_ARG_DIFF_SHIFT, 2, affine);
    }
    argTemp(DNNL_ARG_MEAN, mean_);
    argTemp(DNNL_ARG_VARIANCE, variance_);
    argOut(DNNL_ARG_DIFF_SRC, 0, data);
  }

protected:
  // Each row's mean, then the mean of the squares about it (the biased variance).
  void before(const KernelArgs &args) override {
    const float *x = args.in[1].as<float>();
    float *mean = tempData(args, mean_), *variance = tempData(args, variance_);
    int64_t rows = rw_[0], width = rw_[1];
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < rows; ++i) {
      const float *p = x + i * width;
      float sum = 0;
#pragma omp simd reduction(+ : sum)
      for (int64_t j = 0; j < width; ++j) sum += p[j];
      float m = sum / float(width), squares = 0;
#pragma omp simd reduction(+ : squares)
      for (int64_t j = 0; j < width; ++j) squares += (p[j] - m) * (p[j] - m);
      mean[i] = m;
      variance[i] = squares / float(width);
    }
  }

  void after(const KernelArgs &args) override {
    if (affine_) return;
    std::fill_n(args.out[1].as<float>(), rw_[1], 0.0f);
    std::fill_n(args.out[2].as<float>(), rw_[1], 0.0f);
  }

private:
  memory::dims rw_;
  bool affine_ = true;
  size_t mean_ = 0, variance_ = 0;
};

} // namespace

void registerLayerNormKernels(KernelList &r) {
  add(r, "layernorm", maker<LayerNormForward>());
  add(r, "layernorm_backward", maker<LayerNormBackward>());
}

} // namespace dtnn::onednn
