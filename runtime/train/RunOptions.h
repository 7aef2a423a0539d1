// What one run of the training loop is asked to do (RunOptions), what its ranks must agree on
// (AgreedItem), and how it ends (RunStatus): shared by the loop (Trainer.h) and the session that
// carries it out (Session.h).
#pragma once

#include "ir/Error.h"
#include "runtime/Communicator.h"
#include "runtime/train/Report.h"
#include "runtime/ParamStore.h"
#include "runtime/train/Sampling.h"
#include "runtime/train/data/Sources.h"

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace dtnn::runtime {

class StepProfile;

// Something every rank of a run must have the same of, compared at start-up
// before any rank can diverge: `what` names it ("--steps", "the text of the
// model file and its imports"); `value` is compared and shown when ranks
// differ, `detail` compared and not shown (a file's text), `note` shown and
// not compared (the file's path, which may differ between machines).
struct AgreedItem {
  std::string what, value, detail, note;
};

struct RunOptions {
  std::string dataDir;        // overrides the data source's default folder
  bool synthetic = false;     // train on synthetic data shaped like the model's input
  int64_t syntheticTrain = 0; // its training and test set sizes (0: the train section's)
  int64_t syntheticTest = 0;
  int64_t maxSteps = -1;      // stop after this many steps in all (across epochs)
  bool evalOnly = false;      // evaluate the test set and stop
  std::string metricsPath;    // JSON Lines, one object per epoch
  std::string savePath;       // checkpoint written when training ends
  std::string resumePath;     // checkpoint to start from
  std::string initFromPath;   // weights (not optimizer state or progress) to start from
  std::string predictPath;    // inputs (safetensors) to compute the model's outputs for, instead of training
  std::string predictionsPath; // where those outputs go
  // Instead of training, sample this many tokens after a prompt from a model of token
  // sequences: the prompt is `prompt`, or the text of the file predictPath when promptFromFile.
  int64_t generate = 0;
  std::string prompt;
  bool promptFromFile = false;
  SamplingOptions sampling;
  ProgressMode progress = ProgressMode::Off; // how a running epoch shows its progress
  double progressSeconds = 30;               // the interval of ProgressMode::Lines
  bool prefetch = true;       // load batches on background threads
  int dataWorkers = 0;        // threads preparing batches of image files; 0: chosen by the run
  bool profile = false;       // time every op of the train step and print a table
  // Where the run's trace goes (empty: none), and the train steps it records kernel by kernel.
  std::string tracePath;
  int64_t traceSteps = 10;
  // The ranks of a data-parallel run (null: this process alone). Each rank
  // trains on its part of every global batch; rank 0 alone prints to `out`,
  // writes metrics and checkpoints.
  Communicator *comm = nullptr;
  bool skipComm = false;      // skip the train step's reductions (to measure them)
  // Bitwise the same whatever the rank and thread counts: gradient steps on
  // micro-batches of `microBatch` with one thread a kernel, summed exactly
  // (runtime/train/DeterministicStep.h). Needs the split-train-step pass.
  bool deterministic = false;
  int64_t microBatch = 8;
  // Steps a device can replay are recorded once and replayed (CUDA graphs).
  bool replay = true;
  // Called on rank 0 with the profile of the train step when the run ends
  // (needs `profile`).
  std::function<Error(const StepProfile &)> onProfile;
  // A program's own data and weights (the C++ API, dtnn/Train.h): the train and test sets in
  // place of the train section's data source, and weights to start from in place of the
  // initializers (by parameter name; as --init-from, the forward graph's).
  std::shared_ptr<const DataSplits> memoryData;
  const std::map<std::string, Tensor> *initWeights = nullptr;
  // Called on every rank: after each train step (its global number, 1-based epoch, mean loss
  // over the ranks, learning rate), after each epoch with its record, and with the parameters
  // when training ends.
  std::function<void(int64_t step, int64_t epoch, double loss, double lr)> onStep;
  std::function<void(const EpochRecord &)> onEpoch;
  std::function<void(const ParamStore &)> onFinish;
  // Every file the run writes, with the option that names it ({"--save",
  // "ck.st"}; the periodic checkpoints are added): once every input has been
  // read, an output that is one of them (an imported .dtnn, a data file) is
  // refused before training.
  std::vector<std::pair<std::string, std::string>> outputs;
  // What the ranks must agree on besides what the run derives itself (the
  // train settings, the data set, the resumed progress, the compiled steps):
  // the model file and the command-line options that change the result.
  std::vector<AgreedItem> agreed;
};

// Exit status of a run, as dtnn-run returns it.
// A run that a signal interrupted returns 128 + the signal (130 for SIGINT, 143 for SIGTERM).
enum class RunStatus { Ok = 0, InputError = 1, TrainingFailed = 3, Interrupted = 130, Terminated = 143 };

} // namespace dtnn::runtime
