// Kernels generated from regions (backends/cuda/RegionSource.h): compiled
// by NVRTC for the device's architecture on compile threads while the run
// goes on, kept in memory by source and on disk in the kernel cache (a file
// per source, architecture and NVRTC version, checked against its key and a
// checksum when loaded, written whole or not at all), loaded with
// cudaLibraryLoadData and launched over the region's domain.
#include "backends/cuda/device/Device.h"
#include "backends/cuda/device/Runtime.h"
#include "backends/cuda/device/kernels/Region.h"
#include "backends/cuda/RegionSource.h"
#include "ir/ops/FusedUpdate.h"

#include <nvrtc.h>

#include <filesystem>
#include <fstream>
#include <future>
#include <mutex>
#include <sstream>
#include <unistd.h>

namespace dtnn::cuda {

namespace {

constexpr const char *kCacheMagic = "dtnn-cuda-cubin 1";

// The cubin of `code` for `arch`, or why NVRTC refused it.
Expected<std::string> compileCubin(const RegionCode &code, const std::string &arch) {
  nvrtcProgram prog = nullptr;
  if (nvrtcCreateProgram(&prog, code.source.c_str(), "region.cu", 0, nullptr, nullptr) != NVRTC_SUCCESS)
    return Error::make("NVRTC could not take the region's source");
  std::string archOpt = "--gpu-architecture=" + arch;
  const char *opts[] = {archOpt.c_str(), "--std=c++17", "-default-device", "--fmad=false"};
  nvrtcResult r = nvrtcCompileProgram(prog, 4, opts);
  if (r != NVRTC_SUCCESS) {
    size_t n = 0;
    nvrtcGetProgramLogSize(prog, &n);
    std::string log(n, '\0');
    nvrtcGetProgramLog(prog, log.data());
    nvrtcDestroyProgram(&prog);
    return Error::make(std::string("NVRTC: ") + nvrtcGetErrorString(r) + ":\n" + log);
  }
  size_t n = 0;
  nvrtcGetCUBINSize(prog, &n);
  std::string cubin(n, '\0');
  nvrtcGetCUBIN(prog, cubin.data());
  nvrtcDestroyProgram(&prog);
  return cubin;
}

std::string cacheKey(const RegionCode &code, const std::string &arch) {
  int major = 0, minor = 0;
  nvrtcVersion(&major, &minor);
  return code.key + "-" + arch + "-nvrtc" + std::to_string(major) + "." + std::to_string(minor);
}

// The cached cubin of `key` in `dir`, or "" when there is none or it does not check out.
std::string loadCached(const std::string &dir, const std::string &key) {
  if (dir.empty()) return "";
  std::ifstream in(dir + "/" + key + ".cubin", std::ios::binary);
  if (!in) return "";
  std::string magic, fileKey, size, sum;
  if (!std::getline(in, magic) || !std::getline(in, fileKey) || !std::getline(in, size) ||
      !std::getline(in, sum) || magic != kCacheMagic || fileKey != key)
    return "";
  std::ostringstream body;
  body << in.rdbuf();
  std::string cubin = body.str();
  if (std::to_string(cubin.size()) != size || hashText(cubin) != sum) return "";
  return cubin;
}

// Writes the cubin to the cache: a temporary file renamed into place, so that a reader never
// sees half of one. Failures only cost a later compile.
void store(const std::string &dir, const std::string &key, const std::string &cubin) {
  if (dir.empty()) return;
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  std::string path = dir + "/" + key + ".cubin";
  std::string tmp = path + ".tmp" + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) return;
    out << kCacheMagic << "\n" << key << "\n" << cubin.size() << "\n" << hashText(cubin) << "\n" << cubin;
    if (!out) {
      std::filesystem::remove(tmp, ec);
      return;
    }
  }
  std::filesystem::rename(tmp, path, ec);
  if (ec) std::filesystem::remove(tmp, ec);
}

struct Loaded {
  cudaLibrary_t library = nullptr;
  cudaKernel_t kernel = nullptr;
  std::string error;
};

