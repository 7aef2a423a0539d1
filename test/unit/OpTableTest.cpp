// Shape rules and layer builders of the op table: typical shapes, the
// dynamic batch dimension, and every error path with its message.
#include "ir/OpTable.h"
#include "ir/IR.h"
#include "ir/Registry.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <limits>

using namespace dtnn::ir;

namespace {

constexpr int64_t Q = kDynamic;

TensorType f32(std::vector<int64_t> dims) { return TensorType(DType::F32, std::move(dims)); }
TensorType i32(std::vector<int64_t> dims) { return TensorType(DType::I32, std::move(dims)); }
AttrValue ints(std::vector<int64_t> v) { return AttrValue(std::move(v)); }

// The outcome of one shape rule run.
struct Inferred {
  bool ok = false;
  std::vector<TensorType> results;
  std::string error;
  std::vector<int> blame;

  TensorType type() const { return results.at(0); }
};

const OpDef &def(const std::string &op) {
  const OpDef *d = OpTable::get().lookup(op);
  EXPECT_NE(d, nullptr) << op;
  return *d;
}

// Runs `op`'s shape rule with `given` attributes completed by their defaults.
Inferred infer(const std::string &op, std::vector<TensorType> operands,
               std::vector<std::pair<std::string, AttrValue>> given = {}) {
  AttrMap attrs;
  for (auto &[name, v] : given) attrs.set(name, v);
  fillDefaultAttrs(def(op), attrs);
  InferCtx ctx{operands, attrs, {}, {}};
  Inferred r;
  dtnn::Error e = inferResultTypes(def(op), ctx);
  r.ok = !e;
  r.results = ctx.results;
  r.error = e.message();
  r.blame = ctx.blame;
  return r;
}

// The outcome of one layer builder run.
struct Built {
  bool ok = false;
  AttrMap attrs;
  std::vector<ParamSpec> params;
  std::string error;
  std::string errorArg;
};

// Runs `op`'s layer builder with `given` arguments completed by their defaults.
Built build(const std::string &op, std::vector<TensorType> inputs,
            std::vector<std::pair<std::string, AttrValue>> given) {
  const LayerSpec &spec = *def(op).layer;
  AttrMap args;
  for (const AttrSpec &a : spec.args) {
    for (auto &[name, v] : given)
      if (name == a.name) args.set(name, v);
    if (!args.find(a.name) && a.defaultValue) args.set(a.name, *a.defaultValue);
  }
  LayerCtx ctx{inputs, args, {}, {}, {}};
  Built b;
  dtnn::Error e = spec.build(ctx);
  b.ok = !e;
  b.attrs = ctx.attrs;
  b.params = ctx.params;
  b.error = e.message();
  b.errorArg = ctx.errorArg;
  return b;
}

std::vector<int> blame(std::initializer_list<int> v) { return v; }

// The forward ops a model can use; training adds backward, loss and update
// ops, which OpCoverageTest checks.
TEST(OpTableTest, RegistersEveryOpWithASummary) {
  std::vector<std::string> expected = {"add",
                                       "avgpool",
                                       "batchnorm",
                                       "concat",
                                       "conv2d",
                                       "dense",
                                       "div",
                                       "dropout",
                                       "flatten",
                                       "gelu",
                                       "global_avgpool",
                                       "hard_sigmoid",
                                       "hard_swish",
                                       "leaky_relu",
                                       "log_softmax",
                                       "maxpool",
                                       "mul",
                                       "relu",
                                       "relu6",
                                       "reshape",
                                       "sigmoid",
                                       "silu",
                                       "softmax",
                                       "sub",
                                       "tanh",
                                       "transpose"};
  std::sort(expected.begin(), expected.end());
  std::vector<std::string> names = OpTable::get().names();
  EXPECT_TRUE(std::includes(names.begin(), names.end(), expected.begin(), expected.end()));
  for (const OpDef *d : OpTable::get().all()) {
    EXPECT_FALSE(d->summary.empty()) << d->name;
    EXPECT_EQ(d->summary.back(), '.') << d->name;
    EXPECT_TRUE(d->inferShape) << d->name;
  }
}

// The mixed-precision pass reads each op's precision from the table: every built-in op declares
// one, the operands it keeps in float32 are operands it has, and the heavy ops are Low.
TEST(OpTableTest, EveryBuiltinOpDeclaresItsPrecision) {
  for (const OpDef *d : OpTable::get().all()) {
    if (OpTable::get().origin(d->name) != kBuiltinOrigin) continue;
    EXPECT_NE(d->precision, Precision::Undeclared) << d->name << " declares no precision";
    for (const std::string &name : d->floatOperands) {
      bool found = false;
      for (const OperandSpec &o : d->operands) found |= o.name == name;
      EXPECT_TRUE(found) << d->name << " keeps '" << name << "' in float32 but has no such operand";
    }
    if (!d->floatOperands.empty()) EXPECT_EQ(d->precision, Precision::Follow) << d->name;
  }
  for (const char *low : {"conv2d", "conv2d_backward_data", "conv2d_backward_weights", "dense",
                          "dense_backward_data", "dense_backward_weights", "matmul",
                          "scaled_dot_product_attention"})
    EXPECT_EQ(OpTable::get().lookup(low)->precision, Precision::Low) << low;
  for (const char *f : {"softmax", "softmax_cross_entropy", "reduce_sum", "sgd_update",
                        "adam_update", "fused_update", "moving_average"})
    EXPECT_EQ(OpTable::get().lookup(f)->precision, Precision::Float) << f;
}

TEST(OpTableTest, OperandCountAndRequiredAttrs) {
  Inferred r = infer("add", {f32({2})});
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.error, "'add' takes 2 operands, got 1");
  r = infer("maxpool", {f32({1, 1, 4, 4})});
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.error, "missing attribute 'kernel'");
}

