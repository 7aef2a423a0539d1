// The shape ops: Constant, Shape, Size, Unsqueeze, Squeeze, Concat, Reshape and Cast on known values
// (folded: the Shape -> Gather -> Unsqueeze -> Concat -> Reshape chains of exporters), and
// Reshape, Flatten, Transpose, Concat, Squeeze, Unsqueeze of tensors.
#include "frontend/onnx/ops/Translators.h"

namespace dtnn::onnximport {

namespace {

const std::string &out0(const Node &node) { return node.proto().output(0); }

Error constant(Context &ctx, const Node &node) {
  Known k;
  if (const auto *a = node.attr("value")) {
    auto d = readTensor(a->t());
    if (!d) return node.fail(d.error().message());
    k.data = std::move(*d);
  } else if (const auto *a = node.attr("value_float")) {
    k.data.elemType = onnx::TensorProto::FLOAT, k.data.floats = {a->f()};
  } else if (const auto *a = node.attr("value_floats")) {
    k.data.elemType = onnx::TensorProto::FLOAT;
    k.data.floats.assign(a->floats().begin(), a->floats().end());
    k.data.dims = {int64_t(k.data.floats.size())};
  } else if (const auto *a = node.attr("value_int")) {
    k.data.elemType = onnx::TensorProto::INT64, k.data.ints = {a->i()};
  } else if (const auto *a = node.attr("value_ints")) {
    k.data.elemType = onnx::TensorProto::INT64;
    k.data.ints.assign(a->ints().begin(), a->ints().end());
    k.data.dims = {int64_t(k.data.ints.size())};
  } else {
    return node.fail("its value is not a tensor, a float or an int (list)");
  }
  ctx.bindKnown(out0(node), std::move(k));
  return Error::success();
}

// The dimensions of a tensor, the batch as its multiple of N.
Error shape(Context &ctx, const Node &node) {
  Tensor of;
  if (const Known *k = node.known(0)) {
    of.dims = k->data.dims; // a known value's dimensions are numbers, whatever its elements are
  } else {
    auto t = node.tensor(0);
    if (!t) return t.takeError();
    of = *t;
  }
  const Tensor *x = &of;
  int64_t r = x->rank();
  int64_t begin = node.attrInt("start", 0), end = node.attrInt("end", r);
  begin = std::clamp<int64_t>(begin < 0 ? begin + r : begin, 0, r);
  end = std::clamp<int64_t>(end < 0 ? end + r : end, 0, r);
  Known k;
  k.data.elemType = onnx::TensorProto::INT64;
  for (int64_t i = begin; i < end; ++i) {
    int64_t d = x->dims[size_t(i)];
    k.data.ints.push_back(ir::isBatchDim(d) ? 0 : d);
    k.batch.push_back(ir::isBatchDim(d) ? -d : 0);
  }
  k.data.dims = {int64_t(k.data.ints.size())};
  if (!k.dependsOnBatch()) k.batch.clear();
  ctx.bindKnown(out0(node), std::move(k));
  return Error::success();
}

// The axes of Squeeze and Unsqueeze: an attribute before opset 13, an input from it.
Expected<std::vector<int64_t>> axesOf(const Node &node) {
  if (node.opset() < 13) return node.attrInts("axes").value_or(std::vector<int64_t>{});
  if (!node.has(1)) return std::vector<int64_t>{};
  return node.ints(1, "axes");
}

// Size: the element count of a tensor or a known value, folded.
Error size(Context &ctx, const Node &node) {
  std::vector<int64_t> dims;
  if (const Known *k = node.known(0)) {
    dims = k->data.dims;
  } else {
    auto t = node.tensor(0);
    if (!t) return t.takeError();
    dims = t->dims;
  }
  Known k;
  k.data.elemType = onnx::TensorProto::INT64;
  k.data.ints = {product(dims)};
  if (std::any_of(dims.begin(), dims.end(), ir::isBatchDim)) k.data.ints = {0}, k.batch = {product(dims)};
  ctx.bindKnown(out0(node), std::move(k));
  return Error::success();
}

// Squeeze and Unsqueeze, of a known value or a tensor.
Error squeeze(Context &ctx, const Node &node) {
  auto axes = axesOf(node);
  if (!axes) return axes.takeError();
  bool un = node.op() == "Unsqueeze";
  std::vector<int64_t> dims;
  const Known *k = node.known(0);
  Tensor x;
  if (k) {
    dims = k->data.dims;
  } else {
    auto t = node.tensor(0);
    if (!t) return t.takeError();
    x = *t;
    dims = x.dims;
  }
  int64_t rank = int64_t(dims.size()) + (un ? int64_t(axes->size()) : 0);
  std::vector<bool> marked(size_t(rank), false);
  for (int64_t a : *axes) {
    auto n = normalizeAxis(node, a, rank);
    if (!n) return n.takeError();
    marked[size_t(*n)] = true;
  }
  std::vector<int64_t> outDims;
  if (un) {
    for (int64_t i = 0, j = 0; i < rank; ++i) outDims.push_back(marked[size_t(i)] ? 1 : dims[size_t(j++)]);
  } else {
    for (size_t i = 0; i < dims.size(); ++i) {
      bool drop = axes->empty() ? dims[i] == 1 : bool(marked[i]);
      if (drop && dims[i] != 1) return node.fail("it squeezes dimension " + std::to_string(i) + ", which is not 1");
      if (!drop) outDims.push_back(dims[i]);
    }
  }
  if (k) {
    Known out = *k;
    out.data.dims = outDims;
    ctx.bindKnown(out0(node), std::move(out));
    return Error::success();
  }
  auto r = reshapeTo(ctx, node, x, outDims, out0(node));
  return r ? Error::success() : r.takeError();
}

Error concat(Context &ctx, const Node &node) {
  bool allKnown = true;
  for (size_t i = 0; i < node.inputs(); ++i) allKnown = allKnown && node.known(i);
  if (allKnown) {
    Known out;
    out.data.elemType = node.known(0)->data.elemType;
    bool batch = false;
    for (size_t i = 0; i < node.inputs(); ++i) batch = batch || node.known(i)->dependsOnBatch();
    for (size_t i = 0; i < node.inputs(); ++i) {
      const Known &k = *node.known(i);
      if (k.data.dims.size() != 1) return node.fail("folding joins 1-d known values only");
      out.data.floats.insert(out.data.floats.end(), k.data.floats.begin(), k.data.floats.end());
      out.data.ints.insert(out.data.ints.end(), k.data.ints.begin(), k.data.ints.end());
      if (batch) {
        if (k.dependsOnBatch()) out.batch.insert(out.batch.end(), k.batch.begin(), k.batch.end());
        else out.batch.resize(out.batch.size() + k.data.count(), 0);
      }
    }
    out.data.dims = {int64_t(out.data.count())};
    ctx.bindKnown(out0(node), std::move(out));
    return Error::success();
  }
  std::vector<Tensor> ins;
  for (size_t i = 0; i < node.inputs(); ++i) {
    auto t = node.tensor(i);
    if (!t) return t.takeError();
    ins.push_back(*t);
  }
  auto axis = normalizeAxis(node, node.attrInt("axis", 0), ins[0].rank());
  if (!axis) return axis.takeError();
  std::vector<int64_t> dims = ins[0].dims;
  std::string list;
  std::vector<std::string> uses;
  dims[size_t(*axis)] = 0;
  for (const Tensor &t : ins) {
    if (t.rank() != ins[0].rank()) return node.fail("its inputs differ in rank");
    if (ir::isBatchDim(t.dims[size_t(*axis)])) return node.fail("joining along the batch axis is not expressible");
    dims[size_t(*axis)] += t.dims[size_t(*axis)];
    list += (list.empty() ? "" : ", ") + t.var;
    uses.push_back(t.var);
  }
  ctx.emit(node, node.op(), "", call("concat", {"[" + list + "]", "axis=" + std::to_string(*axis)}),
           uses, ins[0].dtype, dims, out0(node));
  return Error::success();
}

Error reshape(Context &ctx, const Node &node) {
  const Known *k = node.known(1);
  if (!k || k->data.isFloat())
    return node.fail("its shape is computed at run time; dtnn needs it known when importing");
  if (const Known *v = node.known(0); v && !k->dependsOnBatch()) {
    // A known value: the same elements with the new dimensions.
    std::vector<int64_t> dims = k->data.ints;
    int64_t count = int64_t(v->data.count()), rest = 1, infer = -1;
    for (size_t i = 0; i < dims.size(); ++i) {
      if (dims[i] == 0 && node.attrInt("allowzero", 0) == 0 && i < v->data.dims.size()) dims[i] = v->data.dims[i];
      if (dims[i] == -1) infer = int64_t(i);
      else rest *= dims[i];
    }
    if (infer >= 0 && rest > 0) dims[size_t(infer)] = count / rest;
    if (product(dims) != count) return node.fail("its shape does not hold the value's " + std::to_string(count) + " elements");
    Known out = *v;
    out.data.dims = dims;
    ctx.bindKnown(out0(node), std::move(out));
    return Error::success();
  }
  auto x = node.tensor(0);
  if (!x) return x.takeError();
  bool allowZero = node.attrInt("allowzero", 0) != 0;
  std::vector<int64_t> dims;
  int infer = -1;
  for (size_t i = 0; i < k->data.ints.size(); ++i) {
    int64_t b = k->dependsOnBatch() ? k->batch[i] : 0;
    int64_t v = k->data.ints[i];
    if (b) dims.push_back(ir::batchDim(b));
    else if (v == 0 && !allowZero && i < x->dims.size()) dims.push_back(x->dims[i]);
    else if (v == -1 && infer < 0) infer = int(i), dims.push_back(1);
    else if (v < 0) return node.fail("its shape holds " + std::to_string(v));
    else dims.push_back(v);
  }
  int64_t inStatic = product(x->dims);
  bool inBatch = std::any_of(x->dims.begin(), x->dims.end(), ir::isBatchDim);
  int64_t outStatic = product(dims);
  bool outBatch = std::any_of(dims.begin(), dims.end(), ir::isBatchDim);
  if (infer >= 0) {
    if (outStatic == 0 || inStatic % outStatic) return node.fail("its shape does not divide the input");
    int64_t d = inStatic / outStatic;
    dims[size_t(infer)] = inBatch && !outBatch ? ir::batchDim(d) : d;
  } else if (inStatic != outStatic || inBatch != outBatch) {
    return node.fail("its shape [" + dimsText(dims) + "] does not hold the input's [" + dimsText(x->dims) + "]");
  }
  auto r = reshapeTo(ctx, node, *x, dims, out0(node));
  return r ? Error::success() : r.takeError();
}

Error flatten(Context &ctx, const Node &node) {
  auto x = node.tensor(0);
  if (!x) return x.takeError();
  int64_t axis = node.attrInt("axis", 1);
  if (axis < 0) axis += x->rank();
  if (axis == 1 && x->rank() >= 2) {
    ctx.emit(node, node.op(), x->var, "flatten", {x->var}, x->dtype, {x->dims[0], product(x->dims, 1)},
             out0(node));
    return Error::success();
  }
  auto part = [&](size_t b, size_t e) {
    bool batch = std::any_of(x->dims.begin() + long(b), x->dims.begin() + long(std::min(e, x->dims.size())), ir::isBatchDim);
    int64_t p = product(x->dims, b, e);
    return batch ? ir::batchDim(p) : p;
  };
  auto r = reshapeTo(ctx, node, *x, {part(0, size_t(axis)), part(size_t(axis), x->dims.size())}, out0(node));
  return r ? Error::success() : r.takeError();
}

Error transpose(Context &ctx, const Node &node) {
  if (const Known *k = node.known(0); k && k->data.dims.size() == 2 && !k->dependsOnBatch() &&
                                       node.attrInts("perm").value_or(std::vector<int64_t>{1, 0}) ==
                                           std::vector<int64_t>{1, 0}) {
    // A known matrix transposed (a weight an exporter transposes for MatMul): folded.
    Known out = *k;
    int64_t rows = k->data.dims[0], cols = k->data.dims[1];
    out.data.dims = {cols, rows};
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c) {
        if (k->data.isFloat()) out.data.floats[size_t(c * rows + r)] = k->data.floats[size_t(r * cols + c)];
        else out.data.ints[size_t(c * rows + r)] = k->data.ints[size_t(r * cols + c)];
      }
    ctx.bindKnown(out0(node), std::move(out));
    return Error::success();
  }
  auto x = node.tensor(0);
  if (!x) return x.takeError();
  std::vector<int64_t> perm;
  for (int64_t i = x->rank() - 1; i >= 0; --i) perm.push_back(i);
  perm = node.attrInts("perm").value_or(perm);
  if (int64_t(perm.size()) != x->rank()) return node.fail("its perm does not list every dimension");
  std::vector<int64_t> dims;
  for (int64_t p : perm) {
    if (p < 0 || p >= x->rank()) return node.fail("its perm holds " + std::to_string(p));
    dims.push_back(x->dims[size_t(p)]);
  }
  ctx.emit(node, node.op(), x->var, call("transpose", {intList(perm)}), {x->var}, x->dtype, dims, out0(node));
  return Error::success();
}

// Cast: folded for known values; of a tensor, only to its own type.
Error cast(Context &ctx, const Node &node) {
  int32_t to = int32_t(node.attrInt("to", 0));
  if (const Known *k = node.known(0)) {
    Known out = *k;
    out.data.elemType = to;
    bool toFloat = out.data.isFloat();
    if (toFloat && !k->data.isFloat()) out.data.floats.assign(k->data.ints.begin(), k->data.ints.end()), out.data.ints.clear();
    if (!toFloat && k->data.isFloat()) {
      out.data.ints.clear();
      for (double v : k->data.floats) out.data.ints.push_back(int64_t(v));
      out.data.floats.clear();
    }
    ctx.bindKnown(out0(node), std::move(out));
    return Error::success();
  }
  auto x = node.tensor(0);
  if (!x) return x.takeError();
  auto want = dtypeOf(to);
  if (want == x->dtype) {
    ctx.bindTensor(out0(node), *x);
    return Error::success();
  }
  return node.fail("casting a computed tensor to " + elemTypeName(to) + " is not expressible");
}

} // namespace

void addShapeTranslators(TranslatorTable &t) {
  t["Constant"] = {{"value", "value_float", "value_floats", "value_int", "value_ints"}, constant};
  t["Shape"] = {{"start", "end"}, shape};
  t["Size"] = {{}, size};
  t["Squeeze"] = {{"axes"}, squeeze};
  t["Unsqueeze"] = {{"axes"}, squeeze};
  t["Concat"] = {{"axis"}, concat};
  t["Reshape"] = {{"allowzero"}, reshape};
  t["Flatten"] = {{"axis"}, flatten};
  t["Transpose"] = {{"perm"}, transpose};
  t["Cast"] = {{"to"}, cast};
}

} // namespace dtnn::onnximport
