// The cuda backend's device module: what a run says on a machine without a
// GPU, and, on one with a GPU, its streams, device events, graph replay and
// the tracing of an asynchronous fault to the work that raised it. The GPU
// tests skip themselves, saying why, where no GPU can be started.
#include "backends/cuda/CudaBackend.h"
#include "backends/cuda/CudaOps.h"
#include "backends/cuda/RegionSource.h"
#include "ir/TextParser.h"
#include "runtime/BackendRegistry.h"
#include "runtime/Communicator.h"
#include "runtime/ModuleRunner.h"

#include <gtest/gtest.h>

#include <sstream>

namespace dtnn::test {
namespace {

// The module, started on GPU 0, or why not.
Expected<const cuda::DeviceApi *> startedDevice() {
  auto api = cuda::deviceApi();
  if (!api) return api.takeError();
  auto info = (*api)->start(cuda::DeviceSettings{});
  if (!info) return info.takeError();
  return *api;
}

#define REQUIRE_GPU(api)                                                                           \
  auto api = startedDevice();                                                                      \
  if (!api) GTEST_SKIP() << "no GPU: " << api.error().message();

std::unique_ptr<ir::Module> parse(const std::string &text) {
  SourceManager sm;
  std::ostringstream errs;
  DiagnosticEngine diags(sm, errs);
  auto m = ir::parseModule(text, "cuda.dtir", sm, diags);
  EXPECT_TRUE(m) << errs.str();
  return m;
}

// The generated kernel of y = relu(x) over f32[n], as the backend plans it.
cuda::DeviceKernelSpec reluSpec(const ir::Module &m, int64_t n) {
  const ir::Graph &g = *m.findGraph("f");
  const ir::Op &relu = *g.ops()[0];
  ir::TensorType t(ir::DType::F32, {n});
  auto body = std::make_unique<ir::Graph>("");
  ir::Value *x = body->addInput("x", t);
  body->setOutputs(body->addOp(relu.def(), {x}, relu.attrs(), {t})->results());
  auto plan = runtime::planLoops(*body, {t}, "", cuda::cudaKnowsOp);
  EXPECT_TRUE(plan) << plan.error().message();
  auto code = cuda::regionCode(*body, *plan);
  EXPECT_TRUE(code) << code.error().message();
  cuda::DeviceKernelSpec spec;
  spec.kind = "region";
  spec.op = &relu;
  spec.in = {cuda::deviceBuffer(t)};
  spec.out = {cuda::deviceBuffer(t)};
  spec.region = std::make_shared<const cuda::RegionCode>(std::move(*code));
  return spec;
}

const char *kRelu = R"(graph @f(%x: f32[?]) -> f32[?] {
  %0 = relu %x : f32[?]
  return %0
})";

// Without a GPU (this build machine, CI), a run on the cuda backend ends with a message saying
// why, and planning for it still works.
TEST(CudaDevice, RunWithoutGpuSaysWhy) {
  if (startedDevice()) GTEST_SKIP() << "this machine has a GPU";
  auto set = runtime::BackendSet::create("cuda", {});
  ASSERT_FALSE(set);
  std::string msg = set.error().message();
  EXPECT_NE(msg.find("the cuda backend cannot run here: "), std::string::npos) << msg;
  runtime::BackendOptions planOnly;
  planOnly.planOnly = true;
  auto planning = runtime::BackendSet::create("cuda", planOnly);
  ASSERT_TRUE(planning) << planning.error().message();
  EXPECT_EQ(planning->primary().memorySpace(), runtime::MemorySpace::Device);
}

