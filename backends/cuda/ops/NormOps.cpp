// The batch normalization family of the cuda backend (ir/ops/Norm.cpp):
// batchnorm (with its fused activation), batchnorm_train, batchnorm_backward,
// batchnorm_backward_frozen, batchnorm_fold and moving_average, in f32 and
// f64, by the module's own kernels (backends/cuda/device/Norm.cpp), which
// sum in double as the reference does, in a fixed order. cuDNN's batch norm
// would not cover them: it takes no eps below CUDNN_BN_MIN_EPSILON, fuses no
// activation but relu (and that only in NHWC), and has no form of the
// frozen gradient. The batch norms synchronized over ranks (sync=true) stay
// on the reference backend, whose kernels reduce over the communicator. The
// ops with per-channel sums keep their partial sums in the workspace. Each
// element of a result is written by the thread that read the operands'
// elements at its offset, after every other read of them, so a result may
// take an operand's storage.
#include "backends/cuda/CudaOps.h"
#include "ir/ops/FusedActivation.h"

#include <climits>

namespace dtnn::cuda {

namespace {

// The most segments a channel's sums are cut into (kMaxNormSegments in device/kernels/Norm.h).
constexpr int64_t kMaxSegments = 128;

// The channels of a batch norm's input x (operand `xAt`).
int64_t channelsOf(const std::vector<ir::TensorType> &in, size_t xAt) {
  return in.size() > xAt && in[xAt].rank() >= 2 ? in[xAt].dims[1] : -1;
}

// Whether the sums' blocks (kMaxSegments per channel at most) fit an int grid.
bool sumsFit(const std::vector<ir::TensorType> &in, size_t xAt) {
  int64_t c = channelsOf(in, xAt);
  return c >= 0 && c <= INT_MAX / kMaxSegments;
}

// Two doubles per segment of each channel, then two per channel (device/kernels/Norm.h).
decltype(CudaOp::workspace) sumsWorkspace(size_t xAt) {
  return [xAt](const ir::Op &, const std::vector<ir::TensorType> &in, const std::vector<ir::TensorType> &) {
    int64_t c = channelsOf(in, xAt);
    return c > 0 ? uint64_t(c) * (kMaxSegments + 1) * 2 * sizeof(double) : uint64_t(0);
  };
}

// Whether the device kernel applies the op's fused activation (every fusable one).
bool takesActivation(const ir::Op &op) {
  std::string a = ir::fusedActivationOf(op);
  return a.empty() || a == "relu" || a == "relu6" || a == "sigmoid" || a == "tanh";
}

bool claimsInference(const ir::Op &op, const std::vector<ir::TensorType> &) { return takesActivation(op); }

bool claimsTrain(const ir::Op &op, const std::vector<ir::TensorType> &in) {
  return !op.attrs().getBool("sync") && takesActivation(op) && sumsFit(in, 0);
}

bool claimsBackward(const ir::Op &op, const std::vector<ir::TensorType> &in) {
  return !op.attrs().getBool("sync") && sumsFit(in, 1);
}

bool claimsFrozen(const ir::Op &, const std::vector<ir::TensorType> &in) { return sumsFit(in, 1); }

} // namespace

void addNormOps(std::vector<CudaOp> &ops) {
  std::vector<ir::DType> floats = {ir::DType::F32, ir::DType::F64};
  ops.push_back({.op = "batchnorm", .dtypes = floats, .claims = claimsInference, .reuse = true});
  ops.push_back({.op = "batchnorm_train",
                 .dtypes = floats,
                 .claims = claimsTrain,
                 .workspace = sumsWorkspace(0),
                 .reuse = true});
  ops.push_back({.op = "batchnorm_backward",
                 .dtypes = floats,
                 .claims = claimsBackward,
                 .workspace = sumsWorkspace(1),
                 .reuse = true});
  ops.push_back({.op = "batchnorm_backward_frozen",
                 .dtypes = floats,
                 .claims = claimsFrozen,
                 .workspace = sumsWorkspace(1),
                 .reuse = true});
  for (const char *name : {"batchnorm_fold", "moving_average"}) ops.push_back({.op = name, .dtypes = floats});
}

} // namespace dtnn::cuda
