// oneDNN kernels of the dense ops (ir/ops/Dense.cpp): an inner product
// forward, its data and weight gradients, and the bias gradient (a sum
// reduction). x is [N,K], the weight [M,K], as oneDNN's inner product has
// them.
#include "backends/onednn/Primitives.h"

namespace dtnn::onednn {

namespace {

using dnnl::prop_kind;

struct DenseDims {
  memory::dims x, w, y;
  DenseDims(const ir::TensorType &xt, const ir::TensorType &wt) {
    x = dimsOf(xt);
    w = dimsOf(wt);
    y = {x[0], w[0]};
  }
  dnnl::inner_product_forward::primitive_desc hint() const {
    return {{prop_kind::forward_training, anyDesc(x), anyDesc(w), anyDesc(y)}, engine()};
  }
};

// y = act(x w^T + bias), the activation as an eltwise post-op.
class DenseForward : public PrimitiveKernel {
public:
  explicit DenseForward(const KernelRequest &r) : PrimitiveKernel(r) {
    DenseDims g(r.in[0].type, r.in[1].type);
    bool bias = r.in.size() > 2;
    memory::desc b = bias ? plainDesc({g.w[0]}) : memory::desc();
    auto pd = preferArriving<dnnl::inner_product_forward::primitive_desc>(
        {{&r.in[0], g.x}, {&r.in[1], g.w}}, [&](const std::vector<memory::desc> &md) {
          dnnl::inner_product_forward::desc d(prop_kind::forward_training, md[0], md[1], b,
                                              anyDesc(g.y));
          return dnnl::inner_product_forward::primitive_desc(
              d, withFusedActivation(userScratchpad(), r.op), engine());
        });
    setDesc(pd);
    use(DNNL_ARG_SRC, 0, pd.src_desc());
    use(DNNL_ARG_WEIGHTS, 1, pd.weights_desc());
    if (bias) use(DNNL_ARG_BIAS, 2, b);
    give(DNNL_ARG_DST, 0, pd.dst_desc());
  }
};

// dx = dy w.
class DenseBackwardData : public PrimitiveKernel {
public:
  explicit DenseBackwardData(const KernelRequest &r) : PrimitiveKernel(r) {
    memory::dims dy = dimsOf(r.in[0].type), w = dimsOf(r.in[1].type);
    DenseDims g(ir::TensorType(ir::DType::F32, {dy[0], w[1]}), r.in[1].type);
    auto hint = g.hint();
    auto pd = preferArriving<dnnl::inner_product_backward_data::primitive_desc>(
        {{&r.in[0], g.y}, {&r.in[1], g.w}}, [&](const std::vector<memory::desc> &md) {
          dnnl::inner_product_backward_data::desc d(anyDesc(g.x), md[1], md[0]);
          return dnnl::inner_product_backward_data::primitive_desc(d, userScratchpad(), engine(),
                                                                   hint);
        });
    setDesc(pd);
    use(DNNL_ARG_DIFF_DST, 0, pd.diff_dst_desc());
    use(DNNL_ARG_WEIGHTS, 1, pd.weights_desc());
    give(DNNL_ARG_DIFF_SRC, 0, pd.diff_src_desc());
  }
};

// dw = dy^T x.
class DenseBackwardWeights : public PrimitiveKernel {
public:
  explicit DenseBackwardWeights(const KernelRequest &r) : PrimitiveKernel(r) {
    DenseDims g(r.in[1].type, r.out[0]);
    auto hint = g.hint();
    auto pd = preferArriving<dnnl::inner_product_backward_weights::primitive_desc>(
        {{&r.in[0], g.y}, {&r.in[1], g.x}}, [&](const std::vector<memory::desc> &md) {
          dnnl::inner_product_backward_weights::desc d(md[1], anyDesc(g.w), md[0]);
          return dnnl::inner_product_backward_weights::primitive_desc(d, userScratchpad(),
                                                                      engine(), hint);
        });
    setDesc(pd);
    use(DNNL_ARG_DIFF_DST, 0, pd.diff_dst_desc());
    use(DNNL_ARG_SRC, 1, pd.src_desc());
    give(DNNL_ARG_DIFF_WEIGHTS, 0, pd.diff_weights_desc());
  }
};

} // namespace

// oneDNN's inner product takes x [N,K]: a dense over the last axis of a
// tensor of higher rank runs elsewhere.
bool twoD(const ir::Op &, const std::vector<ir::TensorType> &in) { return in[0].rank() == 2; }

void registerDenseKernels(KernelList &r) {
  add(r, "dense", maker<DenseForward>(),
      [](const ir::Op &op, const std::vector<ir::TensorType> &in) {
        return twoD(op, in) && claimsFusedActivation(op, in);
      });
  add(r, "dense_backward_data", maker<DenseBackwardData>(), twoD);
  add(r, "dense_backward_weights", maker<DenseBackwardWeights>(), twoD);
  add(r, "dense_backward_bias", maker<SumToChannels>(), twoD);
}

} // namespace dtnn::onednn
