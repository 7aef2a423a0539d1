// Differential cases of the Encoding and Dropout families.
#include "DiffCases.h"

namespace dtnn::test::diff {

std::vector<Case> encodingCases() { return {}; }
std::vector<Case> dropoutCases() { return {}; }

} // namespace dtnn::test::diff
