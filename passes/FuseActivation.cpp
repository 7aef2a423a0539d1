// fuse-activation: folds an activation into the op that feeds it, as that
// op's `act` attribute, so that one kernel writes the activated result
// (oneDNN's eltwise post-op on a convolution, inner product or binary add,
// its fused ReLU on batch norm) and the pre-activation tensor never exists.
// The ops that take an activation declare `act` (ir/ops/FusedActivation.h):
// conv2d and dense (bias included), batchnorm and batchnorm_train, and add
// (the residual add of a ResNet block with the ReLU after it).
//
// Algorithm: for each activation A in the fusable set (relu, relu6, sigmoid,
// tanh; option acts=a,b,... narrows it) whose operand is the first result r
// of an op P that takes an activation and has none, where r is used only by
// A and, in a train step, by A's backward ops reading r as their saved
// input:
//   - set P.act = A, and keep it only if the target runs P where it ran P
//     before (passes/FusionTarget.h);
//   - replace A's result by r, repoint A's backward ops at r (relu and relu6
//     pass the gradient where x is inside their linear range, which is where
//     y is), merge A's source location into P's, and erase A.
// Each P takes at most one activation, so one sweep reaches the fixed point.
#include "ir/UseIndex.h"
#include "ir/ops/FusedActivation.h"
#include "passes/FusionTarget.h"
#include "passes/PassRegistry.h"

#include <algorithm>
#include <set>
#include <sstream>

namespace dtnn::passes {

namespace {

class FuseActivationPass final : public GraphPass {
public:
  std::string_view name() const override { return "fuse-activation"; }
  std::string_view description() const override {
    return "Folds an activation into the conv2d, dense, batchnorm or add op that feeds it "
           "(act=...).";
  }
  bool fuses() const override { return true; }

  Error setOption(const std::string &key, const std::string &value) override {
    if (key != "acts") return Pass::setOption(key, value);
    std::set<std::string> acts;
    std::stringstream in(value);
    for (std::string a; std::getline(in, a, ',');) {
      if (!ir::isFusableActivation(a))
        return Error::make("fuse-activation: '" + a + "' is not an activation that fuses (" +
                           joined(ir::fusableActivations()) + ")");
      acts.insert(a);
    }
    acts_ = std::vector<std::string>(acts.begin(), acts.end());
    return Error::success();
  }

  std::string optionsStr() const override {
    return acts_ == ir::fusableActivations() ? "" : "acts=" + joined(acts_);
  }

  Expected<bool> runOnGraph(ir::Graph &g) override {
    std::map<const ir::Value *, std::vector<ir::Op *>> users;
    for (const auto &op : g.ops())
      for (ir::Value *v : op->operands()) users[v].push_back(op.get());
    auto counts = g.useCounts();
    ir::UseIndex index(g);
    std::set<const ir::Op *> erased;
    bool changed = false;
    for (const auto &a : g.ops()) {
      if (std::find(acts_.begin(), acts_.end(), a->name()) == acts_.end()) continue;
      ir::Value *r = a->operand(0);
      ir::Op *p = ir::unfusedProducerOf(r);
      if (!p) continue;
      // Every use of r: A itself, or A's backward op reading r as the saved x.
      std::vector<ir::Op *> backward;
      bool onlyA = true;
      for (ir::Op *u : users[r]) {
        if (u == a.get()) continue;
        if (u->name() == a->name() + "_backward" && u->operand(1) == r &&
            u->operand(0) != r) {
          backward.push_back(u);
          continue;
        }
        onlyA = false;
      }
      unsigned uses = 1 + static_cast<unsigned>(backward.size());
      if (!onlyA || counts[r] != uses) continue;
      std::string act = a->name();
      if (!fuseIfSameBackend(
              target_, *p, [&](ir::Op &op) { op.attrs().set("act", act); },
              [](ir::Op &op) { op.attrs().set("act", std::string("none")); }))
        continue;
      ir::Location loc = p->loc();
      loc.merge(a->loc());
      p->setLoc(loc);
      // A's result becomes r; A's backward ops already read r, which now
      // holds y: for relu and relu6 the mask is the same, sigmoid and tanh
      // save y and so read A's result, now r.
      index.replaceAllUses(a->result(0), r);
      erased.insert(a.get());
      changed = true;
    }
    if (changed) g.eraseOpsIf([&](const ir::Op &op) { return erased.count(&op) > 0; });
    return changed;
  }

private:
  static std::string joined(const std::vector<std::string> &v) {
    std::string s;
    for (const std::string &x : v) s += (s.empty() ? "" : ",") + x;
    return s;
  }

  std::vector<std::string> acts_ = ir::fusableActivations();
};

} // namespace

std::unique_ptr<Pass> createFuseActivationPass() {
  return std::make_unique<FuseActivationPass>();
}

} // namespace dtnn::passes
