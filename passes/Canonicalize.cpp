// canonicalize: local simplifications of shape and no-op ops.
//
// Algorithm: sweep each graph's ops in order and try the rewrites below on
// every op that still has a used result; repeat the sweep until one changes
// nothing (a fixpoint), at most kMaxSweeps times. A rewrite either redirects
// the uses of the op's result to an existing value (the op becomes dead and
// is left for dce), or edits the op in place so that it skips a producer;
// the edited op then keeps its own locations followed by the producer's
// (Location::merge). A rate-0 dropout is the exception to leaving dead ops:
// canonicalize erases it after the last sweep, so that it goes without dce
// too. Use counts are kept current during a sweep so that an op
// made dead by an earlier rewrite is skipped. Rewrites:
//   dropout with rate 0                      -> its input
//   reshape or flatten to the operand's type -> the operand
//   reshape(reshape(x)), reshape(flatten(x)) -> reshape(x), the shape written
//                                               from the result type with -1
//                                               for its one dynamic dim
//   transpose with the identity perm         -> the operand
//   transpose(transpose(x))                  -> transpose(x) with the composed
//                                               perm, or x if that is identity
//   concat of a single operand               -> the operand
// Every rewrite checks the types it relies on, so unverified IR is left alone
// rather than miscompiled.
#include "ir/UseIndex.h"
#include "passes/PassRegistry.h"
#include "passes/PassUtil.h"

#include <algorithm>
#include <set>

namespace dtnn::passes {

namespace {

constexpr unsigned kMaxSweeps = 16;

// The int-list attribute `name` of `op`, or null when absent or of another kind.
const std::vector<int64_t> *intsAttr(const ir::Op &op, const std::string &name) {
  const ir::AttrValue *v = op.attrs().find(name);
  return v ? std::get_if<std::vector<int64_t>>(v) : nullptr;
}

// The op that defines `v` if it is a result of an op called `name`.
ir::Op *producer(const ir::Value *v, std::string_view name) {
  if (v->kind() != ir::Value::Kind::Result || v->definingOp()->name() != name) return nullptr;
  return v->definingOp();
}

// True when `perm` is a permutation of 0..rank-1.
bool isPermutation(const std::vector<int64_t> &perm, size_t rank) {
  if (perm.size() != rank) return false;
  std::vector<bool> seen(rank, false);
  for (int64_t p : perm) {
    if (p < 0 || static_cast<size_t>(p) >= rank || seen[p]) return false;
    seen[p] = true;
  }
  return true;
}

// True when `perm` maps every dimension to itself.
bool isIdentity(const std::vector<int64_t> &perm) {
  for (size_t i = 0; i < perm.size(); ++i)
    if (perm[i] != static_cast<int64_t>(i)) return false;
  return true;
}

// Applies the rewrites to one graph, keeping use counts current.
class Rewriter {
public:
  explicit Rewriter(ir::Graph &g) : g_(g), uses_(g.useCounts()), index_(g) {}

  // One sweep over the graph; true if anything changed.
  bool sweep() {
    bool changed = false;
    for (const auto &op : g_.ops()) {
      if (op->results().size() != 1 || op->operands().empty()) continue;
      if (isNoOpDropout(*op)) {
        changed |= removeDropout(*op);
      } else if (!resultsUnused(*op, uses_)) {
        changed |= rewrite(*op);
      }
    }
    return changed;
  }

  // Erases the no-op dropouts whose uses were redirected.
  void eraseRemovedDropouts() {
    if (removed_.empty()) return;
    g_.eraseOpsIf([&](const ir::Op &op) {
      return removed_.count(&op) != 0 && resultsUnused(op, uses_);
    });
    removed_.clear();
  }

private:
  // True for a dropout with rate 0, which passes its input through.
  static bool isNoOpDropout(const ir::Op &op) {
    if (op.name() != "dropout") return false;
    const ir::AttrValue *rate = op.attrs().find("rate");
    const double *d = rate ? std::get_if<double>(rate) : nullptr;
    return d && *d == 0.0 && op.result()->type() == op.operand(0)->type();
  }

  // Dropout is marked as having side effects (it draws random numbers), so
  // dce keeps it; with rate 0 it draws nothing and is erased here instead.
  bool removeDropout(ir::Op &op) {
    if (!removed_.insert(&op).second) return false;
    replace(op.result(), op.operand(0));
    return true;
  }

