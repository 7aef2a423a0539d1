// Taking parts of values and spreading them: Gather, Slice and Expand of tensors (contiguous
// ranges as slice, an expansion as broadcast_like), and Gather, Slice, ConstantOfShape, Equal
// and Where on known values (folded: the index arithmetic exporters write around an expand).
#include "frontend/onnx/ops/Translators.h"

#include <limits>

namespace dtnn::onnximport {

namespace {

const std::string &out0(const Node &node) { return node.proto().output(0); }

// Element i of a known value: its number and its multiple of the batch size (0: none).
struct Element {
  double value = 0;
  int64_t batch = 0;
};
Element element(const Known &k, size_t i) {
  size_t j = k.data.count() == 1 ? 0 : i;
  Element e{k.data.isFloat() ? k.data.floats[j] : double(k.data.ints[j]), 0};
  if (k.dependsOnBatch()) e.batch = k.batch[j];
  return e;
}

// A known value of `elemType` and `dims` made of `elements`.
Known makeKnown(int32_t elemType, std::vector<int64_t> dims, const std::vector<Element> &elements) {
  Known k;
  k.data.elemType = elemType;
  k.data.dims = std::move(dims);
  bool batch = false;
  for (const Element &e : elements) {
    if (k.data.isFloat()) k.data.floats.push_back(e.value);
    else k.data.ints.push_back(int64_t(e.value));
    batch = batch || e.batch != 0;
  }
  if (batch)
    for (const Element &e : elements) k.batch.push_back(e.batch);
  return k;
}

// The element count and dimensions of an elementwise fold of known values (equal shapes, or
// single elements beside them).
Expected<std::vector<int64_t>> foldDims(const Node &node, const std::vector<const Known *> &ks) {
  const Known *big = ks[0];
  for (const Known *k : ks)
    if (k->data.count() > big->data.count()) big = k;
  for (const Known *k : ks)
    if (k->data.count() != 1 && k->data.dims != big->data.dims)
      return node.fail("folding needs operands of one shape, or single elements");
  return big->data.dims;
}

// A slice's range along a dimension of size `dim`, ONNX's clamping (step 1).
std::pair<int64_t, int64_t> clampRange(int64_t begin, int64_t end, int64_t dim) {
  auto clamp = [dim](int64_t v) { return std::clamp<int64_t>(v < 0 ? v + dim : v, 0, dim); };
  return {clamp(begin), clamp(end)};
}

// Writes `x` sliced to [begin, end) along `axis`, or x when that is all of it.
Tensor sliceAxis(Context &ctx, const Node &node, const Tensor &x, int64_t axis, int64_t begin, int64_t end,
                 const std::string &output) {
  if (begin == 0 && end == x.dims[size_t(axis)]) {
    ctx.bindTensor(output, x);
    return x;
  }
  std::vector<int64_t> dims = x.dims;
  dims[size_t(axis)] = end - begin;
  return ctx.emit(node, node.op(), x.var,
                  call("slice", {"axis=" + std::to_string(axis), "begin=" + std::to_string(begin),
                                 "end=" + std::to_string(end)}),
                  {x.var}, x.dtype, dims, output);
}

// Gather: by known indices from a known 1-d value (a shape), or a contiguous range (one index:
// that index, its axis dropped) of a tensor.
Error gather(Context &ctx, const Node &node) {
  const Known *table = node.known(0);
  if (table && !node.known(1)) {
    // Rows of a known [V, D] table by computed indices: an embedding layer owning the table.
    if (!table->data.isFloat() || table->data.dims.size() != 2 || node.attrInt("axis", 0) != 0)
      return node.fail("gathering computed indices from a known value is an embedding only of a [V, D] "
                       "float table along axis 0");
    auto idx = node.tensor(1);
    if (!idx) return idx.takeError();
    if (idx->dtype != ir::DType::I32)
      return node.fail("its indices are " + std::string(ir::dtypeName(idx->dtype)) +
                       "; dtnn's embedding looks up i32 indices");
    std::string name = ctx.layerName(table->initializer, node);
    ctx.addWeight(name + ".weight", table->data.dims, table->data);
    std::vector<int64_t> dims = idx->dims;
    dims.push_back(table->data.dims[1]);
    ctx.emit(node, node.op(), idx->var,
             call("embedding", {std::to_string(table->data.dims[0]), std::to_string(table->data.dims[1]),
                                "name=\"" + name + "\""}),
             {idx->var}, ir::DType::F32, dims, out0(node));
    return Error::success();
  }
  auto idx = node.ints(1, "indices");
  if (!idx) return idx.takeError();
  const std::vector<int64_t> &idxDims = node.known(1)->data.dims;
  const Known *data = node.known(0);
  if (data) {
    if (data->data.dims.size() != 1 || node.attrInt("axis", 0) != 0)
      return node.fail("gathering from a known value of rank " + std::to_string(data->data.dims.size()) +
                       " is not expressible; known values are gathered along axis 0 of a 1-d one (a shape)");
    int64_t n = data->data.dims[0];
    std::vector<Element> picked;
    for (int64_t i : *idx) {
      if (i < -n || i >= n) return node.fail("index " + std::to_string(i) + " is out of range");
      picked.push_back(element(*data, size_t(i < 0 ? i + n : i)));
    }
    ctx.bindKnown(out0(node), makeKnown(data->data.elemType, idxDims, picked));
    return Error::success();
  }
  auto x = node.tensor(0);
  if (!x) return x.takeError();
  auto axis = normalizeAxis(node, node.attrInt("axis", 0), x->rank());
  if (!axis) return axis.takeError();
  int64_t dim = x->dims[size_t(*axis)];
  if (ir::isBatchDim(dim)) return node.fail("gathering along the batch axis is not expressible");
  if (idx->empty() || idxDims.size() > 1)
    return node.fail("gathering " + std::to_string(idxDims.size()) + "-d indices is not expressible; "
                     "dtnn takes a contiguous range of a tensor with slice");
  std::vector<int64_t> at;
  for (int64_t i : *idx) {
    if (i < -dim || i >= dim) return node.fail("index " + std::to_string(i) + " is out of range");
    at.push_back(i < 0 ? i + dim : i);
  }
  for (size_t i = 1; i < at.size(); ++i)
    if (at[i] != at[0] + int64_t(i))
      return node.fail("its indices are not a contiguous increasing range; dtnn takes a range of a "
                       "tensor with slice");
  if (!idxDims.empty()) {
    sliceAxis(ctx, node, *x, *axis, at[0], at.back() + 1, out0(node));
    return Error::success();
  }
  // One index: the slice, its axis dropped.
  Tensor part = sliceAxis(ctx, node, *x, *axis, at[0], at[0] + 1, out0(node) + "#slice");
  std::vector<int64_t> dims = part.dims;
  dims.erase(dims.begin() + *axis);
  auto r = reshapeTo(ctx, node, part, dims, out0(node));
  return r ? Error::success() : r.takeError();
}

// Slice's starts, ends, axes and steps: attributes before opset 10, inputs from it.
struct SliceSpec {
  std::vector<int64_t> starts, ends, axes, steps;
};
Expected<SliceSpec> sliceSpec(const Node &node, int64_t rank) {
  SliceSpec s;
  if (node.opset() < 10) {
    s.starts = node.attrInts("starts").value_or(std::vector<int64_t>{});
    s.ends = node.attrInts("ends").value_or(std::vector<int64_t>{});
    s.axes = node.attrInts("axes").value_or(std::vector<int64_t>{});
  } else {
    const char *what[] = {"starts", "ends", "axes", "steps"};
    std::vector<int64_t> *into[] = {&s.starts, &s.ends, &s.axes, &s.steps};
    for (size_t i = 1; i < 5; ++i) {
      if (!node.has(i)) continue;
      auto v = node.ints(i, what[i - 1]);
      if (!v) return v.takeError();
      *into[i - 1] = *v;
    }
  }
  if (s.axes.empty())
    for (size_t i = 0; i < s.starts.size(); ++i) s.axes.push_back(int64_t(i));
  if (s.steps.empty()) s.steps.assign(s.starts.size(), 1);
  if (s.ends.size() != s.starts.size() || s.axes.size() != s.starts.size() || s.steps.size() != s.starts.size())
    return node.fail("its starts, ends, axes and steps differ in length");
  for (size_t i = 0; i < s.axes.size(); ++i) {
    auto a = normalizeAxis(node, s.axes[i], rank);
    if (!a) return a.takeError();
    s.axes[i] = *a;
    if (s.steps[i] != 1)
      return node.fail("its step " + std::to_string(s.steps[i]) + " is not expressible; dtnn's slice "
                       "keeps a contiguous range (step 1)");
  }
  return s;
}

Error slice(Context &ctx, const Node &node) {
  if (const Known *k = node.known(0)) {
    if (k->data.dims.size() != 1) return node.fail("slicing a known value of rank other than 1 is not folded");
    auto s = sliceSpec(node, 1);
    if (!s) return s.takeError();
    int64_t n = k->data.dims[0], begin = 0, end = n;
    if (!s->starts.empty()) std::tie(begin, end) = clampRange(s->starts[0], s->ends[0], n);
    std::vector<Element> kept;
    for (int64_t i = begin; i < end; ++i) kept.push_back(element(*k, size_t(i)));
    ctx.bindKnown(out0(node), makeKnown(k->data.elemType, {int64_t(kept.size())}, kept));
    return Error::success();
  }
  auto x = node.tensor(0);
  if (!x) return x.takeError();
  auto s = sliceSpec(node, x->rank());
  if (!s) return s.takeError();
  Tensor y = *x;
  for (size_t i = 0; i < s->axes.size(); ++i) {
    int64_t axis = s->axes[i], dim = y.dims[size_t(axis)];
    if (ir::isBatchDim(dim)) {
      if (s->starts[i] == 0 && s->ends[i] >= std::numeric_limits<int32_t>::max()) continue;
      return node.fail("slicing the batch axis is not expressible");
    }
    auto [begin, end] = clampRange(s->starts[i], s->ends[i], dim);
    if (end <= begin) return node.fail("its range along axis " + std::to_string(axis) + " is empty");
    bool last = i + 1 == s->axes.size();
    y = sliceAxis(ctx, node, y, axis, begin, end, last ? out0(node) : out0(node) + "#" + std::to_string(i));
  }
  if (!ctx.bound(out0(node))) ctx.bindTensor(out0(node), y);
  return Error::success();
}

// Expand: x broadcast to a known shape, as broadcast_like of a tensor of that shape (one the
// source has, sliced to 1 where the shape is 1).
Error expand(Context &ctx, const Node &node) {
  const Known *shape = node.known(1);
  if (!shape || shape->data.isFloat())
    return node.fail("its shape is computed at run time; dtnn needs it known when importing");
  std::vector<int64_t> target;
  for (size_t i = 0; i < shape->data.count(); ++i) {
    Element e = element(*shape, i);
    target.push_back(e.batch ? ir::batchDim(e.batch) : int64_t(e.value));
  }
  auto x = node.tensor(0);
  if (!x) return x.takeError();
  auto dims = broadcastDims(node, x->dims, target);
  if (!dims) return dims.takeError();
  if (*dims == x->dims) {
    ctx.bindTensor(out0(node), *x);
    return Error::success();
  }
  const Tensor *like = nullptr;
  size_t bestSlices = 0;
  for (const Tensor &t : ctx.tensors()) {
    if (t.dims.size() != dims->size()) continue;
    size_t slices = 0;
    bool fits = true;
    for (size_t i = 0; i < dims->size() && fits; ++i) {
      if (t.dims[i] == (*dims)[i]) continue;
      fits = (*dims)[i] == 1 && !ir::isBatchDim(t.dims[i]);
      ++slices;
    }
    if (fits && (!like || slices < bestSlices)) like = &t, bestSlices = slices;
  }
  if (!like)
    return node.fail("expanding to [" + dimsText(*dims) + "] needs a tensor of that shape, and the "
                     "model computes none; dtnn expands with broadcast_like");
  std::string expr = like->var;
  for (size_t i = 0; i < dims->size(); ++i)
    if (like->dims[i] != (*dims)[i])
      expr = "slice(" + expr + ", axis=" + std::to_string(i) + ", begin=0, end=1)";
  ctx.emit(node, node.op(), x->var, "broadcast_like(" + expr + ")", {x->var, like->var}, x->dtype, *dims,
           out0(node));
  return Error::success();
}

// The most elements a folded value may have.
constexpr int64_t kMaxFolded = int64_t(1) << 24;

Error constantOfShape(Context &ctx, const Node &node) {
  auto dims = node.ints(0, "shape");
  if (!dims) return dims.takeError();
  int64_t n = product(*dims);
  if (n > kMaxFolded) return node.fail("its " + std::to_string(n) + " elements are too many to fold");
  Element fill{0, 0};
  int32_t elemType = onnx::TensorProto::FLOAT;
  if (const auto *a = node.attr("value")) {
    auto d = readTensor(a->t());
    if (!d) return node.fail(d.error().message());
    if (d->count() != 1) return node.fail("its value is not one element");
    elemType = d->elemType;
    fill.value = d->isFloat() ? d->floats[0] : double(d->ints[0]);
  }
  ctx.bindKnown(out0(node), makeKnown(elemType, *dims, std::vector<Element>(size_t(n), fill)));
  return Error::success();
}

// Equal and Where of known values, elementwise. A multiple of the batch size equals no number
// below 1.
Error equal(Context &ctx, const Node &node) {
  const Known *a = node.known(0), *b = node.known(1);
  if (!a || !b) return node.fail("comparing tensors is not expressible; dtnn folds Equal of known values only");
  auto dims = foldDims(node, {a, b});
  if (!dims) return dims.takeError();
  std::vector<Element> out;
  for (size_t i = 0, n = size_t(product(*dims)); i < n; ++i) {
    Element x = element(*a, i), y = element(*b, i);
    bool same;
    if (!x.batch && !y.batch) same = x.value == y.value;
    else if (x.batch && y.batch) same = x.batch == y.batch;
    else if ((x.batch ? y : x).value < 1) same = false;
    else return node.fail("it compares a multiple of the batch size with a number; the answer depends on the batch");
    out.push_back({same ? 1.0 : 0.0, 0});
  }
  ctx.bindKnown(out0(node), makeKnown(onnx::TensorProto::BOOL, *dims, out));
  return Error::success();
}

Error where(Context &ctx, const Node &node) {
  const Known *c = node.known(0), *a = node.known(1), *b = node.known(2);
  if (!c || !a || !b) return node.fail("selecting between tensors is not expressible; dtnn folds Where of known values only");
  auto dims = foldDims(node, {c, a, b});
  if (!dims) return dims.takeError();
  std::vector<Element> out;
  for (size_t i = 0, n = size_t(product(*dims)); i < n; ++i)
    out.push_back(element(*c, i).value != 0 ? element(*a, i) : element(*b, i));
  ctx.bindKnown(out0(node), makeKnown(a->data.elemType, *dims, out));
  return Error::success();
}

} // namespace

void addIndexingTranslators(TranslatorTable &t) {
  t["Gather"] = {{"axis"}, gather};
  t["Slice"] = {{"starts", "ends", "axes"}, slice};
  t["Expand"] = {{}, expand};
  t["ConstantOfShape"] = {{"value"}, constantOfShape};
  t["Equal"] = {{}, equal};
  t["Where"] = {{}, where};
}

} // namespace dtnn::onnximport
