// The reference backend: host memory and the plain C++ kernels the family
// files register, the numerical oracle later backends are tested against.
// It claims every op at every element type, so it is every run's fallback.
#include "backends/reference/ReferenceBackend.h"

#include "backends/reference/Bf16Stage.h"
#include "backends/reference/KernelTable.h"
#include "runtime/BackendRegistry.h"

namespace dtnn::reference {

namespace {

using runtime::BufferDesc;
using runtime::KernelRequest;

// Every element type.
std::vector<ir::DType> allTypes() {
  return {ir::DType::F32, ir::DType::BF16, ir::DType::F64,  ir::DType::I32,
          ir::DType::I64, ir::DType::U8,   ir::DType::Bool, ir::DType::Token};
}

// A reference kernel: a function of its arguments, on plain buffers.
class FnKernel : public runtime::Kernel {
public:
  FnKernel(const KernelRequest &r, const KernelFn &fn) : Kernel(r), fn_(fn) {}
  Error run(const KernelArgs &args, runtime::ExecContext &) override {
    fn_(args);
    return Error::success();
  }

private:
  const KernelFn &fn_;
};

// An elementwise update on any one layout: the operands of operand 0's type
// take the layout operand 0 arrives in, and run as flat arrays of all the
// elements their buffers hold.
class SameLayoutKernel : public runtime::Kernel {
public:
  SameLayoutKernel(const KernelRequest &r, const KernelFn &fn) : Kernel(r), fn_(fn) {
    for (size_t i = 0; i < r.in.size(); ++i)
      if (r.in[i].type == r.in[0].type) {
        in_[i] = r.in[0];
        flat_.push_back(i);
      }
  }
  Error run(const KernelArgs &args, runtime::ExecContext &) override {
    KernelArgs a = args;
    for (size_t i : flat_) {
      int64_t n = static_cast<int64_t>(in_[i].bytes / ir::dtypeSize(in_[i].type.dtype));
      a.in[i].type = ir::TensorType(in_[i].type.dtype, {n});
    }
    fn_(a);
    return Error::success();
  }

private:
  const KernelFn &fn_;
  std::vector<size_t> flat_;
};

class ReferenceBackend final : public runtime::HostBackend {
public:
  std::string_view name() const override { return kBackendName; }
};

} // namespace

void KernelTable::add(const std::string &op, KernelFn fn) {
  auto shared = std::make_shared<KernelFn>(std::move(fn));
  addKernel(op, [shared](const KernelRequest &r) -> Expected<std::unique_ptr<runtime::Kernel>> {
    return std::unique_ptr<runtime::Kernel>(new FnKernel(r, *shared));
  });
}

void KernelTable::addSameLayout(const std::string &op, KernelFn fn) {
  auto shared = std::make_shared<KernelFn>(std::move(fn));
  keep(r_.add(op, kBackendName, allTypes(), runtime::LayoutKind::Same,
              stagedBf16([shared](const KernelRequest &r)
                             -> Expected<std::unique_ptr<runtime::Kernel>> {
                return std::unique_ptr<runtime::Kernel>(new SameLayoutKernel(r, *shared));
              })));
}

void KernelTable::addKernel(const std::string &op, runtime::KernelMaker make,
                            runtime::LayoutKind layouts) {
  keep(r_.add(op, kBackendName, allTypes(), layouts, stagedBf16(std::move(make))));
}

Error registerReferenceBackend() {
  static bool done = false;
  if (done) return Error::success();
  done = true;
  if (Error e = runtime::registerBackend(
          {kBackendName, 0, true, "plain C++ kernels for every op, the numerical oracle",
           [](const runtime::BackendOptions &) {
             return std::unique_ptr<runtime::Backend>(new ReferenceBackend());
           }}))
    return e;
  KernelTable t(runtime::KernelRegistry::get());
  for (auto *family :
       {registerConvKernels, registerDenseKernels, registerPoolKernels, registerNormKernels,
        registerSyncNormKernels, registerShapeKernels, registerElementwiseKernels,
        registerMathKernels, registerReduceKernels, registerLayerNormKernels,
        registerMatmulKernels, registerAttentionKernels, registerActivationKernels,
        registerDropoutKernels, registerEncodingKernels, registerLossKernels,
        registerOptimizerKernels,
        registerCollectiveKernels, registerFusedKernels})
    family(t);
  return t.takeError();
}

} // namespace dtnn::reference
