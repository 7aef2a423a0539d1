// The run's trace (see Trace.h). Events are kept as JSON text, a line each, and written as the
// trace-event format's JSON object form: {"traceEvents": [...], "displayTimeUnit": "ms"}.
// Timestamps are microseconds since the ranks left the start-up barrier.
#include "runtime/train/Trace.h"

#include "ir/Output.h"
#include "runtime/Queue.h"
#include "runtime/train/SafetensorsHeader.h"

#include <cstdio>
#include <map>

namespace dtnn::runtime {

namespace {

std::string json(const std::string &s) {
  std::string out;
  safetensors::appendJsonString(out, s);
  return out;
}

const char *trackName(int track) {
  switch (track) {
  case 0: return "compute";
  case 1: return "communication";
  case 2: return "copy";
  case RunTrace::kRun: return "run: epochs, evaluation, checkpoints";
  case RunTrace::kData: return "waiting for data";
  default: return nullptr;
  }
}

int trackOf(QueueKind q) {
  switch (q) {
  case QueueKind::Compute: return 0;
  case QueueKind::Comm: return 1;
  case QueueKind::Copy: return 2;
  }
  return 0;
}

} // namespace

Expected<std::unique_ptr<RunTrace>> RunTrace::start(Communicator &comm, int64_t kernelSteps) {
  // Two rounds of an allgather: every rank leaves the second after all entered it, so the ranks'
  // origins differ by about one message latency.
  std::vector<uint64_t> all(size_t(comm.size()));
  uint64_t mine = 0;
  for (int round = 0; round < 2; ++round)
    if (Error e = comm.allgather(&mine, sizeof mine, all.data(), "aligning the trace's clocks"))
      return e;
  return std::unique_ptr<RunTrace>(new RunTrace(comm.rank(), monotonicSeconds(), kernelSteps));
}

std::string RunTrace::micros(double seconds) const { return duration(seconds - origin_); }

std::string RunTrace::duration(double seconds) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", seconds * 1e6);
  return buf;
}

void RunTrace::add(std::string event) {
  std::lock_guard<std::mutex> lock(mutex_);
  events_.push_back(std::move(event));
}

bool RunTrace::wantsKernels() const { return stepsRecorded_ < kernelSteps_; }

void RunTrace::addSpan(int track, const std::string &name, const char *category, double start,
                       double end, const std::string &args) {
  std::string e = "\"name\": " + json(name) + ", \"cat\": \"" + category +
                  "\", \"ph\": \"X\", \"ts\": " + micros(start) + ", \"dur\": " +
                  duration(end - start) + ", \"tid\": " + std::to_string(track);
  if (!args.empty()) e += ", \"args\": {" + args + "}";
  std::lock_guard<std::mutex> lock(mutex_);
  if (track >= kWorker && std::find(workerTracks_.begin(), workerTracks_.end(), track) ==
                              workerTracks_.end())
    workerTracks_.push_back(track);
  events_.push_back(std::move(e));
}

