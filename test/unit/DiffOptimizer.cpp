// Differential cases of the Optimizer family.
#include "DiffCases.h"

namespace dtnn::test::diff {

std::vector<Case> optimizerCases() { return {}; }

} // namespace dtnn::test::diff
