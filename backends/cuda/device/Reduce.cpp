// The Reduce family on the device (ir/ops/Reduce.cpp, and fill, count_like
// and broadcast_like of ir/ops/Elementwise.cpp), as the reference evaluates
// them (kernels/Reduce.h): the geometry of each reduction and broadcast,
// and the value a fill writes, are fixed when the kernel is made.
#include "backends/cuda/device/Device.h"
#include "backends/cuda/device/kernels/Reduce.h"
#include "runtime/BFloat16.h"

#include <algorithm>
#include <cstring>
#include <string>

namespace dtnn::cuda {

namespace {

// The geometry of x reduced to y; the planning claimed only reductions that fit.
ReduceGeom geomOf(const ir::TensorType &x, const ir::TensorType &y) {
  bool fits = false;
  return reduceGeom(x.dims, y.dims, &fits);
}

// reduce_sum %x {axes} and reduce_max %x {axes}.
template <typename T> class Reduce final : public DeviceOp {
public:
  Reduce(const DeviceKernelSpec &s, bool max) : g_(geomOf(s.in[0].type, s.out[0].type)), max_(max) {}

  Error launch(const runtime::KernelArgs &a, const Launch &l) override {
    const T *x = a.in[0].as<const T>();
    T *y = a.out[0].as<T>();
    double *partial = static_cast<double *>(a.workspace);
    if (max_) return check(launchReduceMax(x, y, partial, g_, l.stream), "reduce_max");
    return check(launchReduceSum(x, y, partial, g_, l.stream), "reduce_sum");
  }

private:
  ReduceGeom g_;
  bool max_;
};

// reduce_max_backward %dy, %x, %y {axes}.
template <typename T> class ReduceMaxBackward final : public DeviceOp {
public:
  explicit ReduceMaxBackward(const DeviceKernelSpec &s) : g_(geomOf(s.in[1].type, s.in[0].type)) {}

  Error launch(const runtime::KernelArgs &a, const Launch &l) override {
    return check(launchReduceMaxBackward(a.in[0].as<const T>(), a.in[1].as<const T>(), a.in[2].as<const T>(),
                                         a.out[0].as<T>(), static_cast<double *>(a.workspace), g_, l.stream),
                 "reduce_max_backward");
  }

private:
  ReduceGeom g_;
};

// The maker of a reduction K at the operand's element type, f32 or f64.
template <template <typename> class K, typename... A> DeviceKernelMaker floatMaker(A... args) {
  return [=](const DeviceKernelSpec &s) -> Expected<std::unique_ptr<DeviceKernel>> {
    switch (s.in[0].type.dtype) {
    case ir::DType::F32: return make<K<float>>(s, args...);
    case ir::DType::F64: return make<K<double>>(s, args...);
    default: return Error::make("the cuda " + s.kind + " takes f32 or f64, not " + s.in[0].type.str());
    }
  };
}

// broadcast_like %x, %like: the merged dimensions of like, those x has of size 1 (or lacks)
// repeating x, as the reference's planReduce splits like against x.
class BroadcastLike final : public DeviceOp {
public:
  explicit BroadcastLike(const DeviceKernelSpec &s) : bytes_(int(ir::dtypeSize(s.out[0].type.dtype))) {
    for (const reference::ReduceDim &d : reference::planReduce(s.out[0].type.dims, s.in[0].type.dims)) {
      g_.size[g_.rank] = d.size;
      g_.kept[g_.rank] = !d.reduced;
      ++g_.rank;
    }
    g_.total = elementsOf(s.out[0].type);
  }

  Error launch(const runtime::KernelArgs &a, const Launch &l) override {
    return check(launchBroadcast(a.in[0].data, a.out[0].data, g_, bytes_, l.stream), "broadcast_like");
  }

private:
  BroadcastGeom g_;
  int bytes_;
};

// The bits of `v` converted to element type t, as the reference's static_cast<T>.
template <typename T> uint64_t bitsAs(double v) {
  T t = static_cast<T>(v);
  uint64_t bits = 0;
  std::memcpy(&bits, &t, sizeof t);
  return bits;
}

uint64_t bitsOf(double v, ir::DType t) {
  switch (t) {
  case ir::DType::F32: return bitsAs<float>(v);
  case ir::DType::BF16: return runtime::narrowToBf16(static_cast<float>(v));
  case ir::DType::F64: return bitsAs<double>(v);
  case ir::DType::I32: return bitsAs<int32_t>(v);
  case ir::DType::I64: return bitsAs<int64_t>(v);
  case ir::DType::U8: return bitsAs<uint8_t>(v);
  case ir::DType::Bool: return bitsAs<bool>(v);
  case ir::DType::Token: break;
  }
  return 0;
}

// The value fill %like {value} writes; count_like %x, %like {offset}'s: numel(x) / numel(like) +
// offset, at least 1, as the reference computes it.
double fillValue(const DeviceKernelSpec &s) {
  const ir::AttrMap &at = s.op->attrs();
  if (s.kind == "fill") return at.getFloat("value");
  double like = double(elementsOf(s.out[0].type));
  double count = like > 0 ? double(elementsOf(s.in[0].type)) / like : 0;
  return std::max(1.0, count + at.getFloat("offset"));
}

// fill and count_like: every element of the result set to fillValue in its type.
class Fill final : public DeviceOp {
public:
  explicit Fill(const DeviceKernelSpec &s)
      : kind_(s.kind), n_(elementsOf(s.out[0].type)), bytes_(int(ir::dtypeSize(s.out[0].type.dtype))),
        bits_(bitsOf(fillValue(s), s.out[0].type.dtype)) {}

  Error launch(const runtime::KernelArgs &a, const Launch &l) override {
    return check(launchFill(a.out[0].data, n_, bytes_, bits_, l.stream), kind_.c_str());
  }

private:
  std::string kind_;
  int64_t n_;
  int bytes_;
  uint64_t bits_;
};

} // namespace

void registerReduceKernels(DeviceRegistry &r) {
  r.add("reduce_sum", floatMaker<Reduce>(false));
  r.add("reduce_max", floatMaker<Reduce>(true));
  r.add("reduce_max_backward", floatMaker<ReduceMaxBackward>());
  r.add("broadcast_like", [](const DeviceKernelSpec &s) { return make<BroadcastLike>(s); });
  for (const char *kind : {"fill", "count_like"})
    r.add(kind, [](const DeviceKernelSpec &s) { return make<Fill>(s); });
}

} // namespace dtnn::cuda
