// The metrics of a training run, as `dtnn-run --metrics FILE` writes them: a JSON object per
// epoch (epoch, train_loss, train_acc, test_loss, test_acc, val_loss, val_acc, lr, ...).
#pragma once

#include <map>
#include <string>
#include <vector>

namespace dtnn::plot {

struct Run {
  std::string name;                                 // the legend's entry
  std::vector<std::map<std::string, double>> epochs; // each epoch's numbers by key
};

// Reads the metrics file at `path` into run.epochs; returns "" or an error naming the file (and
// the line at fault).
std::string readRun(const std::string &path, Run &run);

} // namespace dtnn::plot
