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
//   %mean     = fused: sum_like(x) / M             (a reduction, then a division)
//   %sq       = sum_like((x - mean)^2)             (the second pass: exact for
//                                                   any mean, unlike E[x^2] - mean^2)
//   %invstd, %scale, %shift, %unbiased = fused:
//               rsqrt(sq / M) {eps}, g invstd, b - mean scale, sq / (M - 1)
//   %y        = x * scale + shift                  (fuses with the work after it)
//   moving_average running_mean, mean and running_var, unbiased {momentum}
//
// The per-channel arithmetic is built as fused ops here, not left to
// fuse-elementwise: each divides, so the jit runs it over plain tensors, and
// what the big kernels read in a blocked layout (the mean, the scale, the
// shift) is converted there with zeros in the padded lanes, never 0/0.
//
// B's mean and invstd results become reshapes of %mean and %invstd to [C].
// A relu or relu6 after B takes its gradient from its own result instead of
// from y: the two masks are the same (0 < relu6(y) < 6 exactly where
// 0 < y < 6), and y then need not be kept for the backward.
//
// The batch norm's backward, batchnorm_backward(dy, x, gamma, mean, invstd),
// becomes fused ops of its own (fuse-elementwise would join their reads of x
// to the forward kernels that read x too):
//
//   %sd, %sdx = fused: d = the gradient into y; sum_like(d), sum_like(d (x - mean))
//   %k1, %k2, %dgamma = fused: sd / M, invstd^2 sdx / M, sdx invstd
//   %dx       = fused: (d - k1 - (x - mean) k2) scale
//   dbeta = sd; dgamma and dbeta reshaped to [C]
//
// When d is the gradient of an activation of y (relu6_backward of relu6(y),
// silu_backward of y), both kernels recompute it from x, dy and the scale
// and shift instead of reading it: the backward then reads x and dy twice
// and writes dx, 5 passes where the activation's gradient and oneDNN's
// batch norm backward made 8 (3 and 5), and neither y nor the activation's
// result is kept for it. The reductions sum in a fixed order, so results do
// not depend on the thread count.
//
// The pass runs after autodiff and before fuse-elementwise, and only where
// the backend that would run fused ops compiles them (not with --backend
// reference, nor with --no-jit, which leaves it out). It records a remark for
// every training batch norm: decomposed or kept, with the passes over the
// input's size each way (dtnnc compile --emit=plan prints them).
#include "ir/Builder.h"
#include "ir/UseIndex.h"
#include "ir/ops/FusedActivation.h"
#include "ir/ops/ShapeUtil.h"
#include "passes/BatchNormParts.h"
#include "passes/FusionTarget.h"
#include "passes/PassRegistry.h"
#include "passes/Regions.h"

#include <functional>
#include <map>
#include <set>

