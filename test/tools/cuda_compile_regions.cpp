// Compiles, with the cuda device module's NVRTC (no GPU needed), every
// kernel source in the output of `dtnnc compile --emit=cuda`, for the
// architecture given: the check that what the code generator writes is
// valid CUDA. Prints one line per kernel and a summary; exits 1 when any
// kernel does not compile or the module cannot be loaded.
//
//   cuda-compile-regions FILE.cu [sm_90]
#include "backends/cuda/DeviceApi.h"

#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

namespace {

struct Kernel {
  std::string name, source;
};

// The kernels of the file: each region's header line, then its source up to the next header.
std::vector<Kernel> kernelsOf(std::istream &in) {
  std::vector<Kernel> out;
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("// region_", 0) == 0) {
      out.push_back({line.substr(3, line.find(':') - 3), ""});
      continue;
    }
    if (!out.empty()) out.back().source += line + "\n";
  }
  return out;
}

} // namespace

int main(int argc, char **argv) {
  if (argc < 2 || argc > 3) {
    std::cerr << "usage: cuda-compile-regions FILE.cu [ARCH]\n";
    return 2;
  }
  std::ifstream in(argv[1]);
  if (!in) {
    std::cerr << "cuda-compile-regions: cannot read " << argv[1] << "\n";
    return 2;
  }
  std::string arch = argc == 3 ? argv[2] : "sm_90";
  auto api = dtnn::cuda::deviceApi();
  if (!api) {
    std::cerr << "cuda-compile-regions: " << api.error().message() << "\n";
    return 1;
  }
  int compiled = 0, failed = 0, shared = 0;
  for (const Kernel &k : kernelsOf(in)) {
    if (k.source.find("extern \"C\"") == std::string::npos) {
      ++shared; // "the source of region_N": compiled with that one
      continue;
    }
    dtnn::cuda::RegionCode code;
    code.source = k.source;
    code.entry = "dtnn_region";
    auto size = (*api)->compileRegion(code, arch);
    if (!size) {
      ++failed;
      std::cout << k.name << ": does not compile: " << size.error().message() << "\n";
      continue;
    }
    ++compiled;
    std::cout << k.name << ": " << (*size > 0 ? "cubin" : "empty") << "\n";
  }
  std::cout << "compiled " << compiled << " kernels for " << arch << ", " << failed
            << " failed, " << shared << " sharing another's source\n";
  return failed ? 1 : 0;
}
