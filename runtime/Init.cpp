#include "runtime/Init.h"

#include "ir/InitSpec.h"
#include "runtime/Random.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace dtnn::runtime {

namespace {

// Draws `n` values of `d`. A symmetric uniform draws b (2u - 1), a truncated normal redraws
// until the value falls within [a, b] (torch.nn.init.trunc_normal_'s distribution).
template <typename T> void fill(T *p, int64_t n, const ir::InitDraw &d, Random &rng) {
  for (int64_t i = 0; i < n; ++i) {
    double v = d.a;
    if (d.kind == ir::InitDraw::Uniform)
      v = d.a == -d.b ? d.b * (2.0 * rng.uniform() - 1.0) : d.a + (d.b - d.a) * rng.uniform();
    if (d.kind == ir::InitDraw::Normal) v = d.mean + d.std * rng.normal();
    if (d.kind == ir::InitDraw::TruncatedNormal) {
      // Most draws are kept; a bound many deviations from the mean stops retrying and clamps.
      v = d.mean + d.std * rng.normal();
      for (int tries = 0; (v < d.a || v > d.b) && tries < 100; ++tries)
        v = d.mean + d.std * rng.normal();
      v = std::clamp(v, d.a, d.b);
    }
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

std::vector<std::string> initializerNames() { return ir::initializerNames(); }

Error initializeParam(const std::string &init, const ir::TensorType &type, uint64_t seed,
                      const std::string &paramName, Tensor &out) {
  Expected<ir::InitSpec> spec = ir::parseInitSpec(init);
  if (!spec) return Error::make("parameter @" + paramName + ": " + spec.error().message());
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
  ir::InitDraw draw = spec->draw(fans.in, fans.out);
  Random rng(seed, stableHash(paramName));
  if (type.dtype == ir::DType::F32)
    fill(out.data<float>(), out.numel(), draw, rng);
  else
    fill(out.data<double>(), out.numel(), draw, rng);
  if (draw.zeroRow >= 0 && !type.dims.empty() && draw.zeroRow < type.dims[0]) {
    size_t row = size_t(out.numel() / type.dims[0]) * dtypeSize(type.dtype);
    std::memset(static_cast<char *>(out.raw()) + size_t(draw.zeroRow) * row, 0, row);
  }
  return Error::success();
}

} // namespace dtnn::runtime
