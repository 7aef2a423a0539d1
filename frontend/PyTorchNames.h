// PyTorch's spellings of what dtnn names otherwise, so that "did you mean"
// answers a user who writes a model the way its PyTorch source is written:
// layer and function names (cat for concat, Linear for dense, swish for
// silu), argument names (padding for pad, dim for axis, ceil_mode for ceil)
// and constants (True for true).
#pragma once

#include <string>
#include <vector>

namespace dtnn::frontend {

// The dtnn name of `name` when PyTorch spells it so and it is among
// `candidates` (a constant always counts); otherwise the closest candidate
// (closestMatch); "" when there is none.
std::string suggestName(const std::string &name, const std::vector<std::string> &candidates);

// "; did you mean 'X'?" for suggestName's answer, "" when there is none.
std::string didYouMean(const std::string &name, const std::vector<std::string> &candidates);

} // namespace dtnn::frontend
