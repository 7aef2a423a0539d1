// The matrix products of a dense layer at training batch sizes, by every
// implementation this machine offers, to choose the dense kernels: oneDNN's
// inner product (what the onednn backend runs), oneDNN's matmul primitive,
// oneDNN's dnnl_sgemm, and OpenBLAS's cblas_sgemm when an OpenBLAS library
// is installed (loaded at run time, so the project does not link it).
//
// For each layer [N,K] -> [N,M] (x [N,K], weight [M,K], as dtnn stores it):
//   fwd   y  = x w^T      [N,M]
//   bwd-d dx = dy w       [N,K]
//   bwd-w dw = dy^T x     [M,K]
// The default shapes are the MLP's (784-512-256-10) at batch 64.
//
//   build/bin/small_gemm [--threads=T] [--shapes=N:K:M,...] [Google Benchmark flags]
//
// oneDNN's primitives run on OpenMP with T threads; OpenBLAS on its own
// threads (T of them): its pthread build is what Debian installs for
// PyTorch, so its figures are an upper bound on what an OpenMP build,
// sharing dtnn's one thread pool, would give.
#include <benchmark/benchmark.h>
#include <dlfcn.h>
#include <dnnl.hpp>
#include <omp.h>

#include <cstdio>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

namespace {

using dnnl::memory;
using tag = memory::format_tag;

struct Shape {
  long n, k, m;
};

dnnl::engine &engine() {
  static dnnl::engine e(dnnl::engine::kind::cpu, 0);
  return e;
}

std::vector<float> randomData(size_t n, unsigned seed) {
  std::mt19937 g(seed);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> v(n);
  for (float &x : v) x = u(g);
  return v;
}

// A primitive with its arguments, run once per iteration.
struct Prepared {
  dnnl::primitive prim;
  std::unordered_map<int, memory> args;
  std::vector<std::vector<float>> storage;
};

memory wrap(Prepared &p, const memory::desc &md, unsigned seed) {
  p.storage.push_back(randomData(md.get_size() / sizeof(float) + 1, seed));
  return memory(md, engine(), p.storage.back().data());
}

void runPrimitive(benchmark::State &state, Prepared &p) {
  dnnl::stream s(engine());
  for (auto _ : state) {
    p.prim.execute(s, p.args);
    s.wait();
  }
}

// The flops of one product of the three, for the counters.
void setFlops(benchmark::State &state, const Shape &sh) {
  state.counters["GFLOP/s"] = benchmark::Counter(2.0 * sh.n * sh.k * sh.m,
                                                 benchmark::Counter::kIsIterationInvariantRate,
                                                 benchmark::Counter::kIs1000);
}

memory::desc anyDesc(memory::dims d) { return {d, memory::data_type::f32, tag::any}; }

// oneDNN inner product, in the layouts oneDNN chooses (`plain` false: the
// backend lets them propagate between ops) or in plain row-major ones.
void innerProduct(benchmark::State &state, Shape sh, int which, bool plain) {
  memory::dims x = {sh.n, sh.k}, w = {sh.m, sh.k}, y = {sh.n, sh.m};
  using namespace dnnl;
  auto desc = [&](memory::dims d) {
    return plain ? memory::desc(d, memory::data_type::f32, tag::ab) : anyDesc(d);
  };
  inner_product_forward::primitive_desc fwd(
      {prop_kind::forward_training, desc(x), desc(w), desc(y)}, engine());
  Prepared p;
  if (which == 0) {
    p.prim = inner_product_forward(fwd);
    p.args = {{DNNL_ARG_SRC, wrap(p, fwd.src_desc(), 1)},
              {DNNL_ARG_WEIGHTS, wrap(p, fwd.weights_desc(), 2)},
              {DNNL_ARG_DST, wrap(p, fwd.dst_desc(), 3)}};
  } else if (which == 1) {
    inner_product_backward_data::primitive_desc pd({desc(x), desc(w), desc(y)}, engine(), fwd);
    p.prim = inner_product_backward_data(pd);
    p.args = {{DNNL_ARG_DIFF_DST, wrap(p, pd.diff_dst_desc(), 1)},
              {DNNL_ARG_WEIGHTS, wrap(p, pd.weights_desc(), 2)},
              {DNNL_ARG_DIFF_SRC, wrap(p, pd.diff_src_desc(), 3)}};
  } else {
    inner_product_backward_weights::primitive_desc pd({desc(x), desc(w), desc(y)}, engine(),
                                                      fwd);
    p.prim = inner_product_backward_weights(pd);
    p.args = {{DNNL_ARG_DIFF_DST, wrap(p, pd.diff_dst_desc(), 1)},
              {DNNL_ARG_SRC, wrap(p, pd.src_desc(), 2)},
              {DNNL_ARG_DIFF_WEIGHTS, wrap(p, pd.diff_weights_desc(), 3)}};
  }
  runPrimitive(state, p);
  setFlops(state, sh);
}

// C[r,c] = A[r,i] B[i,c] with each operand row-major or transposed (a
// plain layout either way), as the three products need.
struct Gemm {
  long rows, inner, cols;
  bool transA, transB;
};

Gemm gemmOf(Shape sh, int which) {
  if (which == 0) return {sh.n, sh.k, sh.m, false, true}; // x [N,K] * w^T
  if (which == 1) return {sh.n, sh.m, sh.k, false, false}; // dy [N,M] * w [M,K]
  return {sh.m, sh.n, sh.k, true, false};                  // dy^T * x [N,K]
}

void matmul(benchmark::State &state, Shape sh, int which) {
  Gemm g = gemmOf(sh, which);
  memory::desc a({g.rows, g.inner}, memory::data_type::f32, g.transA ? tag::ba : tag::ab);
  memory::desc b({g.inner, g.cols}, memory::data_type::f32, g.transB ? tag::ba : tag::ab);
  memory::desc c({g.rows, g.cols}, memory::data_type::f32, tag::ab);
  dnnl::matmul::primitive_desc pd({a, b, c}, engine());
  Prepared p;
  p.prim = dnnl::matmul(pd);
  p.args = {{DNNL_ARG_SRC, wrap(p, a, 1)},
            {DNNL_ARG_WEIGHTS, wrap(p, b, 2)},
            {DNNL_ARG_DST, wrap(p, c, 3)}};
  runPrimitive(state, p);
  setFlops(state, sh);
}

struct Buffers {
  std::vector<float> a, b, c;
  explicit Buffers(const Gemm &g)
      : a(randomData(g.rows * g.inner, 1)), b(randomData(g.inner * g.cols, 2)),
        c(g.rows * g.cols) {}
};

void onednnSgemm(benchmark::State &state, Shape sh, int which) {
  Gemm g = gemmOf(sh, which);
  Buffers buf(g);
  long lda = g.transA ? g.rows : g.inner, ldb = g.transB ? g.inner : g.cols;
  for (auto _ : state)
    dnnl_sgemm(g.transA ? 'T' : 'N', g.transB ? 'T' : 'N', g.rows, g.cols, g.inner, 1.f,
               buf.a.data(), lda, buf.b.data(), ldb, 0.f, buf.c.data(), g.cols);
  setFlops(state, sh);
}

// OpenBLAS, loaded at run time: libopenblas.so.0 where it is on the library
// path, else the system BLAS (libblas.so.3) when OpenBLAS provides it.
using CblasSgemm = void (*)(int, int, int, int, int, int, float, const float *, int, const float *,
                            int, float, float *, int);
struct OpenBlas {
  CblasSgemm sgemm = nullptr;
  void (*setThreads)(int) = nullptr;
  std::string what;
};

OpenBlas &openBlas() {
  static OpenBlas ob = [] {
    OpenBlas o;
    for (const char *p : {"libopenblas.so.0", "libblas.so.3"}) {
      void *h = dlopen(p, RTLD_NOW | RTLD_LOCAL);
      if (!h) continue;
      auto parallel = reinterpret_cast<int (*)()>(dlsym(h, "openblas_get_parallel"));
      o.sgemm = reinterpret_cast<CblasSgemm>(dlsym(h, "cblas_sgemm"));
      o.setThreads = reinterpret_cast<void (*)(int)>(dlsym(h, "openblas_set_num_threads"));
      if (!parallel || !o.sgemm || !o.setThreads) {
        o = {};
        continue;
      }
      int mode = parallel();
      o.what = std::string(p) + (mode == 2 ? " (OpenMP build)" : mode == 1 ? " (pthread build)"
                                                                           : " (sequential)");
      break;
    }
    return o;
  }();
  return ob;
}

void openBlasSgemm(benchmark::State &state, Shape sh, int which) {
  Gemm g = gemmOf(sh, which);
  Buffers buf(g);
  constexpr int kRowMajor = 101, kNoTrans = 111, kTrans = 112;
  int lda = g.transA ? g.rows : g.inner, ldb = g.transB ? g.inner : g.cols;
  for (auto _ : state)
    openBlas().sgemm(kRowMajor, g.transA ? kTrans : kNoTrans, g.transB ? kTrans : kNoTrans,
                     g.rows, g.cols, g.inner, 1.f, buf.a.data(), lda, buf.b.data(), ldb, 0.f,
                     buf.c.data(), g.cols);
  setFlops(state, sh);
}

std::vector<Shape> parseShapes(const std::string &text) {
  std::vector<Shape> out;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find(',', pos);
    std::string one = text.substr(pos, end == std::string::npos ? std::string::npos : end - pos);
    Shape s{};
    if (std::sscanf(one.c_str(), "%ld:%ld:%ld", &s.n, &s.k, &s.m) != 3 || s.n < 1 || s.k < 1 ||
        s.m < 1) {
      std::fprintf(stderr, "small_gemm: bad shape '%s' (N:K:M, positive)\n", one.c_str());
      std::exit(2);
    }
    out.push_back(s);
    if (end == std::string::npos) break;
    pos = end + 1;
  }
  return out;
}

} // namespace