namespace dtnn::passes {

namespace {

// The ops that read each value; null stands for a graph output.
using Readers = std::map<const ir::Value *, std::vector<ir::Op *>>;

Readers readersOf(const ir::Graph &g) {
  Readers readers;
  for (const auto &op : g.ops())
    for (const ir::Value *v : op->operands()) readers[v].push_back(op.get());
  for (const ir::Value *v : g.outputs()) readers[v].push_back(nullptr);
  return readers;
}

const std::vector<ir::Op *> &readersOf(const Readers &readers, const ir::Value *v) {
  static const std::vector<ir::Op *> none;
  auto it = readers.find(v);
  return it == readers.end() ? none : it->second;
}

bool isPlain(const ir::Op &op, ir::FusionClass fusion, ir::OpRole role) {
  const ir::OpDef &d = op.def();
  return d.fusion == fusion && d.role == role && d.pure() && !op.body() && op.results().size() == 1;
}

// Whether `u` is elementwise work on `y` that fuse-elementwise would put in
// y's kernel: a forward elementwise or broadcast op with y's type.
bool fusesAfter(const ir::Op *u, const ir::Value *y) {
  if (!u || !(isPlain(*u, ir::FusionClass::Elementwise, ir::OpRole::Forward) ||
              isPlain(*u, ir::FusionClass::Broadcast, ir::OpRole::Forward)))
    return false;
  return u->result(0)->type() == y->type();
}

// Whether the jit takes an op in a region.
using Compiles = std::function<bool(const ir::Op &)>;

// The elementwise work after batch norm `bn` (see fusesAfter) that the jit
// compiles.
std::vector<const ir::Op *> workAfter(const ir::Op &bn, const Readers &readers,
                                      const Compiles &compiles) {
  std::vector<const ir::Op *> after;
  for (const ir::Op *u : readersOf(readers, bn.result(0)))
    if (fusesAfter(u, bn.result(0)) && compiles(*u)) after.push_back(u);
  return after;
}

// "batch norm LAYER of TYPE": the layer as its gamma's name says.
std::string describe(const ir::Op &bn) {
  std::string layer;
  if (const ir::Param *p = bn.operand(1)->param())
    layer = p->name.substr(0, p->name.rfind('.')) + " ";
  return "batch norm " + layer + "of " + bn.operand(0)->type().str();
}

// Names the ops, joined by '+'.
std::string names(const std::vector<const ir::Op *> &ops) {
  std::string out;
  for (const ir::Op *o : ops) out += (out.empty() ? "" : "+") + o->name();
  return out;
}

// Why training batch norm `bn` stays whole, or "" when decomposing it moves
// fewer bytes.
std::string whyKept(const ir::Op &bn, const Readers &readers, const Compiles &compiles) {
  const ir::TensorType &x = bn.operand(0)->type();
  if (x.rank() != 4 || !ir::isFloatType(x.dtype) || ir::isBatchDim(x.dims[1]))
    return "the decomposition takes 4-d floating-point inputs with a known channel count";
  if (x.dtype == ir::DType::BF16)
    return "its input is bf16 and its statistics float32, which oneDNN's batch norm computes "
           "whole";
  if (bn.attrs().getBool("sync")) return "its statistics are reduced over the ranks";
  if (std::string act = ir::fusedActivationOf(bn); !act.empty())
    return act + " runs in it as its fused activation: 9 passes over its input's size either way";
  if (workAfter(bn, readers, compiles).empty())
    return "no elementwise work the jit compiles follows it: 9 passes over its input's size "
           "either way";
  return "";
}

// Points the gradient of a relu or relu6 reading `y` (whose readers are
// `users`) at that activation's result, which gives the same mask, so that
// y is not kept for it.
void gradientsFromResult(ir::UseIndex &uses, const std::vector<ir::Op *> &users, ir::Value *y) {
  for (ir::Op *act : users) {
    if (!act || (act->name() != "relu" && act->name() != "relu6")) continue;
    for (ir::Op *grad : users)
      if (grad && grad->name() == act->name() + "_backward" && grad->operand(1) == y &&
          grad->attrs() == act->attrs()) {
        grad->setOperand(1, act->result(0));
        uses.addUser(grad);
      }
  }
}

// The batchnorm_backward of decomposed batch norm `f`, if it has one.
ir::Op *backwardOf(const DecomposedBatchNorm &f, const Readers &readers) {
  for (ir::Op *u : readersOf(readers, f.results[1]))
    if (u && u->name() == "batchnorm_backward" && u->operand(1) == f.x &&
        u->operand(3) == f.results[1] && u->operand(4) == f.results[2])
      return u;
  return nullptr;
}

// The op that makes the backward's dy when the backward's kernels can
// recompute it from x: an elementwise gradient read by nothing else, whose
// operands after the first (the gradient it receives) are y or a forward
// elementwise op of y alone (relu6_backward of relu6(y), silu_backward of y).
ir::Op *recomputable(const ir::Value *dy, const DecomposedBatchNorm &f, const Readers &readers) {
  ir::Op *grad = dy->definingOp();
  if (!grad || !isPlain(*grad, ir::FusionClass::Elementwise, ir::OpRole::Backward) ||
      readersOf(readers, dy).size() != 1)
    return nullptr;
  for (size_t i = 1; i < grad->operands().size(); ++i) {
    const ir::Value *v = grad->operand(unsigned(i));
    if (v == f.y) continue;
    const ir::Op *act = v->definingOp();
    if (!act || !isPlain(*act, ir::FusionClass::Elementwise, ir::OpRole::Forward) ||
        act->operands().size() != 1 || act->operand(0) != f.y)
      return nullptr;
  }
  return grad;
}

// Passes over tensors of a batch norm's input size in a train step.
struct Traffic {
  int forward = 0;
  int backward = 0;
  int total() const { return forward + backward; }
  std::string str() const {
    return std::to_string(total()) + " (forward " + std::to_string(forward) + ", backward " +
           std::to_string(backward) + ")";
  }
};

// What a decomposed batch norm saves: oneDNN's batch norm reads x twice for
// its statistics and once more to write y (4), each elementwise op after it
// reads y and writes its result (2), the activation's gradient reads two
// tensors and writes one (3) and the backward reads dy and x twice and
// writes dx (5). Decomposed, the forward makes the same two reductions and
// one kernel that reads x and writes each op's result; the backward reads x
// and the gradient twice and writes dx, and the activation's gradient
// runs apart unless its kernels recompute it.
std::string trafficRemark(const std::vector<const ir::Op *> &after, bool hasBackward,
                          bool activationGradient, int split) {
  Traffic whole{4 + 2 * int(after.size()), 0}, jit{3 + int(after.size()), 0};
  if (hasBackward) {
    int gradient = activationGradient ? 3 : 0;
    whole.backward = 5 + gradient;
    jit.backward = split == 2 ? 5 : 5 + gradient;
  }
  std::string text = "decomposed for the jit, fused with " + names(after) + ": " + jit.str() +
                     " passes over its input's size where a whole batch norm and " + names(after) +
                     " make " + whole.str();
  if (hasBackward && split == 0) text += "; its backward stays whole: the jit lacks code for it";
  return text;
}

class DecomposeBatchNormPass final : public GraphPass {
public:
  std::string_view name() const override { return "decompose-batchnorm"; }
  std::string_view description() const override {
    return "Rewrites a training batch norm followed by elementwise work, and its backward, into "
           "reductions and elementwise ops that fuse with that work.";
  }
  bool fuses() const override { return true; }
  bool forJit() const override { return true; }

