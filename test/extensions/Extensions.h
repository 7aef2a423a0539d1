// The extension this program adds to dtnn by linking it (the example plugins add theirs when
// loaded): a registration function that returns the first failure of its registry calls.
#pragma once

#include "dtnn/Error.h"

#include <string>

namespace ext {

// The name this program registers under (the origin of its entries).
inline const std::string kOrigin = "dtnn-extensions";

// The op `square` (y = x * x) with its shape and gradient rules, and its
// kernel on the reference backend.
dtnn::Error registerSquare();

} // namespace ext
