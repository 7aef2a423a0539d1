// Layout assignment. Algorithm: graph inputs and parameters start as plain
// buffers in the memory of the run's primary backend. Walk the schedule in
// order. For each op, make the kernel of its selected backend from the
// descriptors its operands arrive in (if that backend cannot, the next
// backend that claims the op), and ask which ones it wants. A parameter
// whose layout is not fixed yet takes the one its first kernel wants where
// that is in the primary backend's memory (PlanContext::params keeps it for
// every later plan of the run), and stays plain there otherwise; any other
// operand that arrives in another layout or memory space gets a conversion
// step right before the op, made by the backend that owns the non-plain side
// (through plain when both sides are native layouts of different backends);
// between memory spaces, a copy of plain buffers made by the device's
// backend (through plain on either side). A value converted once to a
// descriptor is reused by later consumers of the same one. The op's own
// results take the descriptors the kernel gives; the new version of a
// written operand keeps the operand's. An operand the op updates in place
// that the kernel wants elsewhere (a device's parameter updated by a host
// fallback) is updated in a converted copy, which a step after the op
// writes back into the operand's storage. An allreduce_wait updates the very buffers its
// start reduces (a device's gradients staged to the host, reduced there): it takes the
// start's converted values, and writes them back. Graph outputs are converted to plain
// at the end (in whatever memory they are), so that the host can read them.
// An operand the op reads only the type of is never converted.
#include "runtime/plan/Plan.h"

#include <algorithm>
#include <map>
#include <optional>

namespace dtnn::runtime {

namespace {

class LayoutAssigner {
public:
  LayoutAssigner(Plan &plan, PlanContext &ctx) : plan_(plan), ctx_(ctx) {}

  Error run() {
    MemorySpace home = ctx_.backends.primary().memorySpace();
    for (PlanValue &v : plan_.values) {
      if (v.storage == PlanValue::Storage::Input) v.desc.space = home;
      if (v.storage != PlanValue::Storage::Param) continue;
      v.desc.space = home;
      if (auto it = ctx_.params.find(v.param); it != ctx_.params.end()) v.desc = it->second;
    }
    std::vector<PlanStep> old = std::move(plan_.steps);
    plan_.steps.clear();
    for (PlanStep &s : old)
      if (Error e = assignStep(s)) return e;
    for (int &id : plan_.outputs) {
      const BufferDesc &d = plan_.values[id].desc;
      if (d.layout.isPlain()) continue;
      auto c = convert(id, BufferDesc::plain(d.type, d.space));
      if (!c) return c.takeError();
      id = *c;
    }
    plan_.stage = PlanStage::Layouts;
    return Error::success();
  }

private:
  std::string where() const { return "plan for graph @" + plan_.graph->name() + ": "; }

