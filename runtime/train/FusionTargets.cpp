#include "runtime/train/FusionTargets.h"

#include "runtime/BackendRegistry.h"
#include "runtime/KernelRegistry.h"

namespace dtnn::runtime {

namespace {

class RegistryTarget final : public passes::FusionTarget {
public:
  explicit RegistryTarget(std::vector<std::string> backends) : backends_(std::move(backends)) {}

  std::string backendOf(const ir::Op &op) const override {
    std::vector<ir::TensorType> in, out;
    for (const ir::Value *v : op.operands()) in.push_back(v->type());
    for (const ir::Value *v : op.results()) out.push_back(v->type());
    for (const std::string &b : backends_)
      if (KernelRegistry::get().find(b, op, in, out)) return b;
    return "";
  }

  std::vector<std::string> backendsFor(const std::string &name) const override {
    std::vector<std::string> out;
    for (const std::string &b : backends_)
      for (const KernelEntry *e : KernelRegistry::get().all())
        if (e->op == name && e->backend == b) {
          out.push_back(b);
          break;
        }
    return out;
  }

private:
  std::vector<std::string> backends_;
};

} // namespace

Expected<std::unique_ptr<passes::FusionTarget>> makeFusionTarget(const std::string &name) {
  auto names = BackendSet::order(name);
  if (!names) return names.takeError();
  return std::unique_ptr<passes::FusionTarget>(new RegistryTarget(std::move(*names)));
}

} // namespace dtnn::runtime
