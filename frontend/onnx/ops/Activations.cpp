// Elementwise activations and the ops that keep their input's shape: Relu, Sigmoid, Tanh, Exp,
// Log, Sqrt, Erf, Neg, Reciprocal, LeakyRelu, HardSigmoid, HardSwish, Clip, Softmax,
// LogSoftmax, Identity, Dropout, Gelu.
#include "frontend/onnx/ops/Translators.h"

#include <cmath>
#include <limits>

namespace dtnn::onnximport {

namespace {

// A float tensor input 0, refused otherwise.
Expected<Tensor> floatInput(const Node &node) {
  auto x = node.tensor(0);
  if (!x) return x.takeError();
  if (x->dtype != ir::DType::F32 && x->dtype != ir::DType::F64 && x->dtype != ir::DType::BF16)
    return node.fail("its input is " + std::string(ir::dtypeName(x->dtype)) +
                     "; dtnn's " + node.op() + " takes floating-point tensors");
  return x;
}

Error apply(Context &ctx, const Node &node, const std::string &callText) {
  auto x = floatInput(node);
  if (!x) return x.takeError();
  ctx.emit(node, node.op(), x->var, callText, {x->var}, x->dtype, x->dims, node.proto().output(0));
  return Error::success();
}

// The ops that are one dtnn op of the same meaning.
Error unary(Context &ctx, const Node &node) {
  static const std::map<std::string, std::string> callees = {
      {"Relu", "relu"}, {"Sigmoid", "sigmoid"}, {"Tanh", "tanh"}, {"Exp", "exp"},
      {"Log", "log"},   {"Sqrt", "sqrt"},       {"Erf", "erf"},   {"HardSwish", "hard_swish"}};
  return apply(ctx, node, callees.at(node.op()));
}

Error neg(Context &ctx, const Node &node) {
  if (const Known *k = node.known(0); k && !k->dependsOnBatch()) {
    Known out = *k; // folded: the index arithmetic of expanded functions
    for (double &v : out.data.floats) v = -v;
    for (int64_t &v : out.data.ints) v = -v;
    ctx.bindKnown(node.proto().output(0), std::move(out));
    return Error::success();
  }
  auto x = floatInput(node);
  if (!x) return x.takeError();
  ctx.emit(node, node.op(), "", x->var + " * -1.0", {x->var}, x->dtype, x->dims, node.proto().output(0));
  return Error::success();
}

Error reciprocal(Context &ctx, const Node &node) {
  auto x = floatInput(node);
  if (!x) return x.takeError();
  ctx.emit(node, node.op(), "", "1.0 / " + x->var, {x->var}, x->dtype, x->dims, node.proto().output(0));
  return Error::success();
}

Error leakyRelu(Context &ctx, const Node &node) {
  return apply(ctx, node, call("leaky_relu", {number(node.attrFloat("alpha", 0.01))}));
}

Error hardSigmoid(Context &ctx, const Node &node) {
  double alpha = node.attrFloat("alpha", 0.2), beta = node.attrFloat("beta", 0.5);
  if (std::fabs(alpha - 1.0 / 6) > 1e-6 || std::fabs(beta - 0.5) > 1e-6)
    return node.fail("alpha " + number(alpha) + " and beta " + number(beta) +
                     " are not expressible; dtnn's hard_sigmoid is alpha 1/6, beta 0.5 "
                     "(PyTorch's Hardsigmoid)");
  return apply(ctx, node, "hard_sigmoid");
}

// Clip to [0, 6] or [0, inf): relu6 and relu.
Error clip(Context &ctx, const Node &node) {
  double lo = -std::numeric_limits<double>::infinity(), hi = -lo;
  if (node.opset() < 11) {
    lo = node.attrFloat("min", lo);
    hi = node.attrFloat("max", hi);
  } else {
    for (size_t i : {1, 2}) {
      if (!node.has(i)) continue;
      const Known *k = node.known(i);
      if (!k || !k->isScalar())
        return node.fail("its bound (input " + std::to_string(i) + ") is not a known number");
      (i == 1 ? lo : hi) = k->scalar();
    }
  }
  if (lo == 0 && hi == 6) return apply(ctx, node, "relu6");
  if (lo == 0 && std::isinf(hi)) return apply(ctx, node, "relu");
  return node.fail("clipping to [" + number(lo) + ", " + number(hi) +
                   "] is not expressible; dtnn clips to [0, 6] (relu6) and [0, inf) (relu)");
}

Error softmax(Context &ctx, const Node &node) {
  auto x = floatInput(node);
  if (!x) return x.takeError();
  int64_t fallback = node.opset() < 13 ? 1 : -1;
  auto axis = normalizeAxis(node, node.attrInt("axis", fallback), x->rank());
  if (!axis) return axis.takeError();
  // Before opset 13 the op flattens the dimensions from axis into one; that is one axis only
  // when axis is the last.
  if (node.opset() < 13 && *axis != x->rank() - 1)
    return node.fail("before opset 13 " + node.op() + " normalizes over all dimensions from axis " +
                     std::to_string(*axis) + " together; dtnn's softmax normalizes one axis "
                     "(export at opset 13 or later, or use the last axis)");
  std::string callee = node.op() == "Softmax" ? "softmax" : "log_softmax";
  return apply(ctx, node, call(callee, {"axis=" + std::to_string(*axis)}));
}

// Identity: the same value. An initializer under a new name (PyTorch's exporter shares one
// initializer among parameters of equal values and names each through an Identity) takes the
// new name, so that the layer reading it is named after its own parameter.
Error identity(Context &ctx, const Node &node) {
  if (!node.has(0)) return node.fail("its input is missing");
  const std::string &out = node.proto().output(0);
  const Known *k = node.known(0);
  if (k && !k->initializer.empty() && out.rfind("onnx::", 0) != 0) {
    Known renamed = *k;
    renamed.initializer = out;
    ctx.bindKnown(out, std::move(renamed));
    return Error::success();
  }
  ctx.bindAlias(out, node.proto().input(0));
  return Error::success();
}

// Gelu: the fused decomposition of frontend/onnx/Patterns.h, or the operator of opset 20.
Error gelu(Context &ctx, const Node &node) {
  std::string approx = node.attrString("approximate", "none");
  if (approx != "none" && approx != "tanh")
    return node.fail("approximate '" + approx + "' is not 'none' or 'tanh'");
  return apply(ctx, node, approx == "none" ? "gelu" : "gelu(approximate=\"tanh\")");
}

// Dropout: the identity when predicting, dropout when training.
Error dropout(Context &ctx, const Node &node) {
  if (Error e = onlyFirstOutput(node, "dtnn's dropout keeps its mask to itself")) return e;
  double rate = node.attrFloat("ratio", 0.5);
  if (node.has(1)) {
    const Known *k = node.known(1);
    if (!k || !k->isScalar()) return node.fail("its ratio is not a known number");
    rate = k->scalar();
  }
  return apply(ctx, node, call("dropout", {number(rate)}));
}

// Normalize: the fused image normalization of frontend/onnx/Patterns.h.
Error normalizeImages(Context &ctx, const Node &node) {
  auto x = node.tensor(0);
  if (!x) return x.takeError();
  if (x->dtype != ir::DType::U8) return node.fail("its input is not u8 pixels; dtnn's normalize reads u8 images");
  auto list = [&](const char *name) {
    std::string s = "[";
    const auto *a = node.attr(name);
    for (int i = 0; a && i < a->floats_size(); ++i) s += (i ? ", " : "") + number(a->floats(i));
    return s + "]";
  };
  ctx.emit(node, "normalize", x->var, call("normalize", {"mean=" + list("mean"), "std=" + list("std")}), {x->var},
           ir::DType::F32, x->dims, node.proto().output(0));
  return Error::success();
}

} // namespace

void addActivationTranslators(TranslatorTable &t) {
  for (const char *op : {"Relu", "Sigmoid", "Tanh", "Exp", "Log", "Sqrt", "Erf", "HardSwish"})
    t[op] = {{}, unary};
  t["Neg"] = {{}, neg};
  t["Reciprocal"] = {{}, reciprocal};
  t["LeakyRelu"] = {{"alpha"}, leakyRelu};
  t["HardSigmoid"] = {{"alpha", "beta"}, hardSigmoid};
  t["Clip"] = {{"min", "max"}, clip};
  t["Softmax"] = {{"axis"}, softmax};
  t["LogSoftmax"] = {{"axis"}, softmax};
  t["Identity"] = {{}, identity};
  t["Gelu"] = {{"approximate"}, gelu};
  t["Normalize"] = {{"mean", "std"}, normalizeImages};
  t["Dropout"] = {{"ratio", "seed"}, dropout};
}

} // namespace dtnn::onnximport
