// The convolutions on the device: conv2d, conv2d_backward_data and
// conv2d_backward_weights on cuDNN's legacy API, conv2d_backward_bias on a
// kernel of its own (kernels/Conv.h).
//
// Algorithm choice: when a kernel is made, its convolution's algorithm is
// measured with cudnnFind*AlgorithmEx on temporary buffers, on a cuDNN handle
// and stream kept for the searches, as PyTorch's cudnn.benchmark does; the
// fastest algorithm whose workspace fits the planned one wins, only
// deterministic ones when the run asks for determinism, and only FMA ones in
// strict float32 (TF32 allowed otherwise). The choice is kept process-wide by
// shape, attributes, math type and determinism. Where the temporary buffers
// cannot be had or the search fails, cuDNN's heuristics choose, and failing
// those the implicit GEMM algorithm of each direction.
//
// Asymmetric padding: x (or dx) is padded explicitly into the front of the
// workspace and cuDNN convolves without padding; the rest of the workspace is
// cuDNN's (ops/ConvOps.cpp plans the same layout).
//
// conv2d's epilogue: the bias, a residual that does not share y's storage,
// and the fused activation in one pass after cuDNN; a residual in y's own
// storage is accumulated by cuDNN itself (beta 1).
#include "backends/cuda/device/kernels/Conv.h"
#include "backends/cuda/device/Device.h"
#include "ir/ops/FusedActivation.h"
#include "ir/ops/ShapeUtil.h"

#include <climits>
#include <map>
#include <mutex>
#include <optional>
#include <sstream>

namespace dtnn::cuda {

namespace {

enum class Direction { Forward, BackwardData, BackwardWeights };

const char *directionName(Direction d) {
  switch (d) {
  case Direction::Forward: return "conv2d";
  case Direction::BackwardData: return "conv2d_backward_data";
  case Direction::BackwardWeights: return "conv2d_backward_weights";
  }
  return "conv2d";
}

uint64_t alignUp(uint64_t n) { return (n + 255) / 256 * 256; }

// The sizes of one convolution: x [n,c,h,w], the weight [k,cg,kh,kw], y [n,k,oh,ow], and the
// attributes, padding top, left, bottom, right.
struct Geometry {
  int n, c, h, w, k, cg, kh, kw, oh, ow;
  int sh, sw, dh, dw, groups;
  int pt, pl, pb, pr;

  bool asymmetric() const { return pt != pb || pl != pr; }
  // The input cuDNN sees: x itself, or x with its padding made explicit.
  int inH() const { return asymmetric() ? h + pt + pb : h; }
  int inW() const { return asymmetric() ? w + pl + pr : w; }
  int padH() const { return asymmetric() ? 0 : pt; }
  int padW() const { return asymmetric() ? 0 : pl; }
  int64_t xElements() const { return int64_t(n) * c * h * w; }
  int64_t inElements() const { return int64_t(n) * c * inH() * inW(); }
  int64_t yElements() const { return int64_t(n) * k * oh * ow; }
  int64_t wElements() const { return int64_t(k) * cg * kh * kw; }
  // The workspace bytes in front of cuDNN's: the explicitly padded tensor.
  uint64_t padBytes() const { return asymmetric() ? alignUp(4 * uint64_t(inElements())) : 0; }

