// The oneDNN backend: host memory, kernels built on oneDNN primitives that
// choose their own layouts (format_tag::any), and reorders between those
// layouts and plain ones. It is the default on CPU; ops it has no primitive
// for go to the reference backend.
#include "backends/onednn/OnednnBackend.h"

#include "backends/onednn/Common.h"
#include "backends/onednn/Primitives.h"
#include "runtime/BackendRegistry.h"

#include <cstdlib>

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

// oneDNN's name of an ISA, as its verbose mode and ONEDNN_MAX_CPU_ISA spell it.
std::string isaName(dnnl::cpu_isa isa) {
  switch (isa) {
  case dnnl::cpu_isa::sse41: return "sse41";
  case dnnl::cpu_isa::avx: return "avx";
  case dnnl::cpu_isa::avx2: return "avx2";
  case dnnl::cpu_isa::avx2_vnni: return "avx2_vnni";
  case dnnl::cpu_isa::avx512_core: return "avx512_core";
  case dnnl::cpu_isa::avx512_core_vnni: return "avx512_core_vnni";
  case dnnl::cpu_isa::avx512_core_bf16: return "avx512_core_bf16";
  case dnnl::cpu_isa::avx512_core_amx: return "avx512_core_amx";
  default: return "isa " + std::to_string(int(isa));
  }
}

// Whether oneDNN's ISA flags `isa` include all of `of`'s (each ISA's flags hold its elders').
bool includes(dnnl::cpu_isa isa, dnnl::cpu_isa of) { return (int(isa) & int(of)) == int(of); }

class OnednnBackend final : public runtime::HostBackend {
public:
  std::string_view name() const override { return kBackendName; }

  // bf16 needs AVX-512: below it oneDNN has only reference code for bf16 convolutions. AVX-512
  // without AVX512-BF16 emulates the products, slower than float32. oneDNN 2.6 leaves AMX off
  // unless ONEDNN_MAX_CPU_ISA enables it, so a bf16 run without that variable enables it here,
  // before any primitive is made (on a CPU without AMX this changes nothing).
  Error checkPrecision(ir::DType t, std::string &warning) override {
    if (t != ir::DType::BF16) return Error::success();
    if (!std::getenv("ONEDNN_MAX_CPU_ISA") && !std::getenv("DNNL_MAX_CPU_ISA")) {
      try {
        dnnl::set_max_cpu_isa(dnnl::cpu_isa::avx512_core_amx);
      } catch (const dnnl::error &) {
        // The ISA was fixed already (a primitive was made): keep oneDNN's choice.
      }
    }
    dnnl::cpu_isa isa = dnnl::get_effective_cpu_isa();
    if (!includes(isa, dnnl::cpu_isa::avx512_core))
      return Error::make("--precision bf16 needs AVX-512, and oneDNN runs this CPU as " +
                         isaName(isa) +
                         ": its bf16 convolutions and matmuls would be reference code, many "
                         "times slower than float32");
    if (!includes(isa, dnnl::cpu_isa::avx512_core_bf16))
      warning = "this CPU runs as " + isaName(isa) +
                " without AVX512-BF16: oneDNN emulates bf16 products, slower than float32";
    return Error::success();
  }
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