int main(int argc, char **argv) {
  int threads = 2;
  std::vector<Shape> shapes = {{64, 784, 512}, {64, 512, 256}, {64, 256, 10}};
  std::vector<char *> rest = {argv[0]};
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--threads=", 10) == 0)
      threads = std::atoi(argv[i] + 10);
    else if (std::strncmp(argv[i], "--shapes=", 9) == 0)
      shapes = parseShapes(argv[i] + 9);
    else
      rest.push_back(argv[i]);
  }
  if (threads < 1) {
    std::fprintf(stderr, "small_gemm: --threads must be positive\n");
    return 2;
  }
  omp_set_num_threads(threads);
  if (openBlas().setThreads) openBlas().setThreads(threads);
  const char *what[] = {"fwd", "bwd-d", "bwd-w"};
  for (const Shape &sh : shapes)
    for (int w = 0; w < 3; ++w) {
      std::string name = std::to_string(sh.n) + "x" + std::to_string(sh.k) + "->" +
                         std::to_string(sh.m) + "/" + what[w] + "/";
      benchmark::RegisterBenchmark((name + "onednn_inner_product").c_str(), innerProduct, sh, w,
                                   false);
      benchmark::RegisterBenchmark((name + "onednn_inner_product_plain").c_str(), innerProduct, sh,
                                   w, true);
      benchmark::RegisterBenchmark((name + "onednn_matmul").c_str(), matmul, sh, w);
      benchmark::RegisterBenchmark((name + "onednn_sgemm").c_str(), onednnSgemm, sh, w);
      if (openBlas().sgemm)
        benchmark::RegisterBenchmark((name + "openblas_sgemm").c_str(), openBlasSgemm, sh, w);
    }
  std::printf("small_gemm: %d thread(s); OpenBLAS: %s\n", threads,
              openBlas().sgemm ? openBlas().what.c_str() : "not installed");
  int n = static_cast<int>(rest.size());
  benchmark::Initialize(&n, rest.data());
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
