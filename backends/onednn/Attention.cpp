// oneDNN kernels of scaled_dot_product_attention and its backward op
// (ir/ops/Attention.cpp), a batch matrix (one head of one sample) at a time,
// so one head's L x S scores are all that is ever held, in the kernel's
// workspace. Forward, per head:
//   p = softmax(scale q k^T + mask + causal)   a matmul with the scale as its
//                                              output scale and the masks as
//                                              binary-add post-ops, a softmax
//   y = p v                                    a matmul
// Backward, per head, with p recomputed as above:
//   dv = p^T dy, dp = dy v^T                   two matmuls
//   ds = p (dp - sum(p dp))                    oneDNN's softmax backward
//   dq = scale ds k, dk = scale ds^T q         two matmuls
// Every primitive runs on all threads; the causal mask (-inf above the
// diagonal) is filled into the workspace before the first head.
#include "backends/onednn/Primitives.h"
#include "ir/ops/AttentionShape.h"

#include <limits>

namespace dtnn::onednn {

namespace {

// `rows` x `cols` in a row-major buffer, or its transpose as a view.
memory::desc matrix(int64_t rows, int64_t cols, bool transposed = false) {
  if (!transposed) return plainDesc({rows, cols});
  return memory::desc({cols, rows}, memory::data_type::f32, memory::dims{1, cols});
}

std::vector<ir::TensorType> typesOf(const std::vector<BufferDesc> &in, size_t first) {
  std::vector<ir::TensorType> t;
  for (size_t i = first; i < in.size(); ++i) t.push_back(in[i].type);
  return t;
}

class AttentionKernel : public PrimitiveKernel {
protected:
  // first: the index of q among the operands (0 forward, 1 backward).
  AttentionKernel(const KernelRequest &r, size_t first)
      : PrimitiveKernel(r), g_(typesOf(r.in, first), r.op.attrs()), first_(first) {
    repeats_ = g_.batch;
    if (g_.causal) causal_ = temp(matrix(g_.l, g_.s));
    if (g_.masked) {
      const ir::TensorType &m = r.in[first + 3].type;
      maskDims_ = {m.rank() >= 2 ? m.dims[m.rank() - 2] : 1, m.dims.back()};
    }
  }

  // Adds the primitives that leave softmax(scale q k^T + masks) in temp p_.
  void probabilities() {
    p_ = temp(matrix(g_.l, g_.s));
    dnnl::primitive_attr attr = userScratchpad();
    attr.set_output_scales(0, {float(g_.scale)});
    dnnl::post_ops post;
    memory::desc mask = g_.masked ? plainDesc(maskDims_) : memory::desc();
    if (g_.masked) post.append_binary(dnnl::algorithm::binary_add, mask);
    if (g_.causal) post.append_binary(dnnl::algorithm::binary_add, matrix(g_.l, g_.s));
    attr.set_post_ops(post);
    memory::desc q = matrix(g_.l, g_.e), k = matrix(g_.s, g_.e, true), p = matrix(g_.l, g_.s);
    setDesc(dnnl::matmul::primitive_desc({q, k, p}, attr, engine()));
    argIn(DNNL_ARG_SRC, first_, q);
    argIn(DNNL_ARG_WEIGHTS, first_ + 1, k);
    argTemp(DNNL_ARG_DST, p_);
    int index = 0;
    if (g_.masked)
      argIn(DNNL_ARG_ATTR_MULTIPLE_POST_OP(index++) | DNNL_ARG_SRC_1, first_ + 3, mask);
    if (g_.causal) argTemp(DNNL_ARG_ATTR_MULTIPLE_POST_OP(index) | DNNL_ARG_SRC_1, causal_);
    dnnl::softmax_forward::desc sd(dnnl::prop_kind::forward_inference, p, 1);
    setDesc(dnnl::softmax_forward::primitive_desc(sd, userScratchpad(), engine()));
    argTemp(DNNL_ARG_SRC, p_);
    argTemp(DNNL_ARG_DST, p_);
  }

  // A matmul c = alpha a b of row-major slices (each optionally transposed).
  void product(memory::desc a, memory::desc b, memory::desc c, float alpha = 1) {
    dnnl::primitive_attr attr = userScratchpad();
    if (alpha != 1) attr.set_output_scales(0, {alpha});
    setDesc(dnnl::matmul::primitive_desc({a, b, c}, attr, engine()));
  }

  void before(const KernelArgs &args) override {
    if (!g_.causal) return;
    float *m = tempData(args, causal_);
    for (int64_t i = 0; i < g_.l; ++i)
      for (int64_t j = 0; j < g_.s; ++j)
        m[i * g_.s + j] = g_.hidden(i, j) ? -std::numeric_limits<float>::infinity() : 0.0f;
  }

