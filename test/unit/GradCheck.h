// Gradient checks by finite differences in double precision (runtime/train/GradCheck.h) for the unit
// tests: IR text with f64 types that defines graph @f (one output).
#pragma once

#include "runtime/train/GradCheck.h"

#include <string>

namespace dtnn::test {

using GradCheckOptions = runtime::GradCheckOptions;

// Runs the check with GoogleTest assertions; every float input and every
// trainable parameter (not buffers) not in opts.skip must get a gradient.
void expectGradientsMatch(const std::string &irText, const GradCheckOptions &opts = {});

} // namespace dtnn::test
