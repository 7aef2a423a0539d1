// The executor follows dependencies across queues: an allreduce started on
// the communication queue runs while the kernels scheduled between its start
// and its wait run on the compute queue; inputs staged for coming runs are
// used in order; failures come back as values.
#include "ir/TextParser.h"
#include "runtime/ModuleRunner.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <sstream>
#include <thread>

namespace dtnn::test {
namespace {

// A channel that forwards to another communicator (the compute queues'
// duplicate of the tests' communicators).
class Forward : public runtime::Communicator {
public:
  explicit Forward(runtime::Communicator &to) : to_(to) {}
  int rank() const override { return to_.rank(); }
  int size() const override { return to_.size(); }
  Error broadcast(void *d, size_t n, int root, const std::string &w) override {
    return to_.broadcast(d, n, root, w);
  }
  Error allgather(const void *in, size_t n, void *out, const std::string &w) override {
    return to_.allgather(in, n, out, w);
  }
  Expected<std::unique_ptr<runtime::Communicator>> duplicate() override {
    return std::unique_ptr<runtime::Communicator>(new Forward(to_));
  }
  Error waitAllreduce(uint64_t h) override { return to_.waitAllreduce(h); }

protected:
  Error reduce(void *d, size_t n, ir::DType t, runtime::ReduceOp op, const std::string &w,
               runtime::Algorithm a) override {
    return to_.allreduce(d, n, t, op, w, 1, a);
  }
  Expected<uint64_t> startReduce(void *d, size_t n, ir::DType t, runtime::ReduceOp op,
                                 const std::string &w, runtime::Algorithm a) override {
    return to_.startAllreduce(d, n, t, op, w, 1, a);
  }

private:
  runtime::Communicator &to_;
};

// One rank whose reductions the tests define.
class TestCommunicator : public runtime::Communicator {
public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  Error broadcast(void *, size_t, int, const std::string &) override { return Error::success(); }
  Error allgather(const void *, size_t, void *, const std::string &) override {
    return Error::make("not used");
  }
  Expected<std::unique_ptr<runtime::Communicator>> duplicate() override {
    return std::unique_ptr<runtime::Communicator>(new Forward(*this));
  }
};

// One rank whose reductions are non-blocking and take `delay`: a wait
// returns `delay` after the start, and records when.
class SlowCommunicator : public TestCommunicator {
public:
  explicit SlowCommunicator(double delay) : delay_(delay) {}
  Error waitAllreduce(uint64_t) override {
    std::this_thread::sleep_until(std::chrono::steady_clock::now() +
                                  std::chrono::duration<double>(start + delay_ -
                                                                runtime::monotonicSeconds()));
    end = runtime::monotonicSeconds();
    return Error::success();
  }

protected:
  Error reduce(void *, size_t, ir::DType, runtime::ReduceOp, const std::string &,
               runtime::Algorithm) override {
    return Error::make("not used");
  }
  Expected<uint64_t> startReduce(void *, size_t count, ir::DType, runtime::ReduceOp,
                                 const std::string &, runtime::Algorithm) override {
    start = runtime::monotonicSeconds();
    elements += count;
    ++calls;
    return uint64_t(1);
  }

public:
  double start = 0, end = 0;
  size_t elements = 0;
  int calls = 0;

private:
  double delay_;
};

std::unique_ptr<ir::Module> parse(const std::string &text) {
  SourceManager sm;
  std::ostringstream errs;
  DiagnosticEngine diags(sm, errs);
  auto m = ir::parseModule(text, "async.dtir", sm, diags);
  EXPECT_TRUE(m) << errs.str();
  return m;
}

const char *kOverlap = R"(graph @f(%x: f32[64,32]) -> (f32[64,32], f32[64,32]) {
  %0 = relu %x : f32[64,32]
  %1 = scale %x {factor=2.0} : f32[64,32]
  %2 = allreduce_start %0, %1 : token
  %3 = tanh %x : f32[64,32]
  %4 = sigmoid %3 : f32[64,32]
  %5, %6 = allreduce_wait %2, %0, %1 : f32[64,32], f32[64,32]
  %7 = add %5, %4 : f32[64,32]
  return %7, %6
}
)";

// The start/wait pair of the plan's first allreduce, and the steps between.
struct Pair {
  int start = -1, wait = -1;
};
Pair findPair(const runtime::Plan &plan) {
  Pair p;
  for (size_t s = 0; s < plan.steps.size(); ++s) {
    if (!plan.steps[s].op) continue;
    if (plan.steps[s].op->name() == "allreduce_start") p.start = static_cast<int>(s);
    if (plan.steps[s].op->name() == "allreduce_wait") p.wait = static_cast<int>(s);
  }
  return p;
}