  std::string key() const {
    std::ostringstream o;
    o << n << "," << c << "," << inH() << "," << inW() << " " << k << "," << cg << "," << kh << "," << kw
      << " " << oh << "," << ow << " s" << sh << "," << sw << " d" << dh << "," << dw << " p" << padH() << ","
      << padW() << " g" << groups;
    return o.str();
  }
};

// The geometry of `spec` in direction `dir`, from its x, weight and y (or dy) types.
Expected<Geometry> geometryOf(const DeviceKernelSpec &s, Direction dir) {
  if (!s.op || s.in.size() < 2 || s.out.empty()) return Error::make("a convolution kernel without its op");
  const ir::TensorType *x = nullptr, *w = nullptr, *y = nullptr;
  switch (dir) {
  case Direction::Forward: x = &s.in[0].type, w = &s.in[1].type, y = &s.out[0].type; break;
  case Direction::BackwardData: y = &s.in[0].type, w = &s.in[1].type, x = &s.out[0].type; break;
  case Direction::BackwardWeights: y = &s.in[0].type, x = &s.in[1].type, w = &s.out[0].type; break;
  }
  const ir::AttrMap &at = s.op->attrs();
  auto stride = ir::expandInts(at.getInts("stride"), 2);
  auto pad = ir::expandPad(at.getInts("pad"));
  auto dil = ir::expandInts(at.getInts("dilation"), 2);
  if (x->rank() != 4 || w->rank() != 4 || y->rank() != 4 || !stride || !pad || !dil)
    return Error::make("'" + s.kind + "' on the cuda backend takes 4-d tensors and conv2d's attributes");
  std::vector<int64_t> all = {x->dims[0],   x->dims[1],   x->dims[2], x->dims[3], w->dims[0],
                              w->dims[1],   w->dims[2],   w->dims[3], y->dims[2], y->dims[3],
                              (*stride)[0], (*stride)[1], (*dil)[0],  (*dil)[1],  at.getInt("groups"),
                              (*pad)[0],    (*pad)[1],    (*pad)[2],  (*pad)[3]};
  for (int64_t v : all)
    if (v < 0 || v > INT_MAX) return Error::make("'" + s.kind + "' has sizes cuDNN cannot take");
  Geometry g;
  int *fields[] = {&g.n,  &g.c,  &g.h,  &g.w,  &g.k,      &g.cg, &g.kh, &g.kw, &g.oh, &g.ow,
                   &g.sh, &g.sw, &g.dh, &g.dw, &g.groups, &g.pt, &g.pl, &g.pb, &g.pr};
  for (size_t i = 0; i < all.size(); ++i) *fields[i] = int(all[i]);
  return g;
}

// The requested math: TF32 allowed in convolutions unless the run is strict float32.
cudnnMathType_t requestedMath() { return settings().tf32 == Tf32::Off ? CUDNN_FMA_MATH : CUDNN_DEFAULT_MATH; }

// The cuDNN descriptors of one convolution, made once, destroyed with the kernel.
struct Descriptors {
  cudnnTensorDescriptor_t x = nullptr, y = nullptr;
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;

  Descriptors() = default;
  Descriptors(const Descriptors &) = delete;
  Descriptors &operator=(const Descriptors &) = delete;
  ~Descriptors() {
    if (x) cudnnDestroyTensorDescriptor(x);
    if (y) cudnnDestroyTensorDescriptor(y);
    if (w) cudnnDestroyFilterDescriptor(w);
    if (conv) cudnnDestroyConvolutionDescriptor(conv);
  }

