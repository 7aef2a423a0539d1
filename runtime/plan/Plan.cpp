// Lowering a graph into a plan and running the plan-building stages.
#include "runtime/plan/Plan.h"

#include <map>
#include <optional>

namespace dtnn::runtime {

namespace {

// `t` for a batch of `batch` samples: `?` is `batch`, `?*k` is k·batch.
ir::TensorType bindBatch(ir::TensorType t, int64_t batch) {
  for (int64_t &d : t.dims) d = ir::bindDim(d, batch);
  return t;
}

// Values and arenas are limited to 2^62 bytes, so that sizes and offsets
// computed from them never overflow.
constexpr uint64_t kMaxBytes = uint64_t(1) << 62;

// The storage size of a static type, or nullopt above kMaxBytes.
std::optional<uint64_t> checkedBytes(const ir::TensorType &t) {
  uint64_t n = ir::dtypeSize(t.dtype);
  for (int64_t d : t.dims)
    if (d < 0 || __builtin_mul_overflow(n, uint64_t(d), &n) || n > kMaxBytes) return std::nullopt;
  return n;
}

} // namespace

const char *planStageName(PlanStage s) {
  switch (s) {
  case PlanStage::Select: return "select";
  case PlanStage::Layouts: return "layouts";
  case PlanStage::Buffers: return "buffers";
  case PlanStage::Bind: return "bind";
  }
  return "?";
}

std::optional<PlanStage> parsePlanStage(const std::string &name) {
  for (PlanStage s : {PlanStage::Select, PlanStage::Layouts, PlanStage::Buffers, PlanStage::Bind})
    if (name == planStageName(s)) return s;
  return std::nullopt;
}

int Plan::root(int id) const {
  while (values[id].storage == PlanValue::Storage::Alias) id = values[id].aliasOf;
  return id;
}

// Lowering: one value per graph input, parameter read and op result, with
// the static types the shape rules give at this batch size (results numbered
// as the IR printer numbers them), and one step per op. The new version of
// an operand an op writes in place is an alias of that operand.
Error lowerGraph(Plan &plan, const ir::Graph &g, int64_t batch) {
  plan.graph = &g;
  plan.batch = batch;
  std::map<const ir::Value *, int> ids;
  auto add = [&](PlanValue v) {
    plan.values.push_back(std::move(v));
    return static_cast<int>(plan.values.size() - 1);
  };
  auto idOf = [&](const ir::Value *v) -> int {
    if (auto it = ids.find(v); it != ids.end()) return it->second;
    if (v->kind() != ir::Value::Kind::Param) return -1;
    PlanValue pv;
    pv.name = "@" + v->param()->name;
    pv.desc = BufferDesc::plain(v->param()->type);
    pv.storage = PlanValue::Storage::Param;
    pv.param = v->param()->name;
    return ids[v] = add(pv);
  };
  std::string where = "plan for graph @" + g.name() + " at batch " + std::to_string(batch) + ": ";
  for (size_t i = 0; i < g.inputs().size(); ++i) {
    PlanValue pv;
    pv.name = "%" + g.inputs()[i]->name();
    ir::TensorType t = bindBatch(g.inputs()[i]->type(), batch);
    if (!checkedBytes(t))
      return Error::make(where + "input " + pv.name + " " + t.str() + " takes more than 2^62 bytes");
    pv.desc = BufferDesc::plain(t);
    pv.storage = PlanValue::Storage::Input;
    pv.input = static_cast<int>(i);
    ids[g.inputs()[i]] = add(pv);
    plan.inputs.push_back(ids[g.inputs()[i]]);
  }
  uint64_t total = 0;
  int number = 0;
  for (const auto &op : g.ops()) {
    PlanStep step;
    step.op = op.get();
    std::vector<ir::TensorType> inTypes;
    for (const ir::Value *v : op->operands()) {
      int id = idOf(v);
      if (id < 0)
        return Error::make(where + "op '" + op->name() + "' uses a value defined after it");
      step.in.push_back(id);
      inTypes.push_back(plan.values[id].desc.type);
    }
    ir::InferCtx ctx{inTypes, op->attrs(), {}, {}, op->body()};
    if (Error e = ir::inferResultTypes(op->def(), ctx))
      return Error::make(where + op->name() + ": " + e.message());
    step.specs = op->def().operandSpecs(op->operands().size(), op->attrs());
    std::vector<int> written;
    for (size_t i = 0; i < step.specs.size(); ++i)
      if (step.specs[i]->writes()) written.push_back(step.in[i]);
    int stepId = static_cast<int>(plan.steps.size());
    for (size_t r = 0; r < op->results().size(); ++r) {
      PlanValue pv;
      pv.name = "%" + std::to_string(number++);
      pv.desc = BufferDesc::plain(ctx.results[r]);
      pv.def = stepId;
      if (r >= op->ownResults()) {
        pv.storage = PlanValue::Storage::Alias;
        pv.aliasOf = written[r - op->ownResults()];
        pv.desc = plan.values[pv.aliasOf].desc;
      } else {
        std::optional<uint64_t> bytes = checkedBytes(pv.desc.type);
        if (!bytes || __builtin_add_overflow(total, *bytes, &total) || total > kMaxBytes)
          return Error::make(where + "the values up to the result of '" + op->name() + "' " +
                             pv.desc.type.str() + " take more than 2^62 bytes");
      }
      ids[op->result(static_cast<unsigned>(r))] = add(pv);
      step.out.push_back(ids[op->result(static_cast<unsigned>(r))]);
    }
    plan.steps.push_back(std::move(step));
  }
  for (const ir::Value *v : g.outputs()) {
    int id = idOf(v);
    if (id < 0) return Error::make("plan for graph @" + g.name() + ": an output is not defined");
    plan.outputs.push_back(id);
  }
  return Error::success();
}

Error bindKernels(Plan &plan) {
  for (PlanStep &s : plan.steps)
    if (Error e = s.kernel->bind())
      return Error::make("plan for graph @" + plan.graph->name() + ": binding '" + s.name() +
                         "' on the " + s.backend + " backend: " + e.message());
  plan.stage = PlanStage::Bind;
  return Error::success();
}

Expected<Plan> buildPlan(const ir::Graph &g, int64_t batch, PlanContext &ctx, PlanStage last) {
  Plan plan;
  if (Error e = lowerGraph(plan, g, batch)) return e;
  if (Error e = selectKernels(plan, ctx)) return e;
  if (last == PlanStage::Select) return plan;
  if (Error e = assignLayouts(plan, ctx)) return e;
  if (last == PlanStage::Layouts) return plan;
  if (Error e = assignBuffers(plan)) return e;
  if (last == PlanStage::Buffers) return plan;
  if (Error e = bindKernels(plan)) return e;
  return plan;
}

} // namespace dtnn::runtime
