#include "backends/cuda/RegionSource.h"

#include "ir/ops/FusedActivation.h"

#include <cstdio>
#include <map>
#include <set>
#include <sstream>

namespace dtnn::cuda {

namespace {

constexpr int kThreads = 256;

// The C++ literal of `v` in the element type (exact: 17 significant digits).
std::string lit(double v, bool f64) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  std::string s = buf;
  if (s.find_first_of(".eEn") == std::string::npos) s += ".0";
  if (s == "nan" || s == "-nan") return "(T(0) / T(0))";
  if (s == "inf" || s == "-inf") return s[0] == '-' ? "(T(-1) / T(0))" : "(T(1) / T(0))";
  return f64 ? "T(" + s + ")" : "T(" + s + "f)";
}

// The element code of each op, following the reference kernels' formulas
// (backends/reference/Activation.cpp, Elementwise.cpp, Math.cpp) with CUDA's
// math functions of the element type.
class Emitter {
public:
  explicit Emitter(bool f64) : f64_(f64) {}

  std::string fn(const char *name) const { return f64_ ? name : std::string(name) + "f"; }
  std::string c(double v) const { return lit(v, f64_); }

  std::string activation(const std::string &act, const std::string &y) const {
    if (act == "relu") return "dtnn_relu(" + y + ")";
    if (act == "relu6") return "dtnn_relu6(" + y + ")";
    if (act == "sigmoid") return "dtnn_sigmoid(" + y + ")";
    if (act == "tanh") return fn("tanh") + "(" + y + ")";
    return y;
  }

  // The value of `op` at one element from its operands' values there; for sum_like, what it adds.
  Expected<std::string> emit(const ir::Op &op, const std::vector<std::string> &in) const {
    const std::string &n = op.name();
    const ir::AttrMap &a = op.attrs();
    const std::string &x = in[0];
    if (n == "add" || n == "sub" || n == "mul" || n == "div") {
      const char *sym = n == "add" ? " + " : n == "sub" ? " - " : n == "mul" ? " * " : " / ";
      return activation(ir::fusedActivationOf(op), "(" + in[0] + sym + in[1] + ")");
    }
    if (n == "sum_like") return x;
    if (n == "scale") return x + " * " + c(a.getFloat("factor"));
    if (n == "rsqrt") return c(1) + " / " + fn("sqrt") + "(" + x + " + " + c(a.getFloat("eps")) + ")";
    if (n == "sqrt") return fn("sqrt") + "(" + x + ")";
    if (n == "exp") return fn("exp") + "(" + x + ")";
    if (n == "log") return fn("log") + "(" + x + ")";
    if (n == "erf") return fn("erf") + "(" + x + ")";
    if (n == "pow") return fn("pow") + "(" + x + ", " + c(a.getFloat("exponent")) + ")";
    if (n == "relu") return "dtnn_relu(" + x + ")";
    if (n == "relu6") return "dtnn_relu6(" + x + ")";
    if (n == "sigmoid") return "dtnn_sigmoid(" + x + ")";
    if (n == "tanh") return fn("tanh") + "(" + x + ")";
    if (n == "silu") return "(" + x + " * dtnn_sigmoid(" + x + "))";
    if (n == "leaky_relu")
      return "(" + x + " > T(0) ? " + x + " : " + c(a.getFloat("alpha")) + " * " + x + ")";
    if (n == "hard_sigmoid") return "(dtnn_clip3(" + x + ") / T(6))";
    if (n == "hard_swish") return "(" + x + " * dtnn_clip3(" + x + ") / T(6))";
    if (n == "gelu")
      return a.getString("approximate") == "tanh" ? "dtnn_gelu_tanh(" + x + ")" : "dtnn_gelu_erf(" + x + ")";
    // Backward ops: (dy, x) or (dy, y).
    const std::string &dy = in[0], &v = in.size() > 1 ? in[1] : in[0];
    if (n == "relu_backward") return "(" + v + " > T(0) ? " + dy + " : T(0))";
    if (n == "relu6_backward") return "(" + v + " > T(0) && " + v + " < T(6) ? " + dy + " : T(0))";
    if (n == "leaky_relu_backward")
      return "(" + v + " > T(0) ? " + dy + " : " + c(a.getFloat("alpha")) + " * " + dy + ")";
    if (n == "sigmoid_backward") return "(" + dy + " * " + v + " * (T(1) - " + v + "))";
    if (n == "tanh_backward") return "(" + dy + " * (T(1) - " + v + " * " + v + "))";
    if (n == "silu_backward") return "dtnn_silu_backward(" + dy + ", " + v + ")";
    if (n == "hard_sigmoid_backward")
      return "(" + v + " > T(-3) && " + v + " < T(3) ? " + dy + " / T(6) : T(0))";
    if (n == "hard_swish_backward") return "dtnn_hard_swish_backward(" + dy + ", " + v + ")";
    if (n == "gelu_backward")
      return a.getString("approximate") == "tanh" ? "dtnn_gelu_tanh_backward(" + dy + ", " + v + ")"
                                                  : "dtnn_gelu_erf_backward(" + dy + ", " + v + ")";
    return Error::make("the cuda code generator has no code for '" + n + "'");
  }