TEST(OpTableTest, Conv2dLeNetAndDepthwise) {
  Inferred r = infer("conv2d", {f32({Q, 1, 28, 28}), f32({6, 1, 5, 5}), f32({6})},
                     {{"pad", ints({2, 2, 2, 2})}});
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.type(), f32({Q, 6, 28, 28}));
  r = infer("conv2d", {f32({Q, 32, 112, 112}), f32({32, 1, 3, 3})},
            {{"stride", ints({2, 2})}, {"pad", ints({1, 1, 1, 1})}, {"groups", int64_t{32}}});
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.type(), f32({Q, 32, 56, 56}));
  r = infer("conv2d", {f32({Q, 784}), f32({6, 1, 5, 5})});
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.error, "conv2d expects a 4-d input [N,C,H,W], got f32[?,784]");
  EXPECT_EQ(r.blame, blame({0}));
  r = infer("conv2d", {f32({1, 1, batchDim(28), 28}), f32({6, 1, 5, 5})});
  EXPECT_EQ(r.error, "conv2d needs static spatial dimensions, got f32[1,1,?*28,28]");
}

TEST(OpTableTest, DenseOverRowsMergedWithTheBatch) {
  Inferred r = infer("dense", {f32({batchDim(197), 768}), f32({10, 768})});
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.type(), f32({batchDim(197), 10}));
  EXPECT_EQ(def("dense").macs({f32({batchDim(197), 768}), f32({10, 768})},
                              {f32({batchDim(197), 10})}, AttrMap()),
            197 * 768 * 10);
}

TEST(OpTableTest, DenseShapes) {
  Inferred r = infer("dense", {f32({Q, 400}), f32({120, 400}), f32({120})});
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.type(), f32({Q, 120}));
  r = infer("dense", {f32({8, 10}), f32({3, 10})});
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.type(), f32({8, 3}));
}

TEST(OpTableTest, DenseMacs) {
  const OpDef &d = def("dense");
  ASSERT_TRUE(d.macs);
  EXPECT_EQ(d.macs({f32({Q, 400}), f32({120, 400}), f32({120})}, {f32({Q, 120})}, AttrMap()),
            48000);
}

TEST(OpTableTest, DenseErrors) {
  // dense maps the last axis; a feature map whose whole sample matches the weight gets told
  // to flatten it first.
  Inferred r = infer("dense", {f32({Q, 16, 5, 5}), f32({120, 400})});
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.error, "dense weight f32[120,400] does not match input f32[?,16,5,5] (inner "
                     "dimensions differ); dense maps the last axis: to map each whole sample, "
                     "insert `flatten` before it");
  EXPECT_EQ(r.blame, blame({0, 1}));
  r = infer("dense", {f32({Q, 16, 5, 5}), f32({120, 5})});
  EXPECT_TRUE(r.ok) << r.error;
  r = infer("dense", {f32({Q})});
  EXPECT_FALSE(r.ok);
  r = infer("dense", {f32({Q, 400}), f32({400})});
  EXPECT_EQ(r.error, "dense weight must be 2-d [M,K], got f32[400]");
  EXPECT_EQ(r.blame, blame({1}));
  r = infer("dense", {f32({Q, 400}), f32({120, 401})});
  EXPECT_NE(r.error.find("inner dimensions differ"), std::string::npos) << r.error;
  EXPECT_EQ(r.blame, blame({0, 1}));
  r = infer("dense", {f32({Q, 400}), f32({120, 400}), f32({10})});
  EXPECT_EQ(r.error, "dense bias must be f32[120], got f32[10]");
  EXPECT_EQ(r.blame, blame({2}));
  r = infer("dense", {f32({Q, 400}), i32({120, 400})});
  EXPECT_NE(r.error.find("element type"), std::string::npos) << r.error;
}

