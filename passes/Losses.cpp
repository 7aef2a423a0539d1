#include "passes/Losses.h"

#include "ir/OpTable.h"
#include "ir/Registry.h"
#include "ir/SettingChoices.h"

#include <algorithm>
#include <cmath>

namespace dtnn::passes {

namespace {

ir::Registry<LossDef> &losses() {
  static ir::Registry<LossDef> registry("loss");
  return registry;
}

ir::Registry<MetricDef> &metrics() {
  static ir::Registry<MetricDef> registry("metric");
  return registry;
}

// The metric `name` names, with its K (0 for one that is not numbered), or null.
const MetricDef *findMetric(const std::string &name, int64_t &k) {
  k = 0;
  if (const MetricDef *m = metrics().find(name); m && !m->numbered) return m;
  for (const MetricDef *m : metrics().entries()) {
    size_t n = m->name.size();
    if (!m->numbered || name.size() <= n || name.compare(0, n, m->name) != 0) continue;
    if (!std::all_of(name.begin() + n, name.end(), [](char c) { return c >= '0' && c <= '9'; }))
      continue;
    k = std::stoll(name.substr(n));
    return m;
  }
  return nullptr;
}

// The accuracy op: the fraction of samples whose label is among the k largest predictions.
Expected<ir::Value *> emitAccuracy(ir::Builder &b, const MetricArgs &a) {
  ir::Value *v = b.create1("accuracy", {a.prediction, a.label},
                           ir::attrs({{"k", std::max<int64_t>(a.k, 1)},
                                      {"ignore_index", a.ignoreIndex}}));
  if (!v) return b.takeError();
  return v;
}

// The softmax cross-entropy of the logits in nats per label, which bits per byte and
// perplexity report; the same op as that loss, which common-subexpression elimination merges.
Expected<ir::Value *> emitCrossEntropy(ir::Builder &b, const MetricArgs &a) {
  ir::Value *v = b.create1("softmax_cross_entropy", {a.prediction, a.label},
                           ir::attrs({{"ignore_index", a.ignoreIndex}}));
  if (!v) return b.takeError();
  return v;
}

} // namespace

Error registerLoss(LossDef def, const std::string &origin) {
  if (!ir::OpTable::get().lookup(def.name))
    return Error::make("loss '" + def.name + "' of " + origin + " has no op in the op table");
  ir::SettingChoice choice{def.name, def.args, def.summary, def.isDefault};
  return ir::registerChoiceEntry(losses(), "loss", std::move(choice), std::move(def), origin);
}

Error registerMetric(MetricDef def, const std::string &origin) {
  if (!def.emit) return Error::make("metric '" + def.name + "' of " + origin + " emits nothing");
  ir::SettingChoice choice{def.name, {}, def.summary, def.isDefault, def.numbered};
  return ir::registerChoiceEntry(metrics(), "metrics", std::move(choice), std::move(def), origin);
}

Error registerBuiltinLosses() {
  static bool done = false;
  if (done) return Error::success();
  done = true;
  std::vector<ir::ChoiceArg> ignore = {{"ignore_index", ir::AttrKind::Int}};
  std::vector<LossDef> all = {
      {"bce_loss", "binary cross-entropy of probabilities against one-hot labels", {}, true},
      {"mse_loss", "mean squared error against one-hot labels", {}, true},
      {"nll_loss", "negative log-likelihood of log-probabilities, leaving out the labels "
                   "ignore_index (-100)", ignore},
      {"softmax_cross_entropy", "cross-entropy of the softmax of logits, leaving out the labels "
                                "ignore_index (-100)", ignore, false, true},
  };
  for (LossDef &d : all)
    if (Error e = registerLoss(std::move(d), ir::kBuiltinOrigin)) return e;
  constexpr double kLn2 = 0.69314718055994530942;
  std::vector<MetricDef> metricDefs = {
      {"accuracy", "the fraction of samples classified correctly", emitAccuracy, false, true,
       "acc", nullptr},
      {"top", "the fraction of samples whose label is among the K largest predictions",
       emitAccuracy, true, false, "", nullptr},
      {"bits_per_byte", "the softmax cross-entropy in bits per byte of text (per label, times "
                        "the labels per byte of the data set)",
       emitCrossEntropy, false, false, "bpb",
       [](double mean, const MetricData &d) { return mean / kLn2 / d.bytesPerLabel; }},
      {"perplexity", "exp of the mean softmax cross-entropy per label", emitCrossEntropy, false,
       false, "ppl", [](double mean, const MetricData &) { return std::exp(mean); }},
  };
  for (MetricDef &d : metricDefs)
    if (Error e = registerMetric(std::move(d), ir::kBuiltinOrigin)) return e;
  return Error::success();
}

Expected<ir::Value *> emitLoss(ir::Builder &b, const ir::SettingCall &loss, ir::Value *prediction,
                               ir::Value *label) {
  const std::string &name = loss.name;
  if (Error e = ir::checkSettingChoice(*ir::findRunSetting("loss"), name)) return e;
  const LossDef *def = losses().find(name);
  if (!def) return Error::make("loss '" + name + "' has no implementation");
  ir::Value *target = label;
  if (def->oneHotTarget) {
    const ir::TensorType &t = prediction->type();
    if (t.rank() != 2 || ir::isBatchDim(t.dims[1]))
      return Error::make(name + " with class labels needs a prediction of type [N,C], got " +
                         t.str());
    target = b.create1("one_hot", {label}, ir::attrs({{"classes", t.dims[1]},
                                                      {"dtype", std::string(ir::dtypeName(t.dtype))}}));
    if (!target) return b.takeError();
  }
  ir::Value *value = b.create1(name, {prediction, target}, loss.args);
  if (!value) return b.takeError();
  return value;
}

int64_t lossIgnoreIndex(const ir::SettingCall &loss) {
  const ir::AttrValue *v = loss.args.find("ignore_index");
  return v && std::holds_alternative<int64_t>(*v) ? std::get<int64_t>(*v) : -100;
}

Expected<ir::Value *> emitMetric(ir::Builder &b, const std::string &name, MetricArgs a) {
  if (Error e = ir::checkMetricName(name)) return e;
  const MetricDef *def = findMetric(name, a.k);
  if (!def) return Error::make("metric '" + name + "' has no implementation");
  return def->emit(b, a);
}

double reportMetric(const std::string &name, double mean, const MetricData &data) {
  int64_t k = 0;
  const MetricDef *def = findMetric(name, k);
  return def && def->report ? def->report(mean, data) : mean;
}

std::string metricLabel(const std::string &name) {
  int64_t k = 0;
  const MetricDef *def = findMetric(name, k);
  return def && !def->label.empty() ? def->label : name;
}

} // namespace dtnn::passes
