// The oneDNN backend: host memory, kernels built on oneDNN primitives that
// choose their own layouts (format_tag::any), and reorders between those
// layouts and plain ones. It is the default on CPU; ops it has no primitive
// for go to the reference backend.
#include "backends/onednn/OnednnBackend.h"

#include "backends/onednn/Common.h"
#include "backends/onednn/Primitives.h"
#include "runtime/BackendRegistry.h"

namespace dtnn::onednn {

namespace {

// A layout conversion: one reorder primitive. A native side brings its
// descriptor; the plain side is row-major over the same dims.
class Reorder : public PrimitiveKernel {
public:
  Reorder(const BufferDesc &from, const BufferDesc &to) : PrimitiveKernel({from.type}, {to.type}) {
    const BufferDesc &native = from.layout.isPlain() ? to : from;
    memory::dims dims = native.layout.descAs<memory::desc>()->dims();
    memory::desc src = descOf(from, dims), dst = descOf(to, dims);
    setDesc(dnnl::reorder::primitive_desc(engine(), src, engine(), dst, userScratchpad()));
    in_ = {from};
    out_ = {to};
    argIn(DNNL_ARG_FROM, 0, src);
    argOut(DNNL_ARG_TO, 0, dst);
  }
};

class OnednnBackend final : public runtime::HostBackend {
public:
  std::string_view name() const override { return kBackendName; }
  Expected<std::unique_ptr<runtime::Kernel>> makeConversion(const BufferDesc &from,
                                                            const BufferDesc &to) override {
    std::unique_ptr<runtime::Kernel> k;
    if (Error e = guard("converting " + from.str() + " to " + to.str(),
                        [&] { k = std::make_unique<Reorder>(from, to); }))
      return e;
    return k;
  }
};

// `type` in the arrangement of `like`, one of this backend's layouts.
Expected<BufferDesc> layoutLike(const BufferDesc &like, const ir::TensorType &type) {
  const memory::desc *md = like.layout.descAs<memory::desc>();
  memory::dims dims(type.dims.begin(), type.dims.end());
  if (md && type.dtype == like.type.dtype && type.isStatic()) {
    memory::desc same = sameLayout(*md, dims);
    if (tagOf(same) == like.layout.tag()) return bufferOf(same, type);
  }
  return Error::make("oneDNN has no " + like.layout.tag() + " layout for " + type.str());
}

} // namespace

Error registerOnednnBackend() {
  static bool done = false;
  if (done) return Error::success();
  done = true;
  if (Error e = runtime::registerBackend(
          {kBackendName, 10, false, "oneDNN primitives in their own layouts (the default on CPU)",
           [](const runtime::BackendOptions &) {
             return std::unique_ptr<runtime::Backend>(new OnednnBackend());
           },
           layoutLike}))
    return e;
  KernelList r;
  for (auto *family : {registerAttentionKernels, registerBinaryKernels, registerCastKernels, registerConvKernels,
                       registerDenseKernels, registerEltwiseKernels, registerLayerNormKernels,
                       registerMatmulKernels, registerNormKernels, registerPoolKernels})
    family(r);
  return std::move(r.error);
}

} // namespace dtnn::onednn