// Compiles (or reads from the cache) and loads the kernel of `code`.
Loaded build(const RegionCode &code) {
  Loaded out;
  const DeviceInfo &info = deviceInfo();
  std::string arch = "sm_" + std::to_string(info.major) + std::to_string(info.minor);
  std::string key = cacheKey(code, arch);
  const std::string &dir = settings().kernelCache;
  std::string cubin = loadCached(dir, key);
  if (!cubin.empty()) {
    countStat("loaded");
  } else {
    Expected<std::string> made = compileCubin(code, arch);
    if (!made) {
      out.error = made.error().message();
      return out;
    }
    cubin = std::move(*made);
    store(dir, key, cubin);
    countStat("compiled");
  }
  if (Error e = check(cudaLibraryLoadData(&out.library, cubin.data(), nullptr, nullptr, 0, nullptr,
                                          nullptr, 0),
                      "cudaLibraryLoadData")) {
    out.error = e.message();
    return out;
  }
  if (Error e = check(cudaLibraryGetKernel(&out.kernel, out.library, code.entry.c_str()),
                      "cudaLibraryGetKernel"))
    out.error = e.message();
  return out;
}

// Kernels by source, shared by every step with the same region; each built once.
std::shared_future<Loaded> kernelFor(const RegionCode &code) {
  static std::mutex mu;
  static std::map<std::string, std::shared_future<Loaded>> built;
  std::lock_guard<std::mutex> lock(mu);
  auto it = built.find(code.key);
  if (it != built.end()) return it->second;
  auto copy = std::make_shared<RegionCode>(code);
  std::shared_future<Loaded> f = std::async(std::launch::async, [copy] { return build(*copy); }).share();
  built.emplace(code.key, f);
  return f;
}

// Launches `code` over sizes `sizes` with pointers `ptrs` (arguments, then yields) and the
// workspace.
Error launchRegion(const RegionCode &code, cudaKernel_t kernel, const std::vector<int64_t> &sizes,
                   std::vector<void *> ptrs, void *work, ir::DType dtype, cudaStream_t stream) {
  int64_t elements = 1;
  for (int64_t s : sizes) elements *= s;
  std::vector<long long> dims(sizes.begin(), sizes.end());
  std::vector<void *> params;
  for (void *&p : ptrs) params.push_back(&p);
  long long outputs = code.outputs, length = code.length, segments = code.segments;
  dim3 grid, block(unsigned(code.threads));
  if (code.shape == RegionCode::Shape::Map) {
    if (elements == 0) return Error::success();
    int64_t blocks = (elements + code.threads - 1) / code.threads;
    grid = dim3(unsigned(std::min<int64_t>(blocks, int64_t(deviceInfo().multiprocessors) * 32)));
    params.push_back(dims.data());
  } else {
    if (outputs == 0) return Error::success();
    if (segments == 1) work = nullptr;
    params.push_back(&work);
    params.push_back(dims.data());
    params.push_back(&outputs);
    params.push_back(&length);
    params.push_back(&segments);
    unsigned x = code.shape == RegionCode::Shape::ReduceInner
                     ? unsigned(outputs)
                     : unsigned((outputs + code.threads - 1) / code.threads);
    grid = dim3(x, unsigned(segments));
  }
  if (Error e = check(cudaLaunchKernel(reinterpret_cast<const void *>(kernel), grid, block,
                                       params.data(), 0, stream),
                      "a generated kernel"))
    return e;
  if (code.shape == RegionCode::Shape::Map || segments == 1) return Error::success();
  size_t nIn = ptrs.size() - code.reduced.size();
  int64_t slot = 0;
  for (size_t y = 0; y < code.reduced.size(); ++y) {
    if (!code.reduced[y]) continue;
    size_t stride = size_t(slot++) * size_t(segments * outputs);
    cudaError_t c = dtype == ir::DType::F64
                        ? launchSumSegments(static_cast<double *>(ptrs[nIn + y]),
                                            static_cast<const double *>(work) + stride, outputs, segments, stream)
                        : launchSumSegments(static_cast<float *>(ptrs[nIn + y]),
                                            static_cast<const float *>(work) + stride, outputs, segments, stream);
    if (Error e = check(c, "the sum of a generated reduction's segments")) return e;
  }
  return Error::success();
}

