// fold-slice-gradients: the gradient of a tensor cut into slices that tile
// one axis is the concat of the slices' gradients.
//
// Autodiff gives each `slice %x {axis, begin, end}` the gradient
// `slice_backward %dy, %x`, zeros with dy at [begin, end), and sums the
// gradients of x's uses with `add`s. When x is cut into pieces that cover an
// axis exactly (the queries, keys and values of a packed attention
// projection), those zero-padded tensors and their sums are wasted work:
// each piece is written into a tensor of x's size, then they are added up.
//
// Algorithm: for each `add`, in order, collect the leaves of the tree of adds
// under it (inner adds used only by their parent). If every leaf is a slice_backward of
// the same %x along the same axis, and their ranges, sorted,
// are disjoint and cover [0, dim) of that axis, the uses of the root's result
// go to `concat [dy...] {axis}` (the dys in range order), placed just before
// the root. An inner sum that tiles folds first, and the larger sum then reads
// its concat, which is no piece. The adds and slice_backwards left unused are
// for dce.
#include "ir/Builder.h"
#include "passes/PassRegistry.h"
#include "passes/PassUtil.h"

#include <algorithm>

namespace dtnn::passes {

namespace {

class FoldSliceGradientsPass final : public GraphPass {
public:
  std::string_view name() const override { return "fold-slice-gradients"; }
  std::string_view description() const override {
    return "Sums of the gradients of slices that tile an axis become one concat.";
  }

  Expected<bool> runOnGraph(ir::Graph &g) override {
    UseCounts uses = g.useCounts();
    bool changed = false;
    // Every add is tried, in order, so that a sum inside a larger one folds when the larger
    // one does not tile; collected first, as a rewrite adds an op and moves positions.
    std::vector<ir::Op *> roots;
    // An unused add (one an earlier run folded, left for dce) is left alone.
    for (const auto &op : g.ops())
      if (op->name() == "add" && op->results().size() == 1 && uses[op->result()] > 0)
        roots.push_back(op.get());
    for (ir::Op *root : roots) {
      std::vector<ir::Op *> leaves;
      if (!collect(*root, uses, leaves) || leaves.size() < 2) continue;
      std::vector<ir::Value *> pieces = tiling(leaves);
      if (pieces.empty()) continue;
      ir::Builder b(g, root->loc());
      b.setInsertPoint(long(g.indexOf(root)));
      int64_t axis = leaves[0]->attrs().getInt("axis");
      ir::Value *joined = b.create1("concat", pieces, ir::attrs({{"axis", axis}}));
      if (!joined) return b.takeError();
      if (joined->type() != root->result()->type())
        return Error::make("fold-slice-gradients: the concat of the pieces is " +
                           joined->type().str() + ", their sum " + root->result()->type().str());
      g.replaceAllUses(root->result(), joined);
      changed = true;
    }
    return changed;
  }

private:
  // The leaves of the tree of adds under `op` (inner adds have one use each); false when a
  // leaf is not a slice_backward, or an operand is broadcast.
  static bool collect(const ir::Op &op, const UseCounts &uses, std::vector<ir::Op *> &leaves) {
    for (ir::Value *v : op.operands()) {
      ir::Op *def = v->definingOp();
      if (!def || def->results().size() != 1 || v->type() != op.result()->type()) return false;
      auto it = uses.find(v);
      bool inner = def->name() == "add" && it != uses.end() && it->second == 1;
      if (inner) {
        if (!collect(*def, uses, leaves)) return false;
      } else if (def->name() == "slice_backward" && def->operands().size() == 2) {
        leaves.push_back(def);
      } else {
        return false;
      }
    }
    return true;
  }

  // The dys of `leaves` in order along their axis when they are slice_backwards of one x along
  // one axis, tiling it; empty otherwise.
  static std::vector<ir::Value *> tiling(std::vector<ir::Op *> leaves) {
    const ir::Value *x = leaves[0]->operand(1);
    const ir::AttrMap &first = leaves[0]->attrs();
    int64_t axis = first.getInt("axis");
    const ir::TensorType &t = x->type();
    int64_t rank = t.rank();
    if (axis < 0) axis += rank;
    if (axis < 0 || axis >= rank || ir::isBatchDim(t.dims[size_t(axis)])) return {};
    for (const ir::Op *l : leaves) {
      if (l->operand(1) != x || l->attrs().getInt("axis") != first.getInt("axis") ||
          l->result()->type() != t)
        return {};
    }
    std::sort(leaves.begin(), leaves.end(), [](const ir::Op *a, const ir::Op *b) {
      return a->attrs().getInt("begin") < b->attrs().getInt("begin");
    });
    int64_t at = 0;
    std::vector<ir::Value *> pieces;
    for (ir::Op *l : leaves) {
      int64_t begin = l->attrs().getInt("begin"), end = l->attrs().getInt("end");
      if (begin != at || end <= begin) return {};
      at = end;
      pieces.push_back(l->operand(0));
    }
    if (at != t.dims[size_t(axis)]) return {};
    return pieces;
  }
};

} // namespace

std::unique_ptr<Pass> createFoldSliceGradientsPass() {
  return std::make_unique<FoldSliceGradientsPass>();
}

} // namespace dtnn::passes