TEST(OpTableTest, DenseLayerBuilder) {
  Built b = build("dense", {f32({Q, 400})}, {{"units", int64_t{120}}});
  ASSERT_TRUE(b.ok) << b.error;
  ASSERT_EQ(b.params.size(), 2u);
  EXPECT_EQ(b.params[0].suffix, "weight");
  EXPECT_EQ(b.params[0].type, f32({120, 400}));
  EXPECT_EQ(b.params[0].init, "he_normal");
  EXPECT_EQ(b.params[1].suffix, "bias");
  EXPECT_EQ(b.params[1].type, f32({120}));
  EXPECT_EQ(b.params[1].init, "zeros");
  b = build("dense", {f32({Q, 400})},
            {{"units", int64_t{10}}, {"bias", false}, {"init", std::string("xavier_uniform")}});
  ASSERT_EQ(b.params.size(), 1u);
  EXPECT_EQ(b.params[0].init, "xavier_uniform");
  b = build("dense", {f32({Q, 16, 5, 5})}, {{"units", int64_t{10}}});
  ASSERT_TRUE(b.ok) << b.error;
  EXPECT_EQ(b.params[0].type, f32({10, 5})); // nn.Linear(5, 10) over the last axis
  b = build("dense", {f32({Q})}, {{"units", int64_t{10}}});
  EXPECT_FALSE(b.ok);
  b = build("dense", {f32({Q, 400})}, {{"units", int64_t{0}}});
  EXPECT_EQ(b.errorArg, "units");
}

TEST(OpTableTest, MaxPoolShapes) {
  Inferred r = infer("maxpool", {f32({Q, 6, 28, 28})}, {{"kernel", ints({2, 2})}});
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.type(), f32({Q, 6, 14, 14}));
  r = infer("maxpool", {f32({Q, 64, 112, 112})},
            {{"kernel", ints({3, 3})}, {"stride", ints({2, 2})}, {"ceil", true}});
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.type(), f32({Q, 64, 56, 56}));
  r = infer("maxpool", {f32({Q, 64, 112, 112})}, {{"kernel", ints({3, 3})}, {"stride", ints({2})}});
  EXPECT_EQ(r.type(), f32({Q, 64, 55, 55}));
  // Ceil mode drops a last window that would start in the right padding.
  r = infer("maxpool", {f32({1, 1, 5, 5})},
            {{"kernel", ints({2})}, {"pad", ints({1, 1, 1, 1})}, {"ceil", true}});
  EXPECT_EQ(r.type(), f32({1, 1, 3, 3}));
  // A window over the batch size would give a size that is not a multiple of it.
  r = infer("maxpool", {f32({1, 3, Q, 8})}, {{"kernel", ints({2})}});
  EXPECT_EQ(r.error, "maxpool needs static spatial dimensions, got f32[1,3,?,8]");
  // Integers have no pooling kernel (regression: a float kernel read them).
  r = infer("maxpool", {i32({1, 3, 8, 8})}, {{"kernel", ints({2})}});
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.error, "maxpool expects a floating-point input, got i32[1,3,8,8]");
}

TEST(OpTableTest, MaxPoolErrors) {
  auto fails = [](std::vector<int64_t> in, std::vector<std::pair<std::string, AttrValue>> attrs) {
    Inferred r = infer("maxpool", {f32(std::move(in))}, std::move(attrs));
    EXPECT_FALSE(r.ok);
    return r;
  };
  Inferred r = fails({Q, 784}, {{"kernel", ints({2})}});
  EXPECT_EQ(r.error, "maxpool expects a 4-d input [N,C,H,W], got f32[?,784]");
  EXPECT_EQ(r.blame, blame({0}));
  r = fails({1, 1, 8, 8}, {{"kernel", ints({2, 2, 2})}});
  EXPECT_EQ(r.error, "maxpool kernel must be 1 or 2 positive integers");
  r = fails({1, 1, 8, 8}, {{"kernel", ints({-2})}});
  EXPECT_EQ(r.error, "maxpool kernel must be 1 or 2 positive integers");
  r = fails({1, 1, 8, 8}, {{"kernel", ints({2})}, {"stride", ints({0})}});
  EXPECT_EQ(r.error, "maxpool stride must be empty (the kernel) or 1 or 2 positive integers");
  r = fails({1, 1, 8, 8}, {{"kernel", ints({2})}, {"pad", ints({1, 1, 1})}});
  EXPECT_EQ(r.error, "maxpool pad must be 1, 2 or 4 non-negative integers");
  r = fails({1, 1, 8, 8}, {{"kernel", ints({3})}, {"pad", ints({2})}});
  EXPECT_EQ(r.error, "maxpool pad must be at most half the kernel size 3x3");
  r = fails({1, 1, 3, 3}, {{"kernel", ints({5})}});
  EXPECT_EQ(r.error, "maxpool kernel 5x5 does not fit the padded input f32[1,1,3,3]");
  EXPECT_EQ(r.blame, blame({0}));
}

