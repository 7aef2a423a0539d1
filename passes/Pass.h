// The interface every pass implements: a kebab-case name, a one-sentence
// description, and a run over a whole module that reports whether it changed
// anything or why it failed.
#pragma once

#include "ir/Error.h"
#include "ir/IR.h"

#include <string>
#include <string_view>
#include <vector>

namespace dtnn::passes {

class FusionTarget;

// A decision a pass records about one place of the module, and why: what it
// did or left alone (dtnnc compile --emit=plan prints them above the plans).
struct Remark {
  std::string pass;
  SourceLoc where; // the first source location of the ops it is about
  std::string text;
  // "file:line:col: remark: pass: text", as diagnostics are printed.
  std::string str() const;
};

// A transformation or analysis over a module.
class Pass {
public:
  virtual ~Pass();
  // The kebab-case name used in pipelines and on the command line.
  virtual std::string_view name() const = 0;
  // One sentence saying what the pass does.
  virtual std::string_view description() const = 0;
  // Runs the pass; returns true if the module changed, or an error.
  virtual Expected<bool> run(ir::Module &m) = 0;
  // Sets an option given in a pipeline as `name{key=value ...}`; passes
  // without options refuse every key.
  virtual Error setOption(const std::string &key, const std::string &value);
  // The options set, as `key=value ...` in a fixed order ("" for none).
  virtual std::string optionsStr() const { return ""; }
  // Whether the pass fuses ops (`--no-fuse` leaves such passes out).
  virtual bool fuses() const { return false; }
  // Whether the pass makes the ops that the jit backend compiles (`--no-jit`,
  // and `--no-fuse` with it, leave such passes out).
  virtual bool forJit() const { return false; }
  // The backends the module will run on, which fusion passes consult; null:
  // any op runs anywhere.
  void setTarget(const FusionTarget *t) { target_ = t; }
  // Where the pass records its remarks; null: nowhere.
  void setRemarks(std::vector<Remark> *sink) { remarks_ = sink; }

protected:
  // Records a remark about the ops at `where`, if anyone collects them.
  void remark(const ir::Location &where, std::string text) const;

  const FusionTarget *target_ = nullptr;
  std::vector<Remark> *remarks_ = nullptr;
};

// A pass that transforms each graph of a module independently.
class GraphPass : public Pass {
public:
  Expected<bool> run(ir::Module &m) final;
  // Runs on one graph; returns true if it changed, or an error.
  virtual Expected<bool> runOnGraph(ir::Graph &g) = 0;
};

} // namespace dtnn::passes
