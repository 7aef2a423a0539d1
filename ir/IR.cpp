#include "ir/IR.h"

#include <algorithm>
#include <cassert>
#include <map>

namespace dtnn::ir {

void Location::merge(const Location &o) {
  for (const auto &l : o.locs)
    if (std::find(locs.begin(), locs.end(), l) == locs.end()) locs.push_back(l);
}

Value *Graph::addInput(std::string name, TensorType type) {
  auto v = std::make_unique<Value>();
  v->kind_ = Value::Kind::Input;
  v->name_ = std::move(name);
  v->type_ = std::move(type);
  inputs_.push_back(v.get());
  values_.push_back(std::move(v));
  return inputs_.back();
}

Op *Graph::addOp(const OpDef &def, std::vector<Value *> operands, AttrMap attrs,
                 std::vector<TensorType> resultTypes, Location loc) {
  return insertOp(ops_.size(), def, std::move(operands), std::move(attrs),
                  std::move(resultTypes), std::move(loc));
}

Op *Graph::insertOp(size_t pos, const OpDef &def, std::vector<Value *> operands, AttrMap attrs,
                    std::vector<TensorType> resultTypes, Location loc) {
  auto op = std::make_unique<Op>();
  op->def_ = &def;
  op->operands_ = std::move(operands);
  op->attrs_ = std::move(attrs);
  op->loc_ = std::move(loc);
  for (unsigned i = 0; i < resultTypes.size(); ++i) {
    auto v = std::make_unique<Value>();
    v->kind_ = Value::Kind::Result;
    v->type_ = std::move(resultTypes[i]);
    v->def_ = op.get();
    v->index_ = i;
    op->results_.push_back(v.get());
    values_.push_back(std::move(v));
  }
  Op *raw = op.get();
  ops_.insert(ops_.begin() + static_cast<std::ptrdiff_t>(std::min(pos, ops_.size())),
              std::move(op));
  return raw;
}

void Graph::eraseOpsIf(const std::function<bool(const Op &)> &pred) {
  std::vector<const Value *> dead;
  for (const auto &op : ops_)
    if (pred(*op))
      for (const Value *r : op->results()) dead.push_back(r);
  ops_.erase(std::remove_if(ops_.begin(), ops_.end(),
                            [&](const std::unique_ptr<Op> &op) { return pred(*op); }),
             ops_.end());
  std::sort(dead.begin(), dead.end());
  values_.erase(std::remove_if(values_.begin(), values_.end(),
                               [&](const std::unique_ptr<Value> &v) {
                                 return std::binary_search(dead.begin(), dead.end(), v.get());
                               }),
                values_.end());
}

size_t Graph::indexOf(const Op *op) const {
  for (size_t i = 0; i < ops_.size(); ++i)
    if (ops_[i].get() == op) return i;
  return ops_.size();
}

void Graph::reorder(const std::vector<Op *> &order) {
  assert(order.size() == ops_.size() && "a reorder must keep every op");
  std::map<const Op *, std::unique_ptr<Op>> owned;
  for (auto &op : ops_) owned[op.get()] = std::move(op);
  for (size_t i = 0; i < order.size(); ++i) {
    auto it = owned.find(order[i]);
    assert(it != owned.end() && it->second && "a reorder names an op twice or a stranger");
    ops_[i] = std::move(it->second);
  }
}

void Graph::replaceAllUses(Value *from, Value *to) { replaceAllUses({{from, to}}); }

void Graph::replaceAllUses(const std::map<Value *, Value *> &subst) {
  auto map = [&](Value *v) {
    // Follow chains so that a -> b, b -> c maps a to c.
    for (unsigned hops = 0; hops <= subst.size(); ++hops) {
      auto it = subst.find(v);
      if (it == subst.end()) break;
      v = it->second;
    }
    return v;
  };
  for (auto &op : ops_)
    for (auto &o : op->operands_) o = map(o);
  for (auto &o : outputs_) o = map(o);
}

std::map<const Value *, unsigned> Graph::useCounts() const {
  std::map<const Value *, unsigned> uses;
  for (const auto &op : ops_)
    for (const Value *o : op->operands()) ++uses[o];
  for (const Value *o : outputs_) ++uses[o];
  return uses;
}

Param *Module::addParam(std::string name, TensorType type, std::string init, bool trainable,
                        Location loc) {
  auto p = std::make_unique<Param>();
  p->name = std::move(name);
  p->type = std::move(type);
  p->init = std::move(init);
  p->trainable = trainable;
  p->loc = std::move(loc);
  auto v = std::make_unique<Value>();
  v->kind_ = Value::Kind::Param;
  v->type_ = p->type;
  v->name_ = p->name;
  v->param_ = p.get();
  p->value = v.get();
  paramValues_.push_back(std::move(v));
  params_.push_back(std::move(p));
  return params_.back().get();
}

Param *Module::findParam(const std::string &name) const {
  for (const auto &p : params_)
    if (p->name == name) return p.get();
  return nullptr;
}

void Module::eraseParamsIf(const std::function<bool(const Param &)> &pred) {
  std::vector<const Value *> dead;
  for (const auto &p : params_)
    if (pred(*p)) dead.push_back(p->value);
  params_.erase(std::remove_if(params_.begin(), params_.end(),
                               [&](const std::unique_ptr<Param> &p) { return pred(*p); }),
                params_.end());
  paramValues_.erase(std::remove_if(paramValues_.begin(), paramValues_.end(),
                                    [&](const std::unique_ptr<Value> &v) {
                                      return std::find(dead.begin(), dead.end(), v.get()) !=
                                             dead.end();
                                    }),
                     paramValues_.end());
}

Graph *Module::addGraph(std::string name) {
  graphs_.push_back(std::make_unique<Graph>(std::move(name)));
  return graphs_.back().get();
}

Graph *Module::findGraph(const std::string &name) const {
  for (const auto &g : graphs_)
    if (g->name() == name) return g.get();
  return nullptr;
}

void fillDefaultAttrs(const OpDef &def, AttrMap &attrs) {
  AttrMap ordered;
  for (const auto &spec : def.attrs) {
    if (const AttrValue *v = attrs.find(spec.name))
      ordered.set(spec.name, *v);
    else if (spec.defaultValue)
      ordered.set(spec.name, *spec.defaultValue);
  }
  // Keep unknown attributes (the verifier reports them) after known ones.
  for (const auto &[name, v] : attrs.entries())
    if (!def.findAttr(name)) ordered.set(name, v);
  attrs = std::move(ordered);
}

Error inferResultTypes(const OpDef &def, InferCtx &ctx) {
  size_t n = ctx.operands.size();
  if (n < def.minOperands() || n > def.maxOperands())
    return ctx.fail("'" + def.name + "' takes " +
                    (def.minOperands() == def.maxOperands()
                         ? std::to_string(def.minOperands())
                         : std::to_string(def.minOperands()) + " or more") +
                    " operands, got " + std::to_string(n));
  for (const auto &spec : def.attrs)
    if (!ctx.attrs.find(spec.name)) return ctx.fail("missing attribute '" + spec.name + "'");
  if (Error e = def.inferShape(ctx)) return e;
  assert(ctx.results.size() == def.numResults && "shape rule produced the wrong result count");
  for (const TensorType &t : ctx.results)
    if (Error why = sizeProblem(t)) return ctx.fail("the result is too large: " + why.message());
  // Each written operand's new version follows, with the operand's type.
  std::vector<const OperandSpec *> specs = def.operandSpecs(n, ctx.attrs);
  for (size_t i = 0; i < n; ++i)
    if (specs[i]->writes()) ctx.results.push_back(ctx.operands[i]);
  return Error::success();
}

} // namespace dtnn::ir
