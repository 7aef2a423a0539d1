// decompose-batchnorm: rewrites a training batch norm whose result feeds
// elementwise work (relu6, SiLU, a residual add: whatever oneDNN cannot take
// as a post-op) into ordinary ops, so that fuse-elementwise puts the
// normalization and that work in one kernel of the jit.
//
// Why, in tensor passes over x (the batch norm's input): oneDNN's training
// batch norm reads x for the mean, again for the variance, and reads it and
// writes y to normalize, 4 passes; an activation after it reads y and writes
// its result, 2 more. Decomposed, the mean and the variance are two
// reductions the jit runs at memory speed, and the normalization and the
// activation one kernel that reads x and writes the activation's result: 4
// passes instead of 6. Without elementwise work after it, the two make the
// same 4 passes, and oneDNN keeps the batch norm (as it does one with a fused
// activation, or one whose statistics are reduced over the ranks).
//
// For batchnorm_train B of x [N,C,H,W] (f32 or f64), gamma, beta and the
// running statistics, with M = N*H*W elements a channel:
//
//   %g, %b    = reshape gamma, beta to [1,C,1,1]   (the per-channel shape)
//   %m        = count_like %x, %g                  (M; M - 1 with offset=-1)
//   %mean     = sum_like(x) / M                    (a reduction, then a division)
//   %var      = sum_like((x - mean)^2) / M         (the second pass: exact for
//                                                   any mean, unlike E[x^2] - mean^2)
//   %invstd   = rsqrt %var {eps}
//   %scale    = g * invstd, %shift = b - mean * scale
//   %y        = x * scale + shift                  (fuses with the work after it)
//   moving_average running_mean, mean and running_var, sum / (M - 1) {momentum}
//
// B's mean and invstd results become reshapes of %mean and %invstd to [C],
// which batchnorm_backward reads as before. A relu or relu6 after B takes
// its gradient from its own result instead of from y: the two masks are the
// same (0 < relu6(y) < 6 exactly where 0 < y < 6), and y then need not be
// kept for the backward.
//
// The pass runs after autodiff and before fuse-elementwise, and only where
// the backend that would run fused ops compiles them (not with --backend
// reference, nor with --no-jit, which leaves it out).
#include "ir/Builder.h"
#include "ir/UseIndex.h"
#include "ir/ops/FusedActivation.h"
#include "ir/ops/ShapeUtil.h"
#include "passes/FusionTarget.h"
#include "passes/PassRegistry.h"

#include <map>
#include <set>

