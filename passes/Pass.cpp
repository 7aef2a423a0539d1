// Out-of-line members of the pass interface.
#include "passes/Pass.h"

namespace dtnn::passes {

// Defined here so that the vtable has one home.
Pass::~Pass() = default;

Error Pass::setOption(const std::string &key, const std::string &) {
  return Error::make("pass '" + std::string(name()) + "' has no option '" + key + "'");
}

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
