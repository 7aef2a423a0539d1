// Out-of-line members of the pass interface.
#include "passes/Pass.h"

namespace dtnn::passes {

// Defined here so that the vtable has one home.
Pass::~Pass() = default;

Expected<bool> GraphPass::run(ir::Module &m) {
  bool changed = false;
  for (const auto &g : m.graphs()) {
    Expected<bool> c = runOnGraph(*g);
    if (!c) return c.takeError();
    changed |= *c;
  }
  return changed;
}

} // namespace dtnn::passes
