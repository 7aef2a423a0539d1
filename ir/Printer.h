// The textual form of the IR. Printing is deterministic: op results are
// numbered %0, %1, ... in graph order, attributes follow the op table's
// declaration order, and attributes equal to their default are omitted.
#pragma once

#include "ir/IR.h"

#include <ostream>
#include <string>

namespace dtnn::ir {

struct PrintOptions {
  // Source locations (loc(...)); without them the text compares programs
  // whatever the names of the files they came from.
  bool locations = true;
};

void printModule(const Module &m, std::ostream &os, const PrintOptions &opts = {});
std::string printModule(const Module &m);
// Text of a location, e.g. `loc("lenet.dtnn":4:8)`; empty when unknown.
std::string locationStr(const Location &l);

} // namespace dtnn::ir
