// Differential cases of the Reduce family.
#include "DiffCases.h"

namespace dtnn::test::diff {

std::vector<Case> reduceCases() { return {}; }

} // namespace dtnn::test::diff
