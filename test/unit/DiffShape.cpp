// Differential cases of the Shape family.
#include "DiffCases.h"

namespace dtnn::test::diff {

std::vector<Case> shapeCases() { return {}; }

} // namespace dtnn::test::diff
