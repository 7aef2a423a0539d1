// oneDNN kernels of scaled_dot_product_attention and its backward op
// (ir/ops/Attention.cpp), a group of batch matrices (heads of samples) at a
// time: each primitive is a batched one over the group, whose L x S scores
// the kernel's workspace holds. A group is as many heads as fit in
// kGroupBytes of scores (one head when a mask is given, whose offset differs
// from head to head): few enough to stay near the cache, enough that small
// heads do not pay a primitive call each. Forward, per head:
//   p = softmax(scale q k^T + mask + causal)   a matmul with the scale as its
//                                              output scale and the masks as
//                                              binary-add post-ops, a softmax
//   y = p v                                    a matmul
// Backward, per head, with p recomputed as above:
//   dv = p^T dy, dp = dy v^T                   two matmuls
//   ds = p (dp - sum(p dp))                    host code, in place of dp
//   dq = scale ds k, dk = scale ds^T q         two matmuls
// Every primitive runs on all threads; the causal mask (-inf above the
// diagonal) is filled into the workspace before the first head.
#include "backends/onednn/Primitives.h"
#include "ir/ops/AttentionShape.h"

#include <limits>

namespace dtnn::onednn {

namespace {

// The most bytes of one L x S temporary for a group of heads.
constexpr int64_t kGroupBytes = int64_t(1) << 20;

// `groups` row-major `rows` x `cols` matrices back to back, or their transposes as a view.
memory::desc matrices(int64_t groups, int64_t rows, int64_t cols, bool transposed = false) {
  if (!transposed) return plainDesc({groups, rows, cols});
  return memory::desc({groups, cols, rows}, memory::data_type::f32,
                      memory::dims{rows * cols, 1, cols});
}

// The heads a group holds: the largest divisor of `batch` whose scores fit kGroupBytes.
int64_t groupSize(const ir::AttentionShape &g) {
  if (g.masked) return 1;
  int64_t most = std::max<int64_t>(1, kGroupBytes / std::max<int64_t>(1, g.l * g.s * 4));
  for (int64_t n = std::min(most, g.batch); n > 1; --n)
    if (g.batch % n == 0) return n;
  return 1;
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
    group_ = groupSize(g_);
    repeats_ = g_.batch / group_;
    if (g_.causal) causal_ = temp(matrices(1, g_.l, g_.s));
    if (g_.masked) {
      const ir::TensorType &m = r.in[first + 3].type;
      maskDims_ = {m.rank() >= 2 ? m.dims[m.rank() - 2] : 1, m.dims.back()};
    }
  }

  // The group's matrices of `rows` x `cols` (transposed: a view of their transposes).
  memory::desc matrix(int64_t rows, int64_t cols, bool transposed = false) const {
    return matrices(group_, rows, cols, transposed);
  }

  // Adds the primitives that leave softmax(scale q k^T + masks) in temp p_: the matmul (with
  // the masks as binary-add post-ops when a head is worked alone), the causal mask added to
  // the group's scores by a binary primitive (oneDNN's matmul has only a reference
  // implementation of a post-op that broadcasts over the batch), and the softmax over the rows
  // of all the group's scores at once.
  void probabilities() {
    p_ = temp(matrix(g_.l, g_.s));
    dnnl::primitive_attr attr = userScratchpad();
    attr.set_output_scales(0, {float(g_.scale)});
    dnnl::post_ops post;
    memory::desc mask = g_.masked ? plainDesc({1, maskDims_[0], maskDims_[1]}) : memory::desc();
    bool causalPost = g_.causal && group_ == 1;
    if (g_.masked) post.append_binary(dnnl::algorithm::binary_add, mask);
    if (causalPost) post.append_binary(dnnl::algorithm::binary_add, matrices(1, g_.l, g_.s));
    attr.set_post_ops(post);
    memory::desc q = matrix(g_.l, g_.e), k = matrix(g_.s, g_.e, true), p = matrix(g_.l, g_.s);
    setDesc(dnnl::matmul::primitive_desc({q, k, p}, attr, engine()));
    argIn(DNNL_ARG_SRC, first_, q);
    argIn(DNNL_ARG_WEIGHTS, first_ + 1, k);
    argTemp(DNNL_ARG_DST, p_);
    int index = 0;
    if (g_.masked)
      argIn(DNNL_ARG_ATTR_MULTIPLE_POST_OP(index++) | DNNL_ARG_SRC_1, first_ + 3, mask);
    if (causalPost) argTemp(DNNL_ARG_ATTR_MULTIPLE_POST_OP(index) | DNNL_ARG_SRC_1, causal_);
    if (g_.causal && !causalPost) {
      dnnl::binary::desc add(dnnl::algorithm::binary_add, p, matrices(1, g_.l, g_.s), p);
      setDesc(dnnl::binary::primitive_desc(add, userScratchpad(), engine()));
      argTemp(DNNL_ARG_SRC_0, p_);
      argTemp(DNNL_ARG_SRC_1, causal_);
      argTemp(DNNL_ARG_DST, p_);
    }
    dnnl::softmax_forward::desc sd(dnnl::prop_kind::forward_inference, rows(), 1);
    setDesc(dnnl::softmax_forward::primitive_desc(sd, userScratchpad(), engine()));
    argTemp(DNNL_ARG_SRC, p_);
    argTemp(DNNL_ARG_DST, p_);
  }

