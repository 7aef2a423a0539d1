// The losses and metrics a train section names, two open registries: each
// registration adds the choice to the run-settings schema (ir/SettingChoices.h)
// and tells the autodiff pass how to turn it into ops. A loss is an op of the
// op table (ir/ops/Loss.cpp for the built-in ones); losses that compare with a
// target of the prediction's type (mse_loss) get the class labels one-hot
// encoded. A metric appends whatever ops compute it, and may say how a run
// reports the mean of its values over a set (perplexity: exp of the mean).
#pragma once

#include "ir/Error.h"
#include "ir/Builder.h"
#include "ir/RunSettings.h"

#include <functional>
#include <string>
#include <vector>

namespace dtnn::passes {

// A loss: the op of the same name, registered in the op table before the
// loss, takes the prediction and the target and yields a scalar.
struct LossDef {
  std::string name;
  std::string summary; // one line, for the printed schema
  // The loss's arguments (`softmax_cross_entropy(ignore_index=-1)`), each an attribute of its
  // op of the same name and kind.
  std::vector<ir::ChoiceArg> args;
  // The target is the one-hot encoding of the class labels, of the
  // prediction's type (else the i32 labels themselves).
  bool oneHotTarget = false;
  bool isDefault = false; // the loss of a run that names none
};

// What a metric is computed from: the prediction [N, C] against i32 class labels [N] (a
// sequence model's [N, T, C] and [N, T] flattened to one row per position).
struct MetricArgs {
  ir::Value *prediction = nullptr;
  ir::Value *label = nullptr;
  int64_t k = 0;              // the number after a numbered metric's name (5 in top5), else 0
  int64_t ignoreIndex = -100; // the label of the rows the loss leaves out
};

// Appends a metric; returns the scalar value, or why it cannot.
using MetricEmitter = std::function<Expected<ir::Value *>(ir::Builder &b, const MetricArgs &a)>;

// What a run knows of the data a metric is reported on.
struct MetricData {
  double bytesPerLabel = 1; // bytes of text per label (1 for byte tokens)
};

struct MetricDef {
  std::string name;
  std::string summary; // one line, for the printed schema
  MetricEmitter emit;
  bool numbered = false;  // the name takes a number K: top5
  bool isDefault = false; // always computed, first
  std::string label;      // what progress lines call it ("acc"); "" for the name
  // What a run reports for the mean of the metric's values over a set (weighted by the rows
  // each batch counts); null reports the mean itself.
  std::function<double(double mean, const MetricData &data)> report;
};

// Registers a loss; `origin` names the registrant. Fails when the name is
// taken or the loss has no op.
Error registerLoss(LossDef def, const std::string &origin);

// Registers a metric; `origin` names the registrant. Fails when the name is taken.
Error registerMetric(MetricDef def, const std::string &origin);

// Registers the built-in losses and metrics (once; later calls do nothing).
Error registerBuiltinLosses();

// Appends loss `loss` (its name and arguments) of `prediction` against i32 class labels
// `label`; returns the scalar loss. Unknown names get did-you-mean.
Expected<ir::Value *> emitLoss(ir::Builder &b, const ir::SettingCall &loss, ir::Value *prediction,
                               ir::Value *label);

// The label of the rows loss `loss` leaves out: its ignore_index, -100 by default (PyTorch's).
int64_t lossIgnoreIndex(const ir::SettingCall &loss);

// Appends one metric (a registered name, or a numbered one with its K, top5) of `a`'s
// prediction (a.k is set from the name); returns the scalar value.
Expected<ir::Value *> emitMetric(ir::Builder &b, const std::string &name, MetricArgs a);

// What progress lines and metrics files call metric `name` ("acc").
std::string metricLabel(const std::string &name);

// What a run reports for metric `name` whose values average `mean` over a set of `data`.
double reportMetric(const std::string &name, double mean, const MetricData &data);

} // namespace dtnn::passes
