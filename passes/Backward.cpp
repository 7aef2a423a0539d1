// Algorithm: mark the values that depend on a `wrt` value (a forward walk
// over the ops), then walk the ops backwards from the last. For each op that
// has a gradient flowing into one of its results and an operand that depends
// on `wrt`, call the op's gradient rule with the result gradients; the rule
// appends ops computing the operand gradients. A value used by several ops
// gets the sum of their gradients (one `add` per extra use), so fan-out,
// residual connections and shared weights need no special case. Every
// backward op carries the location of the forward op it differentiates.
#include "passes/Backward.h"

#include "ir/Builder.h"
#include "passes/PassUtil.h"

#include <map>
#include <set>

namespace dtnn::passes {

Expected<std::vector<ir::Value *>>
appendBackward(ir::Graph &g, const std::vector<std::pair<ir::Value *, ir::Value *>> &seeds,
               const std::vector<ir::Value *> &wrt) {
  std::set<const ir::Value *> active(wrt.begin(), wrt.end());
  std::vector<ir::Op *> forward;
  for (const auto &op : g.ops()) forward.push_back(op.get());
  for (ir::Op *op : forward) {
    bool any = false;
    for (const ir::Value *v : op->operands()) any = any || active.count(v);
    if (any)
      for (const ir::Value *r : op->results()) active.insert(r);
  }

  ir::Builder b(g);
  std::map<const ir::Value *, ir::Value *> grads;
  // Adds d to v's gradient; fails with the builder's failure.
  auto accumulate = [&](const ir::Value *v, ir::Value *d) -> Error {
    auto [it, fresh] = grads.emplace(v, d);
    if (fresh) return Error::success();
    it->second = b.create1("add", {it->second, d});
    if (!it->second) return b.takeError();
    return Error::success();
  };
  for (const auto &[v, s] : seeds) {
    if (!active.count(v)) continue;
    if (Error e = accumulate(v, s)) return Error::make("autodiff: " + e.message());
  }

  for (size_t i = forward.size(); i-- > 0;) {
    const ir::Op &op = *forward[i];
    std::vector<ir::Value *> dy;
    bool anyDy = false;
    for (const ir::Value *r : op.results()) {
      auto it = grads.find(r);
      dy.push_back(it == grads.end() ? nullptr : it->second);
      anyDy = anyDy || it != grads.end();
    }
    std::vector<bool> needed;
    bool anyNeeded = false;
    for (const ir::Value *v : op.operands()) {
      needed.push_back(active.count(v) != 0);
      anyNeeded = anyNeeded || needed.back();
    }
    if (!anyDy || !anyNeeded) continue;
    if (!op.def().grad)
      return Error::make("autodiff: " + describeOp(g, op) + " has no gradient rule, but the loss "
                         "depends on it through a trainable value");
    b.setLoc(op.loc());
    ir::GradCtx ctx{b, op, dy, needed, std::vector<ir::Value *>(op.operands().size())};
    if (Error e = op.def().grad(ctx))
      return Error::make("autodiff: gradient rule of " + describeOp(g, op) + " failed: " +
                         e.message());
    for (size_t k = 0; k < op.operands().size(); ++k) {
      if (!needed[k] || !ctx.dx[k]) continue;
      if (Error e = accumulate(op.operand(k), ctx.dx[k]))
        return Error::make("autodiff: " + describeOp(g, op) + ": " + e.message());
    }
  }

  std::vector<ir::Value *> out;
  for (const ir::Value *v : wrt) {
    auto it = grads.find(v);
    out.push_back(it == grads.end() ? nullptr : it->second);
  }
  return out;
}

} // namespace dtnn::passes