  Expected<bool> runOnGraph(ir::Graph &g) override {
    if (!compilerInRun()) return false;
    alone_.clear();
    Readers readers = readersOf(g);
    Compiles taken = [this](const ir::Op &op) { return jitTakes(op); };
    // Each training batch norm, in order, with its remark: why it stays
    // whole, or "" until it is decomposed.
    std::vector<std::pair<ir::Op *, std::string>> norms;
    for (const auto &op : g.ops())
      if (op->name() == "batchnorm_train")
        norms.push_back({op.get(), whyKept(*op, readers, taken)});
    Rewrite rw(g);
    struct Decomposed {
      DecomposedBatchNorm f;
      std::vector<const ir::Op *> after;
      std::string *remark;
    };
    std::vector<Decomposed> done;
    for (auto &[bn, why] : norms) {
      if (!why.empty()) {
        why = describe(*bn) + " kept whole: " + why;
        continue;
      }
      size_t before = g.ops().size();
      ir::Builder b(g, bn->loc());
      Expected<DecomposedBatchNorm> f = decomposeBatchNorm(b, *bn);
      if (!f) return f.takeError();
      done.push_back({*f, workAfter(*bn, readers, taken), &why});
      why = describe(*bn);
      rw.replace(bn, before, f->results);
      gradientsFromResult(rw.uses, readers[bn->result(0)], f->y);
    }
    readers = readersOf(g);
    for (const Decomposed &d : done) {
      ir::Op *bwd = backwardOf(d.f, readers);
      const ir::Op *grad = bwd ? recomputable(bwd->operand(0), d.f, readers) : nullptr;
      int split = 0; // 2: recomputing grad, 1: reading dy, 0: kept whole
      if (bwd && grad) {
        Expected<bool> ok = splitBackward(g, *bwd, d.f, grad, rw);
        if (!ok) return ok.takeError();
        split = *ok ? 2 : 0;
      }
      if (bwd && !split) { // the jit lacks code for grad: its kernels read dy
        Expected<bool> ok = splitBackward(g, *bwd, d.f, nullptr, rw);
        if (!ok) return ok.takeError();
        split = *ok ? 1 : 0;
      }
      if (split == 2) rw.erase(grad);
      *d.remark += " " + trafficRemark(d.after, bwd != nullptr, grad != nullptr, split);
    }
    for (const auto &[bn, text] : norms) remark(bn->loc(), text);
    if (done.empty()) return false;
    rw.finish();
    return true;
  }

private:
  // The edits of one run: ops appended to the graph, each group to take the
  // place of the op it replaces, and the ops to erase.
  struct Rewrite {
    explicit Rewrite(ir::Graph &graph) : g(graph), uses(graph) {}
    // The ops appended since position `from` replace `op`, whose results
    // become `results`.
    void replace(ir::Op *op, size_t from, const std::vector<ir::Value *> &results) {
      for (size_t i = from; i < g.ops().size(); ++i) {
        made[op].push_back(g.ops()[i].get());
        added.insert(g.ops()[i].get());
        uses.addUser(g.ops()[i].get());
      }
      for (unsigned i = 0; i < op->results().size(); ++i)
        uses.replaceAllUses(op->result(i), results[i]);
      erase(op);
    }
    void erase(const ir::Op *op) { erased.insert(op); }
    // Moves each group of appended ops to its place and erases the replaced ops.
    void finish() {
      std::vector<ir::Op *> order;
      for (const auto &op : g.ops()) {
        if (added.count(op.get())) continue;
        if (auto it = made.find(op.get()); it != made.end())
          order.insert(order.end(), it->second.begin(), it->second.end());
        order.push_back(op.get());
      }
      g.reorder(order);
      g.eraseOpsIf([&](const ir::Op &op) { return erased.count(&op) != 0; });
    }
    ir::Graph &g;
    ir::UseIndex uses;
    std::map<const ir::Op *, std::vector<ir::Op *>> made;
    std::set<const ir::Op *> added, erased;
  };

