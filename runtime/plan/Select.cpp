// Kernel selection: each op goes to the first backend of the run (the
// chosen one, then the fallbacks) with a kernel registry entry that claims
// it at its operand types. Conversions are chosen later, with the layouts.
#include "runtime/plan/Plan.h"

namespace dtnn::runtime {

Error selectKernels(Plan &plan, const PlanContext &ctx) {
  const KernelRegistry &reg = KernelRegistry::get();
  for (PlanStep &s : plan.steps) {
    std::vector<ir::TensorType> in, out;
    for (int id : s.in) in.push_back(plan.values[id].desc.type);
    for (int id : s.out) out.push_back(plan.values[id].desc.type);
    for (const auto &b : ctx.backends.all()) {
      s.entry = reg.find(std::string(b->name()), *s.op, in, out);
      if (!s.entry) continue;
      s.backend = b->name();
      break;
    }
    if (s.entry) continue;
    std::string types;
    for (const ir::TensorType &t : in) types += (types.empty() ? "" : ", ") + t.str();
    return Error::make("plan for graph @" + plan.graph->name() + ": no backend of this run (" +
                       ctx.backends.namesText() + ") has a kernel for '" + s.op->name() +
                       "' with operands " + (types.empty() ? "()" : types));
  }
  plan.stage = PlanStage::Select;
  return Error::success();
}

} // namespace dtnn::runtime
