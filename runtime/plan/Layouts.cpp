// Layout assignment. Algorithm: walk the schedule in order. For each op,
// make the kernel of its selected backend from the descriptors its operands
// arrive in (if that backend cannot, the next backend that claims the op),
// and ask which ones it wants. A parameter whose layout is not
// fixed yet takes the one its first kernel wants (PlanContext::params keeps
// it for every later plan of the run); any other operand that arrives in
// another layout gets a conversion step right before the op, made by the
// backend that owns the non-plain side (through plain when both sides are
// native layouts of different backends). A value converted once to a layout
// is reused by later consumers of the same layout. The op's own results take
// the descriptors the kernel gives; the new version of a written operand
// keeps the operand's. Graph outputs are converted to plain at the end, so
// the host can read them. An operand the op reads only the type of is never
// converted.
#include "runtime/plan/Plan.h"

#include <map>

namespace dtnn::runtime {

namespace {

class LayoutAssigner {
public:
  LayoutAssigner(Plan &plan, PlanContext &ctx) : plan_(plan), ctx_(ctx) {}

  Error run() {
    for (PlanValue &v : plan_.values)
      if (v.storage == PlanValue::Storage::Param)
        if (auto it = ctx_.params.find(v.param); it != ctx_.params.end()) v.desc = it->second;
    std::vector<PlanStep> old = std::move(plan_.steps);
    plan_.steps.clear();
    for (PlanStep &s : old)
      if (Error e = assignStep(s)) return e;
    for (int &id : plan_.outputs) {
      if (plan_.values[id].desc.layout.isPlain() &&
          plan_.values[id].desc.space == MemorySpace::Host)
        continue;
      auto c = convert(id, BufferDesc::plain(plan_.values[id].desc.type));
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
        v.desc = want[i];
        ctx_.params[v.param] = want[i];
        continue;
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
    const Layout &native = from.layout.isPlain() ? to.layout : from.layout;
    if (!from.layout.isPlain() && !to.layout.isPlain() &&
        from.layout.backend() != to.layout.backend()) {
      auto mid = convert(id, BufferDesc::plain(from.type));
      if (!mid) return mid;
      auto last = convert(*mid, to);
      if (!last) return last;
      return converted_[key] = *last;
    }
    Backend *owner = ctx_.backends.find(native.backend());
    if (!owner)
      return Error::make(where() + "no backend of this run converts " + from.str() + " to " +
                         to.str());
    auto kernel = owner->makeConversion(from, to);
    if (!kernel) return Error::make(where() + kernel.error().message());
    std::string base = plan_.values[id].name;
    PlanValue v;
    v.name = base + "." + std::to_string(++conversions_[base]);
    v.desc = to;
    v.def = static_cast<int>(plan_.steps.size());
    plan_.values.push_back(v);
    int nid = static_cast<int>(plan_.values.size() - 1);
    PlanStep step;
    step.backend = owner->name();
    step.in = {id};
    step.out = {nid};
    step.kernel = std::move(*kernel);
    plan_.steps.push_back(std::move(step));
    return converted_[key] = nid;
  }

  Plan &plan_;
  PlanContext &ctx_;
  std::map<std::pair<int, std::string>, int> converted_;
  std::map<std::string, int> conversions_;
};

} // namespace

Error assignLayouts(Plan &plan, PlanContext &ctx) { return LayoutAssigner(plan, ctx).run(); }

} // namespace dtnn::runtime
