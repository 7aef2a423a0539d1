// The op table entry: everything the compiler knows about one op, declared
// once. Shape rule, verifier, fusion class, printing, the language-level
// layer signature, the gradient rule and the op's training form all come from
// this entry; backends bind kernels keyed by the op's name.
#pragma once

#include "ir/Attributes.h"
#include "ir/Error.h"
#include "ir/Types.h"

#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace dtnn::ir {

class Builder;
class Graph;
class Op;
class Value;

// How an op combines with its neighbours under fusion.
enum class FusionClass { Elementwise, Broadcast, Reduce, Opaque };
const char *fusionClassName(FusionClass f);

// What an op does to one operand's storage.
enum class Effect {
  // Reads the operand.
  Read,
  // Updates the operand in place (the parameter and state of an update op,
  // the running statistics of batchnorm_train). The op yields the operand's
  // new version as an extra result, after its own results, and the written
  // value may not be used after the op: later readers use the new version,
  // so writes are ordered against reads by the IR's def-use edges alone.
  Write,
  // Reads only the operand's type, never its data (the shape a backward op
  // produces, the type fill copies): its storage need not be live, in any
  // layout, when the op runs.
  Shape,
};

struct OperandSpec {
  enum Arity { Required, Optional, Variadic };
  std::string name;
  Arity arity = Required;
  Effect effect = Effect::Read;
  // A result (index) that may take this operand's storage when the op is the
  // operand's last user: the kernels of every backend read each element
  // before they write the result's element at the same offset. -1: none.
  int reuse = -1;

  bool writes() const { return effect == Effect::Write; }
};

struct AttrSpec {
  std::string name;
  AttrKind kind;
  std::optional<AttrValue> defaultValue; // nullopt: the attribute is required
};

// Input of a shape rule: operand types and attributes. The rule fills
// `results` and returns success, or returns the Error of fail(); `blame` lists
// the operand indices at fault so a diagnostic can point at where they came
// from.
struct InferCtx {
  const std::vector<TensorType> &operands;
  const AttrMap &attrs;
  std::vector<TensorType> results;
  std::vector<int> blame;
  // The op's region, for an op whose definition declares one (OpDef::hasBody).
  const Graph *body = nullptr;

  // Records the operands at fault and returns a failure with `message`.
  Error fail(std::string message, std::vector<int> operandsAtFault = {}) {
    blame = std::move(operandsAtFault);
    return Error::make(std::move(message));
  }
};
using ShapeFn = std::function<Error(InferCtx &)>;

// Multiply-accumulates per sample (batch dimension 1) of one op, from its
// operand and result types and attributes; used by summaries and cost models.
using MacsFn = std::function<int64_t(const std::vector<TensorType> &operands,
                                     const std::vector<TensorType> &results, const AttrMap &attrs)>;

// A parameter that a layer creates, e.g. a convolution's weight.
struct ParamSpec {
  std::string suffix; // appended to the layer's hierarchical name: "weight"
  TensorType type;
  std::string init;       // initializer name: he_uniform, zeros, ...
  bool trainable = true;  // false for running statistics ("buffers")
};

// The language-level call of a layer: its arguments (bound by position after
// the tensor inputs, or by name) and a builder that turns argument values and
// input types into op attributes and parameters. Parameters become trailing
// operands of the op, in the order the builder lists them. The builder fills
// `attrs` and `params` and returns success, or returns the Error of fail().
struct LayerCtx {
  const std::vector<TensorType> &inputs;
  const AttrMap &args; // every declared argument, defaults filled in
  AttrMap attrs;
  std::vector<ParamSpec> params;
  std::string errorArg; // the argument at fault, if any
  // The arguments the call gave, and whether a layer given no initializer takes PyTorch's
  // (the train setting init_defaults = pytorch).
  std::set<std::string> given;
  bool pytorchInit = false;

  // The initializer of argument `arg`: the call's, else PyTorch's default `pytorch` when
  // pytorchInit, else the argument's declared default.
  std::string initializer(const std::string &arg, const std::string &pytorch) const {
    return pytorchInit && !given.count(arg) ? pytorch : args.getString(arg);
  }

  // Records the argument at fault and returns a failure with `message`.
  Error fail(std::string message, std::string arg = "") {
    errorArg = std::move(arg);
    return Error::make(std::move(message));
  }
};

struct LayerSpec {
  // Tensor inputs the layer takes before its other arguments.
  unsigned tensorInputs = 1;
  std::vector<AttrSpec> args;
  std::function<Error(LayerCtx &)> build;
};

// Input of a gradient rule. The rule appends ops through `b` (whose location
// is the forward op's) that compute the gradient of the loss with respect to
// each operand i with needed[i] set, from the gradients `dy` of the op's
// results (null where no gradient flows into a result), and stores them in
// dx[i]. Operands and results of the forward op are available as values.
// The rule returns success, or a failure: the Error of fail(), or the
// builder's when it could not create an op (b.takeError()).
struct GradCtx {
  Builder &b;
  const Op &op;
  const std::vector<Value *> &dy;
  std::vector<bool> needed;
  std::vector<Value *> dx;