  // The helpers the element code calls, as the reference writes them (std::max(x, v) is
  // x < v ? v : x, which keeps a NaN).
  std::string prelude() const {
    std::string t = f64_ ? "double" : "float";
    return "typedef " + t + " T;\n"
           "__device__ __forceinline__ T dtnn_max(T x, T v) { return x < v ? v : x; }\n"
           "__device__ __forceinline__ T dtnn_min(T x, T v) { return v < x ? v : x; }\n"
           "__device__ __forceinline__ T dtnn_relu(T x) { return x > T(0) ? x : T(0); }\n"
           "__device__ __forceinline__ T dtnn_relu6(T x) { return dtnn_min(dtnn_max(x, T(0)), T(6)); }\n"
           "__device__ __forceinline__ T dtnn_clip3(T x) { return dtnn_min(dtnn_max(x + T(3), T(0)), T(6)); }\n"
           "__device__ __forceinline__ T dtnn_sigmoid(T x) { return T(1) / (T(1) + " + fn("exp") + "(-x)); }\n"
           "__device__ __forceinline__ T dtnn_silu_backward(T dy, T x) {\n"
           "  T s = dtnn_sigmoid(x);\n  return dy * s * (T(1) + x * (T(1) - s));\n}\n"
           "__device__ __forceinline__ T dtnn_hard_swish_backward(T dy, T x) {\n"
           "  return x < T(-3) ? T(0) : (x <= T(3) ? dy * (x / T(3) + T(0.5)) : dy);\n}\n"
           "__device__ __forceinline__ T dtnn_gelu_erf(T x) {\n"
           "  return T(0.5) * x * (T(1) + " + fn("erf") + "(x * " + c(0.70710678118654752440) + "));\n}\n"
           "__device__ __forceinline__ T dtnn_gelu_tanh(T x) {\n"
           "  T inner = " + c(0.79788456080286535588) + " * (x + " + c(0.044715) + " * x * x * x);\n"
           "  return T(0.5) * x * (T(1) + " + fn("tanh") + "(inner));\n}\n"
           "__device__ __forceinline__ T dtnn_gelu_erf_backward(T dy, T x) {\n"
           "  T cdf = T(0.5) * (T(1) + " + fn("erf") + "(x * " + c(0.70710678118654752440) + "));\n"
           "  T pdf = " + c(0.39894228040143267794) + " * " + fn("exp") + "(T(-0.5) * x * x);\n"
           "  return dy * (cdf + x * pdf);\n}\n"
           "__device__ __forceinline__ T dtnn_gelu_tanh_backward(T dy, T x) {\n"
           "  T x2 = x * x;\n"
           "  T t = " + fn("tanh") + "(" + c(0.79788456080286535588) + " * (x + " + c(0.044715) + " * x2 * x));\n"
           "  T d = " + c(0.79788456080286535588) + " * (T(1) + " + c(3 * 0.044715) + " * x2);\n"
           "  return dy * (T(0.5) * (T(1) + t) + T(0.5) * x * (T(1) - t * t) * d);\n}\n";
  }

private:
  bool f64_;
};

// Writes the kernel of one region: arguments, yields, the element code.
class Writer {
public:
  Writer(const ir::Graph &body, const runtime::LoopPlan &plan)
      : body_(body), plan_(plan), em_(plan.dtype == ir::DType::F64), nIn_(body.inputs().size()) {}

