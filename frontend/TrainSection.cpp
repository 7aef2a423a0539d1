#include "frontend/TrainSection.h"

#include "ir/RunSettings.h"

#include <algorithm>
#include <map>

namespace dtnn::frontend {

void checkTrainSections(const FileAst &file, DiagnosticEngine &diags) {
  std::vector<std::string> models;
  for (const auto &m : file.models) models.push_back(m->name);
  std::map<std::string, SourceLoc> sections;
  const std::vector<std::string> known = ir::trainSectionKeys();
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

// A Choice setting: a name, or a call whose arguments are named literals.
void evalChoice(const ir::RunSettingDef &def, const Expr &e, ir::AttrMap &out,
                DiagnosticEngine &diags) {
  if (e.kind != Expr::Kind::Name && e.kind != Expr::Kind::Call) {
    diags.error(e.loc, "train setting '" + def.key + "' expects a name or a call such as " +
                           (def.key == "optimizer" ? "sgd(lr=0.1)" : def.key + "_name()"));
    return;
  }
  if (Error msg = ir::checkSettingChoice(def, e.text)) {
    diags.error(e.loc, msg.message());
    return;
  }
  out.set(def.key, e.text);
  if (e.kind == Expr::Kind::Name) return;
  for (const Arg &a : e.args) {
    if (a.name.empty()) {
      diags.error(a.loc, "arguments of '" + e.text + "' in a train section must be named");
      continue;
    }
    ir::AttrValue v;
    if (!evalLiteral(*a.value, v, diags)) continue;
    if (Error msg = ir::checkSettingArg(def, e.text, a.name, v))
      diags.error(a.loc, msg.message());
    else
      out.set(def.key + "." + a.name, std::move(v));
  }
}

// `metrics = [accuracy, top5]` or `metrics = top5`, carried as "accuracy,top5".
void evalMetrics(const Expr &e, ir::AttrMap &out, DiagnosticEngine &diags) {
  std::string names;
  std::vector<const Expr *> items;
  if (e.kind == Expr::Kind::List)
    for (const auto &k : e.kids) items.push_back(k.get());
  else
    items.push_back(&e);
  for (const Expr *k : items) {
    if (k->kind != Expr::Kind::Name) {
      diags.error(k->loc, "metrics must be names, such as [" + ir::metricExamples() + "]");
      return;
    }
    if (Error msg = ir::checkMetricName(k->text)) {
      diags.error(k->loc, msg.message());
      return;
    }
    names += (names.empty() ? "" : ",") + k->text;
  }
  out.set("metrics", names);
}

void evalSetting(const ir::RunSettingDef &def, const Expr &e, ir::AttrMap &out,
                 DiagnosticEngine &diags) {
  if (def.kind == ir::SettingKind::Choice) return evalChoice(def, e, out, diags);
  if (def.kind == ir::SettingKind::Metrics) return evalMetrics(e, out, diags);
  ir::AttrValue v;
  if (!evalLiteral(e, v, diags)) return;
  if (Error msg = ir::checkSettingValue(def, v))
    diags.error(e.loc, msg.message());
  else
    out.set(def.key, std::move(v));
}

} // namespace

void evalTrainSection(const TrainDecl &section, ir::AttrMap &out, DiagnosticEngine &diags) {
  for (const Setting &s : section.settings)
    if (s.key.find('.') == std::string::npos)
      if (const ir::RunSettingDef *def = ir::findRunSetting(s.key))
        evalSetting(*def, *s.value, out, diags);
}

} // namespace dtnn::frontend
