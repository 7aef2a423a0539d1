// The convolution family of the cuda backend: conv2d (with its bias, residual and fused
// activation) and its data and weight gradients run on cuDNN with the algorithm measured once
// per shape; the bias gradient is a kernel of the module's own. Each convolution's workspace is
// cuDNN's (2 * the bytes of x, y and the weight, between 32 and 512 MiB), and with asymmetric
// padding, which cuDNN's descriptors cannot express, also a zero-padded copy of x (or of dx),
// in front. cuDNN takes int dimensions and fewer than 2^31 elements per tensor; larger
// convolutions stay on the reference backend.
#include "backends/cuda/CudaOps.h"
#include "ir/ops/ShapeUtil.h"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <optional>

namespace dtnn::cuda {

namespace {

constexpr uint64_t kMiB = uint64_t(1) << 20;
// The bias gradient's most segments per channel (kMaxBiasGradSegments in
// device/kernels/Conv.h).
constexpr uint64_t kBiasGradSegments = 256;

uint64_t alignUp(uint64_t n) { return (n + 255) / 256 * 256; }

// The product of non-negative dimensions, saturating at INT64_MAX.
int64_t product(const std::vector<int64_t> &dims) {
  int64_t n = 1;
  for (int64_t d : dims) {
    if (d != 0 && n > INT64_MAX / d) return INT64_MAX;
    n *= d;
  }
  return n;
}

// The tensors of one convolution, from the op's attributes and its x and weight types.
struct ConvShapes {
  std::vector<int64_t> x, w, y, padded; // padded: x with the padding made explicit
  bool asymmetric = false;
};

std::optional<ConvShapes> shapesOf(const ir::Op &op, const ir::TensorType &x, const ir::TensorType &w) {
  if (x.rank() != 4 || w.rank() != 4) return std::nullopt;
  for (int64_t d : x.dims)
    if (d < 0 || d > INT_MAX) return std::nullopt;
  auto stride = ir::expandInts(op.attrs().getInts("stride"), 2);
  auto pad = ir::expandPad(op.attrs().getInts("pad"));
  auto dil = ir::expandInts(op.attrs().getInts("dilation"), 2);
  if (!stride || !pad || !dil) return std::nullopt;
  const std::vector<int64_t> &p = *pad; // top, left, bottom, right
  ConvShapes s;
  s.x = x.dims;
  s.w = w.dims;
  s.y = {x.dims[0], w.dims[0],
         ir::windowOutDim(x.dims[2], w.dims[2], (*stride)[0], p[0], p[2], (*dil)[0], false),
         ir::windowOutDim(x.dims[3], w.dims[3], (*stride)[1], p[1], p[3], (*dil)[1], false)};
  s.padded = {x.dims[0], x.dims[1], x.dims[2] + p[0] + p[2], x.dims[3] + p[1] + p[3]};
  s.asymmetric = p[0] != p[2] || p[1] != p[3];
  return s;
}

// Whether cuDNN can take the convolution: int dimensions and attributes, fewer than 2^31
// elements per tensor, and no empty input with a non-empty result (a padding-only result).
bool fitsCudnn(const ir::Op &op, const ConvShapes &s) {
  for (const std::vector<int64_t> *t : {&s.x, &s.w, &s.y, &s.padded}) {
    for (int64_t d : *t)
      if (d < 0 || d > INT_MAX) return false;
    if (product(*t) > INT_MAX) return false;
  }
  for (const char *name : {"stride", "pad", "dilation"})
    for (int64_t v : op.attrs().getInts(name))
      if (v > INT_MAX) return false;
  if (op.attrs().getInt("groups") > INT_MAX) return false;
  return !(product(s.x) == 0 && product(s.y) > 0);
}

// The positions of x and the weight among each op's operands.
std::pair<size_t, size_t> xwAt(const std::string &op) {
  if (op == "conv2d_backward_data") return {2, 1};
  if (op == "conv2d_backward_weights") return {1, 2};
  return {0, 1};
}

bool claimsConv(const ir::Op &op, const std::vector<ir::TensorType> &in) {
  auto [xi, wi] = xwAt(op.name());
  if (in.size() <= std::max(xi, wi) || in[xi].dtype != ir::DType::F32) return false;
  std::optional<ConvShapes> s = shapesOf(op, in[xi], in[wi]);
  return s && fitsCudnn(op, *s);
}

// cuDNN's workspace, then the explicitly padded tensor in front of it where the padding is
// asymmetric (device/Conv.cpp carves it the same way).
uint64_t convWorkspace(const ir::Op &op, const std::vector<ir::TensorType> &in,
                       const std::vector<ir::TensorType> &) {
  auto [xi, wi] = xwAt(op.name());
  std::optional<ConvShapes> s = shapesOf(op, in[xi], in[wi]);
  if (!s) return 0;
  uint64_t bytes = 4 * uint64_t(product(s->x) + product(s->y) + product(s->w));
  uint64_t cudnn = std::min(512 * kMiB, std::max(32 * kMiB, 2 * bytes));
  return cudnn + (s->asymmetric ? alignUp(4 * uint64_t(product(s->padded))) : 0);
}

// The bias gradient's partial sums: channels * its most segments.
uint64_t biasGradWorkspace(const ir::Op &, const std::vector<ir::TensorType> &in,
                           const std::vector<ir::TensorType> &) {
  if (in.empty() || in[0].rank() != 4) return 0;
  return alignUp(uint64_t(std::max<int64_t>(in[0].dims[1], 0)) * kBiasGradSegments * 4);
}

bool claimsBiasGrad(const ir::Op &, const std::vector<ir::TensorType> &in) {
  if (in.empty() || in[0].rank() != 4) return false;
  for (int64_t d : in[0].dims)
    if (d < 0) return false;
  return in[0].dims[1] <= INT_MAX;
}

} // namespace

void addConvOps(std::vector<CudaOp> &ops) {
  // conv2d's result may take its residual's storage: cuDNN then accumulates onto it (beta 1).
  ops.push_back({.op = "conv2d", .claims = claimsConv, .workspace = convWorkspace, .reuse = true});
  for (const char *name : {"conv2d_backward_data", "conv2d_backward_weights"})
    ops.push_back({.op = name, .claims = claimsConv, .workspace = convWorkspace});
  ops.push_back({.op = "conv2d_backward_bias", .claims = claimsBiasGrad, .workspace = biasGradWorkspace});
}

} // namespace dtnn::cuda