  Expected<RegionCode> run() {
    RegionCode code;
    code.sizes = plan_.sizes;
    code.reduced = plan_.reduced;
    code.threads = kThreads;
    code.elements = 1;
    for (int64_t s : plan_.sizes) code.elements *= s;
    if (Error e = chooseShape(code)) return e;
    std::ostringstream os;
    os << "// generated by dtnn's cuda backend\n" << em_.prelude();
    os << "struct DtnnSizes { long long n[" << plan_.sizes.size() << "]; };\n";
    os << "extern \"C\" __global__ void __launch_bounds__(" << kThreads << ") dtnn_region(";
    // No pointer is declared restricted: a yield may be written over an argument it is computed
    // from (an update in place, a result reusing an operand's storage), each element by the
    // thread that read it.
    for (size_t i = 0; i < nIn_; ++i) os << "const T *a" << i << ", ";
    for (size_t y = 0; y < plan_.reduced.size(); ++y) os << "T *y" << y << ", ";
    if (code.shape != RegionCode::Shape::Map) os << "T *work, ";
    os << "DtnnSizes s";
    if (code.shape != RegionCode::Shape::Map) os << ", long long outputs, long long length, long long segments";
    os << ") {\n";
    Expected<std::string> element = elementCode(code);
    if (!element) return element.takeError();
    switch (code.shape) {
    case RegionCode::Shape::Map: writeMap(os, *element); break;
    case RegionCode::Shape::ReduceInner: writeReduceInner(os, *element); break;
    case RegionCode::Shape::ReduceOuter: writeReduceOuter(os, *element); break;
    }
    os << "}\n";
    code.source = os.str();
    code.entry = "dtnn_region";
    code.key = hashText(code.source);
    return code;
  }

private:
  size_t rank() const { return plan_.sizes.size(); }
  const std::vector<bool> &spans(size_t tensor) const { return plan_.spans[tensor]; }
  bool spansAll(size_t tensor) const {
    for (bool b : spans(tensor))
      if (!b) return false;
    return true;
  }
  bool spansNone(size_t tensor) const {
    for (bool b : spans(tensor))
      if (b) return false;
    return true;
  }

  // Map without reductions; else which dimensions the reductions keep decides between the two
  // reduction shapes, and the segments follow the sizes alone.
  Error chooseShape(RegionCode &code) {
    const std::vector<bool> *kept = nullptr;
    for (size_t y = 0; y < plan_.reduced.size(); ++y) {
      size_t t = nIn_ + y;
      if (!plan_.reduced[y]) {
        if (!spansAll(t)) return Error::make("a yield of the region is not over its whole domain");
        continue;
      }
      if (kept && *kept != spans(t))
        return Error::make("the region's reductions keep different dimensions");
      kept = &spans(t);
    }
    if (!kept) return Error::success();
    kept_ = *kept;
    code.outputs = code.length = 1;
    for (size_t k = 0; k < rank(); ++k) (kept_[k] ? code.outputs : code.length) *= plan_.sizes[k];
    auto ceilDiv = [](int64_t a, int64_t b) { return (a + b - 1) / b; };
    if (!kept_.back()) {
      code.shape = RegionCode::Shape::ReduceInner;
      code.segments = std::max<int64_t>(1, std::min(ceilDiv(2048, code.outputs), code.length / 4096));
    } else {
      code.shape = RegionCode::Shape::ReduceOuter;
      int64_t blocks = ceilDiv(code.outputs, kThreads);
      code.segments = std::max<int64_t>(1, std::min(ceilDiv(1024, blocks), code.length / 64));
    }
    return Error::success();
  }

