#include "passes/Losses.h"

#include "ir/Diagnostics.h"

#include <algorithm>

namespace dtnn::passes {

std::vector<std::string> lossNames() {
  return {"bce_loss", "mse_loss", "nll_loss", "softmax_cross_entropy"};
}

Expected<ir::Value *> emitLoss(ir::Builder &b, const std::string &name, ir::Value *prediction,
                               ir::Value *label) {
  auto names = lossNames();
  if (std::find(names.begin(), names.end(), name) == names.end()) {
    std::string hint = closestMatch(name, names);
    std::string list;
    for (const auto &n : names) list += (list.empty() ? "" : ", ") + n;
    return Error::make("unknown loss '" + name + "'" +
                       (hint.empty() ? "" : "; did you mean '" + hint + "'?") + " (known: " +
                       list + ")");
  }
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
  int64_t k = 0;
  if (name == "accuracy") {
    k = 1;
  } else if (name.rfind("top", 0) == 0 && name.size() > 3 &&
             std::all_of(name.begin() + 3, name.end(), [](char c) { return c >= '0' && c <= '9'; }) &&
             name.size() < 8) {
    k = std::stoll(name.substr(3));
  }
  if (k < 1) return Error::make("unknown metric '" + name + "' (known: accuracy, topK such as top5)");
  ir::Value *v = b.create1("accuracy", {prediction, label}, ir::attrs({{"k", k}}));
  if (!v) return Error::make(b.error());
  return v;
}

} // namespace dtnn::passes
