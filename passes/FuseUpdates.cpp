// fuse-updates: runs the optimizer updates of a train step as one kernel per
// bucket of gradients.
//
// Why: each update reads a parameter, its gradient and its state buffers
// and writes the parameter and the states back, at memory speed when the
// tensor is large; but a network has many small ones (biases, batch norm
// scales), each a kernel launch and a fork of the thread pool for a few
// hundred elements. One kernel over every tensor of a bucket shares the
// threads out over all their elements at once, and its code comes from a
// region the jit compiles, like every fused op's.
//
// Algorithm: walk the step in order. An update op of an optimizer with a
// fused form (passes/Optimizers.h: SGD, Adam and AdamW without AMSGrad)
// joins the open group of its key: its optimizer and attributes, its
// element type, and the allreduce_wait that yields its gradient (its
// bucket; none in a one-rank step, where every update forms one group). An
// op that reads a value a group's members write (a parameter, a state
// buffer, or their new versions) closes that group, so that moving its
// updates down to its last one changes what no op reads. Each group becomes
//
//   %c... = <opt>_coefficients %lr, %step {the update's attributes}
//   %p0', %s0'..., %p1', ... = fused_update @p0, %g0, @s0..., @p1, ... , %c...
//           {tensors=K, states=S, optimizer="<opt>"} { one parameter's update }
//
// at the position of its last member (the coefficients once per optimizer
// and attributes, before the first group that reads them), and the uses of
// the members' new versions read the fused op's.
//
// Gradient averaging: a bucket whose "mean" allreduce feeds only members
// has its mean deferred (op="mean_deferred"): each rank scales by its share
// times the rank count, 1 when the batch splits evenly, so nothing is
// scaled, and the region divides the gradient by `rank_count` before the
// update. For a power-of-two rank count both ways round alike.
//
// Each member's update runs
// over its whole buffers in whatever layout its parameter has, padding
// included, as the update ops do; the arithmetic is theirs, in their order.
//
// The pass runs last, after the distributed passes have made the buckets,
// and only where the backend that would run fused_update compiles it (not
// with --backend reference, nor with --no-jit, which leaves the pass out).
// It records a remark for each group, and for updates it leaves alone.
#include "ir/Builder.h"
#include "passes/Optimizers.h"
#include "passes/PassRegistry.h"
#include "passes/Regions.h"

#include <algorithm>
#include <map>
#include <set>

namespace dtnn::passes {

namespace {

// The attributes as text, in their (fixed) order.
std::string attrsKey(const ir::AttrMap &attrs) {
  std::string s;
  for (const auto &[name, v] : attrs.entries()) s += name + "=" + ir::attrValueStr(v) + " ";
  return s;
}

// An update op fuse-updates may take: its optimizer's fused form, its
// parameter, gradient and states (the operands it writes, the parameter
// first), and its learning rate.
struct Member {
  ir::Op *op = nullptr;
  const FusedUpdateForm *form = nullptr;
  std::vector<ir::Value *> tensors; // param, grad, states
  ir::Value *lr = nullptr;
};

struct Group {
  std::string key;
  std::vector<Member> members;
  std::set<const ir::Value *> touched; // what the members write, and their new versions
  size_t last = 0;                     // the position of the last member
};

class FuseUpdatesPass final : public GraphPass {
public:
  std::string_view name() const override { return "fuse-updates"; }
  std::string_view description() const override {
    return "Runs the optimizer updates of each bucket of gradients as one fused_update kernel.";
  }
  bool fuses() const override { return true; }
  bool forJit() const override { return true; }

