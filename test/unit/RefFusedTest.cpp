// The reference interpreter of `fused` against the same ops unfused: both run
// the reference kernels of the region's ops, so their results agree bit for
// bit, at every element type, with broadcasting both ways and several
// yields, including an argument yielded as it is.
#include "RefRun.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

namespace dtnn::test {

namespace {

// Deterministic values in [-2, 2) for `n` elements.
std::vector<double> values(int64_t n, uint64_t seed) {
  std::vector<double> out;
  for (int64_t i = 0; i < n; ++i) {
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    out.push_back(static_cast<double>(seed >> 40) / double(1ull << 24) * 4 - 2);
  }
  return out;
}

// Graph @f over `inputs` ("%a: f32[...]" each) whose ops are `body` (lines of
// IR over the inputs' names) and which returns `yields`: once as the ops
// themselves, once as one fused op whose region holds them.
struct Pair {
  std::string unfused, fused;
};
Pair graphs(const std::vector<std::pair<std::string, std::string>> &inputs,
            const std::vector<std::string> &body, const std::vector<std::string> &yields,
            const std::vector<std::string> &yieldTypes) {
  std::string sig, names, types, ops, outs, outTypes;
  for (size_t i = 0; i < inputs.size(); ++i) {
    sig += (i ? ", %" : "%") + inputs[i].first + ": " + inputs[i].second;
    names += (i ? ", %" : "%") + inputs[i].first;
  }
  for (size_t i = 0; i < yields.size(); ++i) {
    outs += (i ? ", %" : "%") + yields[i];
    outTypes += (i ? ", " : "") + yieldTypes[i];
  }
  std::string results;
  for (size_t i = 0; i < yields.size(); ++i) results += (i ? ", %r" : "%r") + std::to_string(i);
  std::string head = "graph @f(" + sig + ") -> (" + outTypes + ") {\n";
  Pair p;
  p.unfused = head;
  for (const std::string &l : body) p.unfused += "  " + l + "\n";
  p.unfused += "  return " + outs + "\n}\n";
  p.fused = head + "  " + results + " = fused " + names + " : " + outTypes + " {\n    (" + sig +
            ")\n";
  for (const std::string &l : body) p.fused += "    " + l + "\n";
  p.fused += "    yield " + outs + "\n  }\n  return " + results + "\n}\n";
  return p;
}

// Runs both graphs of `p` on the same random inputs of `types` and expects
// identical bits in every output.
void expectSameBits(const Pair &p, const std::vector<ir::TensorType> &types) {
  std::vector<runtime::Tensor> in;
  for (size_t i = 0; i < types.size(); ++i)
    in.push_back(makeTensor(types[i], values(runtime::numElements(types[i]), 17 + i)));
  GraphRunner unfused(p.unfused), fused(p.fused);
  ASSERT_TRUE(unfused.ok()) << unfused.error() << "\n" << p.unfused;
  ASSERT_TRUE(fused.ok()) << fused.error() << "\n" << p.fused;
  std::vector<runtime::Tensor> want = unfused.run(in), got = fused.run(in);
  ASSERT_EQ(want.size(), got.size());
  for (size_t i = 0; i < want.size(); ++i) {
    ASSERT_EQ(want[i].type(), got[i].type());
    EXPECT_EQ(std::memcmp(want[i].data<char>(), got[i].data<char>(), runtime::byteSize(want[i].type())), 0)
        << "output " << i << " differs\n" << p.fused;
  }
}

} // namespace

// The backward of a squeeze-and-excitation multiply y = h * s: dh = dy * s
// (s broadcast over the plane) and ds = the sum of dy * h over the plane.
TEST(RefFused, SqueezeExcitationBackward) {
  for (const char *t : {"f32", "f64"}) {
    std::string s = std::string(t) + "[1,3,1,1]", h = std::string(t) + "[1,3,5,7]";
    Pair p = graphs({{"s", s}, {"h", h}, {"dy", h}},
                    {"%dh = mul %dy, %s : " + h, "%p = mul %dy, %h : " + h,
                     "%ds = sum_like %p, %s : " + s},
                    {"dh", "ds"}, {h, s});
    ir::DType d = *ir::parseDType(t);
    expectSameBits(p, {{d, {1, 3, 1, 1}}, {d, {1, 3, 5, 7}}, {d, {1, 3, 5, 7}}});
  }
}

// A chain with the broadcast operand first, an activation and a yielded
// argument; one size is not a multiple of any vector width.
TEST(RefFused, ChainAndYieldedArgument) {
  Pair p = graphs({{"b", "f32[13]"}, {"x", "f32[1,3,13]"}},
                  {"%u = sub %b, %x : f32[1,3,13]", "%v = sigmoid %u : f32[1,3,13]",
                   "%w = mul %v, %x : f32[1,3,13]"},
                  {"w", "x", "v"}, {"f32[1,3,13]", "f32[1,3,13]", "f32[1,3,13]"});
  expectSameBits(p, {{ir::DType::F32, {13}}, {ir::DType::F32, {1, 3, 13}}});
}

// Empty tensors: nothing to compute, and nothing goes wrong.
TEST(RefFused, EmptyTensors) {
  Pair p = graphs({{"x", "f32[1,0]"}, {"y", "f32[1,0]"}},
                  {"%s = add %x, %y : f32[1,0]", "%r = relu %s : f32[1,0]"}, {"r"}, {"f32[1,0]"});
  expectSameBits(p, {{ir::DType::F32, {1, 0}}, {ir::DType::F32, {1, 0}}});
}

// The plan binds the batch: a region written for f32[?,4] runs at batch 1.
TEST(RefFused, DynamicBatch) {
  Pair p = graphs({{"x", "f32[?,4]"}, {"y", "f32[4]"}},
                  {"%s = add %x, %y : f32[?,4]", "%r = tanh %s : f32[?,4]"}, {"r"}, {"f32[?,4]"});
  expectSameBits(p, {{ir::DType::F32, {1, 4}}, {ir::DType::F32, {4}}});
}

} // namespace dtnn::test