void RunTrace::addStep(const Plan &plan, const std::vector<StepTime> &times, int64_t step) {
  if (!wantsKernels() || times.size() != plan.steps.size() || times.empty()) return;
  ++stepsRecorded_;
  double first = times[0].start, last = times[0].end;
  for (const StepTime &t : times) {
    first = std::min(first, t.start);
    last = std::max(last, t.end);
  }
  addSpan(0, "train step " + std::to_string(step), "step", first, last,
          "\"batch\": " + std::to_string(plan.batch));
  std::map<int64_t, double> started; // bucket: when its allreduce_start began
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    const PlanStep &s = plan.steps[i];
    const StepTime &t = times[i];
    if (t.end <= 0) continue; // not run (a step computed once, from cached parameters)
    int track = s.kernel ? trackOf(s.kernel->queue()) : 0;
    if (!s.op) {
      const PlanValue &from = plan.values[size_t(s.in[0])], &to = plan.values[size_t(s.out[0])];
      addSpan(track, "convert " + from.name + " -> " + to.name + " (" + s.backend + ")",
              "convert", t.start, t.end,
              "\"from\": " + json(from.desc.str()) + ", \"to\": " + json(to.desc.str()));
      continue;
    }
    std::string name = stepLayerName(plan, s) + " (" + s.backend + ")";
    std::string args = "\"op\": " + json(s.op->name()) + ", \"backend\": " + json(s.backend) +
                       ", \"location\": " + json(opLocation(*s.op));
    const std::string &op = s.op->name();
    const char *category = "kernel";
    if (op == "allreduce_start" || op == "allreduce_wait") {
      category = "allreduce";
      // A reduction outside a bucket (-1) is known by its step.
      int64_t bucket = s.op->attrs().getInt("bucket");
      if (bucket < 0) bucket = int64_t(i);
      uint64_t bytes = operandBytes(plan, s);
      args += ", \"bucket\": " + std::to_string(bucket) + ", \"bytes\": " + std::to_string(bytes);
      if (op == "allreduce_start") {
        started[bucket] = t.start;
      } else if (auto it = started.find(bucket); it != started.end()) {
        // The bucket's flight, from its start to the end of its wait, as an async slice.
        std::string id = std::to_string(step) + "." + std::to_string(bucket);
        std::string common = "\"name\": \"bucket " + std::to_string(bucket) +
                             " in flight\", \"cat\": \"allreduce\", \"id\": " + json(id) +
                             ", \"tid\": 1";
        add(common + ", \"ph\": \"b\", \"ts\": " + micros(it->second) +
            ", \"args\": {\"bytes\": " + std::to_string(bytes) + "}");
        add(common + ", \"ph\": \"e\", \"ts\": " + micros(t.end));
      }
    }
    addSpan(track, name, category, t.start, t.end, args);
  }
}

Error RunTrace::finish(Communicator &comm, const std::string &path) {
  std::string mine;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    std::string pid = std::to_string(rank_);
    auto meta = [&](const std::string &what, int tid, const std::string &name) {
      mine += "{\"name\": \"" + what + "\", \"ph\": \"M\", \"pid\": " + pid +
              ", \"tid\": " + std::to_string(tid) + ", \"args\": {\"name\": " + json(name) +
              "}},\n";
    };
    meta("process_name", 0, "rank " + pid);
    mine += "{\"name\": \"process_sort_index\", \"ph\": \"M\", \"pid\": " + pid +
            ", \"tid\": 0, \"args\": {\"sort_index\": " + pid + "}},\n";
    for (int t = 0; t <= kData; ++t) meta("thread_name", t, trackName(t));
    for (int t : workerTracks_) meta("thread_name", t, "data worker " + std::to_string(t - kWorker));
    for (const std::string &e : events_) mine += "{\"pid\": " + pid + ", " + e + "},\n";
  }
  // Each rank's text to rank 0: the sizes first, then each rank's bytes in turn.
  const int ranks = comm.size();
  std::vector<uint64_t> sizes(static_cast<size_t>(ranks));
  uint64_t size = mine.size();
  if (Error e = comm.allgather(&size, sizeof size, sizes.data(), "gathering the trace"))
    return e;
  std::string all;
  for (int r = 0; r < ranks; ++r) {
    std::string part = r == comm.rank() ? mine : std::string(size_t(sizes[size_t(r)]), '\0');
    if (ranks > 1 && sizes[size_t(r)] > 0)
      if (Error e = comm.broadcast(part.data(), part.size(), r, "gathering the trace")) return e;
    all += part;
  }
  if (comm.rank() != 0) return Error::success();
  if (all.size() >= 2) all.resize(all.size() - 2); // the last ",\n"
  std::string text = "{\"traceEvents\": [\n" + all +
                     "\n],\n\"displayTimeUnit\": \"ms\",\n\"otherData\": {\"ranks\": " +
                     std::to_string(ranks) +
                     ", \"clock\": \"microseconds since the ranks left the start-up barrier\"}}\n";
  return writeOutput(path, text);
}

} // namespace dtnn::runtime
