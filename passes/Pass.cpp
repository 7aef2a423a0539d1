// Out-of-line members of the pass interface.
#include "passes/Pass.h"

namespace dtnn::passes {

// Defined here so that the vtable has one home.
Pass::~Pass() = default;

} // namespace dtnn::passes
