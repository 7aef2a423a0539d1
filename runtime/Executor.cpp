#include "runtime/Executor.h"

#include "ir/Log.h"
#include "ir/Printer.h"

#include <algorithm>
#include <cassert>
#include <cstring>
#include <set>

namespace dtnn::runtime {

namespace {

// Memory of space `sp` outside the arenas (input buffers, caches): the device backend's for
// either space when the run has one (its host memory pinned), else the primary backend's.
void *allocateIn(const BackendSet &b, MemorySpace sp, uint64_t bytes) {
  Backend *device = b.device();
  if (sp == MemorySpace::Device) return device->allocate(bytes);
  return device ? device->allocateHost(bytes) : b.primary().allocate(bytes);
}

void releaseIn(const BackendSet &b, MemorySpace sp, void *p) {
  Backend *device = b.device();
  if (sp == MemorySpace::Device) device->release(p);
  else if (device) device->releaseHost(p);
  else b.primary().release(p);
}

} // namespace

Executor::Executor(const Plan &plan, ExecServices services) : plan_(plan), s_(services) {
  assert(plan.stage == PlanStage::Bind && "executors run bound plans");
  Backend &primary = s_.backends.primary();
  bool device = primary.memorySpace() == MemorySpace::Device;
  for (int slot = 0; slot < 2; ++slot)
    for (int id : plan_.inputs) {
      uint64_t bytes = plan_.values[id].desc.bytes;
      inputs_[slot].push_back(primary.allocate(bytes));
      if (device) staging_[slot].push_back(primary.allocateHost(bytes));
    }
  for (size_t sp = 0; sp < kMemorySpaces; ++sp) {
    const SpaceBytes &bytes = plan_.spaces[sp];
    if (s_.arenas[sp]) s_.arenas[sp]->reserve(bytes.arena);
    if (bytes.cached) cache_[sp] = allocateIn(s_.backends, MemorySpace(sp), bytes.cached);
  }
  planLaunches();
}

Executor::~Executor() {
  // A failed copy is the copy queue's error, reported by its synchronize.
  for (Event &e : inputReady_) consumeError(e.wait());
  Backend &primary = s_.backends.primary();
  for (auto &slot : inputs_)
    for (void *p : slot) primary.release(p);
  for (auto &slot : staging_)
    for (void *p : slot) primary.releaseHost(p);
  for (size_t sp = 0; sp < kMemorySpaces; ++sp)
    if (cache_[sp]) releaseIn(s_.backends, MemorySpace(sp), cache_[sp]);
}

// Each step's queue, and which steps on other queues it must wait for: the
// producers of its operands (and of the storage they alias), and for an
// operand it writes (or storage a write-back fills), the earlier readers of
// that storage.
void Executor::planLaunches() {
  size_t n = plan_.steps.size();
  launches_.resize(n);
  events_.resize(n);
  workNumber_.assign(n, -1);
  deviceTimes_.resize(n);
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
    // A step that writes into an operand's storage from elsewhere (a write-back after an
    // update made in a copy) waits, too, for the earlier readers of that storage.
    for (int id : step.out)
      if (plan_.values[id].storage == PlanValue::Storage::Alias && !step.op)
        for (int r : readers[plan_.root(id)]) deps.insert(r);
    for (int d : deps)
      if (launches_[d].queue != l.queue) {
        l.waitFor.push_back(d);
        launches_[d].recordEvent = true;
      }
  }
}

TensorView Executor::view(int id, int slot) const {
  const PlanValue &v = plan_.values[id];
  size_t sp = size_t(v.desc.space);
  switch (v.storage) {
  case PlanValue::Storage::Arena: return {s_.arenas[sp]->base() + v.offset, v.desc.type};
  case PlanValue::Storage::Param: return s_.params.view(v.param);
  case PlanValue::Storage::Input: return {inputs_[slot][v.input], v.desc.type};
  case PlanValue::Storage::Alias: return {view(v.aliasOf, slot).data, v.desc.type};
  case PlanValue::Storage::Cached: return {static_cast<char *>(cache_[sp]) + v.offset, v.desc.type};
  }
  return {};
}

uint64_t Executor::boundKey() const {
  uint64_t key = s_.params.generation();
  for (const Arena *a : s_.arenas) key = key * 1000003 + (a ? a->generation() : 0);
  return key;
}

