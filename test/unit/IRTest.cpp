// Tests of the IR data structures, the textual printer and parser, and the
// verifier.
#include "ir/IR.h"
#include "ir/OpTable.h"
#include "ir/Printer.h"
#include "ir/TextParser.h"
#include "ir/UseIndex.h"
#include "ir/Verifier.h"

#include <gtest/gtest.h>

#include <random>
#include <sstream>

using namespace dtnn;
using namespace dtnn::ir;

namespace {

const OpDef &def(const std::string &name) {
  const OpDef *d = OpTable::get().lookup(name);
  EXPECT_NE(d, nullptr) << name;
  return *d;
}

TensorType f32(std::vector<int64_t> dims) { return TensorType(DType::F32, std::move(dims)); }

AttrMap filled(const std::string &op, AttrMap attrs = {}) {
  fillDefaultAttrs(def(op), attrs);
  return attrs;
}

// Parses `text`; on failure returns null and leaves the diagnostics in `errs`.
std::unique_ptr<Module> parse(const std::string &text, std::string &errs) {
  SourceManager sm;
  std::ostringstream os;
  DiagnosticEngine diags(sm, os);
  auto m = parseModule(text, "t.dtir", sm, diags);
  errs = os.str();
  EXPECT_EQ(m == nullptr, diags.hasErrors());
  return m;
}

std::unique_ptr<Module> parseOk(const std::string &text) {
  std::string errs;
  auto m = parse(text, errs);
  EXPECT_NE(m, nullptr) << errs;
  return m;
}

// The diagnostics of a text that must fail to parse.
std::string parseError(const std::string &text) {
  std::string errs;
  auto m = parse(text, errs);
  EXPECT_EQ(m, nullptr) << text;
  return errs;
}

// All verifier messages, one per line, prefixed with line:col when known.
std::string verifyMessages(const Module &m) {
  std::string out;
  for (const Diagnostic &d : verifyModule(m)) {
    if (d.loc.known()) out += std::to_string(d.loc.line) + ":" + std::to_string(d.loc.col) + ": ";
    out += d.message + "\n";
  }
  return out;
}

// A LeNet-like module built through the C++ API.
std::unique_ptr<Module> buildLeNet() {
  auto m = std::make_unique<Module>();
  SourceLoc l4{"lenet.dtnn", 4, 8};
  Param *w = m->addParam("conv2d.0.weight", f32({6, 1, 5, 5}), "he_uniform", true, l4);
  Param *b = m->addParam("conv2d.0.bias", f32({6}), "zeros", true, l4);
  Param *dw = m->addParam("dense.0.weight", f32({10, 4704}), "he_uniform", true);
  m->addParam("bn.running_mean", f32({6}), "zeros", false, SourceLoc{"lenet.dtnn", 5, 3});
  Graph *g = m->addGraph("LeNet");
  Value *x = g->addInput("x", f32({kDynamic, 1, 28, 28}));
  AttrMap convAttrs;
  convAttrs.set("pad", std::vector<int64_t>{2, 2, 2, 2});
  Op *conv = g->addOp(def("conv2d"), {x, w->value, b->value}, filled("conv2d", convAttrs),
                      {f32({kDynamic, 6, 28, 28})}, l4);
  Op *relu = g->addOp(def("relu"), {conv->result()}, {}, {f32({kDynamic, 6, 28, 28})},
                      SourceLoc{"lenet.dtnn", 4, 37});
  Op *flat = g->addOp(def("flatten"), {relu->result()}, filled("flatten"), {f32({kDynamic, 4704})});
  Op *dense =
      g->addOp(def("dense"), {flat->result(), dw->value}, filled("dense"), {f32({kDynamic, 10})});
  g->setOutputs({dense->result()});
  return m;
}

const char *kLeNetText =
    "param @conv2d.0.weight : f32[6,1,5,5] init=he_uniform loc(\"lenet.dtnn\":4:8)\n"
    "param @conv2d.0.bias : f32[6] init=zeros loc(\"lenet.dtnn\":4:8)\n"
    "param @dense.0.weight : f32[10,4704] init=he_uniform\n"
    "buffer @bn.running_mean : f32[6] init=zeros loc(\"lenet.dtnn\":5:3)\n"
    "\n"
    "graph @LeNet(%x: f32[?,1,28,28]) -> f32[?,10] {\n"
    "  %0 = conv2d %x, @conv2d.0.weight, @conv2d.0.bias {pad=[2,2,2,2]} : f32[?,6,28,28] "
    "loc(\"lenet.dtnn\":4:8)\n"
    "  %1 = relu %0 : f32[?,6,28,28] loc(\"lenet.dtnn\":4:37)\n"
    "  %2 = flatten %1 : f32[?,4704]\n"
    "  %3 = dense %2, @dense.0.weight : f32[?,10]\n"
    "  return %3\n"
    "}\n";

// --- IR data structures ----------------------------------------------------

TEST(IRTest, LocationMergeKeepsOrderAndSkipsDuplicates) {
  Location a(SourceLoc{"a.dtnn", 1, 2});
  Location b;
  b.locs = {{"b.dtnn", 3, 4}, {"a.dtnn", 1, 2}};
  a.merge(b);
  ASSERT_EQ(a.locs.size(), 2u);
  EXPECT_EQ(a.locs[1], (SourceLoc{"b.dtnn", 3, 4}));
  EXPECT_FALSE(Location(SourceLoc{}).known());
  EXPECT_EQ(locationStr(a), "loc([\"a.dtnn\":1:2, \"b.dtnn\":3:4])");
  EXPECT_EQ(locationStr(Location()), "");
}

TEST(IRTest, GraphEditing) {
  Module m;
  Graph *g = m.addGraph("g");
  Value *x = g->addInput("x", f32({2, 3}));
  Op *a = g->addOp(def("relu"), {x}, {}, {f32({2, 3})});
  Op *c = g->addOp(def("add"), {a->result(), x}, {}, {f32({2, 3})});
  Op *b = g->insertOp(1, def("sigmoid"), {a->result()}, {}, {f32({2, 3})});
  EXPECT_EQ(g->indexOf(a), 0u);
  EXPECT_EQ(g->indexOf(b), 1u);
  EXPECT_EQ(g->indexOf(c), 2u);
  EXPECT_EQ(b->result()->definingOp(), b);
  g->setOutputs({c->result(), a->result()});

  auto uses = g->useCounts();
  EXPECT_EQ(uses[x], 2u);
  EXPECT_EQ(uses[a->result()], 3u);
  EXPECT_EQ(uses[b->result()], 0u);

  g->replaceAllUses(a->result(), b->result());
  EXPECT_EQ(c->operand(0), b->result());
  EXPECT_EQ(g->outputs()[1], b->result());
  EXPECT_EQ(b->operand(0), b->result()) << "replaceAllUses also rewrites b's own operand";
  b->setOperand(0, x);
  g->eraseOpsIf([](const Op &op) { return op.name() == "relu"; });
  ASSERT_EQ(g->ops().size(), 2u);
  EXPECT_EQ(g->ops()[0]->name(), "sigmoid");
  EXPECT_EQ(g->indexOf(a), g->ops().size());
}

TEST(IRTest, ReplaceAllUsesFollowsChains) {
  Module m;
  Graph *g = m.addGraph("g");
  Value *x = g->addInput("x", f32({4}));
  Op *a = g->addOp(def("relu"), {x}, {}, {f32({4})});
  Op *b = g->addOp(def("relu"), {x}, {}, {f32({4})});
  Op *c = g->addOp(def("relu"), {x}, {}, {f32({4})});
  Op *d = g->addOp(def("add"), {a->result(), b->result()}, {}, {f32({4})});
  g->setOutputs({a->result()});
  g->replaceAllUses({{a->result(), b->result()}, {b->result(), c->result()}});
  EXPECT_EQ(d->operand(0), c->result());
  EXPECT_EQ(d->operand(1), c->result());
  EXPECT_EQ(g->outputs()[0], c->result());
}

TEST(IRTest, UseIndexReplacesAsGraphDoes) {
  Module m;
  Graph *g = m.addGraph("g");
  Value *x = g->addInput("x", f32({4}));
  Op *a = g->addOp(def("relu"), {x}, {}, {f32({4})});
  Op *b = g->addOp(def("relu"), {x}, {}, {f32({4})});
  Op *c = g->addOp(def("add"), {a->result(), a->result()}, {}, {f32({4})});
  g->setOutputs({a->result(), c->result(), a->result()});
  UseIndex index(*g);
  index.replaceAllUses(a->result(), b->result());
  EXPECT_EQ(c->operand(0), b->result());
  EXPECT_EQ(c->operand(1), b->result());
  EXPECT_EQ(g->outputs(), std::vector<Value *>({b->result(), c->result(), b->result()}));
  // The moved uses follow a second replacement.
  index.replaceAllUses(b->result(), x);
  EXPECT_EQ(c->operand(0), x);
  EXPECT_EQ(g->outputs()[2], x);
  // An op given a new operand is reported, then found.
  Op *d = g->addOp(def("relu"), {c->result()}, {}, {f32({4})});
  index.addUser(d);
  b->setOperand(0, c->result());
  index.addUser(c->result(), b);
  index.replaceAllUses(c->result(), a->result());
  EXPECT_EQ(d->operand(0), a->result());
  EXPECT_EQ(b->operand(0), a->result());
  EXPECT_EQ(g->outputs()[1], a->result());
  index.replaceAllUses(x, x); // no change
  EXPECT_EQ(c->operand(0), x);
}

TEST(IRTest, ModuleParams) {
  Module m;
  Param *w = m.addParam("w", f32({3}), "zeros", true);
  Param *s = m.addParam("s", f32({3}), "ones", false);
  EXPECT_EQ(m.findParam("w"), w);
  EXPECT_EQ(m.findParam("nope"), nullptr);
  EXPECT_EQ(w->value->kind(), Value::Kind::Param);
  EXPECT_EQ(w->value->param(), w);
  EXPECT_EQ(w->value->type(), f32({3}));
  EXPECT_FALSE(s->trainable);
  m.eraseParamsIf([](const Param &p) { return p.name == "w"; });
  ASSERT_EQ(m.params().size(), 1u);
  EXPECT_EQ(m.params()[0].get(), s);
  Graph *g = m.addGraph("main");
  EXPECT_EQ(m.findGraph("main"), g);
  EXPECT_EQ(m.findGraph("other"), nullptr);
}

// --- Printer ---------------------------------------------------------------

TEST(IRTest, PrintsExactText) {
  auto m = buildLeNet();
  EXPECT_EQ(printModule(*m), kLeNetText);
  EXPECT_EQ(verifyMessages(*m), "");
}

TEST(IRTest, PrintsSignaturesWithSeveralOrNoOutputs) {
  Module m;
  Graph *g = m.addGraph("two");
  Value *x = g->addInput("x", f32({kDynamic, 4}));
  Value *y = g->addInput("_y.1", TensorType(DType::I64, {}));
  Op *r = g->addOp(def("relu"), {x}, {}, {f32({kDynamic, 4})});
  g->setOutputs({r->result(), y, x});
  Graph *e = m.addGraph("empty");
  Op *lr = e->addOp(def("leaky_relu"), {},
                    filled("leaky_relu",
                           [] {
                             AttrMap a;
                             a.set("alpha", 0.25);
                             return a;
                           }()),
                    {f32({1})});
  (void)lr;
  EXPECT_EQ(printModule(m), "graph @two(%x: f32[?,4], %_y.1: i64[]) -> (f32[?,4], i64[], "
                            "f32[?,4]) {\n"
                            "  %0 = relu %x : f32[?,4]\n"
                            "  return %0, %_y.1, %x\n"
                            "}\n"
                            "\n"
                            "graph @empty() -> () {\n"
                            "  %0 = leaky_relu {alpha=0.25} : f32[1]\n"
                            "  return\n"
                            "}\n");
}

TEST(IRTest, PrinterOmitsDefaultsAndQuotesOddInits) {
  Module m;
  m.addParam("p", f32({2}), "", true);
  m.addParam("q", f32({2}), "my init", false);
  Graph *g = m.addGraph("g");
  Value *x = g->addInput("x", f32({1, 1, 8, 8}));
  AttrMap attrs = filled("conv2d");
  attrs.set("stride", std::vector<int64_t>{1, 1});
  attrs.set("groups", int64_t{1});
  Value *w = m.addParam("w", f32({1, 1, 3, 3}), "he_uniform", true)->value;
  Op *c = g->addOp(def("conv2d"), {x, w}, attrs, {f32({1, 1, 6, 6})});
  g->setOutputs({c->result()});
  EXPECT_EQ(printModule(m), "param @p : f32[2] init=\"\"\n"
                            "buffer @q : f32[2] init=\"my init\"\n"
                            "param @w : f32[1,1,3,3] init=he_uniform\n"
                            "\n"
                            "graph @g(%x: f32[1,1,8,8]) -> f32[1,1,6,6] {\n"
                            "  %0 = conv2d %x, @w : f32[1,1,6,6]\n"
                            "  return %0\n"
                            "}\n");
}

// --- Round trips -----------------------------------------------------------

void expectRoundTrip(const std::string &text) {
  auto m = parseOk(text);
  ASSERT_NE(m, nullptr);
  std::string printed = printModule(*m);
  EXPECT_EQ(printed, text);
  auto again = parseOk(printed);
  ASSERT_NE(again, nullptr);
  EXPECT_EQ(printModule(*again), printed);
  EXPECT_EQ(verifyMessages(*m), "");
}

TEST(IRTest, RoundTripLeNet) { expectRoundTrip(kLeNetText); }

TEST(IRTest, RoundTripSeveralGraphsAndOutputs) {
  expectRoundTrip("param @w : f32[4,3] init=he_uniform\n"
                  "param @g : f32[4] init=ones loc([\"a.dtnn\":1:2, \"b \\\"q\\\".dtnn\":30:40])\n"
                  "param @b : f32[4] init=zeros\n"
                  "buffer @mean : f32[4] init=zeros\n"
                  "buffer @var : f32[4] init=\"a b\"\n"
                  "\n"
                  "graph @forward(%x: f32[?,3], %t: f32[?,4]) -> (f32[?,4], f32[?,8]) {\n"
                  "  %0 = dense %x, @w : f32[?,4] loc([\"m.dtnn\":2:5, \"m.dtnn\":3:5])\n"
                  "  %1 = batchnorm %0, @g, @b, @mean, @var {eps=0.001} : f32[?,4]\n"
                  "  %2 = leaky_relu %1 {alpha=0.2} : f32[?,4]\n"
                  "  %3 = gelu %2 {approximate=\"tanh\"} : f32[?,4]\n"
                  "  %4 = concat %3, %t : f32[?,8]\n"
                  "  %5 = softmax %3 {axis=0} : f32[?,4]\n"
                  "  return %5, %4\n"
                  "}\n"
                  "\n"
                  "graph @eval(%x: f32[2,3,4,5]) -> f32[20,6] {\n"
                  "  %0 = transpose %x {perm=[3,1,0,2]} : f32[5,3,2,4]\n"
                  "  %1 = reshape %0 {shape=[20,-1]} : f32[20,6]\n"
                  "  return %1\n"
                  "}\n"
                  "\n"
                  "graph @params() -> (f32[4], f32[4]) {\n"
                  "  return @b, @g\n"
                  "}\n");
}

// `?*k` is k times the batch size: what merging the batch axis with others makes.
TEST(IRTest, RoundTripMultiplesOfTheBatch) {
  expectRoundTrip("param @w : f32[10,768] init=zeros\n"
                  "\n"
                  "graph @tokens(%x: f32[?,197,768]) -> f32[?,197,10] {\n"
                  "  %0 = reshape %x {shape=[-1,768]} : f32[?*197,768]\n"
                  "  %1 = dense %0, @w : f32[?*197,10]\n"
                  "  %2 = reshape %1 {shape=[-1,197,10]} : f32[?,197,10]\n"
                  "  return %2\n"
                  "}\n");
}

TEST(IRTest, RoundTripPoolingAndScalars) {
  expectRoundTrip("graph @pool(%x: f32[?,3,32,32], %s: f64[]) -> (f32[?,3,16,16], f64[]) {\n"
                  "  %0 = maxpool %x {kernel=[2,2]} : f32[?,3,16,16]\n"
                  "  %1 = avgpool %0 {kernel=[3,3], stride=[1,1], pad=[1,1,1,1], "
                  "count_pad=false} : f32[?,3,16,16]\n"
                  "  return %1, %s\n"
                  "}\n");
}

TEST(IRTest, ParserCanonicalizesInput) {
  // Comments, odd spacing, any result names, default attributes written out
  // and coercible literals all print in the canonical form.
  auto m = parseOk("// A comment.\n"
                   "graph @g(%in: f32[1,1,4,4]) -> f32[1,2,4,4] { // Trailing comment.\n"
                   "  %w.1 = relu %in : f32[1,1,4,4]\n"
                   "  %conv=conv2d %in,%w.1 {stride=1, pad=[1,1,1,1],groups=1}:f32[1,1,4,4]\n"
                   "  %cat = concat %conv, %conv : f32[1,2,4,4]\n"
                   "  return %cat\n"
                   "}\n");
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(printModule(*m), "graph @g(%in: f32[1,1,4,4]) -> f32[1,2,4,4] {\n"
                             "  %0 = relu %in : f32[1,1,4,4]\n"
                             "  %1 = conv2d %in, %0 {stride=[1], pad=[1,1,1,1]} : f32[1,1,4,4]\n"
                             "  %2 = concat %1, %1 : f32[1,2,4,4]\n"
                             "  return %2\n"
                             "}\n");
  // An int for a float attribute and [] for a float list are accepted.
  auto d = parseOk("graph @g(%x: f32[2]) -> f32[2] {\n"
                   "  %0 = leaky_relu %x {alpha=1} : f32[2]\n"
                   "  return %0\n"
                   "}\n");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->graphs()[0]->ops()[0]->attrs().getFloat("alpha"), 1.0);
}