  // Operand q, k, v, the mask, dy: the slice of head r.
  uint64_t inOffset(size_t i, int64_t r) const override {
    if (i == first_ + 3) return uint64_t(g_.maskOffset[size_t(r)]) * sizeof(float);
    return uint64_t(r) * uint64_t(rowsOf(i) * colsOf(i)) * sizeof(float);
  }

  ir::AttentionShape g_;
  size_t first_;
  size_t p_ = 0, causal_ = 0;
  memory::dims maskDims_;

private:
  // The matrix sizes of operand i (dy is [L, Ev]).
  int64_t rowsOf(size_t i) const { return i == first_ ? g_.l : i > first_ ? g_.s : g_.l; }
  int64_t colsOf(size_t i) const {
    return i == first_ || i == first_ + 1 ? g_.e : g_.ev; // q, k: E; v, dy: Ev
  }
};

class AttentionForward : public AttentionKernel {
public:
  explicit AttentionForward(const KernelRequest &r) : AttentionKernel(r, 0) {
    probabilities();
    memory::desc p = matrix(g_.l, g_.s), v = matrix(g_.s, g_.ev), y = matrix(g_.l, g_.ev);
    product(p, v, y);
    argTemp(DNNL_ARG_SRC, p_);
    argIn(DNNL_ARG_WEIGHTS, 2, v);
    argOut(DNNL_ARG_DST, 0, y);
  }

protected:
  uint64_t outOffset(size_t, int64_t r) const override {
    return uint64_t(r * g_.l * g_.ev) * sizeof(float);
  }
};

class AttentionBackward : public AttentionKernel {
public:
  explicit AttentionBackward(const KernelRequest &r) : AttentionKernel(r, 1) {
    probabilities();
    int64_t l = g_.l, s = g_.s, e = g_.e, ev = g_.ev;
    size_t dp = temp(matrix(l, s)), ds = temp(matrix(l, s));
    product(matrix(l, s, true), matrix(l, ev), matrix(s, ev)); // dv = p^T dy
    argTemp(DNNL_ARG_SRC, p_);
    argIn(DNNL_ARG_WEIGHTS, 0, matrix(l, ev));
    argOut(DNNL_ARG_DST, 2, matrix(s, ev));
    product(matrix(l, ev), matrix(s, ev, true), matrix(l, s)); // dp = dy v^T
    argIn(DNNL_ARG_SRC, 0, matrix(l, ev));
    argIn(DNNL_ARG_WEIGHTS, 3, matrix(s, ev, true));
    argTemp(DNNL_ARG_DST, dp);
    memory::desc scores = matrix(l, s);
    dnnl::softmax_forward::desc hintDesc(dnnl::prop_kind::forward_training, scores, 1);
    dnnl::softmax_forward::primitive_desc hint(hintDesc, engine());
    dnnl::softmax_backward::desc bd(scores, scores, 1);
    setDesc(dnnl::softmax_backward::primitive_desc(bd, userScratchpad(), engine(), hint));
    argTemp(DNNL_ARG_DST, p_);
    argTemp(DNNL_ARG_DIFF_DST, dp);
    argTemp(DNNL_ARG_DIFF_SRC, ds);
    float scale = float(g_.scale);
    product(matrix(l, s), matrix(s, e), matrix(l, e), scale); // dq = scale ds k
    argTemp(DNNL_ARG_SRC, ds);
    argIn(DNNL_ARG_WEIGHTS, 2, matrix(s, e));
    argOut(DNNL_ARG_DST, 0, matrix(l, e));
    product(matrix(l, s, true), matrix(l, e), matrix(s, e), scale); // dk = scale ds^T q
    argTemp(DNNL_ARG_SRC, ds);
    argIn(DNNL_ARG_WEIGHTS, 1, matrix(l, e));
    argOut(DNNL_ARG_DST, 1, matrix(s, e));
  }

protected:
  uint64_t outOffset(size_t j, int64_t r) const override {
    int64_t size = j == 0 ? g_.l * g_.e : j == 1 ? g_.s * g_.e : g_.s * g_.ev;
    return uint64_t(r * size) * sizeof(float);
  }
};

} // namespace

void registerAttentionKernels(KernelList &r) {
  add(r, "scaled_dot_product_attention", maker<AttentionForward>());
  add(r, "scaled_dot_product_attention_backward", maker<AttentionBackward>());
}

} // namespace dtnn::onednn