  // The group's scores as one matrix of rows, for the softmax over each row.
  memory::desc rows() const { return plainDesc({group_ * g_.l, g_.s}); }

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

  // Operand q, k, v, the mask, dy: the slice of group r (a group of one head when masked).
  uint64_t inOffset(size_t i, int64_t r) const override {
    if (i == first_ + 3) return uint64_t(g_.maskOffset[size_t(r)]) * sizeof(float);
    return uint64_t(r * group_) * uint64_t(rowsOf(i) * colsOf(i)) * sizeof(float);
  }

  ir::AttentionShape g_;
  size_t first_;
  int64_t group_ = 1; // heads a primitive works on
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
    return uint64_t(r * group_ * g_.l * g_.ev) * sizeof(float);
  }
};

class AttentionBackward : public AttentionKernel {
public:
  explicit AttentionBackward(const KernelRequest &r) : AttentionKernel(r, 1) {
    probabilities();
    int64_t l = g_.l, s = g_.s, e = g_.e, ev = g_.ev;
    size_t dp = temp(matrix(l, s));
    product(matrix(l, s, true), matrix(l, ev), matrix(s, ev)); // dv = p^T dy
    argTemp(DNNL_ARG_SRC, p_);
    argIn(DNNL_ARG_WEIGHTS, 0, matrix(l, ev));
    argOut(DNNL_ARG_DST, 2, matrix(s, ev));
    product(matrix(l, ev), matrix(s, ev, true), matrix(l, s)); // dp = dy v^T
    argIn(DNNL_ARG_SRC, 0, matrix(l, ev));
    argIn(DNNL_ARG_WEIGHTS, 3, matrix(s, ev, true));
    argTemp(DNNL_ARG_DST, dp);
    // ds = p (dp - sum(p dp)), row by row, in place of dp.
    addHostStep([this, dp](const KernelArgs &args, int64_t) {
      const float *p = tempData(args, p_);
      float *d = tempData(args, dp);
      int64_t rows = group_ * g_.l, cols = g_.s;
#pragma omp parallel for schedule(static)
      for (int64_t i = 0; i < rows; ++i) {
        const float *pi = p + i * cols;
        float *di = d + i * cols;
        float dot = 0;
        for (int64_t j = 0; j < cols; ++j) dot += pi[j] * di[j];
        for (int64_t j = 0; j < cols; ++j) di[j] = pi[j] * (di[j] - dot);
      }
    });
    size_t ds = dp;
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
    return uint64_t(r * group_ * size) * sizeof(float);
  }
};

} // namespace

void registerAttentionKernels(KernelList &r) {
  add(r, "scaled_dot_product_attention", maker<AttentionForward>());
  add(r, "scaled_dot_product_attention_backward", maker<AttentionBackward>());
}

} // namespace dtnn::onednn