  Error init(const Geometry &g, cudnnMathType_t math) {
    if (Error e = check(cudnnCreateTensorDescriptor(&x), "cudnnCreateTensorDescriptor")) return e;
    if (Error e = check(cudnnCreateTensorDescriptor(&y), "cudnnCreateTensorDescriptor")) return e;
    if (Error e = check(cudnnCreateFilterDescriptor(&w), "cudnnCreateFilterDescriptor")) return e;
    if (Error e = check(cudnnCreateConvolutionDescriptor(&conv), "cudnnCreateConvolutionDescriptor"))
      return e;
    if (Error e = check(
            cudnnSetTensor4dDescriptor(x, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, g.n, g.c, g.inH(), g.inW()),
            "cudnnSetTensor4dDescriptor (x)"))
      return e;
    if (Error e =
            check(cudnnSetTensor4dDescriptor(y, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, g.n, g.k, g.oh, g.ow),
                  "cudnnSetTensor4dDescriptor (y)"))
      return e;
    if (Error e =
            check(cudnnSetFilter4dDescriptor(w, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, g.k, g.cg, g.kh, g.kw),
                  "cudnnSetFilter4dDescriptor"))
      return e;
    if (Error e = check(cudnnSetConvolution2dDescriptor(conv, g.padH(), g.padW(), g.sh, g.sw, g.dh, g.dw,
                                                        CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT),
                        "cudnnSetConvolution2dDescriptor"))
      return e;
    if (Error e = check(cudnnSetConvolutionGroupCount(conv, g.groups), "cudnnSetConvolutionGroupCount"))
      return e;
    if (Error e = check(cudnnSetConvolutionMathType(conv, math), "cudnnSetConvolutionMathType")) return e;
    int on = 0, ok = 0, oh = 0, ow = 0;
    if (Error e = check(cudnnGetConvolution2dForwardOutputDim(conv, x, w, &on, &ok, &oh, &ow),
                        "cudnnGetConvolution2dForwardOutputDim"))
      return e;
    if (on != g.n || ok != g.k || oh != g.oh || ow != g.ow)
      return Error::make("cuDNN's conv2d result [" + std::to_string(on) + "," + std::to_string(ok) + "," +
                         std::to_string(oh) + "," + std::to_string(ow) + "] differs from the op's");
    return Error::success();
  }
};

// An algorithm of one direction (its enum as an int), the math it runs in, its workspace.
struct Choice {
  int algo = 0;
  cudnnMathType_t math = CUDNN_DEFAULT_MATH;
  size_t memory = 0;
};

// What a search may choose.
struct Wanted {
  size_t limit;         // workspace bytes
  cudnnMathType_t math; // requested
  bool deterministic;
};

// The first (fastest) result that works, fits and obeys the settings.
template <typename Perf> std::optional<Choice> pickFrom(const Perf *perf, int count, const Wanted &want) {
  for (int i = 0; i < count; ++i) {
    const Perf &p = perf[i];
    if (p.status != CUDNN_STATUS_SUCCESS || p.memory > want.limit) continue;
    if (want.deterministic && p.determinism != CUDNN_DETERMINISTIC) continue;
    if (p.mathType == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION) continue; // would round to half
    if (want.math == CUDNN_FMA_MATH && p.mathType != CUDNN_FMA_MATH) continue;
    return Choice{int(p.algo), p.mathType, p.memory};
  }
  return std::nullopt;
}

// The handle searches run on and its stream, kept for the process.
struct SearchContext {
  cudaStream_t stream = nullptr;
  cudnnHandle_t handle = nullptr;
};

// The search context, made on first use (under the search lock).
Expected<SearchContext> searchContext() {
  static SearchContext ctx;
  if (ctx.handle) return ctx;
  if (!ctx.stream)
    if (Error e = check(cudaStreamCreateWithFlags(&ctx.stream, cudaStreamNonBlocking), "cudaStreamCreate"))
      return e;
  cudnnHandle_t h = nullptr;
  if (Error e = check(cudnnCreate(&h), "cudnnCreate")) return e;
  if (Error e = check(cudnnSetStream(h, ctx.stream), "cudnnSetStream")) {
    cudnnDestroy(h);
    return e;
  }
  ctx.handle = h;
  return ctx;
}

// Device buffers for a search, zero-filled; freed with the object.
class SearchBuffers {
public:
  SearchBuffers() = default;
  SearchBuffers(const SearchBuffers &) = delete;
  SearchBuffers &operator=(const SearchBuffers &) = delete;
  ~SearchBuffers() {
    for (void *p : {x, y, w, work})
      if (p) cudaFree(p);
  }
  // Whether all four could be had (zeroed on `stream`); a refusal leaves no error behind.
  bool allocate(const Geometry &g, size_t workBytes, cudaStream_t stream) {
    std::pair<void **, size_t> want[] = {{&x, 4 * size_t(g.inElements())},
                                         {&y, 4 * size_t(g.yElements())},
                                         {&w, 4 * size_t(g.wElements())},
                                         {&work, workBytes}};
    for (auto [p, bytes] : want) {
      size_t n = std::max<size_t>(bytes, 256);
      if (cudaMalloc(p, n) != cudaSuccess || cudaMemsetAsync(*p, 0, n, stream) != cudaSuccess) {
        cudaGetLastError();
        return false;
      }
    }
    if (cudaStreamSynchronize(stream) != cudaSuccess) {
      cudaGetLastError();
      return false;
    }
    return true;
  }
  void *x = nullptr, *y = nullptr, *w = nullptr, *work = nullptr;
};

// Measures every algorithm of the direction on `b`.
Expected<std::optional<Choice>> measure(Direction dir, cudnnHandle_t h, const Descriptors &d,
                                        const SearchBuffers &b, const Wanted &want) {
  int max = 0, got = 0;
  switch (dir) {
  case Direction::Forward: {
    if (Error e = check(cudnnGetConvolutionForwardAlgorithmMaxCount(h, &max),
                        "cudnnGetConvolutionForwardAlgorithmMaxCount"))
      return e;
    std::vector<cudnnConvolutionFwdAlgoPerf_t> perf(size_t(std::max(max, 1)));
    if (Error e = check(cudnnFindConvolutionForwardAlgorithmEx(h, d.x, b.x, d.w, b.w, d.conv, d.y, b.y, max,
                                                               &got, perf.data(), b.work, want.limit),
                        "cudnnFindConvolutionForwardAlgorithmEx"))
      return e;
    return pickFrom(perf.data(), got, want);
  }
  case Direction::BackwardData: {
    if (Error e = check(cudnnGetConvolutionBackwardDataAlgorithmMaxCount(h, &max),
                        "cudnnGetConvolutionBackwardDataAlgorithmMaxCount"))
      return e;
    std::vector<cudnnConvolutionBwdDataAlgoPerf_t> perf(size_t(std::max(max, 1)));
    if (Error e =
            check(cudnnFindConvolutionBackwardDataAlgorithmEx(h, d.w, b.w, d.y, b.y, d.conv, d.x, b.x, max,
                                                              &got, perf.data(), b.work, want.limit),
                  "cudnnFindConvolutionBackwardDataAlgorithmEx"))
      return e;
    return pickFrom(perf.data(), got, want);
  }
  case Direction::BackwardWeights: {
    if (Error e = check(cudnnGetConvolutionBackwardFilterAlgorithmMaxCount(h, &max),
                        "cudnnGetConvolutionBackwardFilterAlgorithmMaxCount"))
      return e;
    std::vector<cudnnConvolutionBwdFilterAlgoPerf_t> perf(size_t(std::max(max, 1)));
    if (Error e =
            check(cudnnFindConvolutionBackwardFilterAlgorithmEx(h, d.x, b.x, d.y, b.y, d.conv, d.w, b.w, max,
                                                                &got, perf.data(), b.work, want.limit),
                  "cudnnFindConvolutionBackwardFilterAlgorithmEx"))
      return e;
    return pickFrom(perf.data(), got, want);
  }
  }
  return std::optional<Choice>();
}

// cuDNN's heuristic ranking of the direction's algorithms, without running any.
Expected<std::optional<Choice>> heuristic(Direction dir, cudnnHandle_t h, const Descriptors &d,
                                          const Wanted &want) {
  int max = 0, got = 0;
  switch (dir) {
  case Direction::Forward: {
    if (Error e = check(cudnnGetConvolutionForwardAlgorithmMaxCount(h, &max),
                        "cudnnGetConvolutionForwardAlgorithmMaxCount"))
      return e;
    std::vector<cudnnConvolutionFwdAlgoPerf_t> perf(size_t(std::max(max, 1)));
    if (Error e =
            check(cudnnGetConvolutionForwardAlgorithm_v7(h, d.x, d.w, d.conv, d.y, max, &got, perf.data()),
                  "cudnnGetConvolutionForwardAlgorithm_v7"))
      return e;
    return pickFrom(perf.data(), got, want);
  }
  case Direction::BackwardData: {
    if (Error e = check(cudnnGetConvolutionBackwardDataAlgorithmMaxCount(h, &max),
                        "cudnnGetConvolutionBackwardDataAlgorithmMaxCount"))
      return e;
    std::vector<cudnnConvolutionBwdDataAlgoPerf_t> perf(size_t(std::max(max, 1)));
    if (Error e = check(
            cudnnGetConvolutionBackwardDataAlgorithm_v7(h, d.w, d.y, d.conv, d.x, max, &got, perf.data()),
            "cudnnGetConvolutionBackwardDataAlgorithm_v7"))
      return e;
    return pickFrom(perf.data(), got, want);
  }
  case Direction::BackwardWeights: {
    if (Error e = check(cudnnGetConvolutionBackwardFilterAlgorithmMaxCount(h, &max),
                        "cudnnGetConvolutionBackwardFilterAlgorithmMaxCount"))
      return e;
    std::vector<cudnnConvolutionBwdFilterAlgoPerf_t> perf(size_t(std::max(max, 1)));
    if (Error e = check(
            cudnnGetConvolutionBackwardFilterAlgorithm_v7(h, d.x, d.y, d.conv, d.w, max, &got, perf.data()),
            "cudnnGetConvolutionBackwardFilterAlgorithm_v7"))
      return e;
    return pickFrom(perf.data(), got, want);
  }
  }
  return std::optional<Choice>();
}

// The implicit GEMM algorithm of the direction (deterministic, no tensor cores needed), where
// its workspace fits.
std::optional<Choice> implicitGemm(Direction dir, cudnnHandle_t h, const Descriptors &d, const Wanted &want) {
  size_t bytes = 0;
  cudnnStatus_t st = CUDNN_STATUS_SUCCESS;
  int algo = 0;
  switch (dir) {
  case Direction::Forward:
    algo = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
    st = cudnnGetConvolutionForwardWorkspaceSize(h, d.x, d.w, d.conv, d.y,
                                                 CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, &bytes);
    break;
  case Direction::BackwardData:
    algo = CUDNN_CONVOLUTION_BWD_DATA_ALGO_1;
    st = cudnnGetConvolutionBackwardDataWorkspaceSize(h, d.w, d.y, d.conv, d.x,
                                                      CUDNN_CONVOLUTION_BWD_DATA_ALGO_1, &bytes);
    break;
  case Direction::BackwardWeights:
    algo = CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1;
    st = cudnnGetConvolutionBackwardFilterWorkspaceSize(h, d.x, d.y, d.conv, d.w,
                                                        CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1, &bytes);
    break;
  }
  if (st != CUDNN_STATUS_SUCCESS || bytes > want.limit) return std::nullopt;
  return Choice{algo, want.math, bytes};
}

// The algorithm of a convolution, measured on its first request and kept for the process.
Expected<Choice> chooseAlgorithm(Direction dir, const Geometry &g, const Descriptors &d, const Wanted &want) {
  static std::mutex mu;
  static std::map<std::string, Choice> chosen;
  std::ostringstream key;
  key << directionName(dir) << " " << g.key() << " math" << int(want.math) << " det" << want.deterministic
      << " ws" << want.limit;
  std::lock_guard<std::mutex> lock(mu);
  auto it = chosen.find(key.str());
  if (it != chosen.end()) return it->second;
  Expected<SearchContext> ctx = searchContext();
  if (!ctx) return ctx.takeError();
  cudnnHandle_t h = ctx->handle;
  std::optional<Choice> c;
  {
    SearchBuffers buffers;
    if (buffers.allocate(g, want.limit, ctx->stream)) {
      // A search that fails (its kernels refused at these sizes) leaves the choice to the
      // heuristics.
      Expected<std::optional<Choice>> m = measure(dir, h, d, buffers, want);
      if (m) {
        countStat("measured");
        c = *m;
      } else {
        consumeError(m.takeError());
        cudaGetLastError();
      }
    }
  }
  if (!c) {
    Expected<std::optional<Choice>> m = heuristic(dir, h, d, want);
    if (m)
      c = *m;
    else
      consumeError(m.takeError());
  }
  if (!c) c = implicitGemm(dir, h, d, want);
  if (!c)
    return Error::make(std::string("cuDNN has no ") + directionName(dir) + " algorithm for " + g.key() +
                       " within " + std::to_string(want.limit) + " bytes of workspace");
  chosen.emplace(key.str(), *c);
  return *c;
}

ConvAct convActOf(const ir::Op &op) {
  std::string a = ir::fusedActivationOf(op);
  if (a == "relu") return ConvAct::Relu;
  if (a == "relu6") return ConvAct::Relu6;
  if (a == "sigmoid") return ConvAct::Sigmoid;
  if (a == "tanh") return ConvAct::Tanh;
  return ConvAct::None;
}

// One convolution in one direction on cuDNN, with conv2d's epilogue.
class ConvKernel final : public DeviceOp {
public:
  ConvKernel(Direction dir, const Geometry &g) : dir_(dir), g_(g) {}

