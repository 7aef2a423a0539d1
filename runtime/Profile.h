// The per-op profile of a train step (`dtnn-run --profile`): where the time
// of a step goes, layer by layer. Steps are grouped by the forward op they
// belong to (backward ops carry their forward op's source location); each
// row gives the forward and backward time per step, the achieved GFLOP/s
// where the ops have multiply-accumulates, the backends that ran them, and
// the time of the layout conversions (and of the copies between host and
// device memory) feeding them; then the time by kind of op.
#pragma once

#include "runtime/Executor.h"

#include <string>
#include <vector>

namespace dtnn::runtime {

class StepProfile {
public:
  explicit StepProfile(const Plan &plan);
  // Adds the step times of one run of the plan.
  void add(const std::vector<StepTime> &times);
  // The number of runs added.
  int64_t runs() const { return runs_; }
  // The whole train step as the trainer timed it (its data wait, launches, loss read back),
  // once per add(); the mean, 0 before any.
  void addStepSeconds(double s) { trainerSeconds_ += s; }
  double meanStepSeconds() const { return runs_ > 0 ? trainerSeconds_ / double(runs_) : 0; }
  const Plan &plan() const { return plan_; }
  // The table, one row per layer in forward order, then the loss, the
  // updates and the totals; then one row per reduction (bucket): when it
  // started into the step, how long it was in flight (to the end of its
  // wait), and how long the compute queue waited for it at its wait. Ops
  // with a region (fused) get a section of their own: the ops each absorbed,
  // its source, the bytes it moves, its time and bandwidth.
  std::string table() const;
  // Mean seconds of each op step (with the conversions feeding it), in plan
  // order; collectives are left out.
  std::vector<std::pair<const ir::Op *, double>> opSeconds() const;

private:
  struct Row {
    std::string name;              // op and location
    std::vector<std::string> backends;
    double forward = 0, backward = 0, conversions = 0, copies = 0; // summed seconds
    double flops = 0;                                  // per run
  };
  // A reduction: its start (communication queue) and wait (compute queue).
  struct Comm {
    std::string name;
    uint64_t bytes = 0;
    int start = -1, wait = -1;
    double began = 0, took = 0, waited = 0; // summed seconds
  };
  std::string regionTable() const;
  std::string kindTable() const;

  const Plan &plan_;
  std::vector<Row> rows_;
  std::vector<Comm> comms_;
  std::vector<double> stepSeconds_; // summed, per step
  std::vector<int> rowOf_;       // per step
  std::vector<bool> backward_;  // per step: after the loss's gradient seed
  double wall_ = 0;
  double trainerSeconds_ = 0;
  int64_t runs_ = 0;
};

} // namespace dtnn::runtime
