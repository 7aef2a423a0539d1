#include "frontend/TrainSection.h"

#include <algorithm>
#include <map>

namespace dtnn::frontend {

const std::vector<std::string> &trainSettingNames() {
  static const std::vector<std::string> names = {
      "batch", "checkpoint_every", "data",   "early_stopping", "epochs",   "loss",
      "metrics", "optimizer",      "schedule", "seed",         "validation"};
  return names;
}

void checkTrainSections(const FileAst &file, DiagnosticEngine &diags) {
  std::vector<std::string> models;
  for (const auto &m : file.models) models.push_back(m->name);
  std::map<std::string, SourceLoc> sections;
  for (const auto &t : file.trains) {
    if (std::find(models.begin(), models.end(), t->model) == models.end()) {
      std::string hint = closestMatch(t->model, models);
      diags.error(t->loc, "train section for unknown model '" + t->model + "'" +
                              (hint.empty() ? "" : "; did you mean '" + hint + "'?"));
    }
    auto [prev, fresh] = sections.emplace(t->model, t->loc);
    if (!fresh) {
      Diagnostic d{Severity::Error, t->loc, "second train section for model '" + t->model + "'", {}};
      d.note(prev->second, "first train section is here");
      diags.report(d);
    }
    std::map<std::string, SourceLoc> seen;
    for (const Setting &s : t->settings) {
      const auto &known = trainSettingNames();
      if (std::find(known.begin(), known.end(), s.key) == known.end()) {
        std::string hint = closestMatch(s.key, known);
        diags.error(s.loc, "unknown train setting '" + s.key + "'" +
                               (hint.empty() ? "" : "; did you mean '" + hint + "'?"));
        continue;
      }
      auto [it, inserted] = seen.emplace(s.key, s.loc);
      if (!inserted) {
        Diagnostic d{Severity::Error, s.loc, "train setting '" + s.key + "' is set twice", {}};
        d.note(it->second, "first set here");
        diags.report(d);
      }
    }
  }
}

} // namespace dtnn::frontend

namespace dtnn::frontend {

namespace {

// Settings whose value is a whole number, with the least value allowed.
const std::map<std::string, int64_t> &intSettings() {
  static const std::map<std::string, int64_t> m = {
      {"batch", 1}, {"checkpoint_every", 0}, {"epochs", 0}, {"seed", 0}};
  return m;
}

// Settings whose value names something, with or without arguments.
bool isCallSetting(const std::string &key) {
  return key == "data" || key == "loss" || key == "optimizer" || key == "schedule" ||
         key == "early_stopping";
}

// Evaluates a literal: a number (with an optional minus), a bool, a string,
// or a list of numbers. Returns false after reporting.
bool evalLiteral(const Expr &e, ir::AttrValue &v, DiagnosticEngine &diags) {
  switch (e.kind) {
  case Expr::Kind::Int: v = e.intValue; return true;
  case Expr::Kind::Float: v = e.floatValue; return true;
  case Expr::Kind::Bool: v = e.boolValue; return true;
  case Expr::Kind::String: v = e.text; return true;
  case Expr::Kind::Unary:
    if (e.text == "-" && e.kids.size() == 1) {
      if (e.kids[0]->kind == Expr::Kind::Int) return v = -e.kids[0]->intValue, true;
      if (e.kids[0]->kind == Expr::Kind::Float) return v = -e.kids[0]->floatValue, true;
    }
    break;
  case Expr::Kind::List: {
    std::vector<int64_t> ints;
    std::vector<double> floats;
    bool anyFloat = false;
    for (const auto &k : e.kids) {
      ir::AttrValue item;
      if (!evalLiteral(*k, item, diags)) return false;
      if (auto *i = std::get_if<int64_t>(&item)) {
        ints.push_back(*i);
        floats.push_back(static_cast<double>(*i));
      } else if (auto *d = std::get_if<double>(&item)) {
        anyFloat = true;
        floats.push_back(*d);
      } else {
        diags.error(k->loc, "list items in a train setting must be numbers");
        return false;
      }
    }
    if (anyFloat)
      v = floats;
    else
      v = ints;
    return true;
  }
  default: break;
  }
  diags.error(e.loc, "expected a number, string or list of numbers in a train setting");
  return false;
}

void evalSetting(const Setting &s, ir::AttrMap &out, DiagnosticEngine &diags) {
  const Expr &e = *s.value;
  if (isCallSetting(s.key)) {
    if (e.kind == Expr::Kind::Name) {
      out.set(s.key, e.text);
      return;
    }
    if (e.kind != Expr::Kind::Call) {
      diags.error(e.loc, "train setting '" + s.key + "' expects a name or a call such as " +
                             (s.key == "optimizer" ? "sgd(lr=0.1)" : s.key + "_name()"));
      return;
    }
    out.set(s.key, e.text);
    for (const Arg &a : e.args) {
      if (a.name.empty()) {
        diags.error(a.loc, "arguments of '" + e.text + "' in a train section must be named");
        continue;
      }
      ir::AttrValue v;
      if (evalLiteral(*a.value, v, diags)) out.set(s.key + "." + a.name, std::move(v));
    }
    return;
  }
  if (s.key == "metrics") {
    std::string names;
    std::vector<const Expr *> items;
    if (e.kind == Expr::Kind::List)
      for (const auto &k : e.kids) items.push_back(k.get());
    else
      items.push_back(&e);
    for (const Expr *k : items) {
      if (k->kind != Expr::Kind::Name) {
        diags.error(k->loc, "metrics must be names, such as [accuracy, top5]");
        return;
      }
      names += (names.empty() ? "" : ",") + k->text;
    }
    out.set(s.key, names);
    return;
  }
  ir::AttrValue v;
  if (!evalLiteral(e, v, diags)) return;
  if (auto it = intSettings().find(s.key); it != intSettings().end()) {
    auto *i = std::get_if<int64_t>(&v);
    if (!i || *i < it->second) {
      diags.error(e.loc, "train setting '" + s.key + "' must be an integer of at least " +
                             std::to_string(it->second));
      return;
    }
  } else if (s.key == "validation") {
    std::optional<ir::AttrValue> f = ir::coerceAttr(v, ir::AttrKind::Float);
    if (!f || std::get<double>(*f) < 0 || std::get<double>(*f) >= 1) {
      diags.error(e.loc, "train setting 'validation' must be a fraction in [0, 1)");
      return;
    }
    v = *f;
  }
  out.set(s.key, std::move(v));
}

} // namespace

void evalTrainSection(const TrainDecl &section, ir::AttrMap &out, DiagnosticEngine &diags) {
  const auto &known = trainSettingNames();
  for (const Setting &s : section.settings)
    if (std::find(known.begin(), known.end(), s.key) != known.end()) evalSetting(s, out, diags);
}

} // namespace dtnn::frontend
