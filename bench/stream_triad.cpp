// A STREAM-style triad, a[i] = b[i] + s * c[i] over float arrays far larger
// than the caches, on T OpenMP threads (each touching its own part first, so
// that its pages are local): the memory bandwidth a bandwidth-bound kernel can
// reach here. Prints GB/s counting 12 bytes an element (two reads, one
// write, as STREAM does), the best of several runs.
//
//   build/bin/stream_triad [THREADS] [MIB_PER_ARRAY]
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>

int main(int argc, char **argv) {
  int threads = argc > 1 ? std::atoi(argv[1]) : omp_get_max_threads();
  long mib = argc > 2 ? std::atol(argv[2]) : 256;
  if (threads < 1 || mib < 1) {
    std::fprintf(stderr, "usage: stream_triad [THREADS] [MIB_PER_ARRAY]\n");
    return 2;
  }
  omp_set_num_threads(threads);
  long n = mib * (1L << 20) / long(sizeof(float));
  std::unique_ptr<float[]> a(new float[n]), b(new float[n]), c(new float[n]);
#pragma omp parallel for schedule(static)
  for (long i = 0; i < n; ++i) a[i] = 0, b[i] = 1, c[i] = 2;
  const float s = 3;
  double best = 0;
  for (int run = 0; run < 7; ++run) {
    auto t0 = std::chrono::steady_clock::now();
#pragma omp parallel for schedule(static)
    for (long i = 0; i < n; ++i) a[i] = b[i] + s * c[i];
    double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (run > 0) best = std::max(best, 12.0 * double(n) / sec / 1e9);
  }
  if (a[n / 2] != 7) return 1; // the stores happened
  std::printf("%.2f\n", best);
  return 0;
}