TEST(IRTest, ParserKeepsResultTypesAsWritten) {
  auto m = parseOk("graph @g(%x: f32[2]) -> f32[3] {\n"
                   "  %0 = relu %x : f32[3] loc(\"k.dtnn\":7:9)\n"
                   "  return %0\n"
                   "}\n");
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(verifyMessages(*m),
            "7:9: result type f32[3] of 'relu' does not match the inferred f32[2] "
            "(in graph @g)\n");
}

// --- Parse errors ----------------------------------------------------------

struct ErrorCase {
  const char *text;
  const char *expected; // A substring of the diagnostics.
};

TEST(IRTest, ParseErrorsPointAtTheOffendingToken) {
  const std::string head = "param @w : f32[6,1,5,5] init=zeros\n"
                           "graph @g(%x: f32[?,1,8,8]) -> f32[?,6,4,4] {\n";
  const ErrorCase cases[] = {
      {"  %0 = conv2 %x, @w : f32[?,6,4,4]\n",
       "t.dtir:3:8: error: unknown op 'conv2'; did you mean 'conv2d'?"},
      {"  %0 = conv2d %x, @w {strid=[1,1]} : f32[?,6,4,4]\n",
       "t.dtir:3:23: error: 'conv2d' has no attribute 'strid'; did you mean 'stride'?"},
      {"  %0 = conv2d %x, @w {groups=\"two\"} : f32[?,6,4,4]\n",
       "t.dtir:3:30: error: attribute 'groups' of 'conv2d' expects an int, got a string"},
      {"  %0 = conv2d %x, @w {groups=1, groups=2} : f32[?,6,4,4]\n",
       "t.dtir:3:33: error: duplicate attribute 'groups'"},
      {"  %0 = maxpool %x : f32[?,6,4,4]\n",
       "t.dtir:3:8: error: 'maxpool' requires attribute 'kernel'"},
      {"  %0 = relu %y : f32[?,6,4,4]\n", "t.dtir:3:13: error: use of undefined value %y"},
      {"  %0 = relu %xx : f32[?,6,4,4]\n",
       "t.dtir:3:13: error: use of undefined value %xx; did you mean '%x'?"},
      {"  %0 = conv2d %x, @wt : f32[?,6,4,4]\n",
       "t.dtir:3:19: error: use of undefined parameter @wt; did you mean '@w'?"},
      {"  %x = relu %x : f32[?,1,8,8]\n", "t.dtir:3:3: error: redefinition of value %x\n"},
      {"  %0, %1 = relu %x : f32[?,1,8,8]\n",
       "t.dtir:3:3: error: 'relu' produces 1 result, but 2 are named"},
      {"  relu %x : f32[?,1,8,8]\n", "t.dtir:3:3: error: 'relu' produces 1 result, but 0 are"},
      {"  %0 = relu %x : f32[?,1,8,8], f32[1]\n",
       "t.dtir:3:16: error: 'relu' produces 1 result, but 2 result types are given"},
      {"  %0 = relu %x\n", "t.dtir:4:1: error: expected ':' and the result types of 'relu'"},
      {"  %0 = relu %x : f33[1]\n",
       "t.dtir:3:18: error: unknown element type 'f33'; did you mean 'f32'?"},
      {"  %0 = relu %x : f32[1,-2]\n",
       "t.dtir:3:24: error: dimensions must be non-negative, '?' or '?*k', got -2"},
      {"  %0 = relu %x : f32[?*0,1]\n",
       "t.dtir:3:24: error: expected a multiple of the batch size from 1 to 2^40 after '?*', got "
       "'0'"},
      {"  %0 = relu %x : f32[?*,1]\n",
       "t.dtir:3:24: error: expected a multiple of the batch size from 1 to 2^40 after '?*', got "
       "','"},
      {"  %0 = relu %x : f32[99999999999999999999]\n",
       "t.dtir:3:22: error: integer literal '99999999999999999999' is out of range"},
      {"  %0 = relu %x : f32[1] loc(\"a.dtnn:1:2)\n", "t.dtir:3:29: error: unterminated string"},
      {"  %0 = relu %x : f32[1] $\n", "t.dtir:3:25: error: unexpected character '$'"},
      {"  %0 = relu %x : f32[1]\n  return %0\n}\n",
       "t.dtir:4:10: error: returned value %0 has type f32[1], but graph @g declares output 0 "
       "as f32[?,6,4,4]"},
      {"  return\n}\n",
       "t.dtir:3:3: error: graph @g returns 0 values but its signature declares 1 output"},
      {"  %0 = relu %x : f32[1]\n}\n", "t.dtir:4:1: error: expected 'return' before the end"},
      {"  %0 = relu %x : f32[1] %1 = relu %x : f32[1]\n",
       "t.dtir:3:25: error: expected end of line after the op, got '%1'"},
      {"  %0 = dropout %x {rate=[0.5,[1]]} : f32[1]\n",
       "t.dtir:3:30: error: nested lists are not supported"},
      {"  %0 = relu %x {alpha=1} : f32[1]\n",
       "t.dtir:3:17: error: 'relu' takes no attributes, got 'alpha'"},
      {"  %0 = leaky_relu %x {alpha=1.5e999} : f32[1]\n",
       "t.dtir:3:29: error: floating-point literal '1.5e999' is out of range"},
      {"  %0 = relu %x : f32[12ab]\n", "t.dtir:3:22: error: malformed number '12ab'"},
  };
  for (const ErrorCase &c : cases) {
    std::string errs = parseError(head + c.text);
    EXPECT_NE(errs.find(c.expected), std::string::npos) << "input:\n"
                                                        << c.text << "diagnostics:\n"
                                                        << errs;
  }
}