TEST(OpTableTest, AvgPoolShapesAndErrors) {
  Inferred r = infer("avgpool", {f32({Q, 16, 8, 8})},
                     {{"kernel", ints({3})}, {"stride", ints({1})}, {"pad", ints({1})}});
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.type(), f32({Q, 16, 8, 8}));
  r = infer("avgpool", {i32({1, 1, 4, 4})}, {{"kernel", ints({2})}});
  EXPECT_EQ(r.error, "avgpool expects a floating-point input, got i32[1,1,4,4]");
  r = infer("avgpool", {f32({1, 4, 4})}, {{"kernel", ints({2})}});
  EXPECT_EQ(r.error, "avgpool expects a 4-d input [N,C,H,W], got f32[1,4,4]");
}

TEST(OpTableTest, GlobalAvgPoolShapesAndErrors) {
  Inferred r = infer("global_avgpool", {f32({Q, 64, 8, 8})});
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.type(), f32({Q, 64, 1, 1}));
  EXPECT_EQ(def("global_avgpool").fusion, FusionClass::Reduce);
  r = infer("global_avgpool", {f32({Q, 64})});
  EXPECT_EQ(r.error, "global_avgpool expects a 4-d input [N,C,H,W], got f32[?,64]");
  EXPECT_EQ(r.blame, blame({0}));
  r = infer("global_avgpool", {i32({1, 2, 3, 3})});
  EXPECT_EQ(r.error, "global_avgpool expects a floating-point input, got i32[1,2,3,3]");
}

TEST(OpTableTest, PoolLayerBuilders) {
  Built b = build("maxpool", {f32({Q, 6, 28, 28})}, {{"kernel", ints({2})}});
  ASSERT_TRUE(b.ok) << b.error;
  EXPECT_EQ(b.attrs.getInts("kernel"), std::vector<int64_t>({2, 2}));
  EXPECT_EQ(b.attrs.getInts("stride"), std::vector<int64_t>({2, 2}));
  EXPECT_EQ(b.attrs.getInts("pad"), std::vector<int64_t>({0, 0, 0, 0}));
  EXPECT_FALSE(b.attrs.getBool("ceil"));
  EXPECT_TRUE(b.params.empty());
  b = build("maxpool", {f32({Q, 64, 112, 112})},
            {{"kernel", ints({3})}, {"stride", ints({2})}, {"pad", ints({1, 0})}, {"ceil", true}});
  ASSERT_TRUE(b.ok) << b.error;
  EXPECT_EQ(b.attrs.getInts("kernel"), std::vector<int64_t>({3, 3}));
  EXPECT_EQ(b.attrs.getInts("stride"), std::vector<int64_t>({2, 2}));
  EXPECT_EQ(b.attrs.getInts("pad"), std::vector<int64_t>({1, 0, 1, 0}));
  EXPECT_TRUE(b.attrs.getBool("ceil"));
  b = build("maxpool", {f32({Q, 6, 28, 28})}, {{"kernel", ints({3, 2})}, {"stride", ints({0, 1})}});
  EXPECT_EQ(b.attrs.getInts("stride"), std::vector<int64_t>({3, 1}));
  b = build("avgpool", {f32({Q, 6, 28, 28})}, {{"kernel", ints({2})}, {"count_pad", false}});
  ASSERT_TRUE(b.ok) << b.error;
  EXPECT_FALSE(b.attrs.getBool("count_pad"));
  b = build("maxpool", {f32({Q, 6, 28, 28})}, {{"kernel", ints({2})}, {"stride", ints({-1})}});
  EXPECT_FALSE(b.ok);
  EXPECT_EQ(b.errorArg, "stride");
  b = build("maxpool", {f32({Q, 6, 28, 28})}, {{"kernel", ints({0})}});
  EXPECT_EQ(b.errorArg, "kernel");
  b = build("maxpool", {f32({Q, 6, 28, 28})}, {{"kernel", ints({2})}, {"pad", ints({1, 1, 1})}});
  EXPECT_EQ(b.errorArg, "pad");
  b = build("maxpool", {f32({Q, 784})}, {{"kernel", ints({2})}});
  EXPECT_EQ(b.error, "maxpool expects a 4-d input [N,C,H,W], got f32[?,784]");
}