  // The offset of tensor t at the coordinates c0.. (Horner over the dimensions it spans).
  std::string offset(size_t t, const std::string &linear) const {
    if (spansAll(t)) return linear;
    if (spansNone(t)) return "0";
    std::string off;
    for (size_t k = 0; k < rank(); ++k) {
      if (!spans(t)[k]) continue;
      std::string ck = "c" + std::to_string(k);
      off = off.empty() ? ck : "(" + off + ") * s.n[" + std::to_string(k) + "] + " + ck;
    }
    return off;
  }

  // The element's loads, op code, elementwise stores and reduction contributions (acc<y> +=).
  Expected<std::string> elementCode(const RegionCode &code) {
    std::ostringstream os;
    std::map<const ir::Value *, std::string> name;
    // The values an op reads (not those it reads the type of only, such as sum_like's `like`,
    // whose storage need not be live).
    std::set<const ir::Value *> used;
    for (const auto &op : body_.ops()) {
      std::vector<const ir::OperandSpec *> specs =
          op->def().operandSpecs(op->operands().size(), op->attrs());
      for (size_t i = 0; i < op->operands().size(); ++i)
        if (specs[i]->effect != ir::Effect::Shape) used.insert(op->operand(unsigned(i)));
    }
    for (size_t i = 0; i < nIn_; ++i) {
      const ir::Value *a = body_.inputs()[i];
      name[a] = "v_a" + std::to_string(i);
      if (used.count(a))
        os << "    T v_a" << i << " = a" << i << "[" << offset(i, "i") << "];\n";
    }
    int number = 0;
    for (const auto &op : body_.ops()) {
      std::vector<std::string> in;
      for (const ir::Value *v : op->operands()) in.push_back(name.at(v));
      Expected<std::string> e = em_.emit(*op, in);
      if (!e) return e.takeError();
      std::string n = "v" + std::to_string(number++);
      os << "    T " << n << " = " << *e << ";\n";
      name[op->result(0)] = n;
    }
    for (size_t y = 0; y < plan_.reduced.size(); ++y) {
      const std::string &v = name.at(body_.outputs()[y]);
      if (plan_.reduced[y])
        os << "    acc" << y << " += " << v << ";\n";
      else
        os << "    y" << y << "[i] = " << v << ";\n";
    }
    (void)code;
    return os.str();
  }

  // Splits linear index `var` into the coordinates of the dimensions `which` selects (the last
  // fastest), declaring c<k>.
  std::string coordinates(const std::string &var, const std::vector<bool> &which) const {
    std::string out = "    long long r_" + var + " = " + var + ";\n";
    int last = -1;
    for (size_t k = 0; k < rank(); ++k)
      if (which[k]) last = int(k);
    for (int k = int(rank()) - 1; k >= 0; --k) {
      if (!which[size_t(k)]) continue;
      std::string n = "s.n[" + std::to_string(k) + "]";
      bool first = true;
      for (int j = 0; j < k; ++j) first &= !which[size_t(j)];
      if (first)
        out += "    long long c" + std::to_string(k) + " = r_" + var + ";\n";
      else
        out += "    long long c" + std::to_string(k) + " = r_" + var + " % " + n + "; r_" + var +
               " /= " + n + ";\n";
    }
    (void)last;
    return out;
  }

  bool needsCoordinates() const {
    for (size_t t = 0; t < nIn_ + plan_.reduced.size(); ++t)
      if (!spansAll(t) && !spansNone(t)) return true;
    return false;
  }

  // The domain's linear index from the coordinates.
  std::string linearFromCoordinates() const {
    std::string off = "c0";
    for (size_t k = 1; k < rank(); ++k)
      off = "(" + off + ") * s.n[" + std::to_string(k) + "] + c" + std::to_string(k);
    return off;
  }

  void writeMap(std::ostringstream &os, const std::string &element) {
    os << "  long long total = 1;\n";
    os << "  for (int k = 0; k < " << rank() << "; ++k) total *= s.n[k];\n";
    os << "  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < total;\n"
          "       i += (long long)gridDim.x * blockDim.x) {\n";
    if (needsCoordinates()) os << coordinates("i", std::vector<bool>(rank(), true));
    os << element << "  }\n";
  }

