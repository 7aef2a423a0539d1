// Building the regions of fused ops, for the passes that make them: a region
// copied from ops of a graph, one built op by op, and the backend a fused op
// of a region would run on.
#pragma once

#include "ir/Builder.h"
#include "ir/IR.h"
#include "passes/FusionTarget.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace dtnn::passes {

// A fused op's region before the op exists: the values it reads from
// outside (in order of first use), a body over one argument per value, and
// the locations of the ops it holds.
struct Region {
  std::vector<ir::Value *> inputs;
  std::unique_ptr<ir::Graph> body;
  ir::Location loc;
};

// A region holding copies of `ops` (in order, with their locations) that
// yields the copies of `yields`, results of those ops.
Region copyRegion(const std::vector<ir::Op *> &ops, const std::vector<ir::Value *> &yields);

// The backend that would run a fused op of `region`, asked of `target` about
// a stand-in in a graph of its own; "" when none would or the op is invalid.
std::string backendOfRegion(const FusionTarget &target, Region region);

// Whether `backend` compiles fused ops: a backend, and not the reference
// one, which interprets them.
bool compilesFused(const std::string &backend);

// The backend a fused op holding `op` alone would run on, asked of the
// target once per op name (the answer depends on the op, not on where it
// stands); for a pass that asks about many ops of one graph.
class AloneInRegion {
public:
  std::string backendOf(const FusionTarget &target, const ir::Op &op);
  void clear() { byName_.clear(); }

private:
  std::map<std::string, std::string> byName_;
};

// A region built op by op, over arguments that stand for values of the graph
// the fused op will be appended to.
class RegionBuilder {
public:
  explicit RegionBuilder(const ir::Location &loc);

  // The argument that stands for `outer`.
  ir::Value *arg(ir::Value *outer);
  // Appends op `name` to the body; null after a failure finish reports.
  ir::Value *op(const std::string &name, std::vector<ir::Value *> operands, ir::AttrMap attrs = {});
  // Appends a copy of `like` over `operands`, at its location.
  ir::Value *copy(const ir::Op &like, std::vector<ir::Value *> operands);
  // Appends the fused op that yields `yields` to `outer`'s graph.
  Expected<ir::Op *> finish(ir::Builder &outer, std::vector<ir::Value *> yields);

private:
  Region region_;
  ir::Builder b_;
  std::map<ir::Value *, ir::Value *> args_;
};

} // namespace dtnn::passes