TEST(OpTableTest, BatchNormShapes) {
  TensorType c16 = f32({16});
  Inferred r = infer("batchnorm", {f32({Q, 16, 8, 8}), c16, c16, c16, c16});
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.type(), f32({Q, 16, 8, 8}));
  r = infer("batchnorm", {f32({Q, 16}), c16, c16, c16, c16});
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.type(), f32({Q, 16}));
}

TEST(OpTableTest, BatchNormErrors) {
  TensorType c16 = f32({16});
  Inferred r = infer("batchnorm", {f32({Q, 16, 8}), c16, c16, c16, c16});
  EXPECT_EQ(r.error, "batchnorm expects a 2-d [N,C] or 4-d [N,C,H,W] input, got f32[?,16,8]");
  EXPECT_EQ(r.blame, blame({0}));
  r = infer("batchnorm", {f32({Q, 16, 8, 8}), c16, c16, f32({8}), c16});
  EXPECT_EQ(r.error, "batchnorm mean must be f32[16] to match input f32[?,16,8,8], got f32[8]");
  EXPECT_EQ(r.blame, blame({0, 3}));
  r = infer("batchnorm", {f32({Q, 16}), c16, c16, c16, c16}, {{"eps", 0.0}});
  EXPECT_EQ(r.error, "batchnorm eps must be positive");
  r = infer("batchnorm", {f32({Q, 16}), c16, c16, c16, c16}, {{"momentum", 1.5}});
  EXPECT_EQ(r.error, "batchnorm momentum must be in [0, 1]");
  r = infer("batchnorm", {i32({Q, 16}), c16, c16, c16, c16});
  EXPECT_EQ(r.error, "batchnorm expects a floating-point input, got i32[?,16]");
}

TEST(OpTableTest, BatchNormLayerBuilder) {
  Built b = build("batchnorm", {f32({Q, 16, 8, 8})}, {{"eps", 1e-3}});
  ASSERT_TRUE(b.ok) << b.error;
  EXPECT_EQ(b.attrs.getFloat("eps"), 1e-3);
  EXPECT_EQ(b.attrs.getFloat("momentum"), 0.1);
  std::vector<std::string> suffixes, inits;
  std::vector<bool> trainable;
  for (const ParamSpec &p : b.params) {
    suffixes.push_back(p.suffix);
    inits.push_back(p.init);
    trainable.push_back(p.trainable);
    EXPECT_EQ(p.type, f32({16}));
  }
  EXPECT_EQ(suffixes, std::vector<std::string>({"gamma", "beta", "running_mean", "running_var"}));
  EXPECT_EQ(inits, std::vector<std::string>({"ones", "zeros", "zeros", "ones"}));
  EXPECT_EQ(trainable, std::vector<bool>({true, true, false, false}));
  b = build("batchnorm", {f32({Q, Q, 8, 8})}, {});
  EXPECT_FALSE(b.ok);
  EXPECT_EQ(b.error, "batchnorm needs a static channel dimension, got f32[?,?,8,8]");
  b = build("batchnorm", {f32({Q, 16})}, {{"momentum", -0.5}});
  EXPECT_EQ(b.errorArg, "momentum");
}

TEST(OpTableTest, DropoutShapesAndErrors) {
  Inferred r = infer("dropout", {f32({Q, 128})}, {{"rate", 0.2}});
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.type(), f32({Q, 128}));
  EXPECT_TRUE(def("dropout").random);
  r = infer("dropout", {f32({Q, 128})}, {{"rate", 1.0}});
  EXPECT_EQ(r.error, "dropout rate must be in [0, 1)");
  r = infer("dropout", {i32({4})});
  EXPECT_EQ(r.error, "dropout expects a floating-point input, got i32[4]");
}