  Error assignStep(PlanStep &s) {
    Backend *backend = ctx_.backends.find(s.backend);
    KernelRequest req{*s.op, {}, {}, *backend};
    for (int id : s.in) req.in.push_back(plan_.values[id].desc);
    for (unsigned r = 0; r < s.op->ownResults(); ++r)
      req.out.push_back(plan_.values[s.out[r]].desc.type);
    auto kernel = s.entry->make(req);
    if (!kernel) {
      // A backend that cannot make its kernel at these sizes and layouts
      // (oneDNN refuses some descriptors) leaves the op to the next one.
      Error first = kernel.takeError();
      if (!fallBack(s, req, kernel))
        return Error::make(where() + "'" + s.op->name() + "' on the " + s.backend +
                           " backend: " + first.message());
    }
    // A kernel computes in its backend's memory, whatever layout it wants (one that takes its
    // operands' layouts as they come takes them there).
    backend = ctx_.backends.find(s.backend);
    std::vector<BufferDesc> want = (*kernel)->operandDescs();
    for (BufferDesc &d : want) d.space = backend->memorySpace();
    // The written operands the op updates in a converted copy: (its version after the op,
    // the copy).
    std::vector<std::pair<int, int>> writeBacks;
    for (size_t i = 0, written = 0; i < s.in.size(); ++i) {
      PlanValue &v = plan_.values[s.in[i]];
      bool writes = s.writes(i);
      int version = writes ? s.out[s.op->ownResults() + written++] : -1;
      if (s.shapeOnly(i)) continue; // any layout will do
      if (v.storage == PlanValue::Storage::Param && !ctx_.params.count(v.param)) {
        if (want[i].space == v.desc.space) v.desc = want[i];
        ctx_.params[v.param] = v.desc;
        if (v.desc == want[i]) continue;
      }
      if (v.desc == want[i]) continue;
      // A wait's buffers are those its start reduces, converted or not: a reduction in flight
      // writes the start's copy, which the wait then writes back.
      if (std::optional<int> started = startedBuffer(s, i);
          started && plan_.values[*started].desc == want[i]) {
        s.in[i] = *started;
        if (writes) {
          plan_.values[version].desc = plan_.values[plan_.root(version)].desc;
          writeBacks.push_back({version, *started});
        }
        continue;
      }
      // A copy the op writes serves no later reader of the operand.
      auto c = writes ? convert(s.in[i], want[i], kFresh) : convert(s.in[i], want[i]);
      if (!c) return c.takeError();
      s.in[i] = *c;
      if (writes) {
        plan_.values[version].desc = plan_.values[plan_.root(version)].desc;
        writeBacks.push_back({version, *c});
      }
    }
    std::vector<BufferDesc> give = (*kernel)->resultDescs();
    for (BufferDesc &d : give) d.space = backend->memorySpace();
    for (auto &[version, copy] : writeBacks) {
      auto at = std::find(s.out.begin(), s.out.end(), version);
      *at = addValue(plan_.values[version].name, plan_.values[copy].desc);
      plan_.values[*at].storage = PlanValue::Storage::Alias;
      plan_.values[*at].aliasOf = copy;
      copy = *at;
    }
    for (size_t r = 0; r < s.out.size(); ++r) {
      PlanValue &v = plan_.values[s.out[r]];
      v.desc = r < s.op->ownResults() ? give[r] : plan_.values[plan_.root(s.out[r])].desc;
      v.def = static_cast<int>(plan_.steps.size());
    }
    s.kernel = std::move(*kernel);
    s.space = backend->memorySpace();
    if (s.op->name() == "allreduce_start") started_[s.op] = s.in;
    plan_.steps.push_back(std::move(s));
    for (auto [version, updated] : writeBacks)
      if (auto back = convert(updated, plan_.values[version].desc, version); !back)
        return back.takeError();
    return Error::success();
  }

  // For operand `i` of an allreduce_wait (a buffer, after the token): the value its start
  // reduces in place, as that start's step took it.
  std::optional<int> startedBuffer(const PlanStep &s, size_t i) const {
    if (s.op->name() != "allreduce_wait" || i == 0) return std::nullopt;
    auto it = started_.find(s.op->operand(0)->definingOp());
    if (it == started_.end() || i - 1 >= it->second.size()) return std::nullopt;
    return it->second[i - 1];
  }

  // Makes the kernel of the first backend after `s.backend` that claims the
  // op; false when none can.
  bool fallBack(PlanStep &s, KernelRequest &req, Expected<std::unique_ptr<Kernel>> &kernel) {
    const auto &backends = ctx_.backends.all();
    size_t at = 0;
    while (at < backends.size() && backends[at]->name() != s.backend) ++at;
    while (selectKernel(plan_, ctx_, s, at + 1)) {
      while (backends[at]->name() != s.backend) ++at;
      KernelRequest r{*s.op, req.in, req.out, *backends[at]};
      kernel = s.entry->make(r);
      if (kernel) return true;
    }
    return false;
  }

  // What `convert` and `addConversion` write into: a new value, or an existing one (the
  // version of an operand, whose storage a write-back fills).
  static constexpr int kFresh = -1;

