// A plan: one graph lowered for a concrete batch size onto a backend. It
// holds the ops in schedule order with a kernel bound to each, the static
// type of every value, and where each value lives: the arena (at an offset),
// a module parameter, or a graph input.
#pragma once

#include "ir/Error.h"
#include "ir/IR.h"
#include "runtime/Backend.h"

#include <memory>
#include <string>
#include <vector>

namespace dtnn::runtime {

struct PlanValue {
  enum class Storage { Arena, Param, Input };
  ir::TensorType type; // static
  Storage storage = Storage::Arena;
  size_t offset = 0;   // Arena: byte offset, 64-byte aligned
  std::string param;   // Param: the parameter's name
  int input = -1;      // Input: the graph input's index
};

struct PlanStep {
  const ir::Op *op = nullptr;
  std::vector<int> in;  // value ids of the operands
  std::vector<int> out; // value ids of the results
  std::unique_ptr<Kernel> kernel;
};

struct Plan {
  const ir::Graph *graph = nullptr;
  int64_t batch = 0;
  std::vector<PlanValue> values;
  std::vector<PlanStep> steps;
  std::vector<int> inputs;  // value id of each graph input
  std::vector<int> outputs; // value id of each graph output
  size_t arenaBytes = 0;

  // Text form: one line per step with its kernel's value types and arena
  // offsets, then the arena size.
  std::string str() const;
};

// Lowers `g` with every dynamic dimension bound to `batch`: re-runs each op's
// shape rule on the concrete types, lays out the arena (one slot per value
// for now; the plan-memory pass will share slots), and binds kernels.
Expected<Plan> buildPlan(const ir::Graph &g, int64_t batch, Backend &backend);

} // namespace dtnn::runtime