  // Descriptors, the algorithm, and the epilogue's operands; fails with why.
  Error init(const DeviceKernelSpec &s) {
    empty_ = g_.yElements() == 0;
    if (g_.xElements() == 0 && !empty_)
      return Error::make("'" + s.kind + "' on the cuda backend needs a non-empty input");
    if (dir_ == Direction::Forward) {
      size_t layer = ir::layerOperandCount(*s.op);
      bias_ = layer > 2;
      if (ir::hasResidual(*s.op)) residual_ = int(layer);
      act_ = convActOf(*s.op);
    }
    if (empty_) return Error::success();
    uint64_t pad = g_.padBytes();
    if (s.workspaceBytes <= pad)
      return Error::make("'" + s.kind + "' was planned with " + std::to_string(s.workspaceBytes) +
                         " bytes of workspace, too few for its padded input");
    cudnnBytes_ = size_t(s.workspaceBytes - pad);
    cudnnMathType_t math = requestedMath();
    if (Error e = d_.init(g_, math)) return e;
    Expected<Choice> c = chooseAlgorithm(dir_, g_, d_, {cudnnBytes_, math, settings().deterministic});
    if (!c) return c.takeError();
    algo_ = c->algo;
    return check(cudnnSetConvolutionMathType(d_.conv, c->math), "cudnnSetConvolutionMathType");
  }