  // The value holding `id` converted to `to`, adding conversion steps; a value converted once is
  // reused, unless `into` names the value the last step writes, or kFresh asks for a new one.
  Expected<int> convert(int id, const BufferDesc &to, std::optional<int> into = std::nullopt) {
    auto key = std::make_pair(id, to.str());
    if (!into) {
      if (auto it = converted_.find(key); it != converted_.end()) return it->second;
    }
    auto keep = [&](int nid) {
      if (!into) converted_[key] = nid;
      return nid;
    };
    const BufferDesc from = plan_.values[id].desc;
    if (from.space != to.space) {
      auto c = copy(id, from, to, into);
      if (!c) return c;
      return keep(*c);
    }
    const Layout &native = from.layout.isPlain() ? to.layout : from.layout;
    if (!from.layout.isPlain() && !to.layout.isPlain() &&
        from.layout.backend() != to.layout.backend()) {
      auto mid = convert(id, BufferDesc::plain(from.type, from.space));
      if (!mid) return mid;
      auto last = convert(*mid, to, into);
      if (!last) return last;
      return keep(*last);
    }
    Backend *owner = ctx_.backends.find(native.backend());
    if (!owner)
      return Error::make(where() + "no backend of this run converts " + from.str() + " to " +
                         to.str());
    auto nid = addConversion(*owner, id, to, into.value_or(kFresh));
    if (!nid) return nid;
    return keep(*nid);
  }

  // A copy of `id` (in `from`) between memory spaces: plain buffers copied by the run's device
  // backend, converted to plain first and from plain after where a side is in a native layout;
  // `into` as for convert.
  Expected<int> copy(int id, const BufferDesc &from, const BufferDesc &to, std::optional<int> into) {
    int at = id;
    if (!from.layout.isPlain()) {
      auto mid = convert(at, BufferDesc::plain(from.type, from.space));
      if (!mid) return mid;
      at = *mid;
    }
    BufferDesc plainTo = BufferDesc::plain(to.type, to.space);
    Backend *device = ctx_.backends.device();
    if (!device)
      return Error::make(where() + "no backend of this run copies " + from.str() + " to " + to.str());
    bool last = to.layout.isPlain();
    auto copied = addConversion(*device, at, plainTo, last ? into.value_or(kFresh) : kFresh);
    if (!copied) return copied;
    plan_.steps.back().copy = true;
    if (last) return *copied;
    if (!into) converted_[std::make_pair(id, plainTo.str())] = *copied;
    return convert(*copied, to, into);
  }

  // A new value named after `base` (%3 -> %3.1, %3.2, ...).
  int addValue(const std::string &base, const BufferDesc &desc) {
    PlanValue v;
    v.name = base + "." + std::to_string(++conversions_[base]);
    v.desc = desc;
    plan_.values.push_back(v);
    return static_cast<int>(plan_.values.size() - 1);
  }

  // Appends the step of `owner` converting value `id` to `to`, into the value `into` (of
  // descriptor `to`) or a new one for kFresh; the id of the value written.
  Expected<int> addConversion(Backend &owner, int id, const BufferDesc &to, int into = kFresh) {
    auto kernel = owner.makeConversion(plan_.values[id].desc, to);
    if (!kernel) return Error::make(where() + kernel.error().message());
    int nid = into == kFresh ? addValue(plan_.values[id].name, to) : into;
    plan_.values[nid].def = static_cast<int>(plan_.steps.size());
    PlanStep step;
    step.backend = owner.name();
    step.space = owner.memorySpace();
    step.in = {id};
    step.out = {nid};
    step.kernel = std::move(*kernel);
    plan_.steps.push_back(std::move(step));
    return nid;
  }

  Plan &plan_;
  PlanContext &ctx_;
  std::map<std::pair<int, std::string>, int> converted_;
  std::map<std::string, int> conversions_;
  // The operands each allreduce_start step took (after conversions), for its wait.
  std::map<const ir::Op *, std::vector<int>> started_;
};

} // namespace

Error assignLayouts(Plan &plan, PlanContext &ctx) { return LayoutAssigner(plan, ctx).run(); }

} // namespace dtnn::runtime