TEST(OpTableTest, FlattenShapes) {
  EXPECT_EQ(infer("flatten", {f32({Q, 16, 5, 5})}).type(), f32({Q, 400}));
  EXPECT_EQ(infer("flatten", {f32({Q, 16, 5, 5})}, {{"axis", int64_t{2}}}).type(),
            f32({Q, 16, 25}));
  EXPECT_EQ(infer("flatten", {f32({2, 3, 4})}, {{"axis", int64_t{-1}}}).type(), f32({2, 3, 4}));
  EXPECT_EQ(infer("flatten", {f32({2, 3, 4})}, {{"axis", int64_t{0}}}).type(), f32({24}));
  // The batch axis merged with others is a multiple of the batch size.
  EXPECT_EQ(infer("flatten", {f32({4, Q, 3})}).type(), f32({4, batchDim(3)}));
  EXPECT_EQ(infer("flatten", {f32({Q, 197, 768})}, {{"axis", int64_t{0}}}).type(),
            f32({batchDim(197 * 768)}));
  // end_axis, as torch.flatten's end_dim: flatten(x, 0, 1).
  EXPECT_EQ(infer("flatten", {f32({Q, 197, 768})}, {{"axis", int64_t{0}}, {"end_axis", int64_t{1}}})
                .type(),
            f32({batchDim(197), 768}));
  EXPECT_EQ(infer("flatten", {f32({Q, 2, 3, 4})}, {{"axis", int64_t{1}}, {"end_axis", int64_t{-2}}})
                .type(),
            f32({Q, 6, 4}));
  EXPECT_EQ(infer("flatten", {f32({Q, 2, 3})}, {{"axis", int64_t{2}}, {"end_axis", int64_t{2}}})
                .type(),
            f32({Q, 2, 3}));
}

TEST(OpTableTest, FlattenErrors) {
  Inferred r = infer("flatten", {f32({Q, 16})}, {{"axis", int64_t{2}}});
  EXPECT_EQ(r.error, "flatten axis 2 is out of range for f32[?,16]");
  r = infer("flatten", {f32({})});
  EXPECT_EQ(r.error, "flatten expects a tensor of rank 1 or more, got f32[]");
  r = infer("flatten", {f32({Q, 2, 3})}, {{"axis", int64_t{2}}, {"end_axis", int64_t{1}}});
  EXPECT_EQ(r.error, "flatten end_axis 1 is out of range for f32[?,2,3] or before axis 2");
  r = infer("flatten", {f32({Q, 2, 3})}, {{"axis", int64_t{0}}, {"end_axis", int64_t{3}}});
  EXPECT_EQ(r.error, "flatten end_axis 3 is out of range for f32[?,2,3] or before axis 0");
  r = infer("flatten", {f32({Q, Q})}, {{"axis", int64_t{0}}});
  EXPECT_EQ(r.error, "flatten of f32[?,?] would merge two multiples of the batch size");
}

TEST(OpTableTest, ReshapeShapes) {
  auto reshape = [](TensorType x, std::vector<int64_t> shape) {
    return infer("reshape", {std::move(x)}, {{"shape", ints(std::move(shape))}});
  };
  EXPECT_EQ(reshape(f32({2, 3, 4}), {6, -1}).type(), f32({6, 4}));
  EXPECT_EQ(reshape(f32({2, 3, 4}), {4, 6}).type(), f32({4, 6}));
  EXPECT_EQ(reshape(f32({Q, 1, 28, 28}), {-1, 784}).type(), f32({Q, 784}));
  EXPECT_EQ(reshape(f32({Q, 784}), {-1, 1, 28, 28}).type(), f32({Q, 1, 28, 28}));
  EXPECT_EQ(reshape(f32({Q, 784}), {16, -1, 49}).type(), f32({16, Q, 49}));
  // Merging the batch axis with others, as x.reshape(B * T, C), and splitting it back.
  EXPECT_EQ(reshape(f32({Q, 197, 768}), {-1, 768}).type(), f32({batchDim(197), 768}));
  EXPECT_EQ(reshape(f32({batchDim(197), 768}), {-1, 197, 768}).type(), f32({Q, 197, 768}));
  EXPECT_EQ(reshape(f32({Q, 4, 4}), {-1, 8}).type(), f32({batchDim(2), 8}));
  EXPECT_EQ(reshape(f32({batchDim(6), 4}), {-1, 3, 8}).type(), f32({Q, 3, 8}));
  EXPECT_EQ(reshape(f32({2, batchDim(3)}), {-1}).type(), f32({batchDim(6)}));
}