  Error launch(const runtime::KernelArgs &a, const Launch &l) override {
    if (empty_) {
      // No images: the weight gradient is zero, every other result empty.
      if (dir_ != Direction::BackwardWeights) return Error::success();
      return check(cudaMemsetAsync(a.out[0].data, 0, 4 * size_t(g_.wElements()), l.stream),
                   "cudaMemsetAsync");
    }
    char *work = static_cast<char *>(a.workspace);
    float *padded = reinterpret_cast<float *>(work);
    void *cudnnWork = work + g_.padBytes();
    const float one = 1.f, zero = 0.f;
    switch (dir_) {
    case Direction::Forward: {
      const float *x = static_cast<const float *>(a.in[0].data);
      if (g_.asymmetric()) {
        if (Error e = padInput(x, padded, l.stream)) return e;
        x = padded;
      }
      float *y = static_cast<float *>(a.out[0].data);
      const float *bias = bias_ ? static_cast<const float *>(a.in[2].data) : nullptr;
      const float *res = residual_ >= 0 ? static_cast<const float *>(a.in[size_t(residual_)].data) : nullptr;
      float beta = 0.f;
      if (res == y) beta = 1.f, res = nullptr; // y holds the residual: cuDNN adds onto it
      if (Error e = check(cudnnConvolutionForward(l.cudnn, &one, d_.x, x, d_.w, a.in[1].data, d_.conv,
                                                  cudnnConvolutionFwdAlgo_t(algo_), cudnnWork, cudnnBytes_,
                                                  &beta, d_.y, y),
                          "cudnnConvolutionForward"))
        return e;
      if (!bias && !res && act_ == ConvAct::None) return Error::success();
      return check(
          launchConvEpilogue(y, bias, res, g_.yElements(), int64_t(g_.oh) * g_.ow, g_.k, act_, l.stream),
          "conv2d's epilogue");
    }
    case Direction::BackwardData: {
      float *dx = static_cast<float *>(a.out[0].data);
      float *target = g_.asymmetric() ? padded : dx;
      if (Error e = check(cudnnConvolutionBackwardData(l.cudnn, &one, d_.w, a.in[1].data, d_.y, a.in[0].data,
                                                       d_.conv, cudnnConvolutionBwdDataAlgo_t(algo_),
                                                       cudnnWork, cudnnBytes_, &zero, d_.x, target),
                          "cudnnConvolutionBackwardData"))
        return e;
      if (!g_.asymmetric()) return Error::success();
      return check(launchWindowCopy(dx, padded, int64_t(g_.n) * g_.c, g_.h, g_.w, g_.inH(), g_.inW(), g_.pt,
                                    g_.pl, l.stream),
                   "conv2d_backward_data's crop of the padding");
    }
    case Direction::BackwardWeights: {
      const float *x = static_cast<const float *>(a.in[1].data);
      if (g_.asymmetric()) {
        if (Error e = padInput(x, padded, l.stream)) return e;
        x = padded;
      }
      return check(cudnnConvolutionBackwardFilter(l.cudnn, &one, d_.x, x, d_.y, a.in[0].data, d_.conv,
                                                  cudnnConvolutionBwdFilterAlgo_t(algo_), cudnnWork,
                                                  cudnnBytes_, &zero, d_.w, a.out[0].data),
                   "cudnnConvolutionBackwardFilter");
    }
    }
    return Error::success();
  }

private:
  // x with its asymmetric padding made explicit, into `padded`.
  Error padInput(const float *x, float *padded, cudaStream_t stream) const {
    return check(launchWindowCopy(padded, x, int64_t(g_.n) * g_.c, g_.inH(), g_.inW(), g_.h, g_.w, -g_.pt,
                                  -g_.pl, stream),
                 "the explicit padding of a convolution's input");
  }

