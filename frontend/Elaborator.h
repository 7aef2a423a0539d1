// The elaborator runs a model's body at compile time: it binds names,
// expands blocks, loops and conditionals, evaluates compile-time arithmetic,
// and turns every layer call into an IR op whose types come from the op
// table's shape rule. Errors are reported with notes that point at the
// producers of the offending values.
#pragma once

#include "frontend/AST.h"
#include "frontend/Scopes.h"
#include "frontend/Value.h"
#include "ir/IR.h"

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace dtnn::frontend {

// All declarations visible to a compilation: blocks from every loaded file,
// models from the main file.
struct Program {
  std::vector<std::unique_ptr<FileAst>> files; // files[0] is the main file
  // The blocks each file sees, by name: its own, and those its imports see,
  // which its own shadow. Looked up by FileAst::path.
  BlockScopes scopes;
  // How IR locations name each file: relative to the main file's folder or
  // to the import folder it was found in, so IR text does not depend on
  // where the compiler runs.
  std::map<std::string, std::string> irFileNames;
};

// Whether builtin `name` is a math function that makes an op when given a tensor.
bool isTensorMath(const std::string &name);

// The arguments of a call through a configured layer: `before`'s positional ones, then
// `after`'s, then the named ones of both, `before`'s where both name one if beforeWins.
std::vector<EvArg> joinArgs(const std::vector<EvArg> &before, const std::vector<EvArg> &after,
                            bool beforeWins);
// `callable` configured with `args` too (after those it has), as functools.partial.
Val configured(Val callable, const std::vector<EvArg> &args);

class Elaborator {
public:
  // pytorchInit: layers given no init= take PyTorch's defaults (init_defaults = pytorch).
  Elaborator(const Program &program, DiagnosticEngine &diags, bool pytorchInit = false);

  // Builds the module of one model; null after reporting errors.
  std::unique_ptr<ir::Module> buildModel(const ModelDecl &model);

  // Limits that keep generated models finite.
  static constexpr unsigned kMaxCallDepth = 1000;
  static constexpr uint64_t kMaxSteps = 10'000'000;
  static constexpr uint64_t kMaxOps = 1'000'000;

private:
  struct Binding {
    Val value;
    bool isVar = false;
    SourceLoc loc;
  };
  // One block invocation (or the model body): its scopes and naming state.
  struct Frame {
    std::vector<std::map<std::string, Binding>> scopes;
    std::string prefix; // hierarchical name of this invocation, "" or "basic.2."
    std::map<std::string, int> counters;
    const BlockDecl *block = nullptr;
    SourceLoc callLoc;
    bool returned = false;
    std::vector<Val> results;
    // Where this invocation's next own parameter (param(...)) goes among the module's: before
    // the parameters of the layers it calls, as a PyTorch module's state_dict lists its own
    // parameters before its sub-modules'.
    size_t ownParamsAt = 0;
  };

  // Statements (Elaborator.cpp).
  void exec(const StmtList &stmts);
  void execStmt(const Stmt &s);
  void bindPattern(const Pattern &p, const Val &v, bool isVar);
  void define(const std::string &name, const SourceLoc &loc, Val v, bool isVar);
  Binding *lookup(const std::string &name);

  // Expressions (Expressions.cpp).
  Val eval(const Expr &e);
  Val evalBinary(const Expr &e);
  Val evalUnary(const Expr &e);
  Val evalIndex(const Expr &e);
  Val evalName(const Expr &e);
  Val tensorBinary(const Expr &e, const std::string &opName, const Val &a, const Val &b);
  // A tensor and a number: x * 0.5, 3 - x (Expressions.cpp).
  Val tensorScalar(const Expr &e, const Val &a, const Val &b);
  // a ** b and pow(a, b) of numbers: an int for ints with a non-negative
  // exponent (overflow is an error), a float otherwise.
  Val power(const SourceLoc &loc, const Val &a, const Val &b);
  Val meanOver(const SourceLoc &loc, const Val &x, const EvArg &axes, bool keepdim);
  std::optional<std::vector<int64_t>> axesOf(const std::string &name, const Val &x,
                                             const EvArg &axesArg);
  Val reduceOver(const std::string &name, const SourceLoc &loc, const Val &x,
                 const std::vector<int64_t> &axes, bool keepdim, int64_t correction);
  Val adaptivePool1d(const SourceLoc &loc, const Val &x, int64_t axis, int64_t out);
  // Warns when `v` is an int from a '/' of two ints that dropped a remainder
  // and now meets a float at `loc`: Python's '/' would not have dropped it.

  // Calls (Calls.cpp).
  Val evalCall(const Expr &e);
  Val call(const std::string &name, const SourceLoc &loc, std::vector<EvArg> args);
  Val callBlock(const BlockDecl &b, const SourceLoc &loc, std::vector<EvArg> args);
  Val callOp(const ir::OpDef &def, const SourceLoc &loc, std::vector<EvArg> args);
  Val callBuiltin(const std::string &name, const SourceLoc &loc, std::vector<EvArg> &args);
  // Builtins that build tensors from ops: identity, chunk, adaptive_avgpool, mean
  // (TensorBuiltins.cpp).
  Val callTensorBuiltin(const std::string &name, const SourceLoc &loc, std::vector<EvArg> &args);
  // sqrt, rsqrt, exp, log, erf and pow given a tensor: their ops (TensorBuiltins.cpp).
  Val callTensorMath(const std::string &name, const SourceLoc &loc, std::vector<EvArg> &args);
  // param(shape, init=...): a learnable tensor of the block (TensorBuiltins.cpp).
  Val callParam(const SourceLoc &loc, std::vector<EvArg> &args);
  // sum, max and var given a tensor: reductions over axes (TensorBuiltins.cpp).
  Val callTensorReduction(const std::string &name, const SourceLoc &loc, std::vector<EvArg> &args);
  bool normalizeSlice(const std::vector<Val> &tensors, ir::AttrMap &values,
                      const std::map<std::string, SourceLoc> &argLocs, const SourceLoc &loc);
  // Creates the op (and reports shape errors with notes); returns its results.
  Val emitOp(const ir::OpDef &def, const SourceLoc &loc, const std::vector<Val> &tensors,
             std::vector<ir::Value *> params, ir::AttrMap attrs);
  std::string takeName(const std::string &callee, std::vector<EvArg> &args);
  ir::Location irLoc(const SourceLoc &loc) const;
  std::vector<std::string> callableNames() const;

  // Diagnostics (Elaborator.cpp).
  void error(const SourceLoc &loc, std::string message, std::vector<Diagnostic> notes = {});
  void warning(const SourceLoc &loc, std::string message, std::vector<Diagnostic> notes = {});
  void diagnose(Severity severity, const SourceLoc &loc, std::string message,
                std::vector<Diagnostic> notes);
  Diagnostic note(const SourceLoc &loc, std::string message) const;
  bool step(const SourceLoc &loc); // counts work; false once over budget
  // A list or tuple, or poison after an error at `loc` when it breaks the sequence budget.
  Val sequence(Val::Kind kind, std::vector<Val> items, const SourceLoc &loc);

  Frame &frame() { return frames_.back(); }
  // The file whose code runs now: the block's, or the model's.
  const std::string &currentFile() const {
    return frames_.back().block ? frames_.back().block->loc.file : modelFile_;
  }

  const Program &program_;
  DiagnosticEngine &diags_;
  bool pytorchInit_ = false;
  std::unique_ptr<ir::Module> module_;
  ir::Graph *graph_ = nullptr;
  std::vector<Frame> frames_;
  std::set<SourceLoc> reported_;
  // Notes added to every error while set, e.g. which local name a layer came through.
  std::vector<Diagnostic> contextNotes_;
  std::optional<Diagnostic> firstLastAxisDense_; // see emitOp
  std::set<std::string> paramNames_;
  uint64_t steps_ = 0;
  bool overBudget_ = false;
  SequenceBudget sequences_;
  std::string modelFile_;
};

// "'relu_backward' is an internal op (backward) that the compiler's passes make; ...".
std::string internalOpMessage(const ir::OpDef &op);

// Converts a declared tensor type; reports errors and returns false on failure.
bool convertType(const TypeAst &t, ir::TensorType &out, DiagnosticEngine &diags);

} // namespace dtnn::frontend
