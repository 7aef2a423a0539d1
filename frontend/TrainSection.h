// Checks of `train` sections: each names a model of the file, uses known
// settings, and sets each at most once; and their evaluation into the flat
// settings map a module carries (ir::Module::trainConfig), each value checked
// against the run-settings schema (ir/RunSettings.h) at its source location.
#pragma once

#include "frontend/AST.h"
#include "ir/Attributes.h"

#include <string>
#include <vector>

namespace dtnn::frontend {

// Reports unknown models, unknown settings (with "did you mean") and
// repeated settings.
void checkTrainSections(const FileAst &file, DiagnosticEngine &diags);

// Evaluates the settings of `section` into `out`, flat: a number, string or
// list is stored as is; a name (`loss = softmax_cross_entropy`) as a string;
// a call `optimizer = sgd(lr=0.01)` as `optimizer="sgd"` plus
// `optimizer.lr=0.01`; a list of names (`metrics = [accuracy, top5]`) as the
// string "accuracy,top5". Reports values of the wrong kind.
void evalTrainSection(const TrainDecl &section, ir::AttrMap &out, DiagnosticEngine &diags);

} // namespace dtnn::frontend
