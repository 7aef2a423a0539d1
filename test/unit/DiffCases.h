// Shared declarations of the differential test cases, which the family
// files make (DiffConvDense.cpp, DiffPoolNorm.cpp, DiffActivation.cpp,
// DiffBinary.cpp) and DifferentialTest.cpp runs: the float32 error-analysis
// conventions every bound is stated in, the accuracy assumed of math
// functions, helpers that build one-op cases and common tolerances
// (DiffCases.cpp), and one generator of cases per op family. The harness
// that runs a case is declared in Differential.h.
//
// Conventions of the bounds. u = 2^-24 is the float32 unit roundoff
// (kU), eps = 2^-23 = 2u (kEps). gamma(n) = n*u / (1 - n*u) bounds the
// relative error of n chained roundings, and the error of a sum or dot
// product of n terms in ANY order (recursive, blocked, pairwise, with or
// without FMA) is at most gamma(n) * sum|terms| (Higham, "Accuracy and
// Stability of Numerical Algorithms", 2nd ed., section 3.1). We use this
// worst-case, K-style bound rather than the probabilistic sqrt(K) one: it
// holds for every summation order a backend may choose, so a failure is a
// real discrepancy, not bad luck. Both sides compute in float32, so every
// bound is the sum of a bound for the reference and one for the other
// backend. Where a sum's terms are products of operands, the sum of their
// absolute values is computed per output element by the magnitude run (the
// op on |operands| in double precision); elsewhere the magnitudes are
// computed by the case's tolerance function from the operands.
//
// Math functions. The reference calls glibc's float functions; glibc's
// manual ("Known Maximum Errors in Math Functions", x86_64) lists expf,
// logf and erff within 1 ulp and tanhf within 2 ulp, and 1 ulp <= 2u |f|.
// oneDNN (the only other CPU backend) documents no ulp bounds for its
// vectorized approximations; we assume the accuracy its own conformance
// tests accept for f32 (benchdnn's get_eltwise_threshold, softmax setup):
// relative 4e-6 for exp, logistic and gelu_erf, and 4e-5 for tanh,
// gelu_tanh, swish and log, applied to the magnitude of the function's
// terms. Arithmetic-only kernels (relu family, hard_*, scale, the binary
// ops, batchnorm's affine part) are assumed to evaluate the op's formula in
// IEEE float32 with the number of roundings stated at each op, in any
// algebraically equivalent order.
#pragma once

#include "Differential.h"

#include "ir/ops/ShapeUtil.h"

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