  // Replaces batchnorm_backward `bwd` of `f` by its decomposition, `grad`
  // (or null) recomputed in its kernels, if the jit compiles both of them;
  // otherwise leaves the graph as it was. Whether it did.
  Expected<bool> splitBackward(ir::Graph &g, ir::Op &bwd, const DecomposedBatchNorm &f,
                               const ir::Op *grad, Rewrite &rw) {
    size_t before = g.ops().size();
    ir::Builder b(g, bwd.loc());
    Expected<std::vector<ir::Value *>> results = decomposeBatchNormBackward(b, bwd, f, grad);
    if (!results) return results.takeError();
    std::set<const ir::Op *> appended;
    bool compiled = true;
    for (size_t i = before; i < g.ops().size(); ++i) {
      appended.insert(g.ops()[i].get());
      if (g.ops()[i]->name() == "fused") compiled &= compiles(*g.ops()[i]);
    }
    if (!compiled) {
      g.eraseOpsIf([&](const ir::Op &op) { return appended.count(&op) != 0; });
      return false;
    }
    rw.replace(&bwd, before, *results);
    return true;
  }

  // Whether the backend that would run a fused op of `op` alone compiles it.
  bool jitTakes(const ir::Op &op) {
    return !target_ || compilesFused(alone_.backendOf(*target_, op));
  }

  // Whether the backend that would run the fused op `op` compiles it.
  bool compiles(const ir::Op &op) const {
    return !target_ || compilesFused(target_->backendOf(op));
  }

  // Whether the backend that would run the run's fused ops compiles them:
  // the first that registers them is not the reference one, which
  // interprets them (--backend reference). Any does, without a target.
  bool compilerInRun() const {
    if (!target_) return true;
    std::vector<std::string> backends = target_->backendsFor("fused");
    return !backends.empty() && compilesFused(backends.front());
  }

  // The backends of ops alone in a region, for the graph at hand.
  AloneInRegion alone_;
};

} // namespace

std::unique_ptr<Pass> createDecomposeBatchNormPass() {
  return std::make_unique<DecomposeBatchNormPass>();
}

} // namespace dtnn::passes
