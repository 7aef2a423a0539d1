// Add, Sub, Mul, Div and Pow: between tensors the ops of the same name (NumPy broadcasting in
// both), with a known number the language's tensor-and-number arithmetic, and between known
// values folded when importing (the arithmetic of exported shape computations).
#include "frontend/onnx/ops/Translators.h"

#include <cmath>

namespace dtnn::onnximport {

namespace {

double applyOp(const std::string &op, double a, double b) {
  if (op == "Add") return a + b;
  if (op == "Sub") return a - b;
  if (op == "Mul") return a * b;
  if (op == "Div") return a / b;
  return std::pow(a, b);
}

// Folds two known values, one of them a single element or both of one shape.
Error fold(Context &ctx, const Node &node, const Known &a0, const Known &b0) {
  // A multiple of the batch size times a number: the batch-dependent operand first.
  bool swap = node.op() == "Mul" && b0.dependsOnBatch() && !a0.dependsOnBatch();
  const Known &a = swap ? b0 : a0, &b = swap ? a0 : b0;
  const Known &big = a.data.count() >= b.data.count() ? a : b;
  size_t n = big.data.count();
  if (a.data.count() != n && a.data.count() != 1) return node.fail("folding needs equal shapes or a scalar");
  if (b.data.count() != n && b.data.count() != 1) return node.fail("folding needs equal shapes or a scalar");
  bool scales = node.op() == "Mul" || node.op() == "Div";
  if (b.dependsOnBatch() || (a.dependsOnBatch() && !scales) || (a.dependsOnBatch() && a.data.isFloat()))
    return node.fail("it computes with the batch size in a way dtnn cannot express");
  Known out;
  out.data.elemType = a.data.elemType;
  out.data.dims = big.data.dims;
  bool isFloat = a.data.isFloat();
  for (size_t i = 0; i < n; ++i) {
    auto at = [&](const Known &k) {
      size_t j = k.data.count() == 1 ? 0 : i;
      return k.data.isFloat() ? k.data.floats[j] : double(k.data.ints[j]);
    };
    double v = applyOp(node.op(), at(a), at(b));
    if (isFloat) {
      out.data.floats.push_back(v);
    } else {
      if (node.op() == "Div") v = std::trunc(v);
      out.data.ints.push_back(int64_t(v));
    }
    if (a.dependsOnBatch()) {
      // (k N) * m is (k m) N; (k N) / m is (k / m) N when m divides k.
      int64_t k = a.batch[a.data.count() == 1 ? 0 : i], m = int64_t(at(b));
      if (node.op() == "Div" && (m == 0 || k % m != 0))
        return node.fail("it divides " + std::to_string(k) + " times the batch size by " + std::to_string(m) +
                         ", which depends on the batch size in a way dtnn cannot express");
      out.batch.push_back(node.op() == "Div" ? k / m : k * m);
    }
  }
  ctx.bindKnown(node.proto().output(0), std::move(out));
  return Error::success();
}

Error binary(Context &ctx, const Node &node) {
  const Known *ka = node.known(0), *kb = node.known(1);
  if (ka && kb) return fold(ctx, node, *ka, *kb);
  static const std::map<std::string, std::string> symbol = {
      {"Add", "+"}, {"Sub", "-"}, {"Mul", "*"}, {"Div", "/"}};
  const std::string &op = node.op();
  if (op == "Pow") {
    if (!kb || !kb->isScalar())
      return node.fail("its exponent is a tensor; dtnn's pow takes a known number (write exp(p * log(x)))");
    auto x = node.tensor(0);
    if (!x) return x.takeError();
    ctx.emit(node, op, x->var, call("pow", {number(kb->scalar())}), {x->var}, x->dtype, x->dims,
             node.proto().output(0));
    return Error::success();
  }
  // A tensor and a known number.
  if ((ka && ka->isScalar()) || (kb && kb->isScalar())) {
    bool numberFirst = ka != nullptr;
    auto x = node.tensor(numberFirst ? 1 : 0);
    if (!x) return x.takeError();
    const Known &k = numberFirst ? *ka : *kb;
    if (x->dtype != ir::DType::F32 && x->dtype != ir::DType::F64 && x->dtype != ir::DType::BF16)
      return node.fail("arithmetic with a number needs a floating-point tensor, got " +
                       std::string(ir::dtypeName(x->dtype)));
    // The number's own rank may broadcast the tensor to a higher one.
    auto dims = broadcastDims(node, x->dims, k.data.dims);
    if (!dims) return dims.takeError();
    if (*dims != x->dims) return node.fail("a number of higher rank than the tensor is not expressible");
    std::string n = number(k.scalar());
    bool commutes = op == "Add" || op == "Mul";
    std::string expr = numberFirst && !commutes ? n + " " + symbol.at(op) + " " + x->var
                                                : x->var + " " + symbol.at(op) + " " + n;
    ctx.emit(node, op, "", expr, {x->var}, x->dtype, x->dims, node.proto().output(0));
    return Error::success();
  }
  auto a = node.tensor(0);
  if (!a) return a.takeError();
  auto b = node.tensor(1);
  if (!b) return b.takeError();
  if (a->dtype != b->dtype)
    return node.fail("its operands are " + std::string(ir::dtypeName(a->dtype)) + " and " +
                     std::string(ir::dtypeName(b->dtype)));
  auto dims = broadcastDims(node, a->dims, b->dims);
  if (!dims) return dims.takeError();
  ctx.emit(node, op, "", a->var + " " + symbol.at(op) + " " + b->var, {a->var, b->var}, a->dtype,
           *dims, node.proto().output(0));
  return Error::success();
}

} // namespace

void addArithmeticTranslators(TranslatorTable &t) {
  for (const char *op : {"Add", "Sub", "Mul", "Div", "Pow"}) t[op] = {{}, binary};
}

} // namespace dtnn::onnximport