  Expected<bool> runOnGraph(ir::Graph &g) override {
    ir::Value *step = nullptr;
    for (ir::Value *in : g.inputs())
      if (in->name() == "step" && in->type() == ir::TensorType(ir::DType::I64, {})) step = in;
    if (!step) return false;
    std::vector<Group> done;
    std::map<std::string, Group> open;
    for (size_t i = 0; i < g.ops().size(); ++i) {
      ir::Op *op = g.ops()[i].get();
      // An op that reads what a group writes closes the group (an update
      // too: it then starts a group of its own).
      for (auto it = open.begin(); it != open.end();) {
        bool reads = false;
        for (const ir::Value *v : op->operands()) reads = reads || it->second.touched.count(v);
        if (reads) {
          done.push_back(std::move(it->second));
          it = open.erase(it);
        } else {
          ++it;
        }
      }
      std::optional<Member> m = member(*op);
      if (!m) continue;
      std::string key = keyOf(*m, g);
      Group &grp = open[key];
      grp.key = key;
      grp.members.push_back(*m);
      grp.last = i;
      for (size_t t = 0; t < m->tensors.size(); ++t)
        if (t != 1) grp.touched.insert(m->tensors[t]);
      for (const ir::Value *r : op->results()) grp.touched.insert(r);
    }
    for (auto &[key, grp] : open) done.push_back(std::move(grp));
    if (done.empty()) return false;
    std::sort(done.begin(), done.end(),
              [](const Group &a, const Group &b) { return a.last < b.last; });
    if (std::string refusal = refused(g, done.front(), step); !refusal.empty()) {
      for (const Group &grp : done)
        remark(locOf(grp),
               std::to_string(grp.members.size()) + " " + grp.members.front().op->name() +
                   (grp.members.size() == 1 ? " op runs" : " ops run") + " one by one: " + refusal);
      return false;
    }
    std::set<ir::Op *> deferred = deferrableMeans(g, done);
    Coefficients coefficients;
    // In order of position: the scalars go before the first group that
    // reads them.
    for (Group &grp : done)
      if (Expected<ir::Op *> made = fuseGroup(g, grp, step, deferred, coefficients); !made)
        return made.takeError();
    std::set<const ir::Op *> gone;
    for (const Group &grp : done)
      for (const Member &m : grp.members) gone.insert(m.op);
    g.eraseOpsIf([&](const ir::Op &op) { return gone.count(&op) > 0; });
    // The waits' starts defer the division to the updates.
    for (ir::Op *wait : deferred) {
      wait->attrs().set("op", std::string("mean_deferred"));
      wait->operand(0)->definingOp()->attrs().set("op", std::string("mean_deferred"));
    }
    return true;
  }

private:
  // The update `op` as a member, if its optimizer has a fused form that
  // applies to its attributes and its learning rate has its element type.
  std::optional<Member> member(ir::Op &op) const {
    if (op.def().role != ir::OpRole::Update || op.body()) return std::nullopt;
    const OptimizerDef *opt = findOptimizerOfUpdate(op.name());
    if (!opt || !opt->fused || !opt->fused->applies(op.attrs())) {
      if (opt)
        remark(op.loc(), op.name() + " of @" + op.operand(0)->name() +
                             " runs alone: its optimizer has no fused form with these "
                             "settings");
      return std::nullopt;
    }
    Member m{&op, &*opt->fused, {}, nullptr};
    std::vector<const ir::OperandSpec *> specs =
        op.def().operandSpecs(op.operands().size(), op.attrs());
    for (size_t i = 0; i < specs.size(); ++i) {
      if (specs[i]->name == "lr") m.lr = op.operand(unsigned(i));
      if (specs[i]->writes() || specs[i]->name == "grad")
        m.tensors.push_back(op.operand(unsigned(i)));
    }
    // param, grad, states: the grad follows the param in every update op.
    if (!m.lr || m.tensors.size() < 2 || m.lr->type().dtype != m.tensors[0]->type().dtype)
      return std::nullopt;
    return m;
  }

  // The group a member joins: its update op and attributes, its element
  // type, and the wait that yields its gradient (its bucket), by position.
  static std::string keyOf(const Member &m, const ir::Graph &g) {
    std::string key = m.op->name() + " " + attrsKey(m.op->attrs()) + " " +
                      std::string(ir::dtypeName(m.tensors[0]->type().dtype));
    if (const ir::Op *wait = m.tensors[1]->definingOp(); wait && wait->name() == "allreduce_wait")
      key += " after op " + std::to_string(g.indexOf(wait));
    return key;
  }

  // The scalars the groups read, made once: each optimizer and attributes'
  // coefficients, and the rank count.
  struct Coefficients {
    std::map<std::string, std::vector<ir::Value *>> byUpdate;
    ir::Value *ranks = nullptr;
  };

  static ir::Location locOf(const Group &grp) {
    ir::Location loc;
    for (const Member &m : grp.members) loc.merge(m.op->loc());
    return loc;
  }

  // Why the backend that would run the fused_update of `grp` does not
  // compile it, or "" when it does (always without a target). The answer
  // holds for every group: it depends on the op and its element type.
  std::string refused(ir::Graph &g, Group &grp, ir::Value *step) {
    if (!target_) return "";
    Coefficients scratch;
    Expected<ir::Op *> probe = fuseGroup(g, grp, step, {}, scratch, true);
    if (!probe) return probe.error().message();
    std::string backend = target_->backendOf(**probe);
    std::set<const ir::Op *> made = {*probe};
    for (const auto &[key, values] : scratch.byUpdate) made.insert(values[0]->definingOp());
    g.eraseOpsIf([&](const ir::Op &op) { return made.count(&op) > 0; });
    if (compilesFused(backend)) return "";
    return (backend.empty() ? std::string("no backend") : "the " + backend + " backend") +
           " would run their fused_update";
  }

  // The allreduce_waits whose mean the updates may finish: a "mean" whose
  // every result is the gradient of a member, so that each reader divides
  // by the rank count.
  static std::set<ir::Op *> deferrableMeans(ir::Graph &g, const std::vector<Group> &groups) {
    std::set<const ir::Op *> members;
    for (const Group &grp : groups)
      for (const Member &m : grp.members) members.insert(m.op);
    std::set<ir::Op *> waits;
    for (const auto &op : g.ops())
      if (op->name() == "allreduce_wait" && op->attrs().getString("op") == "mean")
        waits.insert(op.get());
    for (const auto &op : g.ops())
      for (size_t i = 0; i < op->operands().size(); ++i) {
        ir::Op *def = op->operand(unsigned(i))->definingOp();
        if (!waits.count(def)) continue;
        // The token and the buffers are read by the wait itself; a member
        // reads its gradient as operand 1.
        if (op.get() != def && !(members.count(op.get()) && i == 1)) waits.erase(def);
      }
    for (const ir::Value *out : g.outputs()) waits.erase(out->definingOp());
    return waits;
  }

