// The losses and metrics a train section names, two open registries: each
// registration adds the choice to the run-settings schema (ir/SettingChoices.h)
// and tells the autodiff pass how to turn it into ops. A loss is an op of the
// op table (ir/ops/Loss.cpp for the built-in ones); losses that compare with a
// target of the prediction's type (mse_loss) get the class labels one-hot
// encoded. A metric appends whatever ops compute it.
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
  // The target is the one-hot encoding of the class labels, of the
  // prediction's type (else the i32 labels themselves).
  bool oneHotTarget = false;
  bool isDefault = false; // the loss of a run that names none
};

// Appends a metric of `prediction` against i32 class labels `label`; `k` is
// the number after a numbered metric's name (5 in top5), else 0. Returns the
// scalar value, or why it cannot.
using MetricEmitter = std::function<Expected<ir::Value *>(ir::Builder &b, ir::Value *prediction,
                                                          ir::Value *label, int64_t k)>;

struct MetricDef {
  std::string name;
  std::string summary; // one line, for the printed schema
  MetricEmitter emit;
  bool numbered = false;  // the name takes a number K: top5
  bool isDefault = false; // always computed, first
  std::string label;      // what progress lines call it ("acc"); "" for the name
};

// Registers a loss; `origin` names the registrant. Fails when the name is
// taken or the loss has no op.
Error registerLoss(LossDef def, const std::string &origin);

// Registers a metric; `origin` names the registrant. Fails when the name is taken.
Error registerMetric(MetricDef def, const std::string &origin);

// Registers the built-in losses and metrics (once; later calls do nothing).
Error registerBuiltinLosses();

// Appends loss `name` of `prediction` against i32 class labels `label`;
// returns the scalar loss. Unknown names get did-you-mean.
Expected<ir::Value *> emitLoss(ir::Builder &b, const std::string &name, ir::Value *prediction,
                               ir::Value *label);

// Appends one metric (a registered name, or a numbered one with its K, top5)
// of `prediction`; returns the scalar value.
Expected<ir::Value *> emitMetric(ir::Builder &b, const std::string &name, ir::Value *prediction,
                                 ir::Value *label);

// What progress lines and metrics files call metric `name` ("acc").
std::string metricLabel(const std::string &name);

} // namespace dtnn::passes
