// The command-line options both drivers share for data-parallel training:
// how gradients are bucketed (a network model and measured op times, or a
// fixed bucket size).
#pragma once

#include "passes/Pipelines.h"
#include "tools/lib/CommandLine.h"

#include <string>
#include <vector>

namespace dtnn::cli {

// --net, --bucket-bytes, --op-profile (read), --sync-bn and --allreduce.
extern const std::vector<OptionSpec> kDataParallelOptions;

// Reads those options into `o` (ranks stays as given); fails with a usage
// error message.
Error readDataParallelOptions(const ParsedArgs &args, passes::DataParallelOptions &o);

} // namespace dtnn::cli