// A fused op, or an elementwise op alone: the region once over the domain.
class RegionKernel final : public DeviceOp {
public:
  explicit RegionKernel(const DeviceKernelSpec &s)
      : code_(s.region), dtype_(s.in.empty() ? ir::DType::F32 : s.in[0].type.dtype),
        kernel_(kernelFor(*s.region)) {}

  Error launch(const runtime::KernelArgs &a, const Launch &l) override {
    const Loaded &k = kernel_.get();
    if (!k.kernel) return Error::make("the generated kernel did not compile: " + k.error);
    std::vector<void *> ptrs;
    for (const runtime::TensorView &v : a.in) ptrs.push_back(v.data);
    for (const runtime::TensorView &v : a.out) ptrs.push_back(v.data);
    return launchRegion(*code_, k.kernel, code_->sizes, std::move(ptrs), a.workspace, dtype_, l.stream);
  }

private:
  std::shared_ptr<const RegionCode> code_;
  ir::DType dtype_;
  std::shared_future<Loaded> kernel_;
};

// A fused_update: the region of one group run over each group's whole buffers.
class UpdateKernel final : public DeviceOp {
public:
  explicit UpdateKernel(const DeviceKernelSpec &s)
      : code_(s.region), dtype_(s.in.empty() ? ir::DType::F32 : s.in[0].type.dtype),
        counts_(*ir::fusedUpdateGroups(s.op->attrs(), s.in.size())), kernel_(kernelFor(*s.region)) {}

  Error launch(const runtime::KernelArgs &a, const Launch &l) override {
    const Loaded &k = kernel_.get();
    if (!k.kernel) return Error::make("the generated update kernel did not compile: " + k.error);
    size_t width = counts_.width(), coefficients = counts_.coefficients;
    size_t first = counts_.tensors * width;
    for (size_t g = 0; g < counts_.tensors; ++g) {
      std::vector<void *> ptrs;
      for (size_t i = 0; i < width; ++i) ptrs.push_back(a.in[g * width + i].data);
      for (size_t c = 0; c < coefficients; ++c) ptrs.push_back(a.in[first + c].data);
      for (size_t i = 0; i < width; ++i)
        if (i != 1) ptrs.push_back(a.in[g * width + i].data);
      std::vector<int64_t> sizes = {a.in[g * width].numel()};
      if (Error e = launchRegion(*code_, k.kernel, sizes, std::move(ptrs), nullptr, dtype_, l.stream))
        return e;
    }
    return Error::success();
  }

private:
  std::shared_ptr<const RegionCode> code_;
  ir::DType dtype_;
  ir::UpdateGroupCounts counts_;
  std::shared_future<Loaded> kernel_;
};

} // namespace

Expected<size_t> compileRegionSource(const RegionCode &code, const std::string &arch) {
  Expected<std::string> cubin = compileCubin(code, arch);
  if (!cubin) return cubin.takeError();
  return cubin->size();
}

void registerRegionKernels(DeviceRegistry &r) {
  r.add("region", [](const DeviceKernelSpec &s) -> Expected<std::unique_ptr<DeviceKernel>> {
    if (!s.region) return Error::make("a region kernel without its code");
    return make<RegionKernel>(s);
  });
  r.add("region_update", [](const DeviceKernelSpec &s) -> Expected<std::unique_ptr<DeviceKernel>> {
    if (!s.region || !s.op || !ir::fusedUpdateGroups(s.op->attrs(), s.in.size()))
      return Error::make("a fused_update kernel without its code or groups");
    return make<UpdateKernel>(s);
  });
}

} // namespace dtnn::cuda
