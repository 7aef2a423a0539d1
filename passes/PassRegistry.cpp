// The pass table built from passes/Passes.def.
#include "passes/PassRegistry.h"

#include <algorithm>
#include <cassert>

namespace dtnn::passes {

namespace {

struct PassEntry {
  std::string_view name;
  std::unique_ptr<Pass> (*create)();
};

const PassEntry kPasses[] = {
#define DTNN_PASS(Class, Name) {Name, &create##Class},
#include "passes/Passes.def"
};

} // namespace

std::unique_ptr<Pass> createPass(std::string_view name) {
  for (const PassEntry &e : kPasses) {
    if (e.name != name) continue;
    std::unique_ptr<Pass> p = e.create();
    assert(p->name() == e.name && "Passes.def name differs from the pass's name()");
    return p;
  }
  return nullptr;
}

std::vector<std::string> passNames() {
  std::vector<std::string> names;
  for (const PassEntry &e : kPasses) names.emplace_back(e.name);
  std::sort(names.begin(), names.end());
  return names;
}

} // namespace dtnn::passes
