// The reductions over axes: ReduceMean, ReduceSum, ReduceMax and ReduceMin as the builtins
// mean, sum and max (the minimum as the negated maximum of the negation, exact in floating
// point), and ReduceSumSquare, ReduceL2, ReduceLogSum and ReduceLogSumExp composed from them
// with the elementwise builtins, as ONNX defines them.
#include "frontend/onnx/ops/Translators.h"

#include <set>

namespace dtnn::onnximport {

namespace {

// The axes: an attribute, or from opset 13 (ReduceSum) or 18 (the others) an input. Empty:
// nothing to reduce when noop_with_empty_axes, else every axis.
Expected<std::vector<int64_t>> reduceAxes(const Node &node, int64_t rank) {
  std::vector<int64_t> axes;
  int axesInput = node.op() == "ReduceSum" ? 13 : 18;
  if (node.opset() >= axesInput) {
    if (node.has(1)) {
      auto v = node.ints(1, "axes");
      if (!v) return v.takeError();
      axes = *v;
    }
  } else {
    axes = node.attrInts("axes").value_or(std::vector<int64_t>{});
  }
  std::set<int64_t> out;
  for (int64_t a : axes) {
    auto n = normalizeAxis(node, a, rank);
    if (!n) return n.takeError();
    out.insert(*n);
  }
  if (axes.empty() && node.attrInt("noop_with_empty_axes", 0) == 0)
    for (int64_t i = 0; i < rank; ++i) out.insert(i);
  return std::vector<int64_t>(out.begin(), out.end());
}

Error reduce(Context &ctx, const Node &node) {
  auto x = node.tensor(0);
  if (!x) return x.takeError();
  if (x->dtype != ir::DType::F32 && x->dtype != ir::DType::F64 && x->dtype != ir::DType::BF16)
    return node.fail("its input is " + std::string(ir::dtypeName(x->dtype)) +
                     "; dtnn reduces floating-point tensors");
  auto axes = reduceAxes(node, x->rank());
  if (!axes) return axes.takeError();
  if (axes->empty()) {
    ctx.bindTensor(node.proto().output(0), *x);
    return Error::success();
  }
  bool keep = node.attrInt("keepdims", 1) != 0;
  std::vector<int64_t> dims;
  for (int64_t i = 0; i < x->rank(); ++i) {
    bool reduced = std::binary_search(axes->begin(), axes->end(), i);
    if (!reduced) dims.push_back(x->dims[size_t(i)]);
    else if (keep) dims.push_back(1);
  }
  std::string over = (axes->size() == 1 ? std::to_string(axes->front()) : intList(*axes)) +
                     (keep ? ", keepdim=true" : "");
  const std::string &v = x->var, &op = node.op();
  std::string expr;
  if (op == "ReduceMean") expr = "mean(" + v + ", " + over + ")";
  else if (op == "ReduceSum") expr = "sum(" + v + ", " + over + ")";
  else if (op == "ReduceMax") expr = "max(" + v + ", " + over + ")";
  else if (op == "ReduceMin") expr = "max(" + v + " * -1.0, " + over + ") * -1.0";
  else if (op == "ReduceSumSquare") expr = "sum(" + v + " * " + v + ", " + over + ")";
  else if (op == "ReduceL2") expr = "sqrt(sum(" + v + " * " + v + ", " + over + "))";
  else if (op == "ReduceLogSum") expr = "log(sum(" + v + ", " + over + "))";
  else expr = "log(sum(exp(" + v + "), " + over + "))";
  ctx.emit(node, op, "", expr, {v}, x->dtype, dims, node.proto().output(0));
  return Error::success();
}

} // namespace

void addReductionTranslators(TranslatorTable &t) {
  for (const char *op : {"ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin", "ReduceSumSquare", "ReduceL2",
                         "ReduceLogSum", "ReduceLogSumExp"})
    t[op] = {{"axes", "keepdims", "noop_with_empty_axes"}, reduce};
}

} // namespace dtnn::onnximport