// A copy on the copy stream, then a kernel on the compute stream that waits for it through a
// device event, then the result read back.
TEST(CudaDevice, StreamsOrderedByDeviceEvents) {
  REQUIRE_GPU(api);
  auto m = parse(kRelu);
  ASSERT_TRUE(m);
  const int64_t n = 1 << 20;
  auto kernel = (*api)->makeKernel(reluSpec(*m, n));
  ASSERT_TRUE(kernel) << kernel.error().message();
  auto compute = (*api)->makeQueue("compute", 0), copy = (*api)->makeQueue("copy", 1);
  size_t bytes = size_t(n) * 4;
  auto *host = static_cast<float *>((*api)->allocateHost(bytes));
  void *x = (*api)->allocate(bytes), *y = (*api)->allocate(bytes);
  for (int64_t i = 0; i < n; ++i) host[i] = float(i % 7) - 3;
  auto copyKernel = (*api)->makeKernel({"copy"});
  ASSERT_TRUE(copyKernel);
  ir::TensorType t(ir::DType::F32, {n});
  runtime::KernelArgs ca{nullptr, {{host, t}}, {{x, t}}, nullptr};
  runtime::ExecContext cctx{*copy};
  copy->submit([&] { return (*copyKernel)->run(ca, cctx); });
  runtime::Event copied = copy->record();
  EXPECT_NE(copied.device(), nullptr);
  compute->waitFor(copied);
  runtime::KernelArgs ra{nullptr, {{x, t}}, {{y, t}}, nullptr};
  runtime::ExecContext rctx{*compute};
  compute->submit([&] { return (*kernel)->run(ra, rctx); });
  ASSERT_FALSE(compute->synchronize());
  std::vector<float> out(static_cast<size_t>(n));
  ASSERT_FALSE((*api)->copy(out.data(), y, bytes));
  for (int64_t i = 0; i < n; ++i) ASSERT_EQ(out[size_t(i)], std::max(host[i], 0.0f)) << i;
  (*api)->release(x);
  (*api)->release(y);
  (*api)->releaseHost(host);
}

// Work captured once replays with the buffers' new contents.
TEST(CudaDevice, CapturedWorkReplays) {
  REQUIRE_GPU(api);
  auto m = parse(kRelu);
  ASSERT_TRUE(m);
  const int64_t n = 4096;
  auto kernel = (*api)->makeKernel(reluSpec(*m, n));
  ASSERT_TRUE(kernel) << kernel.error().message();
  auto compute = (*api)->makeQueue("compute", 0);
  size_t bytes = size_t(n) * 4;
  void *x = (*api)->allocate(bytes), *y = (*api)->allocate(bytes);
  ir::TensorType t(ir::DType::F32, {n});
  runtime::KernelArgs ra{nullptr, {{x, t}}, {{y, t}}, nullptr};
  runtime::ExecContext rctx{*compute};
  // A first run outside the capture compiles and loads the kernel.
  compute->submit([&] { return (*kernel)->run(ra, rctx); });
  ASSERT_FALSE(compute->synchronize());
  auto graph = (*api)->capture(*compute, [&] {
    compute->submit([&] { return (*kernel)->run(ra, rctx); });
    return Error::success();
  });
  ASSERT_TRUE(graph) << graph.error().message();
  std::vector<float> in(static_cast<size_t>(n)), out(static_cast<size_t>(n));
  for (float sign : {1.0f, -1.0f, 1.0f}) {
    for (int64_t i = 0; i < n; ++i) in[size_t(i)] = sign * float(i);
    ASSERT_FALSE((*api)->copy(x, in.data(), bytes));
    ASSERT_FALSE((*graph)->replay(*compute));
    ASSERT_FALSE(compute->synchronize());
    ASSERT_FALSE((*api)->copy(out.data(), y, bytes));
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(out[size_t(i)], std::max(in[size_t(i)], 0.0f));
  }
  (*api)->release(x);
  (*api)->release(y);
}

