// Differential cases of the Loss family.
#include "DiffCases.h"

namespace dtnn::test::diff {

std::vector<Case> lossCases() { return {}; }

} // namespace dtnn::test::diff
