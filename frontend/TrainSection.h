// Checks of `train` sections: each names a model of the file, uses known
// settings, and sets each at most once. The trainer reads the settings.
#pragma once

#include "frontend/AST.h"

#include <string>
#include <vector>

namespace dtnn::frontend {

// The settings a train section may hold.
const std::vector<std::string> &trainSettingNames();

// Reports unknown models, unknown settings (with "did you mean") and
// repeated settings.
void checkTrainSections(const FileAst &file, DiagnosticEngine &diags);

} // namespace dtnn::frontend
