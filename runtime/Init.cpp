#include "runtime/Init.h"

#include "ir/Diagnostics.h"
#include "runtime/Random.h"

#include <algorithm>
#include <cmath>

namespace dtnn::runtime {

namespace {

enum class Dist { Uniform, Normal, Constant };

// How one initializer draws: the distribution and its bound, standard
// deviation or constant as a function of the fans.
struct InitRule {
  const char *name;
  Dist dist;
  double (*scale)(Fans f);
};

const InitRule kRules[] = {
    {"glorot_normal", Dist::Normal, [](Fans f) { return std::sqrt(2.0 / double(f.in + f.out)); }},
    {"glorot_uniform", Dist::Uniform, [](Fans f) { return std::sqrt(6.0 / double(f.in + f.out)); }},
    {"he_normal", Dist::Normal, [](Fans f) { return std::sqrt(2.0 / double(f.in)); }},
    {"he_uniform", Dist::Uniform, [](Fans f) { return std::sqrt(6.0 / double(f.in)); }},
    {"lecun_normal", Dist::Normal, [](Fans f) { return std::sqrt(1.0 / double(f.in)); }},
    {"lecun_uniform", Dist::Uniform, [](Fans f) { return std::sqrt(3.0 / double(f.in)); }},
    {"ones", Dist::Constant, [](Fans) { return 1.0; }},
    {"zeros", Dist::Constant, [](Fans) { return 0.0; }},
};

template <typename T> void fill(T *p, int64_t n, const InitRule &rule, double scale, Random &rng) {
  for (int64_t i = 0; i < n; ++i) {
    double v = scale;
    if (rule.dist == Dist::Uniform) v = scale * (2.0 * rng.uniform() - 1.0);
    if (rule.dist == Dist::Normal) v = scale * rng.normal();
    p[i] = static_cast<T>(v);
  }
}

} // namespace

Fans computeFans(const std::vector<int64_t> &dims) {
  if (dims.empty()) return {};
  if (dims.size() == 1) return {dims[0], dims[0]};
  int64_t receptive = 1;
  for (size_t i = 2; i < dims.size(); ++i) receptive *= dims[i];
  return {dims[1] * receptive, dims[0] * receptive};
}

std::vector<std::string> initializerNames() {
  std::vector<std::string> names;
  for (const InitRule &r : kRules) names.push_back(r.name);
  return names;
}

Error initializeParam(const std::string &init, const ir::TensorType &type, uint64_t seed,
                      const std::string &paramName, Tensor &out) {
  const InitRule *rule = nullptr;
  for (const InitRule &r : kRules)
    if (init == r.name) rule = &r;
  if (!rule) {
    std::string msg = "parameter @" + paramName + ": unknown initializer '" + init + "'";
    std::string hint = closestMatch(init, initializerNames());
    if (!hint.empty()) msg += "; did you mean '" + hint + "'?";
    msg += " (known initializers:";
    for (const std::string &n : initializerNames()) msg += " " + n;
    return Error::make(msg + ")");
  }
  if (!type.isStatic())
    return Error::make("parameter @" + paramName + ": cannot initialize " + type.str() +
                       ", whose shape is not static");
  if (type.dtype != ir::DType::F32 && type.dtype != ir::DType::F64)
    return Error::make("parameter @" + paramName + ": cannot initialize " + type.str() +
                       "; initializers fill f32 and f64 tensors");
  if (out.type() != type || !out.raw()) out = Tensor(type);
  // An empty tensor has no elements to fill; the guard keeps the scale finite.
  Fans fans = computeFans(type.dims);
  fans.in = std::max<int64_t>(fans.in, 1);
  fans.out = std::max<int64_t>(fans.out, 1);
  double scale = rule->scale(fans);
  Random rng(seed, stableHash(paramName));
  if (type.dtype == ir::DType::F32)
    fill(out.data<float>(), out.numel(), *rule, scale, rng);
  else
    fill(out.data<double>(), out.numel(), *rule, scale, rng);
  return Error::success();
}

} // namespace dtnn::runtime