TEST(IRTest, ParseErrorsAtModuleLevel) {
  const ErrorCase cases[] = {
      {"param @w : f32[1] init=zeros\nparam @w : f32[2] init=zeros\n",
       "t.dtir:2:7: error: redefinition of parameter @w\nparam @w : f32[2] init=zeros\n"
       "      ^\nt.dtir:1:7: note: previous definition is here"},
      {"graph @g() -> () {\n  return\n}\ngraph @g() -> () {\n  return\n}\n",
       "t.dtir:4:7: error: redefinition of graph @g"},
      {"param @w : f32[1]\n", "t.dtir:2:1: error: expected 'init=' after the parameter type"},
      {"\n  module @m\n", "t.dtir:2:3: error: expected 'param', 'buffer' or 'graph', got 'module'"},
      {"graph @g(%0: f32[1]) -> () {\n", "t.dtir:1:10: error: graph input names must start"},
      {"graph @g(%x: f32[1], %x: f32[1]) -> () {\n",
       "t.dtir:1:22: error: redefinition of value %x"},
      {"graph @g() -> () {\n  return\n", "t.dtir:3:1: error: expected '}' after the return"},
      {"graph @1g() -> () {}\n", "t.dtir:1:7: error: names after '@' must start with a letter"},
      {"param @w : f32[1] init=\"a\\qb\"\n", "t.dtir:1:26: error: unknown escape sequence"},
      {"param @w : f32[1] init=zeros loc(\"f\":1:99999999999)\n",
       "t.dtir:1:40: error: expected a column number, got '99999999999'"},
      {"\xC3\xA9", "t.dtir:1:1: error: invalid byte 0xC3"},
  };
  for (const ErrorCase &c : cases) {
    std::string errs = parseError(c.text);
    EXPECT_NE(errs.find(c.expected), std::string::npos) << "input:\n"
                                                        << c.text << "diagnostics:\n"
                                                        << errs;
  }
  std::string nul = parseError(std::string("param @w \0 : f32[1]\n", 20));
  EXPECT_NE(nul.find("t.dtir:1:10: error: unexpected NUL byte"), std::string::npos) << nul;
}

