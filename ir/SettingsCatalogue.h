// The settings catalogue: a Markdown rendering of the run-settings schema
// (ir/RunSettings.h) with every registered choice of each setting (optimizers,
// losses, metrics, schedules, data sources) and its arguments, so that the
// documentation of train settings is generated from the registries.
#pragma once

#include <ostream>

namespace dtnn::ir {

void printSettingsCatalogue(std::ostream &os);

} // namespace dtnn::ir
