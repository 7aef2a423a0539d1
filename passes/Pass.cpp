// Out-of-line members of the pass interface.
#include "passes/Pass.h"

namespace dtnn::passes {

// Defined here so that the vtable has one home.
Pass::~Pass() = default;

Error Pass::setOption(const std::string &key, const std::string &) {
  return Error::make("pass '" + std::string(name()) + "' has no option '" + key + "'");
}

std::string Remark::str() const {
  std::string at = where.known() ? where.file + ":" + std::to_string(where.line) + ":" +
                                       std::to_string(where.col) + ": "
                                 : "";
  return at + "remark: " + pass + ": " + text;
}

void Pass::remark(const ir::Location &where, std::string text) const {
  if (!remarks_) return;
  remarks_->push_back({std::string(name()), where.known() ? where.locs.front() : SourceLoc{},
                       std::move(text)});
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
