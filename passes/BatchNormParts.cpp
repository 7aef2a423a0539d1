#include "passes/BatchNormParts.h"

#include "passes/Regions.h"

namespace dtnn::passes {

namespace {

// The gradient into y inside region `r`: `dy` read, or its op `grad`
// recomputed from x through y = x scale + shift.
ir::Value *gradientIntoY(RegionBuilder &r, const DecomposedBatchNorm &f, const ir::Op *grad,
                         ir::Value *dy) {
  if (!grad) return r.arg(dy);
  ir::Value *y = r.op("add", {r.op("mul", {r.arg(f.x), r.arg(f.scale)}), r.arg(f.shift)});
  std::vector<ir::Value *> operands{r.arg(grad->operand(0))};
  for (size_t i = 1; i < grad->operands().size(); ++i) {
    ir::Value *v = grad->operand(unsigned(i));
    operands.push_back(v == f.y ? y : r.copy(*v->definingOp(), {y}));
  }
  return r.copy(*grad, operands);
}

} // namespace

// Appends the decomposition of `bn` to the builder's graph. The per-channel
// arithmetic is two fused ops of its own: each divides, so the jit runs it
// over plain tensors, and a blocked layout's padded lanes of what the big
// kernels read (the mean, the scale and the shift) hold zeros, never 0/0.
Expected<DecomposedBatchNorm> decomposeBatchNorm(ir::Builder &b, const ir::Op &bn) {
  DecomposedBatchNorm f;
  f.x = bn.operand(0);
  int64_t c = f.x->type().dims[1];
  const ir::AttrMap &a = bn.attrs();
  auto reshape = [&](ir::Value *v, std::vector<int64_t> shape) {
    return b.create1("reshape", {v}, ir::attrs({{"shape", std::move(shape)}}));
  };
  f.g = reshape(bn.operand(1), {1, c, 1, 1});
  ir::Value *beta = reshape(bn.operand(2), {1, c, 1, 1});
  f.count = b.create1("count_like", {f.x, f.g});
  ir::Value *sum = b.create1("sum_like", {f.x, f.g});
  if (Error e = b.takeError()) return e;
  RegionBuilder meanOf(bn.loc());
  Expected<ir::Op *> mean =
      meanOf.finish(b, {meanOf.op("div", {meanOf.arg(sum), meanOf.arg(f.count)})});
  if (!mean) return mean.takeError();
  f.mean = (*mean)->result(0);
  ir::Value *d = b.create1("sub", {f.x, f.mean});
  ir::Value *sq = b.create1("sum_like", {b.create1("mul", {d, d}), f.g});
  ir::Value *less = b.create1("count_like", {f.x, f.g}, ir::attrs({{"offset", -1.0}}));
  if (Error e = b.takeError()) return e;
  RegionBuilder st(bn.loc());
  ir::Value *invstd = st.op("rsqrt", {st.op("div", {st.arg(sq), st.arg(f.count)})},
                            ir::attrs({{"eps", a.getFloat("eps")}}));
  ir::Value *scale = st.op("mul", {st.arg(f.g), invstd});
  ir::Value *shift = st.op("sub", {st.arg(beta), st.op("mul", {st.arg(f.mean), scale})});
  ir::Value *unbiased = st.op("div", {st.arg(sq), st.arg(less)});
  Expected<ir::Op *> stats = st.finish(b, {invstd, scale, shift, unbiased});
  if (!stats) return stats.takeError();
  f.invstd = (*stats)->result(0);
  f.scale = (*stats)->result(1);
  f.shift = (*stats)->result(2);
  ir::AttrMap momentum = ir::attrs({{"momentum", a.getFloat("momentum")}});
  ir::Value *meanC = reshape(f.mean, {c});
  ir::Op *runMean = b.createOp("moving_average", {bn.operand(3), meanC}, momentum);
  ir::Op *runVar =
      b.createOp("moving_average", {bn.operand(4), reshape((*stats)->result(3), {c})}, momentum);
  f.y = b.create1("add", {b.create1("mul", {f.x, f.scale}), f.shift});
  ir::Value *invstdC = reshape(f.invstd, {c});
  if (Error e = b.takeError()) return e;
  if (!runMean || !runVar || !f.y || !meanC || !invstdC)
    return Error::make("decompose-batchnorm: could not build the decomposition");
  f.results = {f.y, meanC, invstdC, runMean->result(0), runVar->result(0)};
  return f;
}

// The results of batchnorm_backward `bwd` of `f`, in its order, computed by
// two fused ops and per-channel ops appended to the builder's graph; `grad`
// (or null) is the op whose result dy its kernels recompute.
Expected<std::vector<ir::Value *>> decomposeBatchNormBackward(ir::Builder &b, const ir::Op &bwd,
                                                              const DecomposedBatchNorm &f,
                                                              const ir::Op *grad) {
  ir::Value *dy = bwd.operand(0);
  int64_t c = f.x->type().dims[1];
  RegionBuilder stats(bwd.loc());
  ir::Value *d = gradientIntoY(stats, f, grad, dy);
  ir::Value *centred = stats.op("sub", {stats.arg(f.x), stats.arg(f.mean)});
  ir::Value *like = stats.arg(f.g);
  ir::Value *sumD = stats.op("sum_like", {d, like});
  ir::Value *sumDX = stats.op("sum_like", {stats.op("mul", {d, centred}), like});
  Expected<ir::Op *> sums = stats.finish(b, {sumD, sumDX});
  if (!sums) return sums.takeError();
  ir::Value *sd = (*sums)->result(0), *sdx = (*sums)->result(1);
  // dx = g invstd (d - sd/M - (x - mean) invstd^2 sdx/M): the mean of d and
  // of d times the normalized x taken out, as PyTorch's batch norm backward;
  // g invstd is the forward's scale. The per-channel factors are a fused op
  // that divides, as in the forward.
  RegionBuilder pc(bwd.loc());
  ir::Value *invstd = pc.arg(f.invstd), *count = pc.arg(f.count);
  ir::Value *dgammaR = pc.op("mul", {pc.arg(sdx), invstd});
  ir::Value *meanDR = pc.op("div", {pc.arg(sd), count});
  ir::Value *slopeR =
      pc.op("div", {pc.op("mul", {pc.op("mul", {invstd, invstd}), pc.arg(sdx)}), count});
  Expected<ir::Op *> factors = pc.finish(b, {meanDR, slopeR, dgammaR});
  if (!factors) return factors.takeError();
  ir::Value *meanD = (*factors)->result(0), *slope = (*factors)->result(1);
  ir::Value *dgamma = (*factors)->result(2);
  RegionBuilder grads(bwd.loc());
  ir::Value *d2 = gradientIntoY(grads, f, grad, dy);
  ir::Value *centred2 = grads.op("sub", {grads.arg(f.x), grads.arg(f.mean)});
  ir::Value *dx = grads.op("mul", {grads.op("sub", {grads.op("sub", {d2, grads.arg(meanD)}),
                                                    grads.op("mul", {centred2, grads.arg(slope)})}),
                                   grads.arg(f.scale)});
  Expected<ir::Op *> dxOp = grads.finish(b, {dx});
  if (!dxOp) return dxOp.takeError();
  auto perChannel = [&](ir::Value *v) {
    return b.create1("reshape", {v}, ir::attrs({{"shape", std::vector<int64_t>{c}}}));
  };
  std::vector<ir::Value *> results = {(*dxOp)->result(0), perChannel(dgamma), perChannel(sd)};
  if (Error e = b.takeError()) return e;
  return results;
}

} // namespace dtnn::passes
