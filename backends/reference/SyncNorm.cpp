// Batch normalization over the global batch of a data-parallel run: the
// kernels of batchnorm_train and batchnorm_backward. With sync=false they
// are the plain kernels of Norm.cpp; with sync=true (the sync-batchnorm
// pass) they reduce their per-channel sums over the ranks through the
// execution context's communicator, in double precision. Each rank's sums
// count by its share of the global batch, so a rank holding a stand-in
// sample (share 0) adds nothing, and a run on P ranks computes what one
// rank computes on the whole batch:
//   forward:  mean = Σx / N, then var = Σ(x - mean)² / N (two reductions);
//   backward: with dy the gradient of this rank's mean loss and w its share,
//             S1 = Σ_ranks w·Σdy, S2 = Σ_ranks w·Σdy·x̂, and
//             dx = γ·invstd·(dy - (S1/N)/w - x̂·(S2/N)/w),
//   in the units of this rank's loss, as the gradient allreduce expects;
//   dγ and dβ stay this rank's sums, which insert-allreduce averages.
#include "backends/reference/KernelUtil.h"
#include "backends/reference/NormKernels.h"
#include "ir/Printer.h"
#include "runtime/Communicator.h"

#include <cmath>
#include <vector>

namespace dtnn::reference {

namespace {

using runtime::KernelRequest;

Error sumOver(runtime::ExecContext &ctx, std::vector<double> &v, const std::string &what) {
  if (!ctx.comm) return Error::make("no communicator for a synchronized batch norm");
  return ctx.comm->allreduce(v.data(), v.size(), ir::DType::F64, runtime::ReduceOp::Sum, what);
}

template <typename T>
Error syncTrain(const KernelArgs &a, runtime::ExecContext &ctx, const std::string &what) {
  NormShape l(a.in[0]);
  const T *x = a.in[0].as<T>();
  bool real = ctx.share() > 0;
  std::vector<double> sums(l.c + 1, 0.0);
  if (real) {
    parallelFor(l.c, [&](int64_t ch) { sums[ch] = channelSum(l, x, ch); });
    sums[l.c] = static_cast<double>(l.count());
  }
  if (Error e = sumOver(ctx, sums, what + ", mean")) return e;
  double count = sums[l.c];
  auto meanOf = [&](int64_t ch) { return count ? sums[ch] / count : 0; };
  std::vector<double> sq(l.c, 0.0);
  if (real) parallelFor(l.c, [&](int64_t ch) { sq[ch] = squaredDeviations(l, x, meanOf(ch), ch); });
  if (Error e = sumOver(ctx, sq, what + ", variance")) return e;
  parallelFor(l.c, [&](int64_t ch) { normalizeChannel<T>(l, a, ch, meanOf(ch), sq[ch], count); });
  return Error::success();
}

template <typename T>
Error syncBackward(const KernelArgs &a, runtime::ExecContext &ctx, const std::string &what) {
  NormShape l(a.in[1]);
  const T *dy = a.in[0].as<T>(), *x = a.in[1].as<T>(), *gamma = a.in[2].as<T>();
  const T *mean = a.in[3].as<T>(), *invstd = a.in[4].as<T>();
  T *dx = a.out[0].as<T>(), *dgamma = a.out[1].as<T>(), *dbeta = a.out[2].as<T>();
  double w = ctx.share();
  std::vector<double> sums(2 * l.c + 1, 0.0);
  parallelFor(l.c, [&](int64_t ch) {
    auto [sdy, sdyx] = gradientSums(l, dy, x, mean[ch], invstd[ch], ch);
    dbeta[ch] = static_cast<T>(sdy);
    dgamma[ch] = static_cast<T>(sdyx);
    sums[ch] = w * sdy;
    sums[l.c + ch] = w * sdyx;
  });
  if (w > 0) sums[2 * l.c] = static_cast<double>(l.n * l.s);
  if (Error e = sumOver(ctx, sums, what + ", gradient")) return e;
  double count = sums[2 * l.c];
  parallelFor(l.c, [&](int64_t ch) {
    T m = mean[ch], inv = invstd[ch], scale = gamma[ch] * inv;
    double md = w > 0 && count ? sums[ch] / count / w : 0;
    double mdx = w > 0 && count ? sums[l.c + ch] / count / w : 0;
    l.forChannel(ch, [&](int64_t o) {
      for (int64_t k = 0; k < l.s; ++k)
        dx[o + k] = w > 0 ? static_cast<T>(scale * (dy[o + k] - md - (x[o + k] - m) * inv * mdx))
                          : T(0);
    });
  });
  return Error::success();
}

// One kernel for both forms of an op.
class BatchNormKernel : public runtime::Kernel {
public:
  BatchNormKernel(const KernelRequest &r, bool backward) : Kernel(r), backward_(backward) {
    sync_ = r.op.attrs().getBool("sync");
    what_ = "batch norm statistics of '" + r.op.name() + "' " + ir::locationStr(r.op.loc());
  }
  Error run(const KernelArgs &a, runtime::ExecContext &ctx) override {
    Error result;
    dispatchFloat(a.in[0].type.dtype, [&](auto tag) {
      using T = decltype(tag);
      if (!sync_)
        backward_ ? batchNormBackwardKernel<T>(a) : batchNormTrainKernel<T>(a);
      else
        result = backward_ ? syncBackward<T>(a, ctx, what_) : syncTrain<T>(a, ctx, what_);
    });
    return result;
  }

private:
  bool backward_, sync_ = false;
  std::string what_;
};

} // namespace

void registerSyncNormKernels(KernelTable &t) {
  for (bool backward : {false, true})
    t.addKernel(backward ? "batchnorm_backward" : "batchnorm_train",
                [backward](const KernelRequest &r) -> Expected<std::unique_ptr<runtime::Kernel>> {
                  return std::unique_ptr<runtime::Kernel>(new BatchNormKernel(r, backward));
                });
}


} // namespace dtnn::reference