// NCCL as a one-rank communicator: a bucket of two buffers that lie back to back reduced on the
// device (one ncclAllReduce for the run), with each rank's share folded in (ncclAvg / a
// pre-multiplied sum), the compute stream waiting for it through a device event; then a
// second step at another share, which makes a pre-multiplied sum of its own.
TEST(CudaDevice, NcclOneRankAllreduce) {
  REQUIRE_GPU(api);
  auto m = parse(R"(graph @g(%a: f32[1000], %b: f32[24]) -> (f32[1000], f32[24]) {
  %0 = relu %a : f32[1000]
  %1 = relu %b : f32[24]
  %2 = allreduce_start %0, %1 {bucket=0} : token
  %3, %4 = allreduce_wait %2, %0, %1 {bucket=0} : f32[1000], f32[24]
  return %3, %4
})");
  ASSERT_TRUE(m);
  const ir::Graph &g = *m->findGraph("g");
  ir::TensorType ta(ir::DType::F32, {1000}), tb(ir::DType::F32, {24});
  cuda::DeviceKernelSpec start{"allreduce_start", g.ops()[2].get(),
                               {cuda::deviceBuffer(ta), cuda::deviceBuffer(tb)}, {}, 0, nullptr};
  cuda::DeviceKernelSpec wait{"allreduce_wait", g.ops()[3].get(), {}, {}, 0, nullptr};
  auto s = (*api)->makeKernel(start), w = (*api)->makeKernel(wait);
  ASSERT_TRUE(s) << s.error().message();
  ASSERT_TRUE(w) << w.error().message();
  auto compute = (*api)->makeQueue("compute", 0);
  auto comm = runtime::makeLocalCommunicator();
  size_t bytes = 1024 * 4;
  void *buf = (*api)->allocate(bytes);
  char *a = static_cast<char *>(buf), *b = a + 1000 * 4;
  std::vector<float> in(1024), out(1024);
  for (size_t i = 0; i < in.size(); ++i) in[i] = float(i) - 500;
  for (double share : {1.0, 0.25, 0.5}) {
    ASSERT_FALSE((*api)->copy(buf, in.data(), bytes));
    runtime::StepPart part{share, 0};
    runtime::ExecContext ctx{*compute, comm.get(), &part};
    runtime::KernelArgs sa{g.ops()[2].get(), {{a, ta}, {b, tb}}, {}, nullptr};
    runtime::KernelArgs wa{g.ops()[3].get(), {}, {}, nullptr};
    compute->submit([&] { return (*s)->run(sa, ctx); });
    compute->submit([&] { return (*w)->run(wa, ctx); });
    ASSERT_FALSE(compute->synchronize());
    ASSERT_FALSE((*api)->copy(out.data(), buf, bytes));
    for (size_t i = 0; i < in.size(); ++i) ASSERT_EQ(out[i], float(in[i] * share)) << i << " " << share;
  }
  (*api)->release(buf);
}

// A kernel that reads an address the device does not map faults after its launch returned; the
// queue says which of its work had not finished. (The fault leaves the device unusable for the
// rest of the process: run this test in a process of its own.)
TEST(CudaDevice, AsynchronousFaultIsTracedToItsWork) {
  REQUIRE_GPU(api);
  auto m = parse(kRelu);
  ASSERT_TRUE(m);
  const int64_t n = 1 << 16;
  auto kernel = (*api)->makeKernel(reluSpec(*m, n));
  ASSERT_TRUE(kernel) << kernel.error().message();
  auto compute = (*api)->makeQueue("compute", 0);
  size_t bytes = size_t(n) * 4;
  void *x = (*api)->allocate(bytes), *y = (*api)->allocate(bytes);
  ir::TensorType t(ir::DType::F32, {n});
  runtime::KernelArgs good{nullptr, {{x, t}}, {{y, t}}, nullptr};
  runtime::KernelArgs bad{nullptr, {{reinterpret_cast<void *>(uintptr_t(0x10)), t}}, {{y, t}}, nullptr};
  runtime::ExecContext ctx{*compute};
  int64_t first = compute->submitted();
  compute->submit([&] { return (*kernel)->run(good, ctx); });
  compute->submit([&] { return (*kernel)->run(good, ctx); });
  compute->submit([&] { return (*kernel)->run(bad, ctx); }); // work number first + 2
  compute->submit([&] { return (*kernel)->run(good, ctx); });
  Error e = compute->synchronize();
  ASSERT_TRUE(e);
  EXPECT_NE(e.message().find("asynchronous fault"), std::string::npos) << e.message();
  EXPECT_EQ(compute->finishedBeforeFailure(), first + 2);
}

} // namespace
} // namespace dtnn::test