TEST(IRTest, ParserSurvivesMangledInput) {
  // Every prefix of a valid module, and copies with random bytes changed,
  // either parse or produce diagnostics; what parses also prints and verifies.
  std::string text = std::string(kLeNetText) +
                     "\ngraph @aux(%a: f32[?,4], %b: f32[1,4]) -> (f32[?,4], f32[?,4]) {\n"
                     "  %0 = add %a, %b : f32[?,4]\n"
                     "  %1 = maxpool %a {kernel=[2,2], stride=[], ceil=true} : f32[?,4]\n"
                     "  %2 = leaky_relu %0 {alpha=-0.5} : f32[?,4]\n"
                     "  return %2, %0\n"
                     "}\n";
  auto exercise = [](const std::string &t) {
    SourceManager sm;
    std::ostringstream os;
    DiagnosticEngine diags(sm, os);
    auto m = parseModule(t, "fuzz.dtir", sm, diags);
    if (m) {
      (void)printModule(*m);
      (void)verifyModule(*m);
    }
  };
  for (size_t n = 0; n <= text.size(); ++n) exercise(text.substr(0, n));
  std::mt19937 rng(12345);
  const char alphabet[] = "%@[](){},:=-?\"0123456789.eE-xf\n\x00\xff";
  for (int i = 0; i < 3000; ++i) {
    std::string t = text;
    int edits = 1 + static_cast<int>(rng() % 3);
    for (int e = 0; e < edits; ++e) t[rng() % t.size()] = alphabet[rng() % (sizeof alphabet - 1)];
    exercise(t);
  }
  exercise(std::string(1 << 20, '['));
  exercise("graph @g() -> () {\n" + std::string(200000, '%') + "\n");
  exercise("param @w : f32[" + std::string(100000, '1') + "] init=z\n");
}