  // Replaces the members of `grp` with one fused_update at the position of
  // its last member (the members stay for the caller to erase), and returns
  // it; a `probe` only makes it, for the caller to ask about and erase.
  // Where the gradients come from a wait in `deferred`, the region divides
  // them by the rank count first.
  Expected<ir::Op *> fuseGroup(ir::Graph &g, Group &grp, ir::Value *step,
                               const std::set<ir::Op *> &deferred, Coefficients &coefficients,
                               bool probe = false) {
    const Member &first = grp.members.front();
    ir::Location loc = locOf(grp);
    ir::Builder b(g, loc);
    b.setInsertPoint(long(g.indexOf(grp.members.back().op)));
    std::string coefKey = first.op->name() + " " + attrsKey(first.op->attrs());
    if (!coefficients.byUpdate.count(coefKey)) {
      std::vector<ir::Value *> c =
          b.create(first.form->coefficientsOp, {first.lr, step}, first.op->attrs());
      if (c.empty()) return b.takeError();
      coefficients.byUpdate[coefKey] = c;
    }
    std::vector<ir::Value *> c = coefficients.byUpdate[coefKey];
    ir::Op *wait = first.tensors[1]->definingOp();
    bool divide = deferred.count(wait) > 0;
    if (divide && !coefficients.ranks) {
      coefficients.ranks = b.create1("rank_count", {first.lr});
      if (!coefficients.ranks) return b.takeError();
    }
    // The region: one member's tensors, flat, the coefficients, and the
    // rank count where it divides.
    ir::DType t = first.tensors[0]->type().dtype;
    auto body = std::make_unique<ir::Graph>("");
    std::vector<ir::Value *> tensorArgs, coefArgs;
    static const char *kNames[] = {"p", "g"};
    for (size_t i = 0; i < first.tensors.size(); ++i)
      tensorArgs.push_back(body->addInput(i < 2 ? kNames[i] : "s" + std::to_string(i - 2),
                                          ir::TensorType(t, {ir::kDynamic})));
    for (size_t i = 0; i < c.size(); ++i)
      coefArgs.push_back(body->addInput("c" + std::to_string(i), ir::TensorType(t, {})));
    ir::Builder inner(*body, first.op->loc());
    if (divide) {
      ir::Value *ranks = body->addInput("ranks", ir::TensorType(t, {}));
      tensorArgs[1] = inner.create1("div", {tensorArgs[1], ranks});
      c.push_back(coefficients.ranks);
    }
    Expected<std::vector<ir::Value *>> yields =
        first.form->build(inner, first.op->attrs(), tensorArgs, coefArgs);
    if (!yields) return yields.takeError();
    if (Error e = inner.takeError()) return e;
    body->setOutputs(*yields);
    std::vector<ir::Value *> operands;
    for (const Member &m : grp.members)
      operands.insert(operands.end(), m.tensors.begin(), m.tensors.end());
    operands.insert(operands.end(), c.begin(), c.end());
    std::string optimizer = first.op->name().substr(0, first.op->name().size() - 7);
    ir::AttrMap attrs = ir::attrs({{"tensors", int64_t(grp.members.size())},
                                   {"states", int64_t(first.tensors.size() - 2)},
                                   {"optimizer", optimizer}});
    ir::Op *fused = b.createWithBody("fused_update", operands, std::move(body), attrs);
    if (!fused) return b.takeError();
    if (probe) return fused;
    // The members' new versions are the fused op's, in the same order.
    std::map<ir::Value *, ir::Value *> subst;
    size_t r = 0;
    for (const Member &m : grp.members)
      for (ir::Value *v : m.op->results()) subst[v] = fused->result(unsigned(r++));
    g.replaceAllUses(subst);
    int64_t bytes = 0;
    for (const Member &m : grp.members) {
      int64_t n = int64_t(ir::dtypeSize(t));
      for (int64_t d : m.tensors[0]->type().dims) n *= d;
      bytes += n;
    }
    bool bucket = wait && wait->name() == "allreduce_wait";
    remark(loc,
           std::to_string(grp.members.size()) + " " + first.op->name() + " op" +
               (grp.members.size() == 1 ? "" : "s") + " over " + std::to_string(bytes) +
               " bytes of parameters" +
               (bucket ? " (bucket " + std::to_string(wait->attrs().getInt("bucket")) + ")" : "") +
               " run as one fused_update" +
               (divide ? ", which divides the gradients' sum by the rank count" : ""));
    return fused;
  }
};

} // namespace

std::unique_ptr<Pass> createFuseUpdatesPass() { return std::make_unique<FuseUpdatesPass>(); }

} // namespace dtnn::passes
