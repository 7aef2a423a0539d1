// The reference interpreter of `fused` against the same ops unfused: both run
// the reference kernels of the region's ops, so their results agree bit for
// bit, at every element type, with broadcasting both ways and several
// yields, including an argument yielded as it is.
#include "FusedGraphs.h"
#include "RefRun.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

namespace dtnn::test {

namespace {

// Runs both graphs of `p` on the same random inputs of `types` and expects
// identical bits in every output.
void expectSameBits(const FusedPair &p, const std::vector<ir::TensorType> &types) {
  std::vector<runtime::Tensor> in;
  for (size_t i = 0; i < types.size(); ++i)
    in.push_back(makeTensor(types[i], fusedTestValues(runtime::numElements(types[i]), 17 + i)));
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
    FusedPair p = seBackwardPair(t);
    ir::DType d = *ir::parseDType(t);
    expectSameBits(p, {{d, {1, 3, 1, 1}}, {d, {1, 3, 5, 7}}, {d, {1, 3, 5, 7}}});
  }
}

// A chain with the broadcast operand first, an activation and a yielded
// argument; one size is not a multiple of any vector width.
TEST(RefFused, ChainAndYieldedArgument) {
  FusedPair p = fusedPair({{"b", "f32[13]"}, {"x", "f32[1,3,13]"}},
                  {"%u = sub %b, %x : f32[1,3,13]", "%v = sigmoid %u : f32[1,3,13]",
                   "%w = mul %v, %x : f32[1,3,13]"},
                  {"w", "x", "v"}, {"f32[1,3,13]", "f32[1,3,13]", "f32[1,3,13]"});
  expectSameBits(p, {{ir::DType::F32, {13}}, {ir::DType::F32, {1, 3, 13}}});
}

// Empty tensors: nothing to compute, and nothing goes wrong.
TEST(RefFused, EmptyTensors) {
  FusedPair p = fusedPair({{"x", "f32[1,0]"}, {"y", "f32[1,0]"}},
                  {"%s = add %x, %y : f32[1,0]", "%r = relu %s : f32[1,0]"}, {"r"}, {"f32[1,0]"});
  expectSameBits(p, {{ir::DType::F32, {1, 0}}, {ir::DType::F32, {1, 0}}});
}

// The plan binds the batch: a region written for f32[?,4] runs at batch 1.
TEST(RefFused, DynamicBatch) {
  FusedPair p = fusedPair({{"x", "f32[?,4]"}, {"y", "f32[4]"}},
                  {"%s = add %x, %y : f32[?,4]", "%r = tanh %s : f32[?,4]"}, {"r"}, {"f32[?,4]"});
  expectSameBits(p, {{ir::DType::F32, {1, 4}}, {ir::DType::F32, {4}}});
}

} // namespace dtnn::test
