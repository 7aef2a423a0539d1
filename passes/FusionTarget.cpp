#include "passes/FusionTarget.h"

namespace dtnn::passes {

FusionTarget::~FusionTarget() = default;

bool fuseIfSameBackend(const FusionTarget *target, ir::Op &op,
                       const std::function<void(ir::Op &)> &fuse,
                       const std::function<void(ir::Op &)> &undo) {
  std::string before = target ? target->backendOf(op) : "";
  fuse(op);
  if (!target || target->backendOf(op) == before) return true;
  undo(op);
  return false;
}

} // namespace dtnn::passes
