#include "backends/reference/ReferenceBackend.h"

#include "backends/reference/KernelTable.h"
#include "runtime/HostMemory.h"

#include <omp.h>

#include <cassert>
#include <cstdlib>
#include <cstring>

namespace dtnn::reference {

const KernelTable &KernelTable::get() {
  static const KernelTable table = [] {
    KernelTable t;
    registerConvKernels(t);
    registerDenseKernels(t);
    registerPoolKernels(t);
    registerNormKernels(t);
    registerShapeKernels(t);
    registerElementwiseKernels(t);
    registerActivationKernels(t);
    registerDropoutKernels(t);
    registerEncodingKernels(t);
    registerLossKernels(t);
    registerOptimizerKernels(t);
    return t;
  }();
  return table;
}

void KernelTable::add(const std::string &op, KernelFn fn) {
  assert(!kernels_.count(op) && "reference kernel registered twice");
  kernels_[op] = std::move(fn);
}

const KernelFn *KernelTable::find(const std::string &op) const {
  auto it = kernels_.find(op);
  return it == kernels_.end() ? nullptr : &it->second;
}

namespace {

class FnKernel : public runtime::Kernel {
public:
  explicit FnKernel(const KernelFn &fn) : fn_(fn) {}
  void run(const KernelArgs &args) override { fn_(args); }

private:
  const KernelFn &fn_;
};

class ReferenceBackend : public runtime::Backend {
public:
  explicit ReferenceBackend(const runtime::BackendOptions &opts) {
    if (opts.threads > 0) omp_set_num_threads(opts.threads);
  }
  std::string_view name() const override { return "reference"; }

  Expected<std::unique_ptr<runtime::Kernel>> bind(const ir::Op &op,
                                                  const std::vector<ir::TensorType> &,
                                                  const std::vector<ir::TensorType> &) override {
    const KernelFn *fn = KernelTable::get().find(op.name());
    if (!fn) return Error::make("the reference backend has no kernel for op '" + op.name() + "'");
    return std::unique_ptr<runtime::Kernel>(new FnKernel(*fn));
  }

  void *allocate(size_t bytes) override { return runtime::allocateHostZeroed(bytes); }
  uint64_t memoryBytes() const override { return runtime::hostMemoryBytes(); }
  void release(void *p) override { std::free(p); }
  void copyToDevice(void *dst, const void *src, size_t bytes) override {
    std::memcpy(dst, src, bytes);
  }
  void copyToHost(void *dst, const void *src, size_t bytes) override {
    std::memcpy(dst, src, bytes);
  }
};

} // namespace

std::unique_ptr<runtime::Backend> createReferenceBackend(const runtime::BackendOptions &opts) {
  return std::make_unique<ReferenceBackend>(opts);
}

} // namespace dtnn::reference
