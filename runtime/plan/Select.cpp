// Kernel selection: each op goes to the first backend of the run (the
// chosen one, then the fallbacks) with a kernel registry entry that claims
// it at its operand types. Conversions are chosen later, with the layouts.
#include "runtime/plan/Plan.h"

namespace dtnn::runtime {

bool selectKernel(const Plan &plan, const PlanContext &ctx, PlanStep &s, size_t from) {
  std::vector<ir::TensorType> in, out;
  for (int id : s.in) in.push_back(plan.values[id].desc.type);
  for (int id : s.out) out.push_back(plan.values[id].desc.type);
  const auto &backends = ctx.backends.all();
  for (size_t b = from; b < backends.size(); ++b) {
    const KernelEntry *e = KernelRegistry::get().find(std::string(backends[b]->name()), *s.op, in, out);
    if (!e) continue;
    s.entry = e;
    s.backend = backends[b]->name();
    return true;
  }
  return false;
}

Error selectKernels(Plan &plan, const PlanContext &ctx) {
  for (PlanStep &s : plan.steps) {
    if (selectKernel(plan, ctx, s)) continue;
    std::string types;
    for (int id : s.in) types += (types.empty() ? "" : ", ") + plan.values[id].desc.type.str();
    return Error::make("plan for graph @" + plan.graph->name() + ": no backend of this run (" +
                       ctx.backends.namesText() + ") has a kernel for '" + s.op->name() +
                       "' with operands " + (types.empty() ? "()" : types));
  }
  plan.stage = PlanStage::Select;
  return Error::success();
}

} // namespace dtnn::runtime
