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
// written operand keeps the operand's. Graph outputs are converted to plain
// at the end (in whatever memory they are), so that the host can read them.
// An operand the op reads only the type of is never converted.
#include "runtime/plan/Plan.h"

#include <map>

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
    const std::vector<BufferDesc> &want = (*kernel)->operandDescs();
    for (size_t i = 0; i < s.in.size(); ++i) {
      PlanValue &v = plan_.values[s.in[i]];
      if (s.shapeOnly(i)) continue; // any layout will do
      if (v.storage == PlanValue::Storage::Param && !ctx_.params.count(v.param)) {
        if (want[i].space == v.desc.space) v.desc = want[i];
        ctx_.params[v.param] = v.desc;
        if (v.desc == want[i]) continue;
      }
      if (v.desc == want[i]) continue;
      if (s.writes(i))
        return Error::make(where() + "'" + s.op->name() + "' on the " + s.backend +
                           " backend updates " + v.name + " in place but wants it as " +
                           want[i].str() + ", not " + v.desc.str());
      auto c = convert(s.in[i], want[i]);
      if (!c) return c.takeError();
      s.in[i] = *c;
    }
    const std::vector<BufferDesc> &give = (*kernel)->resultDescs();
    for (size_t r = 0; r < s.out.size(); ++r) {
      PlanValue &v = plan_.values[s.out[r]];
      v.desc = r < s.op->ownResults() ? give[r] : plan_.values[plan_.root(s.out[r])].desc;
      v.def = static_cast<int>(plan_.steps.size());
    }
    s.kernel = std::move(*kernel);
    s.space = backend->memorySpace();
    plan_.steps.push_back(std::move(s));
    return Error::success();
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

  // The value holding `id` converted to `to`, adding conversion steps.
  Expected<int> convert(int id, const BufferDesc &to) {
    auto key = std::make_pair(id, to.str());
    if (auto it = converted_.find(key); it != converted_.end()) return it->second;
    const BufferDesc from = plan_.values[id].desc;
    if (from.space != to.space) return copy(id, from, to, key);
    const Layout &native = from.layout.isPlain() ? to.layout : from.layout;
    if (!from.layout.isPlain() && !to.layout.isPlain() &&
        from.layout.backend() != to.layout.backend()) {
      auto mid = convert(id, BufferDesc::plain(from.type, from.space));
      if (!mid) return mid;
      auto last = convert(*mid, to);
      if (!last) return last;
      return converted_[key] = *last;
    }
    Backend *owner = ctx_.backends.find(native.backend());
    if (!owner)
      return Error::make(where() + "no backend of this run converts " + from.str() + " to " +
                         to.str());
    auto nid = addConversion(*owner, id, to);
    if (!nid) return nid;
    return converted_[key] = *nid;
  }

  // A copy of `id` (in `from`) between memory spaces: plain buffers copied by the run's device
  // backend, converted to plain first and from plain after where a side is in a native layout.
  Expected<int> copy(int id, const BufferDesc &from, const BufferDesc &to,
                     const std::pair<int, std::string> &key) {
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
    auto copied = addConversion(*device, at, plainTo);
    if (!copied) return copied;
    plan_.steps.back().copy = true;
    at = *copied;
    converted_[std::make_pair(id, plainTo.str())] = at;
    if (!to.layout.isPlain()) {
      auto last = convert(at, to);
      if (!last) return last;
      at = *last;
    }
    return converted_[key] = at;
  }

  // Appends the step of `owner` converting value `id` to `to`; the new value's id.
  Expected<int> addConversion(Backend &owner, int id, const BufferDesc &to) {
    auto kernel = owner.makeConversion(plan_.values[id].desc, to);
    if (!kernel) return Error::make(where() + kernel.error().message());
    std::string base = plan_.values[id].name;
    PlanValue v;
    v.name = base + "." + std::to_string(++conversions_[base]);
    v.desc = to;
    v.def = static_cast<int>(plan_.steps.size());
    plan_.values.push_back(v);
    int nid = static_cast<int>(plan_.values.size() - 1);
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
};

} // namespace

Error assignLayouts(Plan &plan, PlanContext &ctx) { return LayoutAssigner(plan, ctx).run(); }

} // namespace dtnn::runtime