  // Tries every rewrite except the dropout one on `op`.
  bool rewrite(ir::Op &op) {
    const std::string &n = op.name();
    ir::Value *x = op.operand(0);
    ir::Value *r = op.result();
    if (n == "reshape" || n == "flatten") {
      if (r->type() == x->type()) return replace(r, x);
      return n == "reshape" && foldReshape(op);
    }
    if (n == "transpose") return foldTranspose(op);
    if (n == "concat") return op.operands().size() == 1 && replace(r, x);
    return false;
  }

  // Redirects the uses of `from` to `to` when their types agree.
  bool replace(ir::Value *from, ir::Value *to) {
    if (from->type() != to->type()) return false;
    index_.replaceAllUses(from, to);
    uses_[to] += uses_[from];
    uses_[from] = 0;
    return true;
  }

  // Makes `op` read operand 0 from `v` instead, keeping the producer's location.
  void bypass(ir::Op &op, ir::Value *v) {
    ir::Op *skipped = op.operand(0)->definingOp();
    --uses_[op.operand(0)];
    ++uses_[v];
    op.setOperand(0, v);
    index_.addUser(v, &op);
    ir::Location loc = op.loc();
    loc.merge(skipped->loc());
    op.setLoc(std::move(loc));
  }

  // reshape(reshape(y)) or reshape(flatten(y)) -> reshape(y).
  bool foldReshape(ir::Op &op) {
    ir::Op *inner = producer(op.operand(0), "reshape");
    if (!inner) inner = producer(op.operand(0), "flatten");
    if (!inner || inner->operands().empty()) return false;
    ir::Value *y = inner->operand(0);
    const ir::TensorType &want = op.result()->type();
    std::vector<int64_t> shape = want.dims;
    if (std::count_if(shape.begin(), shape.end(), ir::isBatchDim) > 1) return false;
    // The batch dimension (`?` or `?*k`) becomes -1, which reshape reads as
    // "infer this dim"; the shape rule infers it back.
    for (int64_t &d : shape)
      if (ir::isBatchDim(d)) d = -1;
    ir::AttrMap attrs = op.attrs();
    attrs.set("shape", shape);
    std::vector<ir::TensorType> operandTypes = {y->type()};
    ir::InferCtx ctx{operandTypes, attrs, {}, {}};
    if (ir::inferResultTypes(op.def(), ctx) || ctx.results.size() != 1 ||
        ctx.results[0] != want)
      return false;
    bypass(op, y);
    op.attrs() = std::move(attrs);
    return true;
  }

  // transpose(x) with the identity perm -> x; transpose(transpose(y)) -> one transpose.
  bool foldTranspose(ir::Op &op) {
    const std::vector<int64_t> *perm = intsAttr(op, "perm");
    ir::Value *x = op.operand(0);
    if (!perm || !isPermutation(*perm, x->type().rank())) return false;
    if (isIdentity(*perm)) return replace(op.result(), x);
    ir::Op *inner = producer(x, "transpose");
    if (!inner || inner->operands().empty()) return false;
    const std::vector<int64_t> *innerPerm = intsAttr(*inner, "perm");
    ir::Value *y = inner->operand(0);
    if (!innerPerm || !isPermutation(*innerPerm, y->type().rank()) ||
        innerPerm->size() != perm->size())
      return false;
    // Result dim i of a transpose is operand dim perm[i], so the pair reads
    // y's dim innerPerm[perm[i]].
    std::vector<int64_t> composed(perm->size());
    for (size_t i = 0; i < perm->size(); ++i) composed[i] = (*innerPerm)[(*perm)[i]];
    if (isIdentity(composed)) return replace(op.result(), y);
    bypass(op, y);
    op.attrs().set("perm", composed);
    return true;
  }

  ir::Graph &g_;
  UseCounts uses_;
  ir::UseIndex index_; // replaces a value in time proportional to its uses
  std::set<const ir::Op *> removed_;
};

class CanonicalizePass final : public Pass {
public:
  std::string_view name() const override { return "canonicalize"; }
  std::string_view description() const override {
    return "Simplifies no-op and back-to-back shape ops with local rewrites.";
  }

  Expected<bool> run(ir::Module &m) override {
    bool changed = false;
    for (const auto &g : m.graphs()) {
      Rewriter rw(*g);
      for (unsigned i = 0; i < kMaxSweeps && rw.sweep(); ++i) changed = true;
      rw.eraseRemovedDropouts();
    }
    return changed;
  }
};

} // namespace

std::unique_ptr<Pass> createCanonicalizePass() { return std::make_unique<CanonicalizePass>(); }

} // namespace dtnn::passes
