#include "runtime/Backend.h"

namespace dtnn::runtime {

Kernel::~Kernel() = default;
Backend::~Backend() = default;

} // namespace dtnn::runtime
