#include "backends/jit/ScalarOps.h"

#include "ir/ops/FusedActivation.h"

#include <llvm/IR/Intrinsics.h>

namespace dtnn::jit {

namespace {

using llvm::Value;

struct Emitter {
  llvm::IRBuilder<> &b;
  llvm::Module &m;
  llvm::Type *t;

  Value *c(double v) const { return llvm::ConstantFP::get(t, v); }
  Value *gt(Value *x, double v) const { return b.CreateFCmpOGT(x, c(v)); }
  Value *lt(Value *x, double v) const { return b.CreateFCmpOLT(x, c(v)); }
  // std::max(x, v) and std::min(x, v) as the reference writes them.
  Value *maxOf(Value *x, double v) const { return b.CreateSelect(lt(x, v), c(v), x); }
  Value *minOf(Value *x, double v) const { return b.CreateSelect(gt(x, v), c(v), x); }
  Value *call(const char *f32Name, const char *f64Name, Value *x) const {
    bool f64 = t->isDoubleTy();
    llvm::FunctionCallee f = m.getOrInsertFunction(f64 ? f64Name : f32Name, t, t);
    return b.CreateCall(f, {x});
  }
  Value *exp(Value *x) const {
    return b.CreateUnaryIntrinsic(llvm::Intrinsic::exp, x);
  }
  Value *sigmoid(Value *x) const { return b.CreateFDiv(c(1), b.CreateFAdd(c(1), exp(b.CreateFNeg(x)))); }
  Value *relu(Value *x) const { return b.CreateSelect(gt(x, 0), x, c(0)); }
  Value *relu6(Value *x) const { return minOf(maxOf(x, 0), 6); }
  Value *tanh(Value *x) const { return call("tanhf", "tanh", x); }
  // min(max(x + 3, 0), 6)
  Value *clip3(Value *x) const { return minOf(maxOf(b.CreateFAdd(x, c(3)), 0), 6); }

  // The fused activation `act` of a binary op applied to y.
  Value *activation(const std::string &act, Value *y) const {
    if (act == "relu") return relu(y);
    if (act == "relu6") return relu6(y);
    if (act == "sigmoid") return sigmoid(y);
    if (act == "tanh") return tanh(y);
    return y;
  }

  Value *emit(const ir::Op &op, const std::vector<Value *> &in) const {
    const std::string &n = op.name();
    Value *x = in[0];
    if (n == "add" || n == "sub" || n == "mul" || n == "div") {
      Value *y = n == "add"   ? b.CreateFAdd(in[0], in[1])
                 : n == "sub" ? b.CreateFSub(in[0], in[1])
                 : n == "mul" ? b.CreateFMul(in[0], in[1])
                              : b.CreateFDiv(in[0], in[1]);
      return activation(ir::fusedActivationOf(op), y);
    }
    if (n == "sum_like") return x;
    if (n == "scale") return b.CreateFMul(x, c(op.attrs().getFloat("factor")));
    if (n == "relu") return relu(x);
    if (n == "relu6") return relu6(x);
    if (n == "sigmoid") return sigmoid(x);
    if (n == "tanh") return tanh(x);
    if (n == "silu") return b.CreateFMul(x, sigmoid(x));
    if (n == "leaky_relu")
      return b.CreateSelect(gt(x, 0), x, b.CreateFMul(c(op.attrs().getFloat("alpha")), x));
    if (n == "hard_sigmoid") return b.CreateFDiv(clip3(x), c(6));
    if (n == "hard_swish") return b.CreateFDiv(b.CreateFMul(x, clip3(x)), c(6));
    // Backward ops: (dy, x) or (dy, y).
    Value *dy = in[0], *v = in[1];
    if (n == "relu_backward") return b.CreateSelect(gt(v, 0), dy, c(0));
    if (n == "relu6_backward")
      return b.CreateSelect(b.CreateAnd(gt(v, 0), lt(v, 6)), dy, c(0));
    if (n == "leaky_relu_backward")
      return b.CreateSelect(gt(v, 0), dy, b.CreateFMul(c(op.attrs().getFloat("alpha")), dy));
    if (n == "sigmoid_backward")
      return b.CreateFMul(b.CreateFMul(dy, v), b.CreateFSub(c(1), v));
    if (n == "tanh_backward") return b.CreateFMul(dy, b.CreateFSub(c(1), b.CreateFMul(v, v)));
    if (n == "silu_backward") {
      Value *s = sigmoid(v);
      Value *inner = b.CreateFAdd(c(1), b.CreateFMul(v, b.CreateFSub(c(1), s)));
      return b.CreateFMul(b.CreateFMul(dy, s), inner);
    }
    if (n == "hard_sigmoid_backward")
      return b.CreateSelect(b.CreateAnd(gt(v, -3), lt(v, 3)), b.CreateFDiv(dy, c(6)), c(0));
    if (n == "hard_swish_backward") {
      Value *mid = b.CreateFMul(dy, b.CreateFAdd(b.CreateFDiv(v, c(3)), c(0.5)));
      Value *upper = b.CreateSelect(b.CreateFCmpOLE(v, c(3)), mid, dy);
      return b.CreateSelect(lt(v, -3), c(0), upper);
    }
    return nullptr;
  }
};

} // namespace

Value *emitScalarOp(llvm::IRBuilder<> &b, llvm::Module &m, const ir::Op &op,
                    const std::vector<Value *> &in, llvm::Type *t) {
  return Emitter{b, m, t}.emit(op, in);
}

} // namespace dtnn::jit
