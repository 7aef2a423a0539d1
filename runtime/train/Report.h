// What a training run reports: a progress line redrawn while an epoch runs,
// one summary line per epoch, and a JSON Lines metrics file.
#pragma once

#include "ir/Error.h"
#include "ir/Output.h"

#include <cstdint>
#include <cstdio>
#include <map>
#include <ostream>
#include <string>
#include <vector>

namespace dtnn::runtime {

// One epoch's figures. `values` holds train_loss, train_acc, test_loss, ...
// in the order they were added, which is the order they are printed.
struct EpochRecord {
  int64_t epoch = 0; // 1-based
  std::vector<std::pair<std::string, double>> values;
  void add(std::string key, double v) { values.emplace_back(std::move(key), v); }
  double get(const std::string &key) const;
};

// The peak resident set size of this process, in bytes.
int64_t peakRssBytes();

// How a running epoch shows its progress.
enum class ProgressMode {
  Off,
  // A line redrawn at most ten times a second, on a terminal:
  // "epoch 1/5 [=====>    ] 312/938 loss 0.5123 4890 img/s 0:42 left".
  Bar,
  // A line every `lineSeconds` (30) of an epoch, in a file or a pipe (shorter epochs print none):
  // "epoch 1/5: step 312/938 loss 0.5123 4890 img/s, 0:42 left".
  Lines,
};

class ProgressBar {
public:
  ProgressBar(std::ostream &os, ProgressMode mode, double lineSeconds = 30)
      : os_(os), mode_(mode), lineSeconds_(lineSeconds) {}
  // dataWait: the share of the step time spent waiting for data, shown from 1%.
  void update(int64_t epoch, int64_t epochs, int64_t step, int64_t steps, double loss,
              double imagesPerSecond, double dataWait = 0);
  // Erases the bar before other output.
  void clear();

private:
  std::ostream &os_;
  ProgressMode mode_;
  double lineSeconds_;
  bool drawn_ = false;
  double lastDraw_ = -1;
  int64_t epoch_ = -1;     // the epoch being timed
  double epochStart_ = 0;  // when its first step ended
  int64_t startStep_ = 0;  // that step
};

// A duration as a clock shows it: "0:42", "12:05", "3:02:17".
std::string formatDuration(double seconds);

// An images-per-second figure with at least three significant digits:
// "30343", "532", "10.5".
std::string formatRate(double imagesPerSecond);

// The one-line summary of an epoch: "epoch 1/5: train_loss 0.5123 ...".
std::string epochLine(const EpochRecord &r, int64_t epochs);

// Value v of record key k as a line shows it: accuracies as percentages ("91.23%"), counts
// whole, other figures to 5 significant digits.
std::string recordValue(const std::string &k, double v);

// Writes records as JSON Lines, one an epoch, through a GrowingOutput: the
// file never says less than what ran. With `append`, an existing file's
// records are kept (a resumed run); else the file is replaced.
class MetricsWriter {
public:
  Error open(const std::string &path, bool append);
  Error write(const EpochRecord &r);

private:
  GrowingOutput out_;
};

} // namespace dtnn::runtime
