// The graph IR: SSA values with tensor types, ops that reference an op table
// entry, graphs with inputs and outputs, and modules that hold named
// parameters shared by their graphs (forward, train step, eval step).
#pragma once

#include "ir/Attributes.h"
#include "ir/Diagnostics.h"
#include "ir/OpDef.h"
#include "ir/Types.h"

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace dtnn::ir {

class Op;
class Graph;
struct Param;

// A source location list; fused ops keep the locations of every op they
// replaced. Empty means unknown.
struct Location {
  std::vector<SourceLoc> locs;
  Location() = default;
  Location(SourceLoc l) {
    if (l.known()) locs.push_back(std::move(l));
  }
  bool known() const { return !locs.empty(); }
  bool operator==(const Location &o) const { return locs == o.locs; }
  // Appends the locations of `o` that are not already present.
  void merge(const Location &o);
};

// Where each op, parameter and graph of a module read from text (.dtir)
// appears in that text: the op's name, the parameter's and the graph's
// name. Diagnostics about IR that carries no loc(...) point there. Valid
// until a pass changes the module (an address may then be reused).
struct TextPositions {
  std::map<const Op *, SourceLoc> ops;
  std::map<const Param *, SourceLoc> params;
  std::map<const Graph *, SourceLoc> graphs;
};

// An SSA value: a graph input, a module parameter, or an op result.
class Value {
public:
  enum class Kind { Input, Param, Result };

  Kind kind() const { return kind_; }
  const TensorType &type() const { return type_; }
  void setType(TensorType t) { type_ = std::move(t); }
  // Graph inputs: the input's name (without `%`).
  const std::string &name() const { return name_; }
  // Results: the defining op and result index.
  Op *definingOp() const { return def_; }
  unsigned resultIndex() const { return index_; }
  // Parameters: the declaration.
  Param *param() const { return param_; }

private:
  friend class Graph;
  friend class Module;
  friend class Op;
  Kind kind_ = Kind::Result;
  TensorType type_;
  std::string name_;
  Op *def_ = nullptr;
  unsigned index_ = 0;
  Param *param_ = nullptr;
};

// A named tensor owned by the module: a trainable parameter, or a buffer
// (running statistics, optimizer state) that is not trained.
struct Param {
  std::string name;
  TensorType type;
  std::string init;
  bool trainable = true;
  Location loc;
  Value *value = nullptr;
};

class Op {
public:
  const OpDef &def() const { return *def_; }
  const std::string &name() const { return def_->name; }

  const std::vector<Value *> &operands() const { return operands_; }
  Value *operand(unsigned i) const { return operands_[i]; }
  void setOperand(unsigned i, Value *v) { operands_[i] = v; }
  void setOperands(std::vector<Value *> v) { operands_ = std::move(v); }

  const std::vector<Value *> &results() const { return results_; }
  Value *result(unsigned i = 0) const { return results_[i]; }

  AttrMap &attrs() { return attrs_; }
  const AttrMap &attrs() const { return attrs_; }
  const Location &loc() const { return loc_; }
  void setLoc(Location l) { loc_ = std::move(l); }

  // The op's region: one block, a graph of its own whose inputs are the
  // block arguments (one per operand, in order) and whose outputs are the
  // values the op yields. Only ops whose definition declares a body
  // (OpDef::body) have one; null for the others. The body is isolated: its
  // ops use only its own arguments and results, never a value of the graph
  // around the op, so a pass can take it, print it or compile it alone.
  Graph *body() const { return body_.get(); }
  void setBody(std::unique_ptr<Graph> body);
  // The op's own results, before the new versions of the operands it
  // writes: the body's outputs for an op with a body, else the op table's
  // count.
  unsigned ownResults() const;

private:
  friend class Graph;
  std::unique_ptr<Graph> body_;
  const OpDef *def_ = nullptr;
  std::vector<Value *> operands_;
  std::vector<Value *> results_;
  AttrMap attrs_;
  Location loc_;
};

// A list of ops over inputs, with outputs: a module's forward or train step,
// or the body of an op's region (whose name is empty, whose inputs are its
// block arguments and whose outputs are what the op yields).
class Graph {
public:
  explicit Graph(std::string name) : name_(std::move(name)) {}
  Graph(const Graph &) = delete;
  Graph &operator=(const Graph &) = delete;

  const std::string &name() const { return name_; }

  Value *addInput(std::string name, TensorType type);
  const std::vector<Value *> &inputs() const { return inputs_; }

  // Appends an op whose result types are given; attributes should be
  // complete (see fillDefaultAttrs).
  Op *addOp(const OpDef &def, std::vector<Value *> operands, AttrMap attrs,
            std::vector<TensorType> resultTypes, Location loc = {});
  // Inserts before position `pos` in the op list.
  Op *insertOp(size_t pos, const OpDef &def, std::vector<Value *> operands, AttrMap attrs,
               std::vector<TensorType> resultTypes, Location loc = {});
  const std::vector<std::unique_ptr<Op>> &ops() const { return ops_; }
  // Removes the ops for which `pred` is true; their results must be unused.
  void eraseOpsIf(const std::function<bool(const Op &)> &pred);
  // Position of `op` in the op list.
  size_t indexOf(const Op *op) const;
  // Puts the ops in the order of `order`, which must hold each op once.
  void reorder(const std::vector<Op *> &order);

  const std::vector<Value *> &outputs() const { return outputs_; }
  void setOutputs(std::vector<Value *> outs) { outputs_ = std::move(outs); }
  // Makes output `i` be `v`.
  void setOutput(size_t i, Value *v) { outputs_[i] = v; }

  // Replaces every use of `from` (as operand or output) by `to`.
  void replaceAllUses(Value *from, Value *to);
  // Applies a whole substitution map at once.
  void replaceAllUses(const std::map<Value *, Value *> &subst);
  // Number of uses of each value as operand or output.
  std::map<const Value *, unsigned> useCounts() const;

private:
  std::string name_;
  std::vector<Value *> inputs_;
  std::vector<Value *> outputs_;
  std::vector<std::unique_ptr<Op>> ops_;
  std::vector<std::unique_ptr<Value>> values_;
};

class Module {
public:
  Module() = default;
  Module(const Module &) = delete;
  Module &operator=(const Module &) = delete;

  Param *addParam(std::string name, TensorType type, std::string init, bool trainable,
                  Location loc = {});
  // Moves the last parameter added to position `index` of params() (checkpoints list the
  // parameters in this order).
  void moveLastParamTo(size_t index);
  Param *findParam(const std::string &name) const;
  const std::vector<std::unique_ptr<Param>> &params() const { return params_; }
  void eraseParamsIf(const std::function<bool(const Param &)> &pred);

  // The training settings passes read (loss, metrics, optimizer and its
  // hyperparameters, seed), flat: `optimizer="sgd"`, `optimizer.momentum=0.9`.
  // Printed as the module's `train {...}` line; empty for inference.
  AttrMap &trainConfig() { return train_; }
  const AttrMap &trainConfig() const { return train_; }

  Graph *addGraph(std::string name);
  Graph *findGraph(const std::string &name) const;
  const std::vector<std::unique_ptr<Graph>> &graphs() const { return graphs_; }

private:
  std::vector<std::unique_ptr<Param>> params_;
  std::vector<std::unique_ptr<Value>> paramValues_;
  std::vector<std::unique_ptr<Graph>> graphs_;
  AttrMap train_;
};

// The type of every value of region `body` when its arguments have the types
// `args` (which may bind dimensions the body leaves dynamic), from its ops'
// shape rules, without changing the body. Fails when an argument does not
// fit its declaration or an op's rule fails, naming the op.
Expected<std::map<const Value *, TensorType>> inferBodyTypes(const Graph &body,
                                                             const std::vector<TensorType> &args);

// A copy of graph `g` under `name`, with its ops' regions copied too. Module
// parameters that `g` uses stay shared.
std::unique_ptr<Graph> cloneGraph(const Graph &g, std::string name);

// Fills attributes that `def` declares with a default and `attrs` lacks.
void fillDefaultAttrs(const OpDef &def, AttrMap &attrs);

// Runs the op's shape rule on the given operand types and attributes, and
// adds the type of each written operand's new version after the op's own
// results. Fails with the rule's message, leaving the operands to blame in
// ctx.blame.
Error inferResultTypes(const OpDef &def, InferCtx &ctx);

} // namespace dtnn::ir
