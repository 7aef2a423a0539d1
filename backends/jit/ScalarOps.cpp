#include "backends/jit/ScalarOps.h"

#include "ir/ops/FusedActivation.h"

#include <llvm/IR/Intrinsics.h>

#include <limits>
#include <vector>

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
  // exp(x) in arithmetic the vectorizer widens (LLVM's exp intrinsic
  // becomes one library call per element): x = n ln2 + r with |r| <= ln2/2
  // (ln2 split in two for an exact product), e^r by its Taylor series to
  // below the type's rounding (degree 7 in f32, 13 in f64), times 2^n built
  // in the exponent bits (as 2^(n-1) * 2, so that n may reach the largest
  // exponent). Beyond the type's range the result is +inf, and 0 where it
  // would be subnormal; a NaN stays NaN.
  Value *exp(Value *x) const {
    bool f64 = t->getScalarType()->isDoubleTy();
    double hi = f64 ? 709.78 : 88.72, lo = f64 ? -707.0 : -86.5;
    Value *xc = minOf(maxOf(x, lo), hi);
    Value *n = b.CreateUnaryIntrinsic(llvm::Intrinsic::rint, b.CreateFMul(xc, c(1.4426950408889634)));
    // ln2 = ln2Hi + ln2Lo, ln2Hi with few enough bits that n * ln2Hi is exact.
    double ln2Hi = f64 ? 0.693145751953125 : 0.693359375, ln2Lo = 0.6931471805599453 - ln2Hi;
    Value *r = b.CreateFSub(b.CreateFSub(xc, b.CreateFMul(n, c(ln2Hi))), b.CreateFMul(n, c(ln2Lo)));
    int degree = f64 ? 13 : 7;
    double coef = 1;
    for (int k = 1; k <= degree; ++k) coef /= k;
    Value *p = c(coef);
    for (int k = degree - 1; k >= 0; --k) {
      coef *= (k + 1);
      p = b.CreateFAdd(b.CreateFMul(p, r), c(coef));
    }
    llvm::Type *it = f64 ? b.getInt64Ty() : b.getInt32Ty();
    if (auto *vt = llvm::dyn_cast<llvm::VectorType>(t))
      it = llvm::VectorType::get(it, vt->getElementCount());
    // n is whole and in range after the clamp; a NaN (whose result the
    // polynomial makes NaN anyway) is converted as 0, so that the conversion
    // is defined and stays one vector instruction.
    Value *ni = b.CreateFPToSI(b.CreateSelect(b.CreateFCmpUNO(n, n), c(0), n), it);
    Value *bits = b.CreateShl(b.CreateAdd(ni, llvm::ConstantInt::get(it, f64 ? 1022 : 126)),
                              llvm::ConstantInt::get(it, f64 ? 52 : 23));
    Value *e = b.CreateFMul(b.CreateFMul(p, b.CreateBitCast(bits, t)), c(2));
    e = b.CreateSelect(gt(x, hi), c(std::numeric_limits<double>::infinity()), e);
    return b.CreateSelect(lt(x, lo), c(0), e);
  }

  // The C library's function `f32` or `f64` (by the element type) of each
  // element, one call per lane of a vector: what the reference kernels
  // compute, bit for bit. `extra` is a second argument of every call.
  Value *libcall(const char *f32, const char *f64, Value *x, Value *extra = nullptr) const {
    llvm::Type *s = t->getScalarType();
    std::vector<llvm::Type *> params(extra ? 2 : 1, s);
    llvm::FunctionCallee fn = m.getOrInsertFunction(
        s->isDoubleTy() ? f64 : f32, llvm::FunctionType::get(s, params, false));
    auto one = [&](Value *v) {
      std::vector<Value *> args{v};
      if (extra) args.push_back(extra);
      llvm::CallInst *call = b.CreateCall(fn, args);
      call->setDoesNotAccessMemory();
      call->setDoesNotThrow();
      return static_cast<Value *>(call);
    };
    auto *vt = llvm::dyn_cast<llvm::FixedVectorType>(t);
    if (!vt) return one(x);
    Value *out = llvm::PoisonValue::get(vt);
    for (unsigned i = 0; i < vt->getNumElements(); ++i)
      out = b.CreateInsertElement(out, one(b.CreateExtractElement(x, i)), i);
    return out;
  }

  Value *sigmoid(Value *x) const { return b.CreateFDiv(c(1), b.CreateFAdd(c(1), exp(b.CreateFNeg(x)))); }
  Value *relu(Value *x) const { return b.CreateSelect(gt(x, 0), x, c(0)); }
  Value *relu6(Value *x) const { return minOf(maxOf(x, 0), 6); }
  // tanh(x) = (e^2x - 1) / (e^2x + 1), with x clamped to where tanh rounds
  // to +-1 (so that e^2x stays finite).
  Value *tanh(Value *x) const {
    double edge = t->getScalarType()->isDoubleTy() ? 19.5 : 9.5;
    Value *e = exp(b.CreateFMul(minOf(maxOf(x, -edge), edge), c(2)));
    return b.CreateFDiv(b.CreateFSub(e, c(1)), b.CreateFAdd(e, c(1)));
  }
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
    // A cast's rounding to bf16, where its result is bf16, is the code generator's (every op
    // whose result is bf16 is rounded): in registers it is the identity.
    if (n == "sum_like" || n == "cast") return x;
    if (n == "scale") return b.CreateFMul(x, c(op.attrs().getFloat("factor")));
    if (n == "rsqrt") {
      Value *shifted = b.CreateFAdd(x, c(op.attrs().getFloat("eps")));
      return b.CreateFDiv(c(1), b.CreateUnaryIntrinsic(llvm::Intrinsic::sqrt, shifted));
    }
    if (n == "sqrt") return b.CreateUnaryIntrinsic(llvm::Intrinsic::sqrt, x);
    if (n == "exp") return exp(x);
    if (n == "log") return libcall("logf", "log", x);
    if (n == "erf") return libcall("erff", "erf", x);
    if (n == "pow")
      return libcall("powf", "pow", x,
                     llvm::ConstantFP::get(t->getScalarType(), op.attrs().getFloat("exponent")));
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