// --- Verifier --------------------------------------------------------------

TEST(IRTest, VerifierAcceptsParsedModules) {
  auto m = parseOk(kLeNetText);
  ASSERT_NE(m, nullptr);
  EXPECT_TRUE(verifyModule(*m).empty());
}

TEST(IRTest, VerifierReportsBadOperandCountAndAttributes) {
  Module m;
  Graph *g = m.addGraph("g");
  Value *x = g->addInput("x", f32({1, 1, 4, 4}));
  SourceLoc l{"v.dtnn", 3, 5};
  g->addOp(def("conv2d"), {x}, filled("conv2d"), {f32({1, 1, 4, 4})}, l);
  AttrMap bad = filled("relu");
  bad.set("alpha", 0.5);
  g->addOp(def("relu"), {x}, bad, {f32({1, 1, 4, 4})}, l);
  AttrMap wrongKind = filled("flatten");
  wrongKind.set("axis", 1.0);
  g->addOp(def("flatten"), {x}, wrongKind, {f32({1, 16})});
  g->addOp(def("maxpool"), {x}, filled("maxpool"), {f32({1, 1, 2, 2})});
  g->addOp(def("relu"), {x, x}, {}, {f32({1, 1, 4, 4})});
  EXPECT_EQ(verifyMessages(m),
            "3:5: 'conv2d' takes 2 to 4 operands, got 1 (in graph @g)\n"
            "3:5: 'relu' has no attribute 'alpha' (in graph @g)\n"
            "attribute 'axis' of 'flatten' must be int, got float (in graph @g)\n"
            "'maxpool' is missing attribute 'kernel' (in graph @g)\n"
            "'relu' takes 1 operand, got 2 (in graph @g)\n");
}

