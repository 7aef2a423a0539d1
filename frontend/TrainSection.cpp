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
