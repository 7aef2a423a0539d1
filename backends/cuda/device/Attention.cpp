// scaled_dot_product_attention and its backward op on the device, in f32
// and f64, a run of batch matrices (heads) at a time, their scores in the
// workspace: cuBLAS's products (Blas.h), the masks (kernels/Attention.h)
// and the Softmax family's row softmax and its gradient
// (kernels/Softmax.h). For each run, as backends/reference/Attention.cpp
// defines the results:
//   P  = softmax(mask(scale q k^T))                 [L, S] per matrix
//   y  = P v                                        (forward)
//   dP = dy v^T, dS = P (dP - rowsum(P dP))         (softmax_backward)
//   dv = P^T dy, dq = scale dS k, dk = scale dS^T q
// The workspace is cuBLAS's block, then the scores P (and for the backward
// op dP, in whose storage dS is made) of the run: its length, the same for
// every run but the last, is what the planned workspace holds
// (ops/AttentionOps.cpp chooses it).
#include "backends/cuda/device/Blas.h"
#include "backends/cuda/device/kernels/Attention.h"
#include "backends/cuda/device/kernels/Softmax.h"
#include "ir/ops/AttentionShape.h"

#include <algorithm>

namespace dtnn::cuda {

namespace {

// Where the mask element of each score lies, for q of type `q` and a mask of type `mask`
// (broadcasting to the scores, aligned at the end), as ir::AttentionShape finds it.
AttentionMask maskOf(const ir::TensorType &q, const ir::TensorType &mask, const ir::AttentionShape &g) {
  size_t r = q.rank();
  std::vector<int64_t> m(r - mask.rank(), 1);
  m.insert(m.end(), mask.dims.begin(), mask.dims.end());
  AttentionMask a;
  a.dims = int(r - 2);
  int64_t stride = m[r - 2] * m[r - 1];
  for (size_t d = r - 2; d-- > 0;) {
    a.sizes[d] = q.dims[d];
    a.strides[d] = m[d] != 1 ? stride : 0;
    stride *= m[d];
  }
  a.row = g.maskRow;
  a.col = g.maskCol;
  return a;
}

template <typename T> class Attention final : public DeviceOp {
public:
  // `backward`: the backward op, whose operands are dy and then the forward op's.
  Attention(const DeviceKernelSpec &s, bool backward, const ir::AttentionShape &g)
      : g_(g), backward_(backward), scale_(T(g.scale)) {
    const size_t q = backward ? 1 : 0;
    if (g.masked) mask_ = maskOf(s.in[q].type, s.in[q + 3].type, g);
    const int64_t buffers = backward ? 2 : 1;
    const uint64_t perMatrix = uint64_t(buffers * g.l * g.s) * sizeof(T);
    run_ = std::clamp<int64_t>(int64_t((s.workspaceBytes - kCublasBlockBytes) / perMatrix), 1, g.batch);
    const int multiprocessors = deviceInfo().multiprocessors;
    full_ = planSoftmax({run_ * g.l, g.s, 1}, multiprocessors);
    last_ = planSoftmax({(g.batch - (g.batch - 1) / run_ * run_) * g.l, g.s, 1}, multiprocessors);
  }

  Error launch(const runtime::KernelArgs &a, const Launch &l) override {
    if (Error e = useCublasWorkspace(l, a.workspace)) return e;
    T *p = reinterpret_cast<T *>(static_cast<char *>(a.workspace) + kCublasBlockBytes);
    T *dp = p + run_ * g_.l * g_.s;
    const size_t q = backward_ ? 1 : 0;
    const T *mask = g_.masked ? a.in[q + 3].as<const T>() : nullptr;
    for (int64_t first = 0; first < g_.batch; first += run_) {
      const int64_t count = std::min(run_, g_.batch - first);
      const Operands o{a, q, first};
      if (Error e = probabilities(o, count, mask, p, l)) return e;
      if (Error e = backward_ ? gradients(o, count, p, dp, l) : values(o, count, p, l)) return e;
    }
    return Error::success();
  }

private:
  // The matrices of a run: operand i (q, k, v counted from `q`, dy at 0) and result i from
  // batch matrix `first` on.
  struct Operands {
    const runtime::KernelArgs &a;
    size_t q;
    int64_t first;
    Strided<const T> in(size_t i, int64_t rows, int64_t cols) const {
      return {a.in[i].as<const T>() + first * rows * cols, rows * cols};
    }
    Strided<T> out(size_t i, int64_t rows, int64_t cols) const {
      return {a.out[i].as<T>() + first * rows * cols, rows * cols};
    }
  };

  const SoftmaxPlan &planOf(int64_t count) const { return count == run_ ? full_ : last_; }

  // P = softmax(mask(scale q k^T)) of `count` matrices into p.
  Error probabilities(const Operands &o, int64_t count, const T *mask, T *p, const Launch &l) const {
    const int64_t L = g_.l, S = g_.s, E = g_.e;
    if (Error e = gemm<T>(l, {L, S, E, false, true}, count, scale_, o.in(o.q, L, E), o.in(o.q + 1, S, E),
                          T(0), {p, L * S}))
      return e;
    if (mask || g_.causal)
      if (Error e = check(launchAttentionMask(p, mask, mask_, o.first, count, L, S, g_.causal, l.stream),
                          "attention's masks"))
        return e;
    return check(launchSoftmax(p, p, planOf(count), false, l.stream), "attention's softmax");
  }

  // y = P v.
  Error values(const Operands &o, int64_t count, const T *p, const Launch &l) const {
    const int64_t L = g_.l, S = g_.s, Ev = g_.ev;
    return gemm<T>(l, {L, Ev, S, false, false}, count, T(1), {p, L * S}, o.in(2, S, Ev), T(0),
                   o.out(0, L, Ev));
  }

  // dq, dk and dv from P, with dP and then dS in ds.
  Error gradients(const Operands &o, int64_t count, const T *p, T *ds, const Launch &l) const {
    const int64_t L = g_.l, S = g_.s, E = g_.e, Ev = g_.ev;
    Strided<const T> dy = o.in(0, L, Ev), q = o.in(1, L, E), k = o.in(2, S, E), v = o.in(3, S, Ev);
    Strided<const T> P{p, L * S}, dS{ds, L * S};
    if (Error e = gemm<T>(l, {L, S, Ev, false, true}, count, T(1), dy, v, T(0), {ds, L * S})) return e;
    if (Error e = check(launchSoftmaxBackward(ds, p, ds, planOf(count), false, l.stream),
                        "attention's softmax gradient"))
      return e;
    if (Error e = gemm<T>(l, {S, Ev, L, true, false}, count, T(1), P, dy, T(0), o.out(2, S, Ev))) return e;
    if (Error e = gemm<T>(l, {L, E, S, false, false}, count, scale_, dS, k, T(0), o.out(0, L, E))) return e;
    return gemm<T>(l, {S, E, L, true, false}, count, scale_, dS, q, T(0), o.out(1, S, E));
  }

  ir::AttentionShape g_;
  bool backward_;
  T scale_;
  AttentionMask mask_;
  int64_t run_ = 1;         // batch matrices a run
  SoftmaxPlan full_, last_; // of a full run's rows, and of the last run's
};

DeviceKernelMaker attentionMaker(bool backward) {
  return [backward](const DeviceKernelSpec &s) -> Expected<std::unique_ptr<DeviceKernel>> {
    const size_t q = backward ? 1 : 0;
    if (!s.op || s.in.size() < q + 3) return Error::make("'" + s.kind + "' without its operands");
    if (Error e = checkCublasBlock(s)) return e;
    std::vector<ir::TensorType> qkvm;
    for (size_t i = q; i < s.in.size(); ++i) qkvm.push_back(s.in[i].type);
    ir::AttentionShape g(qkvm, s.op->attrs());
    if (g.batch <= 0 || g.l <= 0 || g.s <= 0 || g.e <= 0 || g.ev <= 0)
      return Error::make("'" + s.kind + "' on the cuda backend takes non-empty q, k and v");
    if (g.masked && qkvm[0].rank() - 2 > size_t(kMaxAttentionBatchDims))
      return Error::make("'" + s.kind + "' on the cuda backend takes a mask with at most " +
                         std::to_string(kMaxAttentionBatchDims) + " batch dimensions");
    switch (qkvm[0].dtype) {
    case ir::DType::F32: return make<Attention<float>>(s, backward, g);
    case ir::DType::F64: return make<Attention<double>>(s, backward, g);
    default: return Error::make("the cuda " + s.kind + " takes f32 or f64, not " + qkvm[0].str());
    }
  };
}

} // namespace

void registerAttentionKernels(DeviceRegistry &r) {
  r.add("scaled_dot_product_attention", attentionMaker(false));
  r.add("scaled_dot_product_attention_backward", attentionMaker(true));
}

} // namespace dtnn::cuda
