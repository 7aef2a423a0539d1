// oneDNN kernels of the affine layernorm and its backward op (ir/ops/LayerNorm.cpp). The
// normalized shape, the last `axes` dimensions, is one axis of a plain [rows, width] matrix to
// oneDNN's layer normalization. The forward op is its inference form (which trains and infers
// alike); the backward op recomputes each row's mean and variance from x, as the IR op states,
// into the workspace before oneDNN's backward primitive reads them. A layernorm without gamma
// and beta runs on the reference backend.
#include "backends/onednn/Primitives.h"

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

const normalization_flags kAffine = normalization_flags::use_scale |
                                        normalization_flags::use_shift;

dnnl::layer_normalization_forward::primitive_desc forwardDesc(const memory::dims &rw, float eps,
                                                              prop_kind kind) {
  dnnl::layer_normalization_forward::desc d(kind, plainDesc(rw), eps, kAffine);
  return {d, userScratchpad(), engine()};
}

class LayerNormForward : public PrimitiveKernel {
public:
  explicit LayerNormForward(const KernelRequest &r) : PrimitiveKernel(r) {
    memory::dims rw = rowsAndWidth(r.in[0].type, r.op.attrs().getInt("axes"));
    float eps = float(r.op.attrs().getFloat("eps"));
    setDesc(forwardDesc(rw, eps, prop_kind::forward_inference));
    argIn(DNNL_ARG_SRC, 0, plainDesc(rw));
    argIn(DNNL_ARG_SCALE, 1, plainDesc({rw[1]}));
    argIn(DNNL_ARG_SHIFT, 2, plainDesc({rw[1]}));
    argOut(DNNL_ARG_DST, 0, plainDesc(rw));
  }
};

class LayerNormBackward : public PrimitiveKernel {
public:
  explicit LayerNormBackward(const KernelRequest &r) : PrimitiveKernel(r) {
    rw_ = rowsAndWidth(r.in[1].type, r.op.attrs().getInt("axes"));
    float eps = float(r.op.attrs().getFloat("eps"));
    memory::desc data = plainDesc(rw_), stat = plainDesc({rw_[0]}), affine = plainDesc({rw_[1]});
    mean_ = temp(stat);
    variance_ = temp(stat);
    auto hint = forwardDesc(rw_, eps, prop_kind::forward_training);
    dnnl::layer_normalization_backward::desc d(prop_kind::backward, data, data, stat, eps,
                                               kAffine);
    setDesc(dnnl::layer_normalization_backward::primitive_desc(d, userScratchpad(), engine(),
                                                               hint));
    argIn(DNNL_ARG_DIFF_DST, 0, data);
    argIn(DNNL_ARG_SRC, 1, data);
    argIn(DNNL_ARG_SCALE, 2, affine);
    // oneDNN 2.6 wants the shift bound in the backward pass too, though no result depends on
    // it (dbeta is the sum of dy): gamma stands in for beta, which the op does not take.
    argIn(DNNL_ARG_SHIFT, 2, affine);
    argTemp(DNNL_ARG_MEAN, mean_);
    argTemp(DNNL_ARG_VARIANCE, variance_);
    argOut(DNNL_ARG_DIFF_SRC, 0, data);
    argOut(DNNL_ARG_DIFF_SCALE, 1, affine);
    argOut(DNNL_ARG_DIFF_SHIFT, 2, affine);
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

private:
  memory::dims rw_;
  size_t mean_ = 0, variance_ = 0;
};

// Claims the affine forms: x, gamma and beta; dy, x and gamma.
bool affine(const ir::Op &, const std::vector<ir::TensorType> &in) { return in.size() == 3; }

} // namespace

void registerLayerNormKernels(KernelList &r) {
  add(r, "layernorm", maker<LayerNormForward>(), affine);
  add(r, "layernorm_backward", maker<LayerNormBackward>(), affine);
}

} // namespace dtnn::onednn
