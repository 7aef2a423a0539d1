#include "passes/Regions.h"

#include <set>

namespace dtnn::passes {

Region copyRegion(const std::vector<ir::Op *> &ops, const std::vector<ir::Value *> &yields) {
  std::set<const ir::Op *> members(ops.begin(), ops.end());
  Region r{{}, std::make_unique<ir::Graph>(""), {}};
  std::map<const ir::Value *, ir::Value *> vm;
  for (const ir::Op *m : ops)
    for (ir::Value *v : m->operands())
      if (!members.count(v->definingOp()) && !vm.count(v)) {
        vm[v] = r.body->addInput("x" + std::to_string(r.inputs.size()), v->type());
        r.inputs.push_back(v);
      }
  for (const ir::Op *m : ops) {
    std::vector<ir::Value *> operands;
    for (ir::Value *v : m->operands()) operands.push_back(vm.at(v));
    std::vector<ir::TensorType> types;
    for (const ir::Value *res : m->results()) types.push_back(res->type());
    ir::Op *c = r.body->addOp(m->def(), operands, m->attrs(), types, m->loc());
    for (size_t i = 0; i < m->results().size(); ++i)
      vm[m->result(unsigned(i))] = c->result(unsigned(i));
    r.loc.merge(m->loc());
  }
  std::vector<ir::Value *> outs;
  for (const ir::Value *y : yields) outs.push_back(vm.at(y));
  r.body->setOutputs(std::move(outs));
  return r;
}

std::string backendOfRegion(const FusionTarget &target, Region region) {
  ir::Graph scratch("");
  std::vector<ir::Value *> inputs;
  for (const ir::Value *v : region.inputs)
    inputs.push_back(scratch.addInput("x" + std::to_string(inputs.size()), v->type()));
  ir::Builder b(scratch);
  ir::Op *f = b.createWithBody("fused", inputs, std::move(region.body));
  if (!f) {
    consumeError(b.takeError());
    return "";
  }
  return target.backendOf(*f);
}

bool compilesFused(const std::string &backend) {
  return !backend.empty() && backend != "reference";
}

std::string AloneInRegion::backendOf(const FusionTarget &target, const ir::Op &op) {
  auto [it, added] = byName_.try_emplace(op.name());
  if (added)
    it->second = backendOfRegion(target, copyRegion({const_cast<ir::Op *>(&op)}, op.results()));
  return it->second;
}

RegionBuilder::RegionBuilder(const ir::Location &loc)
    : region_{{}, std::make_unique<ir::Graph>(""), loc}, b_(*region_.body, loc) {}

ir::Value *RegionBuilder::arg(ir::Value *outer) {
  auto [it, added] = args_.try_emplace(outer, nullptr);
  if (added) {
    it->second = region_.body->addInput("x" + std::to_string(region_.inputs.size()), outer->type());
    region_.inputs.push_back(outer);
  }
  return it->second;
}

ir::Value *RegionBuilder::op(const std::string &name, std::vector<ir::Value *> operands,
                             ir::AttrMap attrs) {
  return b_.create1(name, std::move(operands), std::move(attrs));
}

ir::Value *RegionBuilder::copy(const ir::Op &like, std::vector<ir::Value *> operands) {
  b_.setLoc(like.loc());
  ir::Value *v = op(like.name(), std::move(operands), like.attrs());
  b_.setLoc(region_.loc);
  return v;
}

Expected<ir::Op *> RegionBuilder::finish(ir::Builder &outer, std::vector<ir::Value *> yields) {
  if (Error e = b_.takeError()) return e;
  region_.body->setOutputs(std::move(yields));
  // The fused op takes the locations of the ops it holds.
  ir::Location before = outer.loc(), loc;
  for (const auto &o : region_.body->ops()) loc.merge(o->loc());
  outer.setLoc(loc);
  ir::Op *fused = outer.createWithBody("fused", region_.inputs, std::move(region_.body));
  outer.setLoc(before);
  if (!fused) return outer.takeError();
  return fused;
}

} // namespace dtnn::passes