TEST(IRTest, VerifierReportsWrongResultTypesAndShapeErrors) {
  Module m;
  Param *w = m.addParam("w", f32({6, 3, 5, 5}), "he_uniform", true, SourceLoc{"v.dtnn", 1, 1});
  Graph *g = m.addGraph("net");
  Value *x = g->addInput("x", f32({kDynamic, 1, 28, 28}));
  Value *y = g->addInput("y", f32({kDynamic, 3, 28, 28}));
  g->addOp(def("conv2d"), {y, w->value}, filled("conv2d"), {f32({kDynamic, 6, 28, 28})},
           SourceLoc{"v.dtnn", 2, 3});
  g->addOp(def("conv2d"), {x, w->value}, filled("conv2d"), {f32({kDynamic, 6, 24, 24})},
           SourceLoc{"v.dtnn", 3, 3});
  auto diags = verifyModule(m);
  ASSERT_EQ(diags.size(), 2u);
  EXPECT_EQ(diags[0].message, "result type f32[?,6,28,28] of 'conv2d' does not match the "
                              "inferred f32[?,6,24,24] (in graph @net)");
  EXPECT_EQ(diags[0].loc, (SourceLoc{"v.dtnn", 2, 3}));
  EXPECT_EQ(diags[1].loc, (SourceLoc{"v.dtnn", 3, 3}));
  EXPECT_NE(diags[1].message.find("conv2d weight f32[6,3,5,5] does not match input channels 1"),
            std::string::npos)
      << diags[1].message;
  EXPECT_NE(diags[1].message.find("(in graph @net)"), std::string::npos);
  ASSERT_EQ(diags[1].notes.size(), 1u) << "the weight parameter is blamed";
  EXPECT_EQ(diags[1].notes[0].loc, (SourceLoc{"v.dtnn", 1, 1}));
}

