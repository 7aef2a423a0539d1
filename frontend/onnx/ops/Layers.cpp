// The layers: Conv, Gemm, MatMul, BatchNormalization, LayerNormalization, MaxPool, AveragePool,
// GlobalAveragePool. A layer whose weights are initializers is written as a layer call that
// owns them (conv2d(64, kernel=3, name="layer1_0_conv1")); one whose weights are computed or
// are graph inputs as the op applied to those tensors.
#include "frontend/onnx/ops/Translators.h"

#include <cmath>

namespace dtnn::onnximport {

namespace {

// The spatial output size of a window of `k` with dilation `d`, stride `s` and padding.
int64_t windowOut(int64_t in, int64_t k, int64_t s, int64_t pb, int64_t pe, int64_t d, bool ceil) {
  int64_t span = in + pb + pe - ((k - 1) * d + 1);
  if (span < 0) return 0;
  int64_t out = (ceil ? (span + s - 1) / s : span / s) + 1;
  if (ceil && (out - 1) * s >= in + pb) --out; // the last window starts inside the input
  return out;
}

struct Window {
  std::vector<int64_t> kernel, stride, pad, dilation;
  std::vector<int64_t> out; // spatial output dims
};

// Reads kernel_shape (else `kernel`), strides, pads, dilations and auto_pad for a 2-d window
// over x [N, C, H, W].
Expected<Window> window(const Node &node, const Tensor &x, std::vector<int64_t> kernel, bool ceil) {
  if (x.rank() != 4)
    return node.fail("its input has rank " + std::to_string(x.rank()) + "; dtnn's " +
                     (node.op() == "Conv" ? "conv2d" : "pooling") + " is 2-d, over [N, C, H, W]");
  Window w;
  w.kernel = node.attrInts("kernel_shape").value_or(kernel);
  w.stride = node.attrInts("strides").value_or(std::vector<int64_t>{1, 1});
  w.dilation = node.attrInts("dilations").value_or(std::vector<int64_t>{1, 1});
  w.pad = node.attrInts("pads").value_or(std::vector<int64_t>{0, 0, 0, 0});
  if (w.kernel.size() != 2 || w.stride.size() != 2 || w.dilation.size() != 2 || w.pad.size() != 4)
    return node.fail("its kernel, strides, dilations or pads do not describe a 2-d window");
  std::string autoPad = node.attrString("auto_pad", "NOTSET");
  for (int i = 0; i < 2; ++i) {
    int64_t in = x.dims[2 + i];
    if (autoPad == "VALID") {
      w.pad[i] = w.pad[i + 2] = 0;
    } else if (autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER") {
      int64_t out = (in + w.stride[i] - 1) / w.stride[i];
      int64_t total = std::max<int64_t>(0, (out - 1) * w.stride[i] + (w.kernel[i] - 1) * w.dilation[i] + 1 - in);
      int64_t small = total / 2, big = total - small;
      w.pad[i] = autoPad == "SAME_UPPER" ? small : big;
      w.pad[i + 2] = autoPad == "SAME_UPPER" ? big : small;
    } else if (autoPad != "NOTSET") {
      return node.fail("auto_pad '" + autoPad + "' is not one of NOTSET, SAME_UPPER, SAME_LOWER, VALID");
    }
    w.out.push_back(windowOut(in, w.kernel[i], w.stride[i], w.pad[i], w.pad[i + 2], w.dilation[i], ceil));
  }
  return w;
}

// The window's arguments of a dtnn call, defaults left out.
std::vector<std::string> windowArgs(const Window &w, bool withDilation) {
  std::vector<std::string> args;
  if (w.stride != std::vector<int64_t>{1, 1}) args.push_back("stride=" + intList(w.stride));
  if (w.pad != std::vector<int64_t>{0, 0, 0, 0}) args.push_back("pad=" + intList(w.pad));
  if (withDilation && w.dilation != std::vector<int64_t>{1, 1})
    args.push_back("dilation=" + intList(w.dilation));
  return args;
}

// The transpose of a [K, M] matrix, as [M, K].
TensorData transposed(const TensorData &m) {
  TensorData t = m;
  int64_t rows = m.dims[0], cols = m.dims[1];
  t.dims = {cols, rows};
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) t.floats[c * rows + r] = m.floats[r * cols + c];
  return t;
}

bool knownFloat(const Known *k) { return k && k->data.isFloat() && !k->dependsOnBatch(); }

Error conv(Context &ctx, const Node &node) {
  auto x = node.tensor(0);
  if (!x) return x.takeError();
  const Known *kw = node.known(1);
  std::vector<int64_t> wdims;
  if (kw) wdims = kw->data.dims;
  else {
    auto w = node.tensor(1);
    if (!w) return w.takeError();
    wdims = w->dims;
  }
  if (wdims.size() != 4) return node.fail("its weight is not [K, C/groups, KH, KW]");
  auto win = window(node, *x, {wdims[2], wdims[3]}, false);
  if (!win) return win.takeError();
  int64_t groups = node.attrInt("group", 1);
  std::vector<std::string> args = windowArgs(*win, true);
  if (groups != 1) args.push_back("groups=" + std::to_string(groups));
  std::vector<int64_t> dims = {x->dims[0], wdims[0], win->out[0], win->out[1]};
  const Known *kb = node.has(2) ? node.known(2) : nullptr;
  if (knownFloat(kw) && (!node.has(2) || knownFloat(kb))) {
    std::string name = ctx.layerName(kw->initializer, node);
    std::vector<std::string> layer = {std::to_string(wdims[0]), "kernel=" + intList(win->kernel)};
    layer.insert(layer.end(), args.begin(), args.end());
    if (!node.has(2)) layer.push_back("bias=false");
    layer.push_back("name=\"" + name + "\"");
    ctx.addWeight(name + ".weight", wdims, kw->data);
    if (kb) ctx.addWeight(name + ".bias", {wdims[0]}, kb->data);
    ctx.emit(node, node.op(), x->var, call("conv2d", layer), {x->var}, x->dtype, dims,
             node.proto().output(0));
    return Error::success();
  }
  auto w = node.tensor(1);
  if (!w) return w.takeError();
  std::vector<std::string> ops = {w->var};
  std::vector<std::string> uses = {x->var, w->var};
  if (node.has(2)) {
    auto b = node.tensor(2);
    if (!b) return b.takeError();
    ops.push_back(b->var);
    uses.push_back(b->var);
  }
  ops.insert(ops.end(), args.begin(), args.end());
  ctx.emit(node, node.op(), x->var, call("conv2d", ops), uses, x->dtype, dims, node.proto().output(0));
  return Error::success();
}

Error pool(Context &ctx, const Node &node) {
  if (Error e = onlyFirstOutput(node, "dtnn's maxpool gives no indices")) return e;
  auto x = node.tensor(0);
  if (!x) return x.takeError();
  bool ceil = node.attrInt("ceil_mode", 0) != 0;
  auto win = window(node, *x, {}, ceil);
  if (!win) return win.takeError();
  if (win->dilation != std::vector<int64_t>{1, 1})
    return node.fail("dilated pooling is not expressible; dtnn's pools have dilation 1");
  std::vector<std::string> args = {intList(win->kernel), "stride=" + intList(win->stride)};
  if (win->pad != std::vector<int64_t>{0, 0, 0, 0}) args.push_back("pad=" + intList(win->pad));
  if (ceil) args.push_back("ceil=true");
  bool avg = node.op() == "AveragePool";
  if (avg && node.attrInt("count_include_pad", 0) == 0) args.push_back("count_pad=false");
  ctx.emit(node, node.op(), x->var, call(avg ? "avgpool" : "maxpool", args), {x->var}, x->dtype,
           {x->dims[0], x->dims[1], win->out[0], win->out[1]}, node.proto().output(0));
  return Error::success();
}

Error globalAvgpool(Context &ctx, const Node &node) {
  auto x = node.tensor(0);
  if (!x) return x.takeError();
  if (x->rank() != 4) return node.fail("its input is not [N, C, H, W]; dtnn's global_avgpool is 2-d");
  ctx.emit(node, node.op(), x->var, "global_avgpool", {x->var}, x->dtype,
           {x->dims[0], x->dims[1], 1, 1}, node.proto().output(0));
  return Error::success();
}

// Gemm with a known B: a dense layer; otherwise matmul, scaled, plus C.
Error gemm(Context &ctx, const Node &node) {
  auto a = node.tensor(0);
  if (!a) return a.takeError();
  if (a->rank() != 2) return node.fail("its A is not a matrix");
  if (node.attrInt("transA", 0)) return node.fail("transA is not expressible as a dense layer");
  double alpha = node.attrFloat("alpha", 1), beta = node.attrFloat("beta", 1);
  bool transB = node.attrInt("transB", 0) != 0;
  const Known *kb = node.known(1), *kc = node.has(2) ? node.known(2) : nullptr;
  if (!knownFloat(kb) || kb->data.dims.size() != 2 || (node.has(2) && !knownFloat(kc)))
    return node.fail("its B and C are not initializers; dtnn writes Gemm as a dense layer");
  TensorData w = transB ? kb->data : transposed(kb->data);
  int64_t units = w.dims[0];
  for (double &v : w.floats) v *= alpha;
  std::string name = ctx.layerName(kb->initializer, node);
  std::vector<std::string> args = {std::to_string(units)};
  if (kc) {
    TensorData bias = kc->data;
    if (bias.count() != size_t(units) && bias.count() != 1)
      return node.fail("its C of " + std::to_string(bias.count()) + " elements is not a bias of " +
                       std::to_string(units));
    bias.floats.resize(size_t(units), bias.floats[0]);
    for (double &v : bias.floats) v *= beta;
    ctx.addWeight(name + ".bias", {units}, bias);
  } else {
    args.push_back("bias=false");
  }
  args.push_back("name=\"" + name + "\"");
  ctx.addWeight(name + ".weight", w.dims, w);
  ctx.emit(node, node.op(), a->var, call("dense", args), {a->var}, a->dtype, {a->dims[0], units},
           node.proto().output(0));
  return Error::success();
}

// MatMul, and MatMul with a bias (the fused MatMul + Add of frontend/onnx/Patterns.h).
Error matmul(Context &ctx, const Node &node) {
  auto a = node.tensor(0);
  if (!a) return a.takeError();
  const Known *kb = node.known(1), *kbias = node.has(2) ? node.known(2) : nullptr;
  if (knownFloat(kb) && kb->data.dims.size() == 2 && a->rank() >= 2) {
    // x [.., K] times a known [K, M]: a dense layer, its weight [M, K]; named after the bias
    // when the weight's name is the exporter's own.
    TensorData w = transposed(kb->data);
    bool exporterName = kb->initializer.empty() || kb->initializer.rfind("onnx::", 0) == 0;
    std::string name = ctx.layerName(exporterName && kbias ? kbias->initializer : kb->initializer, node);
    ctx.addWeight(name + ".weight", w.dims, w);
    std::vector<std::string> args = {std::to_string(w.dims[0])};
    if (kbias) ctx.addWeight(name + ".bias", {w.dims[0]}, kbias->data);
    else args.push_back("bias=false");
    args.push_back("name=\"" + name + "\"");
    std::vector<int64_t> dims = a->dims;
    dims.back() = w.dims[0];
    ctx.emit(node, node.op(), a->var, call("dense", args), {a->var}, a->dtype, dims, node.proto().output(0));
    return Error::success();
  }
  if (node.has(2)) return node.fail("its fused bias needs a known weight");
  auto b = node.tensor(1);
  if (!b) return b.takeError();
  if (a->rank() < 2 || b->rank() < 2)
    return node.fail("a 1-d operand is not expressible; dtnn's matmul multiplies matrices");
  std::vector<int64_t> batchA(a->dims.begin(), a->dims.end() - 2), batchB(b->dims.begin(), b->dims.end() - 2);
  auto batch = broadcastDims(node, batchA, batchB);
  if (!batch) return batch.takeError();
  if (a->dims.back() != b->dims[b->dims.size() - 2])
    return node.fail("[" + dimsText(a->dims) + "] times [" + dimsText(b->dims) + "] do not agree");
  std::vector<int64_t> dims = *batch;
  dims.push_back(a->dims[a->dims.size() - 2]);
  dims.push_back(b->dims.back());
  ctx.emit(node, node.op(), a->var, call("matmul", {b->var}), {a->var, b->var}, a->dtype, dims,
           node.proto().output(0));
  return Error::success();
}

// The shortest decimal m with float(1 - m) == f: PyTorch's momentum 0.01 from ONNX's 0.99
// (stored as the float 0.99000001), where 1 - f would be 0.0099999905.
double complementOf(float f) {
  for (int digits = 1; digits <= 9; ++digits) {
    double scale = std::pow(10.0, digits), m = std::round((1.0 - double(f)) * scale) / scale;
    if (float(1.0 - m) == f) return m;
  }
  return 1.0 - double(f);
}

// BatchNormalization; in training mode (training_mode = 1) too, whose output is what dtnn's
// batchnorm computes when training (batch statistics; the running ones move by the momentum),
// and which --predict runs with the running statistics.
Error batchnorm(Context &ctx, const Node &node) {
  if (Error e = onlyFirstOutput(node, "dtnn keeps batch norm's running statistics as its state"))
    return e;
  auto x = node.tensor(0);
  if (!x) return x.takeError();
  if (x->rank() < 2) return node.fail("its input has no channel dimension");
  std::vector<std::string> args;
  double eps = node.attrFloat("epsilon", 1e-5), momentum = complementOf(float(node.attrFloat("momentum", 0.9)));
  if (std::fabs(eps - 1e-5) > 1e-12) args.push_back("eps=" + number(eps));
  if (std::fabs(momentum - 0.1) > 1e-7) args.push_back("momentum=" + number(momentum));
  bool allKnown = true;
  for (size_t i = 1; i < 5; ++i) allKnown = allKnown && knownFloat(node.known(i));
  if (allKnown) {
    std::string name = ctx.layerName(node.known(1)->initializer, node);
    int64_t c = x->dims[1];
    const char *parts[] = {"gamma", "beta", "running_mean", "running_var"};
    for (size_t i = 1; i < 5; ++i) ctx.addWeight(name + "." + parts[i - 1], {c}, node.known(i)->data);
    args.push_back("name=\"" + name + "\"");
    ctx.emit(node, node.op(), x->var, call("batchnorm", args), {x->var}, x->dtype, x->dims,
             node.proto().output(0));
    return Error::success();
  }
  std::vector<std::string> ops, uses = {x->var};
  for (size_t i = 1; i < 5; ++i) {
    auto t = node.tensor(i);
    if (!t) return t.takeError();
    ops.push_back(t->var);
    uses.push_back(t->var);
  }
  ops.insert(ops.end(), args.begin(), args.end());
  ctx.emit(node, node.op(), x->var, call("batchnorm", ops), uses, x->dtype, x->dims,
           node.proto().output(0));
  return Error::success();
}

// LayerNormalization over the dimensions from axis on: the layernorm layer when its scale and
// bias are known, else layernorm without affine parameters times the scale plus the bias.
// LayerNormalization's optional outputs Mean and InvStdDev, over the normalized axes (kept).
void layernormStatistics(Context &ctx, const Node &node, const Tensor &x, int64_t axis, double eps) {
  std::vector<int64_t> axes, dims = x.dims;
  for (int64_t i = axis; i < x.rank(); ++i) axes.push_back(i), dims[size_t(i)] = 1;
  std::string over = intList(axes) + ", keepdim=true";
  if (node.outputUsed(1))
    ctx.emit(node, "mean", "", "mean(" + x.var + ", " + over + ")", {x.var}, x.dtype, dims, node.proto().output(1));
  if (node.outputUsed(2))
    ctx.emit(node, "inv_std_dev", "", "rsqrt(var(" + x.var + ", " + over + ", correction=0) + " + number(eps) + ")",
             {x.var}, x.dtype, dims, node.proto().output(2));
}

Error layernorm(Context &ctx, const Node &node) {
  auto x = node.tensor(0);
  if (!x) return x.takeError();
  auto axis = normalizeAxis(node, node.attrInt("axis", -1), x->rank());
  if (!axis) return axis.takeError();
  double eps = node.attrFloat("epsilon", 1e-5);
  layernormStatistics(ctx, node, *x, *axis, eps);
  std::vector<int64_t> inDims = x->dims;
  if (*axis == 0) {
    // Over every dimension: dtnn's layernorm normalizes each sample, so one sample of all.
    std::vector<int64_t> one = x->dims;
    one.insert(one.begin(), 1);
    auto r = reshapeTo(ctx, node, *x, one, node.proto().output(0) + "#sample");
    if (!r) return r.takeError();
    x = *r;
    axis = 1;
  }
  std::vector<int64_t> shape(x->dims.begin() + *axis, x->dims.end());
  if (std::any_of(shape.begin(), shape.end(), ir::isBatchDim))
    return node.fail("it normalizes over the batch axis; dtnn's layernorm normalizes each sample");
  std::vector<std::string> args;
  if (x->rank() - *axis != 1) args.push_back("axes=" + std::to_string(x->rank() - *axis));
  if (std::fabs(eps - 1e-5) > 1e-12) args.push_back("eps=" + number(eps));
  const Known *kg = node.has(1) ? node.known(1) : nullptr, *kb = node.has(2) ? node.known(2) : nullptr;
  auto fits = [&](const Known *k) { return knownFloat(k) && product(k->data.dims) == product(shape); };
  if (node.has(1) && fits(kg) && (!node.has(2) || fits(kb))) {
    std::string name = ctx.layerName(kg->initializer, node);
    TensorData beta = kb ? kb->data : TensorData{kg->data.elemType, shape, std::vector<double>(kg->data.count(), 0.0), {}};
    ctx.addWeight(name + ".gamma", shape, kg->data);
    ctx.addWeight(name + ".beta", shape, beta);
    args.push_back("name=\"" + name + "\"");
    Tensor y = ctx.emit(node, node.op(), x->var, call("layernorm", args), {x->var}, x->dtype, x->dims,
                        node.proto().output(0));
    auto r = reshapeTo(ctx, node, y, inDims, node.proto().output(0));
    return r ? Error::success() : r.takeError();
  }
  args.push_back("affine=false");
  Tensor y = ctx.emit(node, node.op(), x->var, call("layernorm", args), {x->var}, x->dtype, x->dims,
                      node.proto().output(0));
  auto back = reshapeTo(ctx, node, y, inDims, node.proto().output(0));
  if (!back) return back.takeError();
  y = *back;
  for (size_t i : {1, 2}) {
    if (!node.has(i)) continue;
    auto t = node.tensor(i);
    if (!t) return t.takeError();
    auto dims = broadcastDims(node, y.dims, t->dims);
    if (!dims) return dims.takeError();
    if (*dims != y.dims) return node.fail("its scale or bias does not broadcast to the input");
    y = ctx.emit(node, node.op(), "", y.var + (i == 1 ? " * " : " + ") + t->var, {y.var, t->var}, y.dtype,
                 y.dims, node.proto().output(0));
  }
  return Error::success();
}

} // namespace

void addLayerTranslators(TranslatorTable &t) {
  t["Conv"] = {{"auto_pad", "dilations", "group", "kernel_shape", "pads", "strides"}, conv};
  t["MaxPool"] = {{"auto_pad", "ceil_mode", "dilations", "kernel_shape", "pads", "storage_order", "strides"}, pool};
  t["AveragePool"] = {{"auto_pad", "ceil_mode", "count_include_pad", "kernel_shape", "pads", "strides"}, pool};
  t["GlobalAveragePool"] = {{}, globalAvgpool};
  t["Gemm"] = {{"alpha", "beta", "transA", "transB"}, gemm};
  t["MatMul"] = {{}, matmul};
  t["BatchNormalization"] = {{"epsilon", "momentum", "training_mode"}, batchnorm};
  t["LayerNormalization"] = {{"axis", "epsilon", "stash_type"}, layernorm};
}

} // namespace dtnn::onnximport