  void declareAccumulators(std::ostringstream &os) {
    for (size_t y = 0; y < plan_.reduced.size(); ++y)
      if (plan_.reduced[y]) os << "  T acc" << y << " = T(0);\n";
  }

  std::vector<bool> reducedDims() const {
    std::vector<bool> r(rank());
    for (size_t k = 0; k < rank(); ++k) r[k] = !kept_[k];
    return r;
  }

  // Where a segment's sum of output o goes: the yield when there is one segment, else the
  // segment's slot of the workspace (per reduced yield, segments x outputs).
  void writeResults(std::ostringstream &os, const std::string &indent) {
    int slot = 0;
    for (size_t y = 0; y < plan_.reduced.size(); ++y) {
      if (!plan_.reduced[y]) continue;
      os << indent << "if (segments == 1) y" << y << "[o] = acc" << y << ";\n"
         << indent << "else work[(" << slot << " * segments + seg) * outputs + o] = acc" << y << ";\n";
      ++slot;
    }
  }

  void writeReduceInner(std::ostringstream &os, const std::string &element) {
    os << "  long long o = blockIdx.x, seg = blockIdx.y;\n";
    os << coordinates("o", kept_);
    os << "  long long begin = seg * length / segments, end = (seg + 1) * length / segments;\n";
    declareAccumulators(os);
    os << "  for (long long q = begin + threadIdx.x; q < end; q += blockDim.x) {\n";
    os << coordinates("q", reducedDims());
    os << "    long long i = " << linearFromCoordinates() << ";\n";
    os << element << "  }\n";
    // A fixed tree over the block's threads, through shared memory.
    os << "  __shared__ T part[" << kThreads << "];\n";
    for (size_t y = 0; y < plan_.reduced.size(); ++y) {
      if (!plan_.reduced[y]) continue;
      os << "  part[threadIdx.x] = acc" << y << ";\n  __syncthreads();\n"
         << "  for (int w = blockDim.x / 2; w > 0; w /= 2) {\n"
         << "    if (threadIdx.x < w) part[threadIdx.x] += part[threadIdx.x + w];\n"
         << "    __syncthreads();\n  }\n"
         << "  acc" << y << " = part[0];\n  __syncthreads();\n";
    }
    os << "  if (threadIdx.x == 0) {\n";
    writeResults(os, "    ");
    os << "  }\n";
  }

  void writeReduceOuter(std::ostringstream &os, const std::string &element) {
    os << "  long long o = blockIdx.x * (long long)blockDim.x + threadIdx.x, seg = blockIdx.y;\n";
    os << "  if (o >= outputs) return;\n";
    os << coordinates("o", kept_);
    os << "  long long begin = seg * length / segments, end = (seg + 1) * length / segments;\n";
    declareAccumulators(os);
    os << "  for (long long q = begin; q < end; ++q) {\n";
    os << coordinates("q", reducedDims());
    os << "    long long i = " << linearFromCoordinates() << ";\n";
    os << element << "  }\n";
    writeResults(os, "  ");
  }

  const ir::Graph &body_;
  const runtime::LoopPlan &plan_;
  Emitter em_;
  size_t nIn_;
  std::vector<bool> kept_;
};

} // namespace

bool cudaKnowsOp(const std::string &name) {
  return runtime::regionKnowsOp(name) || name == "gelu" || name == "gelu_backward";
}

Expected<RegionCode> regionCode(const ir::Graph &body, const runtime::LoopPlan &plan) {
  return Writer(body, plan).run();
}

uint64_t regionWorkspace(const RegionCode &code, ir::DType dtype) {
  if (code.shape == RegionCode::Shape::Map || code.segments <= 1) return 0;
  uint64_t reduced = 0;
  for (bool r : code.reduced) reduced += r;
  return reduced * uint64_t(code.segments) * uint64_t(code.outputs) * ir::dtypeSize(dtype);
}

std::string hashText(const std::string &text) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char ch : text) {
    h ^= ch;
    h *= 1099511628211ull;
  }
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

} // namespace dtnn::cuda