TEST(IRTest, VerifierReportsUseBeforeDefinition) {
  auto m = parseOk("graph @g(%x: f32[4]) -> f32[4] {\n"
                   "  %0 = relu %x : f32[4] loc(\"u.dtnn\":1:1)\n"
                   "  %1 = sigmoid %0 : f32[4] loc(\"u.dtnn\":2:1)\n"
                   "  return %1\n"
                   "}\n"
                   "\n"
                   "graph @h(%z: f32[4]) -> f32[4] {\n"
                   "  return %z\n"
                   "}\n");
  ASSERT_NE(m, nullptr);
  Graph &g = *m->graphs()[0];
  Graph &h = *m->graphs()[1];
  Op *first = g.ops()[0].get();
  Op *second = g.ops()[1].get();
  first->setOperand(0, second->result());
  h.setOutputs({g.inputs()[0]});
  EXPECT_EQ(verifyMessages(*m),
            "1:1: operand 0 of 'relu' is used before its definition by 'sigmoid' (in graph @g)\n"
            "output 0 of graph @h is input %x of another graph\n");
  EXPECT_NE(printModule(*m).find("  %0 = relu %<undefined> : f32[4]"), std::string::npos);
}

TEST(IRTest, VerifierReportsDuplicateNames) {
  Module m;
  m.addParam("w", f32({1}), "zeros", true, SourceLoc{"d.dtnn", 1, 1});
  m.addParam("w", f32({1}), "zeros", true, SourceLoc{"d.dtnn", 2, 1});
  m.addGraph("g")->addInput("x", f32({1}));
  m.graphs()[0]->addInput("x", f32({1}));
  m.addGraph("g");
  auto diags = verifyModule(m);
  ASSERT_EQ(diags.size(), 3u);
  EXPECT_EQ(diags[0].message, "duplicate parameter @w");
  EXPECT_EQ(diags[0].loc, (SourceLoc{"d.dtnn", 2, 1}));
  ASSERT_EQ(diags[0].notes.size(), 1u);
  EXPECT_EQ(diags[0].notes[0].loc, (SourceLoc{"d.dtnn", 1, 1}));
  EXPECT_EQ(diags[1].message, "graph @g has two inputs named %x");
  EXPECT_EQ(diags[2].message, "duplicate graph name @g");
}

} // namespace