  // A failure with `message`.
  Error fail(std::string message) { return Error::make(std::move(message)); }
};
using GradFn = std::function<Error(GradCtx &)>;

// What an op is for, as the op table declares it: the profile, the catalogue and the front
// end read this, not the op's name.
enum class OpRole {
  Forward,  // computes the model's outputs (also the training forms: dropout_train)
  Backward, // computes gradients (relu_backward, sum_like) or moves them (allreduce)
  Update,   // writes parameters and optimizer state (sgd_update)
  Metric,   // a loss or a metric of predictions against labels (softmax_cross_entropy)
};
const char *opRoleName(OpRole role);

// The element type an op computes in under mixed precision, as the op table
// declares it; the mixed-precision pass (passes/MixedPrecision.cpp) casts
// operands to it. Every built-in op declares one (a unit test checks); the
// pass treats an op that declares none, as a plugin's may, as Float.
enum class Precision {
  Undeclared,
  // bf16 operands, float32 accumulation: every floating-point operand is
  // cast to the low-precision type (convolutions, dense layers, matmuls,
  // attention, and their gradients).
  Low,
  // The type of its floating-point operands, the widest where they differ,
  // except the operands OpDef::floatOperands names, which are float32: exact
  // or computed in float32 registers (elementwise arithmetic, activations,
  // pooling, shapes, batch norm's normalization with float32 statistics).
  Follow,
  // float32: low-precision operands are cast up (softmax, losses, sums over
  // many elements, optimizer updates, running statistics).
  Float,
};
const char *precisionName(Precision p);

struct OpDef {
  std::string name;
  std::string summary; // one sentence for the op catalogue
  std::vector<OperandSpec> operands;
  std::vector<AttrSpec> attrs;
  // The op's own results; each written operand adds its new version after them.
  unsigned numResults = 1;
  FusionClass fusion = FusionClass::Opaque;
  // Draws random numbers (dropout): two such ops are never merged, though an
  // unused one may be removed.
  bool random = false;
  // Takes part in a collective over ranks (allreduce): every rank must run
  // it, so it is neither merged nor removed.
  bool collective = false;
  ShapeFn inferShape;
  // Optional; ops without one count zero multiply-accumulates.
  MacsFn macs;
  // Optional language-level layer signature; without one a call binds tensors
  // to operands and named arguments to attributes.
  std::optional<LayerSpec> layer;
  // Gradient rule; ops without one are not differentiable, and autodiff
  // reports an error when a gradient has to flow through them.
  GradFn grad;
  // The op that replaces this one in a train-step graph (batchnorm ->
  // batchnorm_train, dropout -> dropout_train). It takes this op's operands
  // and attributes, then, for each further operand it declares, the train
  // graph's input of the same name (`step`); its first result stands for
  // this op's result. Empty: the op is the same in training.
  std::string trainForm;
  // Optional: which declared operand each of n operands is, when that
  // depends on the attributes (the state buffers of an update op follow its
  // options). Returns an empty list when n does not fit the attributes.
  std::function<std::vector<const OperandSpec *>(const OpDef &self, const AttrMap &attrs,
                                                 size_t n)>
      bindOperands;
  OpRole role = OpRole::Forward;
  // Made by passes only (gradients, updates, training forms, fill): a .dtnn model cannot call it.
  bool internal = false;
  // The op holds a region (Op::body), as `fused` does: its own results are
  // the body's outputs (numResults does not count them; see yieldsResults), its shape rule
  // reads the body through InferCtx::body, and verifyBody, which the
  // verifier calls after checking the body as a graph, says what the body
  // may contain.
  bool hasBody = false;
  // With hasBody: false when the body is not the op's results but what its
  // kernel applies to each group of operands (fused_update); the op then has
  // numResults of its own, like an op without a region.
  bool yieldsResults = true;
  std::function<Error(const Graph &body)> verifyBody;
  // Mixed precision: the type the op computes in, and for Follow, the
  // operands kept in float32 (a batch norm's scale, shift and statistics).
  Precision precision = Precision::Undeclared;
  std::vector<std::string> floatOperands = {};

  const AttrSpec *findAttr(const std::string &n) const;
  // The operand count range this op accepts.
  unsigned minOperands() const;
  unsigned maxOperands() const; // UINT_MAX when variadic
  // The spec of each of `n` operands, n in the accepted range: the one
  // bindOperands gives for these attributes, else optional operands present
  // in order (the first n - minOperands() of them) and a variadic one taking
  // the rest.
  std::vector<const OperandSpec *> operandSpecs(size_t n, const AttrMap &attrs = {}) const;
  // The number of results of an op with n operands (n in the accepted
  // range): numResults, then one per written operand.
  unsigned resultCount(size_t n, const AttrMap &attrs = {}) const;
  // Whether any declared operand is written.
  bool writesOperands() const;
  // Whether two ops with the same operands and attributes compute the same
  // results and an op whose results are unused may go: no writes, no
  // random numbers, no collective.
  bool pure() const { return !writesOperands() && !random && !collective; }
};

} // namespace dtnn::ir