namespace dtnn::test::diff {

// The allowed |a - b| of each element of each compared output, as a
// Tolerance returns it.
using Allowed = std::vector<std::vector<double>>;

// gamma(n) = n*u / (1 - n*u): the relative error of n chained roundings
// (see the top).
inline double gamma(double n) { return n * kU / (1 - n * kU); }

// Math function accuracy, relative to the function's value (see the top).
constexpr double kRefExp = 2 * kU, kRefLog = 2 * kU, kRefErf = 2 * kU, kRefTanh = 4 * kU;
constexpr double kOtherExp = 4e-6, kOtherLogistic = 4e-6, kOtherGeluErf = 4e-6;
constexpr double kOtherTanh = 4e-5, kOtherGeluTanh = 4e-5, kOtherSwish = 4e-5, kOtherLog = 4e-5;

// A graph input %name; |values| replace its values in the magnitude run
// when `absInMagnitude`.
Operand input(std::string name, std::vector<int64_t> dims, std::vector<double> values,
              bool absInMagnitude = false);
// A module parameter @name, likewise.
Operand param(std::string name, std::vector<int64_t> dims, std::vector<double> values,
              bool absInMagnitude = false);
// The number of elements of a tensor of dimensions `dims`.
int64_t numel(const std::vector<int64_t> &dims);
// A one-op case: `line` is "op operands {attrs}"; its result types are
// appended, results are %0.. and all are returned.
Case oneOp(std::string op, std::string label, std::vector<Operand> operands, std::string line,
           std::vector<std::vector<int64_t>> resultDims);

// Tolerances shared by several families, derived in DiffCases.cpp: exact
// results (selections and copies); sums and dot products of at most `terms`
// terms per output element (needs a magnitude run); elementwise results
// within gamma(refRoundings) + gamma(otherRoundings) relative.
Tolerance exactly();
Tolerance sumOfTerms(double terms);
Tolerance relative(double refRoundings, double otherRoundings);

// bfloat16: its unit roundoff 2^-8 (8 significant bits).
constexpr double kUBf16 = 0x1p-8;

// Case `c` in bf16. Its float operands of the case's type are rounded to bf16
// values first (so the exact run starts from the inputs both sides read);
// those of type $S (a batch norm's scale, shift and statistics) are float32.
// Each side computes in float32, which c's own bound covers, and rounds each
// result to bf16, within kUBf16 of its float32 value: so |a - b| is at most
// allowed + 2 kUBf16 (|exact| + allowed).
Case inBf16(Case c);

// Results that both sides compute in double and round to float32 once (the
// losses, the reductions): kUd = 2^-53 is double's unit roundoff and
// gammaD(n) its gamma(n). When each side's double value is within d of the
// exact one, the float32 results differ by at most roundedFromDouble(l, d)
// = 2u (|l| + d) + 2d (u relative for normal results, half the smallest
// subnormal below them), l the f64 run's value.
constexpr double kUd = 0x1p-53;
inline double gammaD(double n) { return n * kUd / (1 - n * kUd); }
inline double roundedFromDouble(double l, double d) {
  return 2 * kU * (std::abs(l) + d) + 2 * d + 0x1p-149;
}

// A convolution's shapes and attributes, as convCases() generates them and
// Differential.InPlace uses one.
struct ConvGeom {
  int64_t n, c, h, w, k, kh, kw, sh, sw, pt, pl, pb, pr, dh, dw, groups;
  bool bias;

  int64_t oh() const { return ir::windowOutDim(h, kh, sh, pt, pb, dh, false); }
  int64_t ow() const { return ir::windowOutDim(w, kw, sw, pl, pr, dw, false); }
  std::vector<int64_t> x() const { return {n, c, h, w}; }
  std::vector<int64_t> wt() const { return {k, c / groups, kh, kw}; }
  std::vector<int64_t> y() const { return {n, k, oh(), ow()}; }
  // The attributes, "{stride=[..], pad=[..], dilation=[..], groups=..}".
  std::string attrs() const;
  // Shapes and attributes, for messages.
  std::string label() const;
};

// The logistic function 1 / (1 + exp(-x)), in double.
double sigmoidOf(double x);

// The cases of each op family, from fixed seeds.
std::vector<Case> convCases();       // DiffConvDense.cpp
std::vector<Case> denseCases();      // DiffConvDense.cpp
std::vector<Case> poolCases();       // DiffPoolNorm.cpp
std::vector<Case> batchNormCases();  // DiffPoolNorm.cpp
std::vector<Case> batchNormFoldCases(); // DiffPoolNorm.cpp
std::vector<Case> activationCases(); // DiffActivation.cpp
std::vector<Case> softmaxCases();    // DiffActivation.cpp
std::vector<Case> binaryCases();     // DiffBinary.cpp
std::vector<Case> concatCases();     // DiffBinary.cpp
std::vector<Case> matmulCases();     // DiffMatmul.cpp
std::vector<Case> attentionCases();  // DiffMatmul.cpp
std::vector<Case> layerNormCases();  // DiffMatmul.cpp
std::vector<Case> mathCases();       // DiffMath.cpp
std::vector<Case> lossCases();       // DiffLoss.cpp
std::vector<Case> reduceCases();     // DiffReduce.cpp
std::vector<Case> shapeCases();      // DiffShape.cpp
std::vector<Case> castCases();       // DiffShape.cpp
std::vector<Case> optimizerCases();  // DiffOptimizer.cpp
std::vector<Case> encodingCases();   // DiffEncoding.cpp
std::vector<Case> dropoutCases();    // DiffEncoding.cpp
std::vector<Case> collectiveCases(); // DiffCollective.cpp

} // namespace dtnn::test::diff