TEST(OpTableTest, ReshapeErrors) {
  auto reshape = [](TensorType x, std::vector<int64_t> shape) {
    Inferred r = infer("reshape", {std::move(x)}, {{"shape", ints(std::move(shape))}});
    EXPECT_FALSE(r.ok);
    return r.error;
  };
  EXPECT_EQ(reshape(f32({2, 3}), {-1, -1}), "reshape shape [-1,-1] has more than one -1");
  EXPECT_EQ(reshape(f32({2, 3}), {0, 6}),
            "reshape shape [0,6] entries must be positive or -1 (inferred)");
  EXPECT_EQ(reshape(f32({2, 3}), {-2, 3}),
            "reshape shape [-2,3] entries must be positive or -1 (inferred)");
  EXPECT_EQ(reshape(f32({2, 3}), {7}),
            "reshape of f32[2,3] to [7] changes the element count from 6 to 7");
  EXPECT_EQ(reshape(f32({2, 3}), {4, -1}),
            "reshape of f32[2,3] to [4,-1]: 6 elements are not a multiple of 4");
  EXPECT_EQ(reshape(f32({Q, 784}), {784}),
            "reshape of f32[?,784] to [784]: the batch dimension needs a -1 in the target shape");
  EXPECT_EQ(reshape(f32({Q, 784}), {-1, 100}),
            "reshape of f32[?,784] to [-1,100]: the other entries hold 100 elements, which do not "
            "divide the 784 of each sample (the -1 would split the batch axis)");
  EXPECT_EQ(reshape(f32({batchDim(197), 768}), {-1, 394, 768}),
            "reshape of f32[?*197,768] to [-1,394,768]: the other entries hold 302592 elements, "
            "which do not divide the 151296 of each sample (the -1 would split the batch axis)");
  EXPECT_EQ(reshape(f32({Q, Q, 3}), {-1, 3}),
            "reshape of f32[?,?,3] to [-1,3]: an input with more than one batch dimension cannot "
            "be reshaped");
  EXPECT_EQ(reshape(f32({2, 3}), {int64_t{1} << 62, 8}),
            "reshape shape [4611686018427387904,8] overflows the element count");
}

TEST(OpTableTest, ConcatShapes) {
  Inferred r = infer("concat", {f32({Q, 64, 28, 28}), f32({Q, 32, 28, 28}), f32({Q, 16, 28, 28})});
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.type(), f32({Q, 112, 28, 28}));
  // Along the batch axis the multiples of the batch size add up, as torch.cat([x, x]).
  r = infer("concat", {f32({Q, 4}), f32({Q, 4})}, {{"axis", int64_t{0}}});
  EXPECT_EQ(r.type(), f32({batchDim(2), 4}));
  r = infer("concat", {f32({batchDim(2), 4}), f32({Q, 4})}, {{"axis", int64_t{0}}});
  EXPECT_EQ(r.type(), f32({batchDim(3), 4}));
  r = infer("concat", {f32({2, 4}), f32({3, 4})}, {{"axis", int64_t{-2}}});
  EXPECT_EQ(r.type(), f32({5, 4}));
  r = infer("concat", {f32({2, 4})});
  EXPECT_EQ(r.type(), f32({2, 4}));
}

TEST(OpTableTest, ConcatErrors) {
  Inferred r = infer("concat", {});
  EXPECT_EQ(r.error, "concat needs at least one input");
  r = infer("concat", {f32({Q, 4, 8}), f32({Q, 4, 9})});
  EXPECT_EQ(r.error, "concat input 1 f32[?,4,9] differs from input 0 f32[?,4,8] in dimension 2 "
                     "(only axis 1 may differ)");
  EXPECT_EQ(r.blame, blame({0, 1}));
  r = infer("concat", {f32({Q, 4}), f32({Q, 4}), i32({Q, 4})});
  EXPECT_EQ(r.error, "concat input 2 i32[?,4] does not match input 0 f32[?,4]");
  EXPECT_EQ(r.blame, blame({0, 2}));
  r = infer("concat", {f32({Q, 4}), f32({Q, 4, 1})});
  EXPECT_EQ(r.blame, blame({0, 1}));
  r = infer("concat", {f32({Q, 4}), f32({Q, 4})}, {{"axis", int64_t{2}}});
  EXPECT_EQ(r.error, "concat axis 2 is out of range for f32[?,4]");
  r = infer("concat", {f32({})});
  EXPECT_EQ(r.error, "concat expects tensors of rank 1 or more, got f32[]");
  r = infer("concat", {f32({Q, 4}), f32({2, 4})}, {{"axis", int64_t{0}}});
  EXPECT_EQ(r.error, "concat along axis 0 joins ? with 2: a multiple of the batch size and a "
                     "fixed size");
}

TEST(OpTableTest, TransposeShapesAndErrors) {
  auto transpose = [](TensorType x, std::vector<int64_t> perm) {
    return infer("transpose", {std::move(x)}, {{"perm", ints(std::move(perm))}});
  };
  EXPECT_EQ(transpose(f32({2, 3, 4}), {2, 0, 1}).type(), f32({4, 2, 3}));
  EXPECT_EQ(transpose(f32({Q, 3}), {1, 0}).type(), f32({3, Q}));
  EXPECT_EQ(transpose(f32({}), {}).type(), f32({}));
  Inferred r = transpose(f32({2, 3}), {0});
  EXPECT_EQ(r.error, "transpose perm [0] has 1 entries but the input f32[2,3] has rank 2");
  EXPECT_EQ(r.blame, blame({0}));
  EXPECT_EQ(transpose(f32({2, 3}), {1, 1}).error,
            "transpose perm [1,1] is not a permutation of 0..1");
  EXPECT_EQ(transpose(f32({2, 3}), {0, 2}).error,
            "transpose perm [0,2] is not a permutation of 0..1");
  EXPECT_EQ(transpose(f32({2, 3}), {-1, 0}).error,
            "transpose perm [-1,0] is not a permutation of 0..1");
}

