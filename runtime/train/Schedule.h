// Learning-rate schedules and early stopping, configured the way a train
// section writes them: `schedule = step(step_size=30, gamma=0.1)`,
// `early_stopping = early_stopping(patience=5)`.
//
// The per-epoch schedules give the values of PyTorch's schedulers of the
// same name. Every schedule accepts `warmup=N` (whole epochs) and
// `warmup_start_factor=F` (default 0.1): for the first N epochs the rate
// rises linearly per step from F * base to base, then the schedule starts,
// seeing the epoch after warm-up as its epoch 0 (like PyTorch's SequentialLR).
#pragma once

#include "ir/Attributes.h"
#include "ir/Error.h"
#include "ir/RunSettings.h"

#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace dtnn::runtime {

// A schedule as written: a name (empty or "constant" for a constant rate)
// and its named arguments, which the run-settings schema declares.
using ScheduleSpec = ir::SettingCall;

// A learning rate as a function of training progress.
class LrSchedule {
public:
  virtual ~LrSchedule();
  // Learning rate for the step that starts now: epoch (0-based), stepInEpoch, stepsPerEpoch.
  virtual double lr(int64_t epoch, int64_t stepInEpoch, int64_t stepsPerEpoch) const = 0;
  // Called after each epoch with the monitored validation loss; only reduce_on_plateau reacts.
  virtual void endEpoch(int64_t epoch, double monitoredLoss) {
    (void)epoch;
    (void)monitoredLoss;
  }
  // State for checkpoints as key/value strings; restore reproduces lr() exactly.
  virtual std::map<std::string, std::string> state() const { return {}; }
  // Restores a state written by state(); the schedule is unchanged on error.
  virtual Error restore(const std::map<std::string, std::string> &state) {
    (void)state;
    return Error::success();
  }
};

// Builds a schedule for base rate `baseLr` and a run of `totalEpochs` epochs.
//   constant()
//   step(step_size, gamma=0.1)                lr = base * gamma^(epoch / step_size)
//   multistep(milestones, gamma=0.1)          lr = base * gamma^(milestones <= epoch)
//   exponential(gamma)                        lr = base * gamma^epoch
//   cosine(t_max=epochs-warmup, eta_min=0)    CosineAnnealingLR's closed form; per_step=true
//                                             takes epoch e's step s of n at e + s / n
//   warmup(epochs=5, start_factor=0.1)        linear warm-up, then constant
//   reduce_on_plateau(factor=0.1, patience=10, threshold=1e-4, min_lr=0)
//     PyTorch's ReduceLROnPlateau in mode 'min' with a relative threshold:
//     the rate is multiplied by factor after patience + 1 epochs without a
//     loss below best * (1 - threshold), never going below min_lr.
Expected<std::unique_ptr<LrSchedule>> makeSchedule(const ScheduleSpec &spec, double baseLr,
                                                   int64_t totalEpochs);
// Names of the schedules, sorted.
std::vector<std::string> scheduleNames();

// Builds a schedule from its arguments (each of the kind its registration
// declares; absent ones take their defaults), the base rate, and the epochs
// left after warm-up. Errors name the argument at fault; makeSchedule prefixes
// them with the schedule: "schedule 'step': gamma must be > 0, got 0".
using ScheduleBuilder = std::function<Expected<std::unique_ptr<LrSchedule>>(
    const ir::AttrMap &args, double baseLr, int64_t epochs)>;

// A schedule: its choice in the run-settings schema and its builder. Every
// schedule also takes the two arguments of a linear warm-up, which makeSchedule
// reads: `warmup` epochs (default 0) and `warmup_start_factor` (0.1); a
// schedule may name them otherwise and give another default length.
struct ScheduleDef {
  std::string name;
  std::vector<ir::ChoiceArg> args;
  std::string summary; // one line, for the printed schema
  ScheduleBuilder build;
  bool isDefault = false; // the schedule of a run that names none
  std::string warmupArg = "warmup";
  std::string warmupFactorArg = "warmup_start_factor";
  int64_t defaultWarmup = 0;
};

// Registers a schedule; `origin` names the registrant in messages. Fails when
// the name is taken.
Error registerSchedule(ScheduleDef def, const std::string &origin);

// Registers the built-in schedules and early stopping (once; later calls do nothing).
Error registerBuiltinSchedules();

// Stops training once the monitored loss has not improved on the best seen
// by more than minDelta for `patience` epochs in a row.
struct EarlyStopping {
  int64_t patience = 5;
  double minDelta = 0;
  double best = std::numeric_limits<double>::infinity();
  int64_t bad = 0;

  // Records one epoch's loss; returns true when training should stop. A NaN
  // loss counts as no improvement.
  bool update(double loss);
  // Whether early stopping has ended the run (a checkpoint written then restores this).
  bool stopped() const { return bad >= patience; }
  // The best loss and the count of epochs without improvement, for checkpoints.
  std::map<std::string, std::string> state() const;
  // Restores a state written by state(); unchanged on error.
  Error restore(const std::map<std::string, std::string> &state);
};

// Builds early stopping from `early_stopping(patience=5, min_delta=0)`.
Expected<EarlyStopping> makeEarlyStopping(const ir::AttrMap &args);

} // namespace dtnn::runtime