  Direction dir_;
  Geometry g_;
  Descriptors d_;
  int algo_ = 0;
  size_t cudnnBytes_ = 0;
  bool empty_ = false, bias_ = false;
  int residual_ = -1; // conv2d's residual operand, if any
  ConvAct act_ = ConvAct::None;
};

DeviceKernelMaker convMaker(Direction dir) {
  return [dir](const DeviceKernelSpec &s) -> Expected<std::unique_ptr<DeviceKernel>> {
    if (!s.in.empty() && s.in[0].type.dtype != ir::DType::F32)
      return Error::make("'" + s.kind + "' on the cuda backend takes f32, not " + s.in[0].str());
    Expected<Geometry> g = geometryOf(s, dir);
    if (!g) return g.takeError();
    auto k = std::make_unique<ConvKernel>(dir, *g);
    if (Error e = k->init(s)) return e;
    return std::unique_ptr<DeviceKernel>(std::move(k));
  };
}

// db = conv2d_backward_bias(dy): dy [n, k, h, w] summed over all but k.
class BiasGrad final : public DeviceOp {
public:
  BiasGrad(int64_t n, int64_t k, int64_t plane) : n_(n), k_(k), plane_(plane) {}

  Error launch(const runtime::KernelArgs &a, const Launch &l) override {
    if (n_ * plane_ == 0)
      return check(cudaMemsetAsync(a.out[0].data, 0, 4 * size_t(k_), l.stream), "cudaMemsetAsync");
    return check(launchBiasGrad(static_cast<const float *>(a.in[0].data), static_cast<float *>(a.out[0].data),
                                static_cast<float *>(a.workspace), n_, k_, plane_, l.stream),
                 "conv2d_backward_bias");
  }

private:
  int64_t n_, k_, plane_;
};

Expected<std::unique_ptr<DeviceKernel>> makeBiasGrad(const DeviceKernelSpec &s) {
  if (s.in.empty() || s.in[0].type.rank() != 4 || s.in[0].type.dtype != ir::DType::F32)
    return Error::make("conv2d_backward_bias on the cuda backend takes a 4-d f32 gradient");
  const std::vector<int64_t> &d = s.in[0].type.dims;
  int64_t plane = d[2] * d[3];
  BiasGradSplit split = biasGradSplit(d[0], plane);
  uint64_t need = split.segments() > 1 ? 4 * uint64_t(d[1]) * uint64_t(split.segments()) : 0;
  if (d[0] * plane > 0 && s.workspaceBytes < need)
    return Error::make("conv2d_backward_bias was planned with too little workspace for its partial sums");
  return make<BiasGrad>(d[0], d[1], plane);
}

} // namespace

void registerConvKernels(DeviceRegistry &r) {
  r.add("conv2d", convMaker(Direction::Forward));
  r.add("conv2d_backward_data", convMaker(Direction::BackwardData));
  r.add("conv2d_backward_weights", convMaker(Direction::BackwardWeights));
  r.add("conv2d_backward_bias", makeBiasGrad);
}

} // namespace dtnn::cuda
