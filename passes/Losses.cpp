#include "passes/Losses.h"

namespace dtnn::passes {

Expected<ir::Value *> emitLoss(ir::Builder &b, const std::string &name, ir::Value *prediction,
                               ir::Value *label) {
  if (Error e = ir::checkSettingChoice(*ir::findRunSetting("loss"), name)) return e;
  ir::Value *target = label;
  if (name == "mse_loss" || name == "bce_loss") {
    const ir::TensorType &t = prediction->type();
    if (t.rank() != 2 || t.dims[1] == ir::kDynamic)
      return Error::make(name + " with class labels needs a prediction of type [N,C], got " +
                         t.str());
    target = b.create1("one_hot", {label}, ir::attrs({{"classes", t.dims[1]},
                                                      {"dtype", std::string(ir::dtypeName(t.dtype))}}));
    if (!target) return Error::make(b.error());
  }
  ir::Value *loss = b.create1(name, {prediction, target});
  if (!loss) return Error::make(b.error());
  return loss;
}

Expected<ir::Value *> emitMetric(ir::Builder &b, const std::string &name, ir::Value *prediction,
                                 ir::Value *label) {
  if (Error e = ir::checkMetricName(name)) return e;
  int64_t k = name == "accuracy" ? 1 : std::stoll(name.substr(3));
  ir::Value *v = b.create1("accuracy", {prediction, label}, ir::attrs({{"k", k}}));
  if (!v) return Error::make(b.error());
  return v;
}

} // namespace dtnn::passes