void Executor::bindArgs() {
  for (int slot = 0; slot < 2; ++slot) {
    args_[slot].clear();
    for (const PlanStep &s : plan_.steps) {
      KernelArgs a;
      a.op = s.op;
      for (int id : s.in) a.in.push_back(view(id, slot));
      for (int id : s.out) a.out.push_back(view(id, slot));
      if (s.workspaceBytes) a.workspace = s_.arenas[size_t(s.space)]->base() + s.workspaceOffset;
      args_[slot].push_back(std::move(a));
    }
  }
  boundKey_ = boundKey();
}

Event Executor::stageInputs(const std::vector<const void *> &data) {
  assert(data.size() == plan_.inputs.size() && staged_ < 2 && "bad input staging");
  int slot = (head_ + staged_) % 2;
  Backend &primary = s_.backends.primary();
  Queue &q = primary.copyQueue();
  // A device copies from pinned memory, whose last copy of this slot must be done.
  if (!staging_[slot].empty()) consumeError(inputReady_[slot].wait()); // reported by synchronize
  for (size_t i = 0; i < data.size(); ++i) {
    size_t bytes = plan_.values[plan_.inputs[i]].desc.bytes;
    const void *src = data[i];
    if (!staging_[slot].empty()) {
      std::memcpy(staging_[slot][i], src, bytes);
      src = staging_[slot][i];
    }
    primary.copyToDeviceOn(q, inputs_[slot][i], src, bytes);
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

void Executor::submitSteps(int slot, bool refresh, bool recording) {
  for (size_t s = 0; s < plan_.steps.size(); ++s) {
    if (plan_.steps[s].once && !refresh) continue;
    const Launch &l = launches_[s];
    Queue &q = *l.queue;
    if (l.readsInputs && !recording) q.waitFor(inputReady_[slot]);
    for (int d : l.waitFor) q.waitFor(events_[d]);
    Kernel *k = plan_.steps[s].kernel.get();
    const KernelArgs *a = &args_[slot][s];
    ExecContext *ctx = contexts_[s].get();
    StepTime *t = profiling_ ? &times_[s] : nullptr;
    const PlanStep *step = &plan_.steps[s];
    workNumber_[s] = q.submitted();
    bool onDevice = profiling_ && workNumber_[s] >= 0;
    if (onDevice) deviceTimes_[s].first = q.recordTimed();
    q.submit([this, k, a, ctx, t, step] {
      if (t) t->start = monotonicSeconds();
      Error e = k->run(*a, *ctx);
      if (t) t->end = monotonicSeconds();
      if (ctx->comm) ctx->comm->progress(); // reductions in flight move on
      if (e) return describe(*step, e);
      return e;
    });
    if (onDevice) deviceTimes_[s].second = q.recordTimed();
    if (l.recordEvent) events_[s] = q.record(); // a step of another queue waits for it
  }
}

Error Executor::finish() {
  // In the order the queues were first used, so the error reported is the
  // same from run to run.
  Error first;
  for (Queue *q : queues_) {
    Error e = q->synchronize();
    if (!e || first) {
      consumeError(std::move(e));
      continue;
    }
    // An asynchronous fault: the step whose work had not finished.
    int64_t at = q->finishedBeforeFailure();
    for (size_t s = 0; at >= 0 && s < plan_.steps.size(); ++s)
      if (launches_[s].queue == q && workNumber_[s] == at) {
        e = describe(plan_.steps[s], e);
        break;
      }
    first = std::move(e);
  }
  return first;
}

// A step's device times, placed on the host clock from the first step's start.
void Executor::recordDeviceTimes() {
  const DeviceEvent *origin = nullptr;
  double base = 0;
  for (size_t s = 0; s < plan_.steps.size(); ++s) {
    const DeviceEvent *a = deviceTimes_[s].first.device(), *b = deviceTimes_[s].second.device();
    if (!a || !b) continue;
    if (!origin) {
      origin = a;
      base = times_[s].start;
    }
    double start = a->secondsSince(*origin), end = b->secondsSince(*origin);
    if (start < 0 || end < 0) continue;
    times_[s] = {base + start, base + end};
  }
  for (auto &p : deviceTimes_) p = {};
}

bool Executor::replayable() const {
  Backend &primary = s_.backends.primary();
  if (!s_.replay || replayFailed_ || primary.memorySpace() != MemorySpace::Device) return false;
  for (size_t s = 0; s < plan_.steps.size(); ++s) {
    if (plan_.steps[s].once) return false;
    const Queue *q = launches_[s].queue;
    if (q != &primary.computeQueue() && q != &primary.copyQueue()) return false;
  }
  return !plan_.steps.empty();
}

// The first run of a plan runs its steps (algorithm searches, kernels compiled); the second is
// recorded, and every run from then on replays the recording of its input slot, made again
// when the buffers move.
Error Executor::replayOrRecord(int slot) {
  if (!warmedUp_) {
    warmedUp_ = true;
    submitSteps(slot, true, false);
    return finish();
  }
  Backend &primary = s_.backends.primary();
  Queue &origin = primary.computeQueue();
  const StepPart &was = recordedPart_[slot];
  bool samePart = was.share == part_.share && was.offset == part_.offset;
  if (!recorded_[slot] || recordedKey_[slot] != boundKey_ || !samePart) {
    recorded_[slot].reset();
    auto rec = primary.capture(origin, [&] {
      Event fork = origin.record();
      for (Queue *q : queues_)
        if (q != &origin) q->waitFor(fork);
      submitSteps(slot, true, true);
      for (Queue *q : queues_)
        if (q != &origin) origin.waitFor(q->record());
      return Error::success();
    });
    if (!rec) {
      // Steps that cannot be recorded run one by one from now on.
      DTNN_LOG_AT(Info, "run", "@" + plan_.graph->name() + " runs without replays: " + rec.error().message());
      consumeError(rec.takeError());
      for (Queue *q : queues_) consumeError(q->synchronize());
      replayFailed_ = true;
      submitSteps(slot, true, false);
      return finish();
    }
    recorded_[slot] = std::move(*rec);
    recordedKey_[slot] = boundKey_;
    recordedPart_[slot] = part_;
  }
  origin.waitFor(inputReady_[slot]);
  if (Error e = recorded_[slot]->replay(origin)) return e;
  replayed_ = true;
  return finish();
}

Error Executor::run() {
  if (boundKey_ != boundKey()) bindArgs();
  int slot = head_;
  lastSlot_ = slot;
  replayed_ = false;
  size_t n = plan_.steps.size();
  if (profiling_) times_.assign(n, {});
  // The steps computed from parameters alone run when the parameters have
  // changed since their last run.
  bool refresh = cachedVersion_ != s_.params.version();
  cachedVersion_ = s_.params.version();
  Error first;
  if (!profiling_ && replayable()) {
    first = replayOrRecord(slot);
  } else {
    submitSteps(slot, refresh, false);
    first = finish();
    if (profiling_) recordDeviceTimes();
  }
  if (staged_ > 0) {
    head_ = (head_ + 1) % 2;
    --staged_;
  }
  if (plan_.writesParams) s_.params.touch();
  if (first) cachedVersion_ = UINT64_MAX; // a failed run may have left the cache half-made
  return first;
}

void Executor::copyToHost(int id, void *host, size_t bytes) const {
  TensorView v = view(id, lastSlot_);
  if (plan_.values[id].desc.space == MemorySpace::Device)
    s_.backends.device()->copyToHost(host, v.data, bytes);
  else
    std::memcpy(host, v.data, bytes);
}

Tensor Executor::output(size_t i) const {
  Tensor t(plan_.values[plan_.outputs[i]].desc.type);
  copyToHost(plan_.outputs[i], t.raw(), t.bytes());
  return t;
}

void Executor::copyOutput(size_t i, Tensor &into) const {
  const ir::TensorType &type = plan_.values[plan_.outputs[i]].desc.type;
  if (into.type() != type) into = Tensor(type);
  copyToHost(plan_.outputs[i], into.raw(), into.bytes());
}

double Executor::scalarOutput(size_t i) const {
  const ir::TensorType &type = plan_.values[plan_.outputs[i]].desc.type;
  assert(numElements(type) == 1 && (type.dtype == ir::DType::F32 || type.dtype == ir::DType::F64));
  if (type.dtype == ir::DType::F64) {
    double d = 0;
    copyToHost(plan_.outputs[i], &d, sizeof d);
    return d;
  }
  float f = 0;
  copyToHost(plan_.outputs[i], &f, sizeof f);
  return f;
}

} // namespace dtnn::runtime
