// dtnn::registerBuiltins: each layer's registration of its built-in entries,
// bottom layer first (ops before the losses and optimizers that name them).
#include "dtnn/Registry.h"

#include "backends/reference/ReferenceBackend.h"
#include "ir/OpRegistry.h"
#include "passes/Losses.h"
#include "passes/Optimizers.h"
#include "passes/PassRegistry.h"
#include "runtime/train/Schedule.h"
#include "runtime/train/data/Augmentations.h"
#include "runtime/train/data/Sources.h"
#ifdef DTNN_HAVE_ONEDNN
#include "backends/onednn/OnednnBackend.h"
#endif
#ifdef DTNN_HAVE_JIT
#include "backends/jit/JitBackend.h"
#endif
#ifdef DTNN_HAVE_CUDA
#include "backends/cuda/CudaBackend.h"
#endif

#include <optional>

namespace dtnn {

namespace {

Error registerAll() {
  for (Error (*layer)() : {ir::registerBuiltinOps, passes::registerBuiltinPasses,
                           passes::registerBuiltinLosses, passes::registerBuiltinOptimizers,
                           reference::registerReferenceBackend,
#ifdef DTNN_HAVE_ONEDNN
                           onednn::registerOnednnBackend,
#endif
#ifdef DTNN_HAVE_JIT
                           jit::registerJitBackend,
#endif
#ifdef DTNN_HAVE_CUDA
                           cuda::registerCudaBackend,
#endif
                           registerBuiltinDataSources, registerBuiltinAugmentations,
                           runtime::registerBuiltinSchedules})
    if (Error e = layer()) return e;
  return Error::success();
}

} // namespace

Error registerBuiltins() {
  static std::optional<std::string> failure;
  if (!failure) {
    Error e = registerAll();
    failure = e ? e.message() : "";
  }
  return failure->empty() ? Error::success() : Error::make(*failure);
}

} // namespace dtnn
