// A plan: one graph lowered for a concrete batch size onto the backends of a
// run, built in stages that each print (`dtnnc compile --emit=plan`):
//
//   select   each op gets the first backend whose kernel registry entry
//            claims it at these types (the reference backend claims all);
//   layouts  each op's kernel is made and says which layouts and memory
//            spaces it wants for its operands and gives its results; every
//            value gets a buffer descriptor, parameters take the layout
//            their first kernel wants (in the primary backend's memory), and
//            conversions (copies between host and device memory) are
//            inserted where a producer and a consumer disagree;
//   buffers  buffer assignment by liveness over the schedule: results reuse
//            an operand's storage where the op table allows it, requested
//            groups are laid out contiguously, and offsets in the arena of
//            each memory space, shared by every plan of a run, are found
//            best-fit; in a plan that
//            writes no parameters, what is computed from parameters alone is
//            kept in a cache of the plan's own and computed once per change
//            of the parameters;
//   bind     each kernel prepares to run (primitives, code).
#pragma once

#include "ir/Error.h"
#include "ir/IR.h"
#include "runtime/BackendRegistry.h"
#include "runtime/KernelRegistry.h"

#include <array>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace dtnn::runtime {

enum class PlanStage { Select, Layouts, Buffers, Bind };
const char *planStageName(PlanStage s);
// Parses "select", "layouts", "buffers" or "bind".
std::optional<PlanStage> parsePlanStage(const std::string &name);

struct PlanValue {
  enum class Storage {
    Arena, // at `offset` in the run's arena
    Param, // the module parameter `param`
    Input, // graph input `input`
    Alias, // the storage of value `aliasOf`: the new version of a written
           // operand, or a result reusing an operand's storage
    Cached, // at `offset` in the executor's own cache: the result of a step
            // computed from parameters alone (PlanStep::once)
  };
  std::string name; // as printed: %3, %x, @w, %3.1 for a converted copy of %3
  BufferDesc desc;
  Storage storage = Storage::Arena;
  uint64_t offset = 0;
  std::string param;
  int input = -1;
  int aliasOf = -1;
  int def = -1; // the defining step; -1 for parameters and inputs
};

struct PlanStep {
  const ir::Op *op = nullptr; // null for a layout conversion or a copy
  std::string backend;        // the backend whose kernel runs it
  // Where its workspace lives: its backend's memory.
  MemorySpace space = MemorySpace::Host;
  // A conversion that copies between memory spaces.
  bool copy = false;
  const KernelEntry *entry = nullptr;
  std::vector<int> in;  // value ids of the operands
  std::vector<int> out; // value ids of the results
  // The op table's spec of each operand (its effect, its reuse); empty for
  // a conversion, which reads its one operand.
  std::vector<const ir::OperandSpec *> specs;
  std::unique_ptr<Kernel> kernel;
  uint64_t workspaceOffset = 0, workspaceBytes = 0;
  // Computed from parameters alone (a weight's layout conversion, a batch
  // norm folded into a weight) in a plan that writes none: the executor runs
  // it only when the parameters have changed since (ParamStore::version),
  // and keeps its results in its cache.
  bool once = false;

  // The op name, "convert" or "copy".
  std::string name() const { return op ? op->name() : copy ? "copy" : "convert"; }
  // Whether operand i is read for its type only (ir::Effect::Shape).
  bool shapeOnly(size_t i) const {
    return !specs.empty() && specs[i]->effect == ir::Effect::Shape;
  }
  bool writes(size_t i) const { return !specs.empty() && specs[i]->writes(); }
};

// The bytes a plan takes in one memory space.
struct SpaceBytes {
  uint64_t arena = 0;  // the end of its last buffer in the space's arena
  uint64_t live = 0;   // the most arena bytes live at once
  uint64_t cached = 0; // the results of the `once` steps
};

struct Plan {
  const ir::Graph *graph = nullptr;
  int64_t batch = 0;
  PlanStage stage = PlanStage::Select; // the last stage done
  std::vector<PlanValue> values;
  std::vector<PlanStep> steps;
  std::vector<int> inputs;  // value id of each graph input
  std::vector<int> outputs; // value id of each graph output
  // Values laid out one after another, in order, as one block.
  std::vector<std::vector<int>> groups;
  std::array<SpaceBytes, kMemorySpaces> spaces; // by MemorySpace
  uint64_t paramBytes = 0; // the parameters and buffers the plan reads
  bool writesParams = false; // some step writes a parameter or buffer

  SpaceBytes &bytes(MemorySpace s) { return spaces[size_t(s)]; }
  const SpaceBytes &bytes(MemorySpace s) const { return spaces[size_t(s)]; }

  // The value whose storage `id` uses (itself unless an alias).
  int root(int id) const;
  // Text of the stages done: a header line, the parameters in native
  // layouts, then one line per step.
  std::string str() const;
};

// What the plans of one run share.
// The plan drawn for Graphviz: a `subgraph cluster_...` of one node per op step (conversions
// left out), coloured by backend, fused ops and allreduce buckets marked, for the caller to
// put inside a `digraph`; node names start with `prefix`.
std::string planDot(const Plan &plan, const std::string &prefix = "");

// Names of a step for people (profiles, traces, drawings). "file:line:col" of an op's first
// location, or "".
std::string opLocation(const ir::Op &op);
// The layer of a step that reads a parameter: the parameter's name without the last part
// ("resnet.0.basic.1.conv_bn.0.conv2d.0"); "" for others.
std::string stepLayer(const Plan &plan, const PlanStep &s);
// The bytes of a step's operands as laid out (a reduction's: its bucket's bytes).
uint64_t operandBytes(const Plan &plan, const PlanStep &s);
// The layer a step's op belongs to, as people name it: its layer and the op, else the op and its
// location.
std::string stepLayerName(const Plan &plan, const PlanStep &s);

struct PlanContext {
  const BackendSet &backends;
  const ir::Module &module;
  // The buffers of parameters whose layout is fixed, by name. Building a
  // plan adds each other parameter it reads, in the layout its first kernel
  // wants; later plans convert where they want another.
  std::map<std::string, BufferDesc> params;
};

// Builds the plan of `g` with every dynamic dimension bound to `batch`, up to
// and including stage `last`.
Expected<Plan> buildPlan(const ir::Graph &g, int64_t batch, PlanContext &ctx,
                         PlanStage last = PlanStage::Bind);

// The stages, in order; each expects the one before it done.
Error lowerGraph(Plan &plan, const ir::Graph &g, int64_t batch);
Error selectKernels(Plan &plan, const PlanContext &ctx);
// Gives step `s` the kernel entry of the first backend of the run, from
// position `from` on, that claims its op at its types; false if none does.
bool selectKernel(const Plan &plan, const PlanContext &ctx, PlanStep &s, size_t from = 0);
Error assignLayouts(Plan &plan, PlanContext &ctx);
Error assignBuffers(Plan &plan);
Error bindKernels(Plan &plan);

} // namespace dtnn::runtime
