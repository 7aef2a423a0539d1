#include "runtime/TrainSettings.h"

#include "ir/TrainConfig.h"

namespace dtnn::runtime {

namespace {

Error wrongKind(const std::string &key, const char *expected) {
  return Error::make("train setting '" + key + "' must be " + expected);
}

Error readInt(const ir::AttrMap &c, const std::string &key, int64_t least, int64_t &out) {
  const ir::AttrValue *v = c.find(key);
  if (!v) return Error::success();
  auto *i = std::get_if<int64_t>(v);
  if (!i || *i < least)
    return Error::make("train setting '" + key + "' must be an integer of at least " +
                       std::to_string(least));
  out = *i;
  return Error::success();
}

Error readString(const ir::AttrMap &c, const std::string &key, std::string &out) {
  const ir::AttrValue *v = c.find(key);
  if (!v) return Error::success();
  auto *s = std::get_if<std::string>(v);
  if (!s) return wrongKind(key, "a name");
  out = *s;
  return Error::success();
}

Error readFloat(const ir::AttrMap &c, const std::string &key, double &out) {
  const ir::AttrValue *v = c.find(key);
  if (!v) return Error::success();
  auto f = ir::coerceAttr(*v, ir::AttrKind::Float);
  if (!f) return wrongKind(key, "a number");
  out = std::get<double>(*f);
  return Error::success();
}

} // namespace

ir::AttrMap settingArgs(const ir::AttrMap &config, const std::string &prefix) {
  ir::AttrMap args;
  for (const auto &[k, v] : config.entries())
    if (k.size() > prefix.size() + 1 && k.compare(0, prefix.size() + 1, prefix + ".") == 0)
      args.set(k.substr(prefix.size() + 1), v);
  return args;
}

Expected<TrainSettings> readTrainSettings(const ir::AttrMap &c) {
  TrainSettings s;
  int64_t seed = 1;
  s.data.name = "fashion_mnist";
  if (Error e = readInt(c, "batch", 1, s.batch)) return e;
  if (Error e = readInt(c, "epochs", 0, s.epochs)) return e;
  if (Error e = readInt(c, "seed", 0, seed)) return e;
  if (Error e = readInt(c, "checkpoint_every", 0, s.checkpointEvery)) return e;
  if (Error e = readFloat(c, "optimizer.lr", s.lr)) return e;
  if (!(s.lr > 0)) return Error::make("the learning rate must be positive");
  if (Error e = readFloat(c, "validation", s.validation)) return e;
  if (s.validation < 0 || s.validation >= 1)
    return Error::make("train setting 'validation' must be a fraction in [0, 1)");
  if (Error e = readString(c, "optimizer", s.optimizer)) return e;
  if (Error e = readString(c, "loss", s.loss)) return e;
  if (Error e = readString(c, "data", s.data.name)) return e;
  if (Error e = readString(c, "schedule", s.schedule.name)) return e;
  s.seed = static_cast<uint64_t>(seed);
  s.data.args = settingArgs(c, "data");
  s.schedule.args = settingArgs(c, "schedule");
  if (c.find("early_stopping")) s.earlyStopping = settingArgs(c, "early_stopping");
  s.metrics = ir::trainMetrics(c);
  return s;
}

} // namespace dtnn::runtime
