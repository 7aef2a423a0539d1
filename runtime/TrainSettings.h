// The settings of a training run, read from a module's train config (the
// file's train section with command-line overrides applied), with defaults
// for what neither gives.
#pragma once

#include "ir/Attributes.h"
#include "ir/Error.h"
#include "runtime/Schedule.h"
#include "runtime/data/Sources.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace dtnn::runtime {

struct TrainSettings {
  int64_t batch = 64;
  int64_t epochs = 1;
  uint64_t seed = 1;
  double lr = 0.01;                // optimizer.lr
  std::string optimizer = "sgd";
  std::string loss = "softmax_cross_entropy";
  DataSpec data;                   // default: fashion_mnist()
  ScheduleSpec schedule;           // default: constant
  std::optional<ir::AttrMap> earlyStopping;
  double validation = 0;           // fraction of the training set held out
  int64_t checkpointEvery = 0;     // epochs; 0: only at the end (with --save)
  std::vector<std::string> metrics; // accuracy first
};

// Reads the settings; values of the wrong kind get an error naming the key.
Expected<TrainSettings> readTrainSettings(const ir::AttrMap &config);

// The arguments `prefix.*` of a call-valued setting, without the prefix.
ir::AttrMap settingArgs(const ir::AttrMap &config, const std::string &prefix);

} // namespace dtnn::runtime