void checkOverlap(const std::string &backend) {
  auto m = parse(kOverlap);
  ASSERT_TRUE(m);
  auto backends = runtime::BackendSet::create(backend, {});
  ASSERT_TRUE(backends) << backends.error().message();
  auto comm = std::make_unique<SlowCommunicator>(0.5);
  SlowCommunicator *slow = comm.get();
  runtime::ModuleRunner runner(*m, *backends, slow);
  auto exec = runner.executor(*m->findGraph("f"), 64);
  ASSERT_TRUE(exec) << exec.error().message();
  runtime::Executor &ex = **exec;
  const runtime::Plan &plan = ex.plan();
  Pair pair = findPair(plan);
  ASSERT_GE(pair.start, 0);
  ASSERT_GT(pair.wait, pair.start + 1) << plan.str();

  // The reduced buffers lie back to back, so the reduction is one call.
  ASSERT_EQ(plan.groups.size(), 1u) << plan.str();
  const runtime::PlanStep &start = plan.steps[pair.start];
  EXPECT_EQ(plan.values[start.in[1]].offset,
            plan.values[start.in[0]].offset + plan.values[start.in[0]].desc.bytes)
      << plan.str();

  runtime::Tensor x(ir::TensorType(ir::DType::F32, {64, 32}));
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = std::sin(0.1f * float(i));
  ex.setInput(0, x.raw(), x.bytes());
  ex.setProfiling(true);
  ASSERT_FALSE(ex.run());
  EXPECT_EQ(slow->calls, 1);
  EXPECT_EQ(slow->elements, size_t(2 * 64 * 32));

  // Every kernel between the start and the wait ran while the reduction was
  // in flight: the start returned at once, and they ended long before the
  // half-second reduction could have.
  const std::vector<runtime::StepTime> &t = ex.times();
  int between = 0;
  for (int s = pair.start + 1; s < pair.wait; ++s) {
    if (!plan.steps[s].op) continue;
    ++between;
    EXPECT_LT(t[s].start, slow->start + 0.25) << plan.steps[s].name();
    EXPECT_LT(t[s].end, slow->end - 0.25) << plan.steps[s].name();
  }
  EXPECT_EQ(between, 2); // tanh and sigmoid
  // The start took no time; the wait ended when the reduction did.
  EXPECT_LT(t[pair.start].end - t[pair.start].start, 0.1);
  EXPECT_GE(t[pair.wait].end, slow->end);

  runtime::Tensor y = ex.output(0), z = ex.output(1);
  for (int64_t i = 0; i < x.numel(); ++i) {
    float v = x.data<float>()[i];
    float want = std::max(v, 0.f) + 1.f / (1.f + std::exp(-std::tanh(v)));
    EXPECT_NEAR(y.data<float>()[i], want, 1e-5f) << i;
    EXPECT_FLOAT_EQ(z.data<float>()[i], 2 * v) << i;
  }
}

TEST(Async, KernelsRunWhileAnAllreduceIsInFlightReference) { checkOverlap("reference"); }
TEST(Async, KernelsRunWhileAnAllreduceIsInFlightOnednn) { checkOverlap("onednn"); }

// Inputs staged for two coming runs are used oldest first.
TEST(Async, StagedInputsAreUsedInOrder) {
  auto m = parse("graph @f(%x: f32[4]) -> f32[4] {\n  %0 = scale %x {factor=3.0} : f32[4]\n"
                 "  return %0\n}\n");
  ASSERT_TRUE(m);
  auto backends = runtime::BackendSet::create("reference", {});
  ASSERT_TRUE(backends);
  runtime::ModuleRunner runner(*m, *backends);
  auto exec = runner.executor(*m->findGraph("f"), 4);
  ASSERT_TRUE(exec) << exec.error().message();
  float a[4] = {1, 2, 3, 4}, b[4] = {10, 20, 30, 40};
  (*exec)->stageInputs({a});
  (*exec)->stageInputs({b});
  ASSERT_FALSE((*exec)->run());
  EXPECT_FLOAT_EQ((*exec)->output(0).data<float>()[3], 12);
  ASSERT_FALSE((*exec)->run());
  EXPECT_FLOAT_EQ((*exec)->output(0).data<float>()[3], 120);
  // Inputs staged for a run that never comes (a run stopped early) can be
  // withdrawn; the next run reads what is set then.
  (*exec)->stageInputs({a});
  (*exec)->discardStaged();
  (*exec)->setInput(0, b, sizeof b);
  ASSERT_FALSE((*exec)->run());
  EXPECT_FLOAT_EQ((*exec)->output(0).data<float>()[0], 30);
}

// A failing reduction is an error value that names the op; the executor
// stays usable.
class FailingCommunicator : public TestCommunicator {
protected:
  Error reduce(void *, size_t, ir::DType, runtime::ReduceOp, const std::string &,
               runtime::Algorithm) override {
    return Error::make("rank 1 is gone");
  }
};

TEST(Async, AFailedCollectiveIsAnError) {
  auto m = parse(kOverlap);
  ASSERT_TRUE(m);
  auto backends = runtime::BackendSet::create("reference", {});
  ASSERT_TRUE(backends);
  FailingCommunicator failing;
  runtime::ModuleRunner runner(*m, *backends, &failing);
  auto exec = runner.executor(*m->findGraph("f"), 64);
  ASSERT_TRUE(exec) << exec.error().message();
  std::vector<float> x(64 * 32, 1.f);
  (*exec)->setInput(0, x.data(), x.size() * sizeof(float));
  Error e = (*exec)->run();
  ASSERT_TRUE(e);
  EXPECT_EQ(e.message(), "'allreduce_start' on the reference backend: rank 1 is gone");
  e = (*exec)->run();
  EXPECT_TRUE(e);
}

} // namespace
} // namespace dtnn::test
