#include "ir/IR.h"

#include <algorithm>
#include <cassert>
#include <map>

namespace dtnn::ir {

void Location::merge(const Location &o) {
  for (const auto &l : o.locs)
    if (std::find(locs.begin(), locs.end(), l) == locs.end()) locs.push_back(l);
}

void Op::setBody(std::unique_ptr<Graph> body) { body_ = std::move(body); }

unsigned Op::ownResults() const {
  return body_ && def_->yieldsResults ? static_cast<unsigned>(body_->outputs().size())
                                      : def_->numResults;
}

namespace {

// Whether a value of type `actual` may stand for a region argument declared
// `declared`: the same element type and rank, and each dimension equal or
// left dynamic by the declaration.
bool fits(const TensorType &declared, const TensorType &actual) {
  if (declared.dtype != actual.dtype || declared.rank() != actual.rank()) return false;
  for (size_t i = 0; i < declared.dims.size(); ++i)
    if (declared.dims[i] != kDynamic && declared.dims[i] != actual.dims[i]) return false;
  return true;
}

} // namespace

Expected<std::map<const Value *, TensorType>> inferBodyTypes(const Graph &body,
                                                             const std::vector<TensorType> &args) {
  if (body.inputs().size() != args.size())
    return Error::make("the region takes " + std::to_string(body.inputs().size()) +
                       " arguments, but the op has " + std::to_string(args.size()) + " operands");
  std::map<const Value *, TensorType> types;
  for (size_t i = 0; i < args.size(); ++i) {
    const Value *arg = body.inputs()[i];
    if (!fits(arg->type(), args[i]))
      return Error::make("operand " + std::to_string(i) + " has type " + args[i].str() +
                         ", but the region's argument %" + arg->name() + " is " +
                         arg->type().str());
    types[arg] = args[i];
  }
  for (const auto &op : body.ops()) {
    std::vector<TensorType> operandTypes;
    for (const Value *v : op->operands()) {
      auto it = types.find(v);
      if (it == types.end())
        return Error::make("'" + op->name() + "' in the region uses a value from outside it");
      operandTypes.push_back(it->second);
    }
    InferCtx ctx{operandTypes, op->attrs(), {}, {}, op->body()};
    if (Error e = inferResultTypes(op->def(), ctx))
      return Error::make("'" + op->name() + "' in the region: " + e.message());
    for (size_t r = 0; r < op->results().size() && r < ctx.results.size(); ++r)
      types[op->result(static_cast<unsigned>(r))] = std::move(ctx.results[r]);
  }
  for (const Value *out : body.outputs())
    if (!types.count(out)) return Error::make("the region yields a value from outside it");
  return types;
}

std::unique_ptr<Graph> cloneGraph(const Graph &g, std::string name) {
  auto out = std::make_unique<Graph>(std::move(name));
  std::map<const Value *, Value *> vm;
  auto map = [&](Value *v) {
    auto it = vm.find(v);
    return it == vm.end() ? v : it->second;
  };
  for (const Value *in : g.inputs()) vm[in] = out->addInput(in->name(), in->type());
  for (const auto &op : g.ops()) {
    std::vector<Value *> operands;
    for (Value *v : op->operands()) operands.push_back(map(v));
    std::vector<TensorType> types;
    for (const Value *r : op->results()) types.push_back(r->type());
    Op *c = out->addOp(op->def(), std::move(operands), op->attrs(), std::move(types), op->loc());
    if (op->body()) c->setBody(cloneGraph(*op->body(), ""));
    for (size_t r = 0; r < op->results().size(); ++r) vm[op->result(unsigned(r))] = c->result(unsigned(r));
  }
  std::vector<Value *> outs;
  for (Value *v : g.outputs()) outs.push_back(map(v));
  out->setOutputs(std::move(outs));
  return out;
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

void Module::moveLastParamTo(size_t index) {
  if (index < params_.size())
    std::rotate(params_.begin() + long(index), params_.end() - 1, params_.end());
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
  assert((def.hasBody || ctx.results.size() == def.numResults) &&
         "shape rule produced the wrong result count");
  for (const TensorType &t : ctx.results)
    if (Error why = sizeProblem(t)) return ctx.fail("the result is too large: " + why.message());
  // Each written operand's new version follows, with the operand's type.
  std::vector<const OperandSpec *> specs = def.operandSpecs(n, ctx.attrs);
  for (size_t i = 0; i < n; ++i)
    if (specs[i]->writes()) ctx.results.push_back(ctx.operands[i]);
  return Error::success();
}

} // namespace dtnn::ir