namespace dtnn::passes {

namespace {

// The ops that read each value.
using Readers = std::map<const ir::Value *, std::vector<ir::Op *>>;

// The results of a decomposed batch norm, in batchnorm_train's order.
struct Replacement {
  std::vector<ir::Value *> results;
  ir::Value *y = nullptr;
};

// Whether `u` is elementwise work on `y` that fuse-elementwise would put in
// y's kernel: a forward elementwise or broadcast op with y's type.
bool fusesAfter(const ir::Op &u, const ir::Value *y) {
  const ir::OpDef &d = u.def();
  if (d.fusion != ir::FusionClass::Elementwise && d.fusion != ir::FusionClass::Broadcast)
    return false;
  if (!d.pure() || u.body() || d.role != ir::OpRole::Forward || u.results().size() != 1)
    return false;
  return u.result(0)->type() == y->type();
}

// Whether batchnorm_train `bn` is worth decomposing: a 4-d float input,
// statistics of this rank only, no fused activation, and elementwise work
// after it.
bool worthDecomposing(const ir::Op &bn, const Readers &readers) {
  const ir::TensorType &x = bn.operand(0)->type();
  if (x.rank() != 4 || !ir::isFloatType(x.dtype) || x.dims[1] == ir::kDynamic) return false;
  if (bn.attrs().getBool("sync") || !ir::fusedActivationOf(bn).empty()) return false;
  auto it = readers.find(bn.result(0));
  if (it == readers.end()) return false;
  for (const ir::Op *u : it->second)
    if (fusesAfter(*u, bn.result(0))) return true;
  return false;
}

// Appends the decomposition of `bn` to the builder's graph.
Expected<Replacement> decompose(ir::Builder &b, const ir::Op &bn) {
  ir::Value *x = bn.operand(0);
  int64_t c = x->type().dims[1];
  const ir::AttrMap &a = bn.attrs();
  auto reshape = [&](ir::Value *v, std::vector<int64_t> shape) {
    return b.create1("reshape", {v}, ir::attrs({{"shape", std::move(shape)}}));
  };
  ir::Value *g = reshape(bn.operand(1), {1, c, 1, 1});
  ir::Value *beta = reshape(bn.operand(2), {1, c, 1, 1});
  ir::Value *count = b.create1("count_like", {x, g});
  ir::Value *mean = b.create1("div", {b.create1("sum_like", {x, g}), count});
  ir::Value *d = b.create1("sub", {x, mean});
  ir::Value *sq = b.create1("sum_like", {b.create1("mul", {d, d}), g});
  ir::Value *invstd =
      b.create1("rsqrt", {b.create1("div", {sq, count})}, ir::attrs({{"eps", a.getFloat("eps")}}));
  ir::Value *scale = b.create1("mul", {g, invstd});
  ir::Value *shift = b.create1("sub", {beta, b.create1("mul", {mean, scale})});
  ir::Value *unbiased = b.create1(
      "div", {sq, b.create1("count_like", {x, g}, ir::attrs({{"offset", -1.0}}))});
  ir::AttrMap momentum = ir::attrs({{"momentum", a.getFloat("momentum")}});
  ir::Value *meanC = reshape(mean, {c});
  ir::Op *runMean = b.createOp("moving_average", {bn.operand(3), meanC}, momentum);
  ir::Op *runVar = b.createOp("moving_average", {bn.operand(4), reshape(unbiased, {c})}, momentum);
  ir::Value *y = b.create1("add", {b.create1("mul", {x, scale}), shift});
  ir::Value *invstdC = reshape(invstd, {c});
  if (Error e = b.takeError()) return e;
  if (!runMean || !runVar || !y || !meanC || !invstdC)
    return Error::make("decompose-batchnorm: could not build the decomposition");
  return Replacement{{y, meanC, invstdC, runMean->result(0), runVar->result(0)}, y};
}

// Points the gradient of a relu or relu6 reading `y` (whose readers are
// `users`) at that activation's result, which gives the same mask, so that
// y is not kept for it.
void gradientsFromResult(ir::UseIndex &uses, const std::vector<ir::Op *> &users, ir::Value *y) {
  for (ir::Op *act : users) {
    if (act->name() != "relu" && act->name() != "relu6") continue;
    for (ir::Op *grad : users)
      if (grad->name() == act->name() + "_backward" && grad->operand(1) == y &&
          grad->attrs() == act->attrs()) {
        grad->setOperand(1, act->result(0));
        uses.addUser(grad);
      }
  }
}

class DecomposeBatchNormPass final : public GraphPass {
public:
  std::string_view name() const override { return "decompose-batchnorm"; }
  std::string_view description() const override {
    return "Rewrites a training batch norm followed by elementwise work into reductions and "
           "elementwise ops that fuse with that work.";
  }
  bool fuses() const override { return true; }
  bool forJit() const override { return true; }

  Expected<bool> runOnGraph(ir::Graph &g) override {
    if (!compilerInRun()) return false;
    Readers readers;
    for (const auto &op : g.ops())
      for (const ir::Value *v : op->operands()) readers[v].push_back(op.get());
    std::vector<ir::Op *> norms;
    for (const auto &op : g.ops())
      if (op->name() == "batchnorm_train" && worthDecomposing(*op, readers))
        norms.push_back(op.get());
    if (norms.empty()) return false;
    ir::UseIndex uses(g);
    // Each decomposition is appended, then moved to where its batch norm stood.
    std::map<const ir::Op *, std::vector<ir::Op *>> made;
    std::set<const ir::Op *> added;
    for (ir::Op *bn : norms) {
      size_t before = g.ops().size();
      ir::Builder b(g, bn->loc());
      Expected<Replacement> r = decompose(b, *bn);
      if (!r) return r.takeError();
      for (size_t i = before; i < g.ops().size(); ++i) {
        made[bn].push_back(g.ops()[i].get());
        added.insert(g.ops()[i].get());
        uses.addUser(g.ops()[i].get());
      }
      for (unsigned i = 0; i < bn->results().size(); ++i)
        uses.replaceAllUses(bn->result(i), r->results[i]);
      gradientsFromResult(uses, readers[bn->result(0)], r->y);
    }
    std::vector<ir::Op *> order;
    for (const auto &op : g.ops()) {
      if (added.count(op.get())) continue;
      if (auto it = made.find(op.get()); it != made.end())
        order.insert(order.end(), it->second.begin(), it->second.end());
      order.push_back(op.get());
    }
    g.reorder(order);
    g.eraseOpsIf([&](const ir::Op &op) { return made.count(&op) != 0; });
    return true;
  }

private:
  // Whether the backend that would run the run's fused ops compiles them:
  // the first that registers them is not the reference one, which
  // interprets them (--backend reference). Any does, without a target.
  bool compilerInRun() const {
    if (!target_) return true;
    std::vector<std::string> backends = target_->backendsFor("fused");
    return !backends.empty() && backends.front() != "reference";
  }
};

} // namespace

std::unique_ptr<Pass> createDecomposeBatchNormPass() {
  return std::make_unique<DecomposeBatchNormPass>();
}

} // namespace dtnn::passes
