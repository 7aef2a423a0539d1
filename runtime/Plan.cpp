#include "runtime/Plan.h"

#include "ir/Printer.h"

#include <map>
#include <optional>
#include <sstream>

namespace dtnn::runtime {

namespace {

ir::TensorType bindBatch(ir::TensorType t, int64_t batch) {
  for (int64_t &d : t.dims)
    if (d == ir::kDynamic) d = batch;
  return t;
}

size_t alignUp(size_t n) { return (n + 63) / 64 * 64; }

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

Expected<Plan> buildPlan(const ir::Graph &g, int64_t batch, Backend &backend) {
  Plan plan;
  plan.graph = &g;
  plan.batch = batch;
  std::map<const ir::Value *, int> ids;
  auto idOf = [&](const ir::Value *v) -> int {
    auto it = ids.find(v);
    if (it != ids.end()) return it->second;
    if (v->kind() != ir::Value::Kind::Param) return -1;
    PlanValue pv;
    pv.type = v->param()->type;
    pv.storage = PlanValue::Storage::Param;
    pv.param = v->param()->name;
    plan.values.push_back(pv);
    return ids[v] = static_cast<int>(plan.values.size() - 1);
  };
  std::string where = "plan for graph @" + g.name() + " at batch " + std::to_string(batch) + ": ";
  for (size_t i = 0; i < g.inputs().size(); ++i) {
    PlanValue pv;
    pv.type = bindBatch(g.inputs()[i]->type(), batch);
    if (!checkedBytes(pv.type))
      return Error::make(where + "input %" + g.inputs()[i]->name() + " " + pv.type.str() +
                         " takes more than 2^62 bytes");
    pv.storage = PlanValue::Storage::Input;
    pv.input = static_cast<int>(i);
    plan.values.push_back(pv);
    ids[g.inputs()[i]] = static_cast<int>(plan.values.size() - 1);
    plan.inputs.push_back(ids[g.inputs()[i]]);
  }
  for (const auto &op : g.ops()) {
    PlanStep step;
    step.op = op.get();
    std::vector<ir::TensorType> inTypes;
    for (const ir::Value *v : op->operands()) {
      int id = idOf(v);
      if (id < 0)
        return Error::make("plan for graph @" + g.name() + ": op '" + op->name() +
                     "' uses a value defined after it");
      step.in.push_back(id);
      inTypes.push_back(plan.values[id].type);
    }
    ir::InferCtx ctx{inTypes, op->attrs(), {}, {}, {}};
    if (!ir::inferResultTypes(op->def(), ctx))
      return Error::make(where + op->name() + ": " + ctx.error);
    // The new version of an operand written in place is that operand's storage.
    std::vector<const ir::OperandSpec *> specs =
        op->def().operandSpecs(op->operands().size(), op->attrs());
    std::vector<int> versionOf;
    for (size_t i = 0; i < specs.size(); ++i)
      if (specs[i]->writes()) versionOf.push_back(step.in[i]);
    for (size_t r = 0; r < op->results().size(); ++r) {
      if (r >= op->def().numResults) {
        int id = versionOf[r - op->def().numResults];
        ids[op->result(static_cast<unsigned>(r))] = id;
        step.out.push_back(id);
        continue;
      }
      PlanValue pv;
      pv.type = ctx.results[r];
      pv.offset = plan.arenaBytes;
      std::optional<uint64_t> bytes = checkedBytes(pv.type);
      if (!bytes || plan.arenaBytes + alignUp(*bytes) > kMaxBytes)
        return Error::make(where + "the values up to the result of '" + op->name() + "' " +
                           pv.type.str() + " take more than 2^62 bytes");
      plan.arenaBytes += alignUp(*bytes);
      plan.values.push_back(pv);
      ids[op->result(static_cast<unsigned>(r))] = static_cast<int>(plan.values.size() - 1);
      step.out.push_back(ids[op->result(static_cast<unsigned>(r))]);
    }
    auto kernel = backend.bind(*op, inTypes, ctx.results);
    if (!kernel) return kernel.takeError();
    step.kernel = std::move(*kernel);
    plan.steps.push_back(std::move(step));
  }
  for (const ir::Value *v : g.outputs()) {
    int id = idOf(v);
    if (id < 0) return Error::make("plan for graph @" + g.name() + ": an output is not defined");
    plan.outputs.push_back(id);
  }
  return plan;
}

std::string Plan::str() const {
  std::ostringstream os;
  auto name = [&](int id) {
    const PlanValue &v = values[id];
    switch (v.storage) {
    case PlanValue::Storage::Param: return "@" + v.param;
    case PlanValue::Storage::Input: return "%" + graph->inputs()[v.input]->name();
    case PlanValue::Storage::Arena: return "$" + std::to_string(v.offset);
    }
    return std::string("?");
  };
  os << "plan @" << graph->name() << " batch=" << batch << " arena=" << arenaBytes << "\n";
  for (const PlanStep &s : steps) {
    os << "  ";
    for (size_t i = 0; i < s.out.size(); ++i)
      os << (i ? ", " : "") << name(s.out[i]) << ":" << values[s.out[i]].type.str();
    os << (s.out.empty() ? "" : " = ") << s.op->name();
    for (size_t i = 0; i < s.in.size(); ++i) os << (i ? ", " : " ") << name(s.in[i]);
    os << "\n";
  }
  os << "  return";
  for (size_t i = 0; i < outputs.size(); ++i) os << (i ? ", " : " ") << name(outputs[i]);
  os << "\n";
  return os.str();
}

} // namespace dtnn::runtime
