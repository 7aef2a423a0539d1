// The op catalogue: a Markdown rendering of the op table (operands,
// attributes with defaults, fusion class, layer arguments), so that the
// documentation is generated from the one place ops are declared.
#pragma once

#include <ostream>

namespace dtnn::ir {

void printOpCatalogue(std::ostream &os);

} // namespace dtnn::ir
