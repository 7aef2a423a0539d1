// cse: merges ops that compute the same thing.
//
// Algorithm: walk each graph's ops in order, giving every value a stable id
// (graph inputs by position, parameters by name, results by order of
// definition). A pure op (OpDef::pure: it writes no operand in place, draws
// no random numbers and is no collective) with results gets a key made
// of its op name, its operand ids, its printed attributes and its result
// types, kept in a std::map so the walk is deterministic. The first op with a
// key is kept; a later op with the same key is a duplicate: its results map
// to the first op's results, the first op's location merges the duplicate's,
// and the duplicate is erased. Operands are rewritten through that map as the
// walk reaches each op, so a duplicate's users can themselves become
// duplicates (chains collapse in one walk); graph outputs are rewritten at
// the end with Graph::replaceAllUses. A read of a parameter before an op
// updates it in place and a read after it are never merged: the later one
// reads the update's new version, another value.
#include "passes/PassRegistry.h"
#include "passes/PassUtil.h"

#include <set>

namespace dtnn::passes {

namespace {

// Stable ids for values, in order of first sight: inputs, then results as
// the walk defines them; parameters are named by their declaration.
class ValueIds {
public:
  explicit ValueIds(const ir::Graph &g) {
    for (const ir::Value *v : g.inputs()) id(v);
  }
  std::string id(const ir::Value *v) {
    if (v->kind() == ir::Value::Kind::Param) return "@" + v->param()->name;
    auto [it, inserted] = ids_.emplace(v, "");
    if (inserted) it->second = "%" + std::to_string(ids_.size() - 1);
    return it->second;
  }

private:
  std::map<const ir::Value *, std::string> ids_;
};

// The text that two ops share exactly when cse may merge them.
std::string opKey(const ir::Op &op, ValueIds &ids) {
  std::string key = op.name() + "(";
  for (const ir::Value *v : op.operands()) key += ids.id(v) + ",";
  key += "){";
  for (const auto &[name, value] : op.attrs().entries())
    key += name + "=" + ir::attrValueStr(value) + ",";
  key += "}:";
  for (const ir::Value *r : op.results()) key += r->type().str() + ",";
  return key;
}

class CommonSubexprElimPass final : public GraphPass {
public:
  std::string_view name() const override { return "cse"; }
  std::string_view description() const override {
    return "Merges pure ops with the same name, operands, attributes and types.";
  }

  Expected<bool> runOnGraph(ir::Graph &g) override {
    ValueIds ids(g);
    std::map<std::string, ir::Op *> firstByKey;
    std::map<ir::Value *, ir::Value *> subst;
    std::set<const ir::Op *> duplicates;
    for (const auto &op : g.ops()) {
      for (unsigned i = 0; i < op->operands().size(); ++i) {
        auto it = subst.find(op->operand(i));
        if (it != subst.end()) op->setOperand(i, it->second);
      }
      for (const ir::Value *r : op->results()) ids.id(r);
      // Two ops with regions may take the same operands and compute different things.
      if (!op->def().pure() || op->results().empty() || op->body()) continue;
      auto [it, inserted] = firstByKey.emplace(opKey(*op, ids), op.get());
      if (inserted) continue;
      ir::Op *first = it->second;
      for (unsigned i = 0; i < op->results().size(); ++i) subst[op->result(i)] = first->result(i);
      ir::Location loc = first->loc();
      loc.merge(op->loc());
      first->setLoc(std::move(loc));
      duplicates.insert(op.get());
    }
    if (duplicates.empty()) return false;
    g.replaceAllUses(subst);
    g.eraseOpsIf([&](const ir::Op &op) { return duplicates.count(&op) != 0; });
    return true;
  }
};

} // namespace

std::unique_ptr<Pass> createCommonSubexprElimPass() {
  return std::make_unique<CommonSubexprElimPass>();
}

} // namespace dtnn::passes
