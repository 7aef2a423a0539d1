// The training loop: runs a module's train step over a dataset for a number
// of epochs, evaluates after each, adjusts the learning rate, stops early or
// on a non-finite loss, reports progress and metrics, and saves and resumes
// checkpoints. The module must hold @M, @M.train and @M.eval (the autodiff
// pass builds them).
#pragma once

#include "ir/IR.h"
#include "runtime/BackendRegistry.h"
#include "runtime/train/RunOptions.h"
#include "ir/RunSettings.h"

#include <ostream>
#include <string>

namespace dtnn::runtime {

// Trains the model of `m`; prints to `out` (progress, one line per epoch, the
// final test accuracy) and errors to `err`.
RunStatus train(const ir::Module &m, const ir::RunSettings &settings, const RunOptions &opts,
                const BackendSet &backends, std::ostream &out, std::ostream &err);

} // namespace dtnn::runtime
