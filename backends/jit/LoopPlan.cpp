#include "backends/jit/LoopPlan.h"

#include "ir/Attributes.h"

#include <map>
#include <set>

namespace dtnn::jit {

namespace {

// The elementwise and broadcast ops the code generator emits, and the one
// reduction.
const std::set<std::string> &knownOps() {
  static const std::set<std::string> ops = {
      "add",          "sub",           "mul",           "div",
      "relu",         "relu_backward", "relu6",         "relu6_backward",
      "leaky_relu",   "leaky_relu_backward",            "sigmoid",
      "sigmoid_backward",              "tanh",          "tanh_backward",
      "silu",         "silu_backward", "hard_sigmoid",  "hard_sigmoid_backward",
      "hard_swish",   "hard_swish_backward",            "scale",
      "sum_like"};
  return ops;
}

// For a tensor of `dims`, aligned to the right of the domain `domain`:
// whether it spans each domain dimension (1) or broadcasts along it (0);
// false when it does not broadcast to the domain.
bool spansOf(const std::vector<int64_t> &dims, const std::vector<int64_t> &domain,
             std::vector<bool> &out) {
  if (dims.size() > domain.size()) return false;
  size_t lead = domain.size() - dims.size();
  out.assign(domain.size(), false);
  for (size_t k = 0; k < domain.size(); ++k) {
    int64_t d = k < lead ? 1 : dims[k - lead];
    if (d == domain[k])
      out[k] = true;
    else if (d != 1)
      return false;
  }
  return true;
}

} // namespace

bool jitKnowsOp(const std::string &name) { return knownOps().count(name) != 0; }

int64_t LoopPlan::rows() const {
  int64_t r = 1;
  for (size_t k = 0; k + 1 < sizes.size(); ++k) r *= sizes[k];
  return r;
}

Expected<LoopPlan> planLoops(const ir::Graph &body, const std::vector<ir::TensorType> &args) {
  Expected<std::map<const ir::Value *, ir::TensorType>> types = ir::inferBodyTypes(body, args);
  if (!types) return Error::make(types.error().message());
  LoopPlan plan;
  plan.dtype = args.empty() ? ir::DType::F32 : args[0].dtype;
  if (plan.dtype != ir::DType::F32 && plan.dtype != ir::DType::F64)
    return Error::make("the jit computes in f32 and f64 only");
  // The domain: the type every op's result (a reduction's input) has.
  std::vector<int64_t> domain;
  bool haveDomain = false;
  std::set<const ir::Value *> reducedValues;
  std::string structure;
  std::map<const ir::Value *, int> number;
  for (size_t i = 0; i < body.inputs().size(); ++i) number[body.inputs()[i]] = int(i);
  for (const auto &op : body.ops()) {
    if (!jitKnowsOp(op->name())) return Error::make("the jit has no code for '" + op->name() + "'");
    for (const ir::Value *v : op->operands()) {
      if (types->at(v).dtype != plan.dtype) return Error::make("the region mixes element types");
      if (reducedValues.count(v))
        return Error::make("'" + op->name() + "' reads a reduction's result inside the region");
    }
    bool reduce = op->name() == "sum_like";
    const ir::TensorType &t = types->at(reduce ? op->operand(0) : op->result(0));
    if (!haveDomain) {
      domain = t.dims;
      haveDomain = true;
    } else if (t.dims != domain) {
      return Error::make("'" + op->name() + "' computes over " + t.str() +
                         ", not over the region's domain");
    }
    if (reduce) reducedValues.insert(op->result(0));
    structure += op->name() + "(";
    for (const ir::Value *v : op->operands()) structure += std::to_string(number.at(v)) + ",";
    structure += "){";
    for (const auto &[name, value] : op->attrs().entries())
      structure += name + "=" + ir::attrValueStr(value) + ",";
    structure += "};";
    number[op->result(0)] = int(number.size());
  }
  if (!haveDomain) return Error::make("the region holds no op");
  // Tensors: the arguments, then the yields.
  std::vector<const ir::Value *> tensors(body.inputs().begin(), body.inputs().end());
  for (const ir::Value *y : body.outputs()) {
    if (!y->definingOp()) return Error::make("the region yields an argument");
    tensors.push_back(y);
    plan.reduced.push_back(reducedValues.count(y) != 0);
    structure += "y" + std::to_string(number.at(y)) + ";";
  }
  std::vector<std::vector<bool>> full(tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i)
    if (!spansOf(types->at(tensors[i]).dims, domain, full[i]))
      return Error::make("a tensor of type " + types->at(tensors[i]).str() +
                         " does not broadcast to the domain");
  // Drop size-1 dimensions, then merge neighbours every tensor agrees on.
  std::vector<size_t> kept;
  for (size_t k = 0; k < domain.size(); ++k)
    if (domain[k] != 1) kept.push_back(k);
  plan.spans.assign(tensors.size(), {});
  for (size_t k : kept) {
    bool merge = !plan.sizes.empty();
    for (size_t i = 0; merge && i < tensors.size(); ++i)
      merge = plan.spans[i].back() == full[i][k];
    if (merge) {
      plan.sizes.back() *= domain[k];
      continue;
    }
    plan.sizes.push_back(domain[k]);
    for (size_t i = 0; i < tensors.size(); ++i) plan.spans[i].push_back(full[i][k]);
  }
  if (plan.sizes.empty()) {
    plan.sizes.push_back(1);
    for (auto &s : plan.spans) s.push_back(true);
  }
  size_t q = plan.sizes.size();
  for (size_t y = 0; y < plan.reduced.size(); ++y) {
    if (!plan.reduced[y]) continue;
    const std::vector<bool> &s = plan.spans[body.inputs().size() + y];
    for (size_t k = 0; k + 1 < q; ++k) plan.parallelRows &= s[k];
    plan.parallelInner &= s[q - 1];
  }
  plan.key = std::string(ir::dtypeName(plan.dtype)) + "|" + structure + "|";
  for (const auto &s : plan.spans) {
    for (bool b : s) plan.key += b ? '1' : '0';
    plan.key += ',';
  }
  return plan;
}

} // namespace dtnn::jit
