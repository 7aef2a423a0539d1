#include "runtime/train/DeterministicStep.h"

#include <cmath>
#include <cstring>

namespace dtnn::runtime {

DeterministicStep::DeterministicStep(ModuleRunner &runner, const ir::Graph &grads,
                                     const ir::Graph &update, Communicator &comm,
                                     int64_t microBatch)
    : runner_(runner), grads_(grads), update_(update), comm_(comm), micro_(microBatch) {
  for (const auto &op : grads.ops()) {
    auto specs = op->def().operandSpecs(op->operands().size(), op->attrs());
    for (size_t i = 0; i < specs.size(); ++i)
      if (specs[i]->writes() && op->operand(i)->kind() == ir::Value::Kind::Param) {
        const std::string &name = op->operand(i)->param()->name;
        if (std::find(written_.begin(), written_.end(), name) == written_.end())
          written_.push_back(name);
      }
  }
}

namespace {
// Rounds half away from zero: a pure function of x, and much faster than
// std::llround's library call.
inline int64_t toFixed(double x) { return static_cast<int64_t>(x + (x < 0 ? -0.5 : 0.5)); }
} // namespace

Error DeterministicStep::exactMean(const std::vector<std::vector<Tensor>> &values, size_t used,
                                   int64_t count, std::vector<Tensor> &mean) {
  size_t tensors = values.empty() ? 0 : values[0].size();
  if (tensors == 0) return Error::success();
  // The largest magnitude of each tensor over every micro-batch of every rank.
  std::vector<double> maxAbs(tensors, 0.0);
  for (size_t j = 0; j < used; ++j)
    for (size_t t = 0; t < tensors; ++t) {
      const float *p = values[j][t].data<float>();
      float m = 0;
      for (int64_t i = 0, n = values[j][t].numel(); i < n; ++i) m = std::max(m, std::fabs(p[i]));
      maxAbs[t] = std::max(maxAbs[t], static_cast<double>(m));
    }
  if (Error e = comm_.allreduce(maxAbs.data(), maxAbs.size(), ir::DType::F64, ReduceOp::Max,
                                "agreeing on fixed-point exponents"))
    return e;
  // Each tensor's fixed-point values, back to back, summed over this rank's
  // micro-batches and then over the ranks in one reduction.
  std::vector<double> scale(tensors);
  std::vector<size_t> at(tensors + 1, 0);
  for (size_t t = 0; t < tensors; ++t) {
    if (!std::isfinite(maxAbs[t]))
      return Error::make("a gradient is not finite; a lower learning rate may help");
    // A sum of `count` values of at most maxAbs fits in 62 bits.
    int exp = 0;
    if (maxAbs[t] > 0) std::frexp(maxAbs[t] * static_cast<double>(count), &exp);
    scale[t] = std::ldexp(1.0, 62 - exp);
    at[t + 1] = at[t] + static_cast<size_t>(values[0][t].numel());
  }
  fixed_.assign(at.back(), 0);
  for (size_t j = 0; j < used; ++j)
    for (size_t t = 0; t < tensors; ++t) {
      const float *p = values[j][t].data<float>();
      int64_t *q = fixed_.data() + at[t];
      for (size_t i = 0, n = at[t + 1] - at[t]; i < n; ++i)
        q[i] += toFixed(static_cast<double>(p[i]) * scale[t]);
    }
  // Integer sums are exact in any order, so on nodes of several ranks the
  // reduction may cross the network once a node (hierarchically).
  Algorithm algorithm = comm_.nodeCount() > 1 && comm_.size() > comm_.nodeCount()
                            ? Algorithm::Hierarchical
                            : Algorithm::Flat;
  if (Error e = comm_.allreduce(fixed_.data(), fixed_.size(), ir::DType::I64, ReduceOp::Sum,
                                "summing in fixed point", 1, algorithm))
    return e;
  mean.resize(tensors);
  for (size_t t = 0; t < tensors; ++t) {
    if (mean[t].type() != values[0][t].type()) mean[t] = Tensor(values[0][t].type());
    float *q = mean[t].data<float>();
    for (size_t i = 0, n = at[t + 1] - at[t]; i < n; ++i)
      q[i] = static_cast<float>(static_cast<double>(fixed_[at[t] + i]) / scale[t] /
                                static_cast<double>(count));
  }
  return Error::success();
}

Expected<std::vector<double>> DeterministicStep::run(const Batch &batch, float lr, int64_t step) {
  auto exec = runner_.executor(grads_, micro_);
  if (!exec) return exec.takeError();
  Executor &g = **exec;
  // The gradient step's outputs: the train step's scalars, then a gradient
  // for each `grad.` input of the update step.
  size_t outputs = grads_.outputs().size(), gradients = 0;
  for (const ir::Value *in : update_.inputs()) gradients += in->name().starts_with("grad.");
  size_t scalars = outputs - gradients;
  size_t sampleBytes = batch.sampleBytes();
  size_t perSample = batch.size ? batch.labels.size() / static_cast<size_t>(batch.size) : 0;
  int64_t mine = batch.samples / micro_;
  if (mine < 1 || batch.samples % micro_ != 0)
    return Error::make("a deterministic step needs whole micro-batches of " +
                       std::to_string(micro_) + " on every rank; this rank has " +
                       std::to_string(batch.samples) + " samples");

  before_.resize(written_.size());
  for (size_t k = 0; k < written_.size(); ++k) {
    auto t = runner_.params().read(written_[k]);
    if (!t) return t.takeError();
    before_[k] = std::move(*t);
  }
  if (grads_buf_.size() < static_cast<size_t>(mine)) {
    grads_buf_.resize(mine, std::vector<Tensor>(gradients));
    states_.resize(mine);
  }
  std::vector<double> sums(scalars, 0.0);
  for (int64_t j = 0; j < mine; ++j) {
    for (size_t k = 0; j > 0 && k < written_.size(); ++k)
      if (Error e = runner_.params().write(written_[k], before_[k])) return e;
    g.setInput(0, static_cast<const char *>(batch.input()) + j * micro_ * sampleBytes,
               micro_ * sampleBytes);
    g.setInput(1, batch.labels.data() + j * micro_ * perSample,
               micro_ * perSample * sizeof(int32_t));
    g.setInput(2, &lr, sizeof lr);
    g.setInput(3, &step, sizeof step);
    g.setPart({1.0, batch.offset + j * micro_});
    if (Error e = g.run()) return e;
    for (size_t i = 0; i < scalars; ++i) sums[i] += g.scalarOutput(i) * static_cast<double>(micro_);
    for (size_t i = 0; i < gradients; ++i) g.copyOutput(scalars + i, grads_buf_[j][i]);
    states_[j].resize(written_.size());
    for (size_t k = 0; k < written_.size(); ++k) {
      auto t = runner_.params().read(written_[k]);
      if (!t) return t.takeError();
      states_[j][k] = std::move(*t);
    }
  }
  int64_t count = batch.globalSize / micro_;
  if (Error e = exactMean(grads_buf_, mine, count, gradMean_)) return e;
  if (Error e = exactMean(states_, mine, count, stateMean_)) return e;
  for (size_t k = 0; k < written_.size(); ++k)
    if (Error e = runner_.params().write(written_[k], stateMean_[k])) return e;

  auto uexec = runner_.executor(update_, 1);
  if (!uexec) return uexec.takeError();
  Executor &u = **uexec;
  size_t gi = 0;
  for (size_t i = 0; i < update_.inputs().size(); ++i) {
    const std::string &name = update_.inputs()[i]->name();
    if (name.starts_with("grad."))
      u.setInput(i, gradMean_[gi].raw(), gradMean_[gi].bytes()), ++gi;
    else if (name == "lr")
      u.setInput(i, &lr, sizeof lr);
    else if (name == "step")
      u.setInput(i, &step, sizeof step);
    else
      return Error::make("@" + update_.name() + " takes an input %" + name + " it cannot be given");
  }
  if (Error e = u.run()) return e;
  for (double &s : sums) s /= static_cast<double>(std::max<int64_t>(batch.samples, 1));
  return sums;
}

} // namespace dtnn::runtime
