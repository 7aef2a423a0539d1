// The machine's single-precision peak, measured: each of T threads runs
// independent chains of fused multiply-adds on the widest vectors the
// compiler targets here (-march=native), enough chains to hide the FMA
// latency. Prints GFLOP/s (2 per FMA lane), the best of a few runs.
//
//   build/bin/fma_peak [THREADS]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

namespace {

// One vector register of floats: 512 bits with AVX-512, else 256. (Twelve chains of 512-bit
// vectors on a machine with 256-bit registers would need 24 of its 16 registers and spill.)
#ifdef __AVX512F__
constexpr int kLanes = 16;
#else
constexpr int kLanes = 8;
#endif
constexpr int kChains = 12;
constexpr long kIters = 20'000'000;
typedef float vec __attribute__((vector_size(kLanes * sizeof(float))));

// Twelve independent chains in registers (an array would live in memory).
float chains(float seed) {
  vec a = vec{} + 0.999999f, b = vec{} + 1e-7f;
  vec c0 = vec{} + seed, c1 = c0 + 1, c2 = c0 + 2, c3 = c0 + 3, c4 = c0 + 4, c5 = c0 + 5;
  vec c6 = c0 + 6, c7 = c0 + 7, c8 = c0 + 8, c9 = c0 + 9, c10 = c0 + 10, c11 = c0 + 11;
  for (long i = 0; i < kIters; ++i) {
    c0 = c0 * a + b, c1 = c1 * a + b, c2 = c2 * a + b, c3 = c3 * a + b;
    c4 = c4 * a + b, c5 = c5 * a + b, c6 = c6 * a + b, c7 = c7 * a + b;
    c8 = c8 * a + b, c9 = c9 * a + b, c10 = c10 * a + b, c11 = c11 * a + b;
  }
  vec s = c0 + c1 + c2 + c3 + c4 + c5 + c6 + c7 + c8 + c9 + c10 + c11;
  float out = 0;
  for (int l = 0; l < kLanes; ++l) out += s[l];
  return out;
}

} // namespace

int main(int argc, char **argv) {
  int threads = argc > 1 ? std::max(1, std::atoi(argv[1])) : 1;
  double best = 0;
  for (int rep = 0; rep < 3; ++rep) {
    std::vector<std::thread> team;
    std::vector<float> sink(threads);
    auto t0 = std::chrono::steady_clock::now();
    for (int t = 0; t < threads; ++t) team.emplace_back([&, t] { sink[t] = chains(float(t + 1)); });
    for (auto &t : team) t.join();
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    double flops = 2.0 * kLanes * kChains * double(kIters) * threads;
    best = std::max(best, flops / s / 1e9);
    if (sink[0] == 12345.0f) std::puts(""); // keeps the work
  }
  std::printf("%.1f\n", best);
  return 0;
}