TEST(OpTableTest, ElementwiseBroadcasting) {
  for (const char *op : {"add", "sub", "mul", "div"}) {
    EXPECT_EQ(def(op).fusion, FusionClass::Broadcast) << op;
    Inferred r = infer(op, {f32({Q, 6, 28, 28}), f32({Q, 6, 28, 28})});
    ASSERT_TRUE(r.ok) << r.error;
    EXPECT_EQ(r.type(), f32({Q, 6, 28, 28}));
  }
  EXPECT_EQ(infer("add", {f32({Q, 6, 28, 28}), f32({6, 1, 1})}).type(), f32({Q, 6, 28, 28}));
  EXPECT_EQ(infer("mul", {f32({3, 1}), f32({1, 4})}).type(), f32({3, 4}));
  EXPECT_EQ(infer("sub", {f32({Q, 10}), f32({1, 10})}).type(), f32({Q, 10}));
  EXPECT_EQ(infer("div", {f32({1}), f32({Q, 10})}).type(), f32({Q, 10}));
  EXPECT_EQ(infer("add", {f32({}), f32({2, 3})}).type(), f32({2, 3}));
}

TEST(OpTableTest, ElementwiseErrors) {
  Inferred r = infer("add", {f32({Q, 3}), f32({4, 3})});
  EXPECT_EQ(r.error, "add cannot broadcast f32[?,3] with f32[4,3]");
  EXPECT_EQ(r.blame, blame({0, 1}));
  r = infer("div", {f32({2, 3}), f32({2, 4})});
  EXPECT_EQ(r.error, "div cannot broadcast f32[2,3] with f32[2,4]");
  r = infer("mul", {f32({2, 3}), i32({2, 3})});
  EXPECT_EQ(r.error, "mul operands must have the same element type, got f32[2,3] and i32[2,3]");
  EXPECT_EQ(r.blame, blame({0, 1}));
}

TEST(OpTableTest, ActivationUnaryOps) {
  for (const char *op : {"relu", "relu6", "leaky_relu", "sigmoid", "tanh", "silu", "gelu",
                         "hard_sigmoid", "hard_swish"}) {
    EXPECT_EQ(def(op).fusion, FusionClass::Elementwise) << op;
    Inferred r = infer(op, {f32({Q, 6, 28, 28})});
    ASSERT_TRUE(r.ok) << op << ": " << r.error;
    EXPECT_EQ(r.type(), f32({Q, 6, 28, 28}));
    r = infer(op, {i32({3})});
    EXPECT_EQ(r.error, std::string(op) + " expects a floating-point input, got i32[3]");
    EXPECT_EQ(r.blame, blame({0}));
  }
  EXPECT_TRUE(infer("relu", {TensorType(DType::F64, {2})}).ok);
}

TEST(OpTableTest, ActivationAttributes) {
  EXPECT_TRUE(infer("leaky_relu", {f32({4})}, {{"alpha", 0.2}}).ok);
  EXPECT_EQ(
      infer("leaky_relu", {f32({4})}, {{"alpha", std::numeric_limits<double>::infinity()}}).error,
      "leaky_relu alpha must be a finite number");
  EXPECT_TRUE(infer("gelu", {f32({4})}, {{"approximate", std::string("tanh")}}).ok);
  EXPECT_EQ(infer("gelu", {f32({4})}, {{"approximate", std::string("erf")}}).error,
            "gelu approximate must be \"none\" or \"tanh\", got \"erf\"");
}

TEST(OpTableTest, ActivationSoftmax) {
  for (const char *op : {"softmax", "log_softmax"}) {
    EXPECT_EQ(def(op).fusion, FusionClass::Reduce) << op;
    EXPECT_EQ(infer(op, {f32({Q, 10})}).type(), f32({Q, 10}));
    EXPECT_EQ(infer(op, {f32({Q, 10})}, {{"axis", int64_t{0}}}).type(), f32({Q, 10}));
    Inferred r = infer(op, {f32({Q, 10})}, {{"axis", int64_t{2}}});
    EXPECT_EQ(r.error, std::string(op) + " axis 2 is out of range for f32[?,10]");
    EXPECT_EQ(r.blame, blame({0}));
    r = infer(op, {f32({})});
    EXPECT_EQ(r.error, std::string(op) + " axis -1 is out of range for f32[]");
  }
}

} // namespace
