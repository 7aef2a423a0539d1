// The pass registry and the registration of the built-in passes.
#include "passes/PassRegistry.h"

#include "ir/Registry.h"

#include <algorithm>

namespace dtnn::passes {

// The factory of each built-in pass, defined in the pass's own file.
std::unique_ptr<Pass> createShapeInferPass();
std::unique_ptr<Pass> createCanonicalizePass();
std::unique_ptr<Pass> createDeadCodeElimPass();
std::unique_ptr<Pass> createCommonSubexprElimPass();
std::unique_ptr<Pass> createFoldBatchNormPass();
std::unique_ptr<Pass> createFuseActivationPass();
std::unique_ptr<Pass> createFuseResidualAddPass();
std::unique_ptr<Pass> createAutodiffPass();
std::unique_ptr<Pass> createInsertAllreducePass();
std::unique_ptr<Pass> createBucketAllreducePass();
std::unique_ptr<Pass> createScheduleCommPass();
std::unique_ptr<Pass> createSyncBatchNormPass();
std::unique_ptr<Pass> createSplitTrainStepPass();
std::unique_ptr<Pass> createFuseElementwisePass();
std::unique_ptr<Pass> createFuseUpdatesPass();
std::unique_ptr<Pass> createDecomposeBatchNormPass();
std::unique_ptr<Pass> createFoldSliceGradientsPass();
std::unique_ptr<Pass> createMixedPrecisionPass();

namespace {

ir::Registry<PassFactory> &registry() {
  static ir::Registry<PassFactory> passes("pass");
  return passes;
}

bool kebabCase(std::string_view name) {
  if (name.empty() || name.front() == '-' || name.back() == '-') return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-';
  });
}

} // namespace

Error registerPass(PassFactory create, const std::string &origin) {
  std::unique_ptr<Pass> sample = create ? create() : nullptr;
  if (!sample) return Error::make(origin + " registers a pass whose factory makes nothing");
  std::string name(sample->name());
  if (!kebabCase(name))
    return Error::make("pass '" + name + "' of " + origin +
                       " must have a kebab-case name (a-z, 0-9 and '-')");
  return registry().add(name, origin, std::move(create));
}

Error registerBuiltinPasses() {
  static bool done = false;
  if (done) return Error::success();
  done = true;
  for (auto *create :
       {createShapeInferPass, createCanonicalizePass, createDeadCodeElimPass,
        createCommonSubexprElimPass, createFoldBatchNormPass, createFuseActivationPass,
        createFuseResidualAddPass, createAutodiffPass, createInsertAllreducePass,
        createBucketAllreducePass, createScheduleCommPass, createSyncBatchNormPass,
        createSplitTrainStepPass, createDecomposeBatchNormPass, createFuseElementwisePass,
        createFuseUpdatesPass, createFoldSliceGradientsPass, createMixedPrecisionPass})
    if (Error e = registerPass(create, ir::kBuiltinOrigin)) return e;
  return Error::success();
}

std::unique_ptr<Pass> createPass(std::string_view name) {
  const PassFactory *create = registry().find(name);
  return create ? (*create)() : nullptr;
}

std::vector<std::string> passNames() { return registry().names(); }

std::string passOrigin(std::string_view name) { return registry().origin(name); }

} // namespace dtnn::passes
