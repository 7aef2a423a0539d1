// oneDNN kernels of the dense ops (ir/ops/Dense.cpp): an inner product
// forward, its data and weight gradients, and the bias gradient (a sum
// reduction). The weight is [M,K], as oneDNN's inner product has it; x is
// [N,K], or of higher rank [..., K], whose rows the kernels see as one plain
// [rows, K] matrix (the same bytes), as they see dy and y.
#include "backends/onednn/Primitives.h"

namespace dtnn::onednn {

namespace {

using dnnl::prop_kind;

// `t` as a matrix: itself when 2-d, else its rows [..., K] as [rows, K].
memory::dims rowsOf(const ir::TensorType &t) {
  if (t.rank() == 2) return dimsOf(t);
  int64_t k = t.dims.back();
  return {t.staticElements() / std::max<int64_t>(k, 1), k};
}

// The descriptor of an operand of type `t` that arrives as `d`: oneDNN
// chooses the layout of a 2-d one, and one of higher rank is plain.
memory::desc matrixDesc(const ir::TensorType &t, const memory::dims &dims) {
  memory::data_type dt = dataTypeOf(t.dtype);
  return t.rank() == 2 ? anyDesc(dims, dt) : plainDesc(dims, dt);
}

struct DenseDims {
  memory::dims x, w, y;
  memory::data_type dt; // the data's (f32 or bf16); oneDNN accumulates in f32 either way
  DenseDims(const ir::TensorType &xt, const ir::TensorType &wt) {
    x = rowsOf(xt);
    w = dimsOf(wt);
    y = {x[0], w[0]};
    dt = dataTypeOf(wt.dtype);
  }
  dnnl::inner_product_forward::primitive_desc hint() const {
    return {{prop_kind::forward_training, anyDesc(x, dt), anyDesc(w, dt), anyDesc(y, dt)},
            engine()};
  }
};

// y = act(x w^T + bias), the activation as an eltwise post-op.
class DenseForward : public PrimitiveKernel {
public:
  explicit DenseForward(const KernelRequest &r) : PrimitiveKernel(r) {
    DenseDims g(r.in[0].type, r.in[1].type);
    bool bias = r.in.size() > 2;
    memory::desc b = bias ? plainDesc({g.w[0]}, g.dt) : memory::desc();
    bool rows = r.in[0].type.rank() > 2;
    auto pd = preferArriving<dnnl::inner_product_forward::primitive_desc>(
        {{&r.in[0], g.x}, {&r.in[1], g.w}}, [&](const std::vector<memory::desc> &md) {
          dnnl::inner_product_forward::desc d(prop_kind::forward_training,
                                              rows ? plainDesc(g.x, g.dt) : md[0], md[1], b,
                                              matrixDesc(r.in[0].type, g.y));
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
    const ir::TensorType &dy = r.in[0].type;
    memory::dims w = dimsOf(r.in[1].type);
    DenseDims g(ir::TensorType(dy.dtype, {rowsOf(dy)[0], w[1]}), r.in[1].type);
    bool rows = dy.rank() > 2;
    auto hint = g.hint();
    auto pd = preferArriving<dnnl::inner_product_backward_data::primitive_desc>(
        {{&r.in[0], g.y}, {&r.in[1], g.w}}, [&](const std::vector<memory::desc> &md) {
          dnnl::inner_product_backward_data::desc d(matrixDesc(dy, g.x), md[1],
                                                    rows ? plainDesc(g.y, g.dt) : md[0]);
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
          bool rows = r.in[1].type.rank() > 2;
          dnnl::inner_product_backward_weights::desc d(rows ? plainDesc(g.x, g.dt) : md[1],
                                                       anyDesc(g.w, g.dt),
                                                       rows ? plainDesc(g.y, g.dt) : md[0]);
          return dnnl::inner_product_backward_weights::primitive_desc(d, userScratchpad(),
                                                                      engine(), hint);
        });
    setDesc(pd);
    use(DNNL_ARG_DIFF_DST, 0, pd.diff_dst_desc());
    use(DNNL_ARG_SRC, 1, pd.src_desc());
    give(DNNL_ARG_DIFF_WEIGHTS, 0, pd.diff_weights_desc());
  }
};

// The bias gradient: dy summed over its rows, [N,M] as SumToChannels takes
// it, [..., M] as one plain [rows, M].
class DenseBackwardBias : public SumToChannels {
public:
  explicit DenseBackwardBias(const KernelRequest &r) : SumToChannels(r) {
    const ir::TensorType &dy = r.in[0].type;
    if (dy.rank() == 2) return;
    in_[0] = BufferDesc::plain(dy);
    setPlainRows(rowsOf(dy)[0], dy.dims.back());
  }
};

} // namespace

void registerDenseKernels(KernelList &r) {
  add(r, "dense", maker<DenseForward>(), claimsFusedActivation, withBf16());
  add(r, "dense_backward_data", maker<DenseBackwardData>(), nullptr, withBf16());
  add(r, "dense_backward_weights", maker<DenseBackwardWeights>(), nullptr, withBf16());
  add(r, "dense_backward_bias", maker<DenseBackwardBias>());
}

} // namespace dtnn::onednn
