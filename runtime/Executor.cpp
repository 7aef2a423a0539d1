#include "runtime/Executor.h"

#include "ir/Printer.h"

#include <algorithm>
#include <cassert>
#include <set>

namespace dtnn::runtime {

Executor::Executor(const Plan &plan, ExecServices services) : plan_(plan), s_(services) {
  assert(plan.stage == PlanStage::Bind && "executors run bound plans");
  Backend &primary = s_.backends.primary();
  for (auto &slot : inputs_)
    for (int id : plan_.inputs)
      slot.push_back(primary.allocate(plan_.values[id].desc.bytes));
  s_.arena.reserve(plan_.arenaBytes);
  if (plan_.cachedBytes) cache_ = primary.allocate(plan_.cachedBytes);
  planLaunches();
}

Executor::~Executor() {
  // A failed copy is the copy queue's error, reported by its synchronize.
  for (Event &e : inputReady_) consumeError(e.wait());
  for (auto &slot : inputs_)
    for (void *p : slot) s_.backends.primary().release(p);
  if (cache_) s_.backends.primary().release(cache_);
}

// Each step's queue, and which steps on other queues it must wait for: the
// producers of its operands (and of the storage they alias), and for an
// operand it writes, the earlier readers of that storage.
void Executor::planLaunches() {
  size_t n = plan_.steps.size();
  launches_.resize(n);
  events_.resize(n);
  std::vector<std::vector<int>> readers(plan_.values.size());
  for (size_t s = 0; s < n; ++s) {
    const PlanStep &step = plan_.steps[s];
    Launch &l = launches_[s];
    switch (step.kernel->queue()) {
    case QueueKind::Compute: l.queue = &s_.backends.find(step.backend)->computeQueue(); break;
    case QueueKind::Copy: l.queue = &s_.backends.find(step.backend)->copyQueue(); break;
    case QueueKind::Comm: l.queue = s_.commQueue; break;
    }
    assert(l.queue && "no queue for a step (a collective without a communication queue)");
    if (std::find(queues_.begin(), queues_.end(), l.queue) == queues_.end())
      queues_.push_back(l.queue);
    Communicator *comm = l.queue == s_.commQueue ? s_.comm : s_.computeComm;
    contexts_.push_back(std::make_unique<ExecContext>(ExecContext{*l.queue, comm, &part_}));
    std::set<int> deps;
    for (size_t i = 0; i < step.in.size(); ++i) {
      if (step.shapeOnly(i)) continue;
      for (int v = step.in[i];; v = plan_.values[v].aliasOf) {
        if (plan_.values[v].def >= 0) deps.insert(plan_.values[v].def);
        if (plan_.values[v].storage == PlanValue::Storage::Input) l.readsInputs = true;
        if (plan_.values[v].storage != PlanValue::Storage::Alias) break;
      }
      int root = plan_.root(step.in[i]);
      if (step.writes(i))
        for (int r : readers[root]) deps.insert(r);
      readers[root].push_back(static_cast<int>(s));
    }
    for (int d : deps)
      if (launches_[d].queue != l.queue) {
        l.waitFor.push_back(d);
        launches_[d].recordEvent = true;
      }
  }
}

TensorView Executor::view(int id, int slot) const {
  const PlanValue &v = plan_.values[id];
  switch (v.storage) {
  case PlanValue::Storage::Arena: return {s_.arena.base() + v.offset, v.desc.type};
  case PlanValue::Storage::Param: return s_.params.view(v.param);
  case PlanValue::Storage::Input: return {inputs_[slot][v.input], v.desc.type};
  case PlanValue::Storage::Alias: return {view(v.aliasOf, slot).data, v.desc.type};
  case PlanValue::Storage::Cached: return {static_cast<char *>(cache_) + v.offset, v.desc.type};
  }
  return {};
}

void Executor::bindArgs() {
  for (int slot = 0; slot < 2; ++slot) {
    args_[slot].clear();
    for (const PlanStep &s : plan_.steps) {
      KernelArgs a;
      a.op = s.op;
      for (int id : s.in) a.in.push_back(view(id, slot));
      for (int id : s.out) a.out.push_back(view(id, slot));
      if (s.workspaceBytes) a.workspace = s_.arena.base() + s.workspaceOffset;
      args_[slot].push_back(std::move(a));
    }
  }
  boundGeneration_ = s_.arena.generation();
  boundParams_ = s_.params.generation();
}

Event Executor::stageInputs(const std::vector<const void *> &data) {
  assert(data.size() == plan_.inputs.size() && staged_ < 2 && "bad input staging");
  int slot = (head_ + staged_) % 2;
  Backend &primary = s_.backends.primary();
  Queue &q = primary.copyQueue();
  for (size_t i = 0; i < data.size(); ++i) {
    void *dst = inputs_[slot][i];
    const void *src = data[i];
    size_t bytes = plan_.values[plan_.inputs[i]].desc.bytes;
    q.submit([&primary, dst, src, bytes] {
      primary.copyToDevice(dst, src, bytes);
      return Error::success();
    });
  }
  inputReady_[slot] = q.record();
  ++staged_;
  return inputReady_[slot];
}

void Executor::discardStaged() {
  assert(staged_ > 0 && "no staged inputs to discard");
  consumeError(inputReady_[(head_ + staged_ - 1) % 2].wait()); // reported by synchronize
  --staged_;
}

void Executor::setInput(size_t i, const void *host, size_t bytes) {
  assert(i < plan_.inputs.size() && bytes == plan_.values[plan_.inputs[i]].desc.bytes);
  consumeError(inputReady_[head_].wait()); // reported by synchronize
  s_.backends.primary().copyToDevice(inputs_[head_][i], host, bytes);
}

Error Executor::describe(const PlanStep &s, const Error &e) const {
  std::string where = s.op ? ir::locationStr(s.op->loc()) : "";
  return Error::make("'" + s.name() + "'" + (where.empty() ? "" : " " + where) + " on the " +
                     s.backend + " backend: " + e.message());
}

Error Executor::run() {
  if (boundGeneration_ != s_.arena.generation() || boundParams_ != s_.params.generation())
    bindArgs();
  int slot = head_;
  lastSlot_ = slot;
  size_t n = plan_.steps.size();
  std::vector<Event> &events = events_;
  if (profiling_) times_.assign(n, {});
  // The steps computed from parameters alone run when the parameters have
  // changed since their last run.
  bool refresh = cachedVersion_ != s_.params.version();
  cachedVersion_ = s_.params.version();
  for (size_t s = 0; s < n; ++s) {
    if (plan_.steps[s].once && !refresh) continue;
    const Launch &l = launches_[s];
    Queue &q = *l.queue;
    if (l.readsInputs) q.waitFor(inputReady_[slot]);
    for (int d : l.waitFor) q.waitFor(events[d]);
    Kernel *k = plan_.steps[s].kernel.get();
    const KernelArgs *a = &args_[slot][s];
    ExecContext *ctx = contexts_[s].get();
    StepTime *t = profiling_ ? &times_[s] : nullptr;
    const PlanStep *step = &plan_.steps[s];
    q.submit([this, k, a, ctx, t, step] {
      if (t) t->start = monotonicSeconds();
      Error e = k->run(*a, *ctx);
      if (t) t->end = monotonicSeconds();
      if (ctx->comm) ctx->comm->progress(); // reductions in flight move on
      if (e) return describe(*step, e);
      return e;
    });
    if (l.recordEvent) events[s] = q.record(); // a step of another queue waits for it
  }
  // In the order the queues were first used, so the error reported is the
  // same from run to run.
  Error first;
  for (Queue *q : queues_)
    if (Error e = q->synchronize(); e && !first) first = std::move(e);
  if (staged_ > 0) {
    head_ = (head_ + 1) % 2;
    --staged_;
  }
  if (plan_.writesParams) s_.params.touch();
  if (first) cachedVersion_ = UINT64_MAX; // a failed run may have left the cache half-made
  return first;
}

Tensor Executor::output(size_t i) const {
  TensorView v = view(plan_.outputs[i], lastSlot_);
  Tensor t(v.type);
  s_.backends.primary().copyToHost(t.raw(), v.data, t.bytes());
  return t;
}

void Executor::copyOutput(size_t i, Tensor &into) const {
  TensorView v = view(plan_.outputs[i], lastSlot_);
  if (into.type() != v.type) into = Tensor(v.type);
  s_.backends.primary().copyToHost(into.raw(), v.data, into.bytes());
}

double Executor::scalarOutput(size_t i) const {
  TensorView v = view(plan_.outputs[i], lastSlot_);
  assert(v.numel() == 1 && (v.type.dtype == ir::DType::F32 || v.type.dtype == ir::DType::F64));
  if (v.type.dtype == ir::DType::F64) {
    double d = 0;
    s_.backends.primary().copyToHost(&d, v.data, sizeof d);
    return d;
  }
  float f = 0;
  s_.backends.primary().copyToHost(&f, v.data, sizeof f);
  return f;
}

} // namespace dtnn::runtime
