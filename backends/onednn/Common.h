// What the oneDNN backend's kernels share: the engine and stream, the
// mapping between oneDNN memory descriptors and the runtime's buffer
// descriptors, and PrimitiveKernel, a kernel that runs one oneDNN primitive
// with its operands, results and scratchpad bound to the primitive's
// arguments.
#pragma once

#include "runtime/KernelRegistry.h"

#include <dnnl.hpp>

#include <functional>
#include <string>
#include <vector>

namespace dtnn::onednn {

using dnnl::memory;
using runtime::BufferDesc;
using runtime::KernelArgs;
using runtime::KernelRequest;

// The backend's name in the registries and in layouts it owns.
inline constexpr const char *kBackendName = "onednn";

// The CPU engine and an in-order stream of this process.
dnnl::engine &engine();
dnnl::stream &stream();

memory::dims dimsOf(const ir::TensorType &t);
// oneDNN's data type of an element type: f32 or bf16 (the kernels register for these).
memory::data_type dataTypeOf(ir::DType t);
// A row-major descriptor of `dims` (f32 unless `dt` says otherwise).
memory::desc plainDesc(const memory::dims &dims, memory::data_type dt = memory::data_type::f32);
// Whether `md` is row-major over its own dims, without padding.
bool isPlain(const memory::desc &md);
// The oneDNN verbose name of a blocked layout: dims in order of decreasing
// stride, blocked ones in capitals, then the inner blocks ("aBcd8b").
std::string tagOf(const memory::desc &md);
// The buffer of a value of logical type `t` laid out as `md`: plain when `md`
// is, else this backend's layout named by tagOf.
BufferDesc bufferOf(const memory::desc &md, const ir::TensorType &t);
// The descriptor of a buffer as it arrives: its own when it is in a layout
// of this backend, else row-major over `dims` (which may differ from its
// type's, as a grouped convolution's 5-d weights do), of its element type.
memory::desc descOf(const BufferDesc &d, const memory::dims &dims);

// Runs `f`, turning a oneDNN exception into an error naming `what`.
Error guard(const std::string &what, const std::function<void()> &f);

// A kernel that runs oneDNN primitives, one after another: usually one, a
// few where an op needs more (max pooling's gradient recomputes the forward
// pass for its workspace). A subclass makes the primitive descriptors in its
// constructor (layout assignment reads in_ and out_ from them), says which
// operand, result or temporary buffer each argument of each primitive is,
// and leaves the primitives' creation to bind(). Temporaries and the
// primitives' scratchpads live in the kernel's workspace.
class PrimitiveKernel : public runtime::Kernel {
public:
  explicit PrimitiveKernel(const KernelRequest &r) : Kernel(r) {}
  PrimitiveKernel(const std::vector<ir::TensorType> &in, const std::vector<ir::TensorType> &out)
      : Kernel(in, out) {}
  uint64_t workspaceBytes() const override { return tempBytes_ + scratchpadBytes_; }
  uint64_t codeBytes() const override;
  // Creates the primitives; before each, checks that the address-space limit
  // leaves the most its code generator may map (mostCodeBytes), since oneDNN
  // crashes rather than report a code buffer it cannot map.
  Error bind() override;
  Error run(const KernelArgs &args, runtime::ExecContext &ctx) override;

protected:
  // Adds a primitive, run after the ones added before; the arguments bound
  // next belong to it.
  void setDesc(const dnnl::primitive_desc_base &pd);
  // Binds argument `arg` (DNNL_ARG_*) of the last primitive to operand i or
  // result j, described by `md`.
  void argIn(int arg, size_t i, const memory::desc &md);
  void argOut(int arg, size_t j, const memory::desc &md);
  // Wants operand i laid out as `md` and binds `arg` to it.
  void use(int arg, size_t i, const memory::desc &md);
  // Gives result j laid out as `md` and binds `arg` to it.
  void give(int arg, size_t j, const memory::desc &md);
  // Adds host code run after the primitives added before, in each repeat r, where a primitive
  // would be slow (oneDNN's softmax backward has only a scalar reference implementation on
  // AVX2). It binds no arguments: it reads its buffers from args (tempData, inOffset).
  void addHostStep(std::function<void(const KernelArgs &args, int64_t r)> f);
  // A temporary buffer in the workspace described by `md`; returns its id.
  size_t temp(const memory::desc &md);
  // Binds `arg` of the last primitive to temporary `id`.
  void argTemp(int arg, size_t id);
  // The storage of temporary `id` during a run.
  float *tempData(const KernelArgs &args, size_t id) const;
  // Host code before the first primitive and after the last, with the
  // arguments bound (a subclass that prepares or finishes values).
  virtual void before(const KernelArgs &args) { (void)args; }
  virtual void after(const KernelArgs &args) { (void)args; }
  // A kernel that works a slice at a time runs its primitives repeats_
  // times, operand i and result j bound at these byte offsets in repeat r
  // (temporaries are reused).
  int64_t repeats_ = 1;
  virtual uint64_t inOffset(size_t i, int64_t r) const {
    (void)i;
    (void)r;
    return 0;
  }
  virtual uint64_t outOffset(size_t j, int64_t r) const {
    (void)j;
    (void)r;
    return 0;
  }

private:
  struct Binding {
    int arg;
    enum { In, Out, Temp, Scratchpad } source;
    size_t index;
    memory::desc md;
    memory mem;
  };
  struct Step {
    dnnl::primitive_desc_base pd;
    dnnl::primitive prim;
    std::vector<Binding> bindings;
    std::unordered_map<int, memory> args;
    std::function<void(const KernelArgs &, int64_t)> host; // a host step: no primitive
  };
  std::vector<Step> steps_;
  std::vector<uint64_t> tempOffsets_;
  std::vector<memory::desc> tempDescs_;
  uint64_t tempBytes_ = 0, scratchpadBytes_ = 0;
};

// The address space oneDNN's code generator maps to create the primitive of
// `pd`: a 256 KiB buffer per generated kernel, none for a primitive that
// oneDNN's primitive cache holds already. Measured over the model zoo with
// oneDNN 2.6 on AVX-512: a brgemm primitive (dense layers, some convolutions)
// maps up to 4.4 MiB (backward data), 2.3 MiB (backward weights) and 3.2 MiB
// (forward), any other at most 1 MiB and nearly all one buffer or none.
// expectedCodeBytes is what a plan's estimate counts: about the most measured
// for brgemm, one buffer for the others, which cache hits balance.
// mostCodeBytes bounds one primitive, with a margin, for the last check
// before it is created.
uint64_t expectedCodeBytes(const dnnl::primitive_desc_base &pd);
uint64_t mostCodeBytes(const dnnl::primitive_desc_base &pd);

// The attributes every primitive gets: a scratchpad the plan provides.
dnnl::primitive_attr userScratchpad();
// `attr` with the op's fused epilogue (ir/ops/FusedActivation.h): a residual
// as a sum post-op (the destination must hold the residual when the
// primitive runs), then the activation (its `act` attribute) as an eltwise
// post-op; a kernel with one claims the op only for the activations
// claimsFusedActivation accepts.
dnnl::primitive_attr withFusedActivation(dnnl::primitive_attr attr, const ir::Op &op);
bool claimsFusedActivation(const ir::Op &op, const std::vector<ir::TensorType> &in);

// Where the kernel families register: the first registration that failed.
struct KernelList {
  Error error;
};

// Registers `make` for `op` in the kernel registry, for oneDNN layouts, at
// the element types `dtypes` (f32 alone unless given).
void add(KernelList &r, const std::string &op, runtime::KernelMaker make,
         runtime::KernelClaim claims = nullptr, std::vector<ir::DType> dtypes = {ir::DType::F32});
// f32 and bf16: what the kernels of the ops that compute in bf16 register for.
std::vector<ir::DType> withBf16();

// The kernel families, one per file.
void registerAttentionKernels(KernelList &r);
void registerBinaryKernels(KernelList &r);
void registerCastKernels(KernelList &r);
void registerConvKernels(KernelList &r);
void registerDenseKernels(KernelList &r);
void registerEltwiseKernels(KernelList &r);
void registerLayerNormKernels(KernelList &r);
void registerMatmulKernels(KernelList &r);
void registerNormKernels(KernelList &r);
void registerPoolKernels(KernelList &r);

// Makes a kernel of type K from a request, reporting oneDNN's exceptions.
template <typename K> runtime::KernelMaker maker() {
  return [](const KernelRequest &r) -> Expected<std::unique_ptr<runtime::Kernel>> {
    std::unique_ptr<runtime::Kernel> k;
    if (Error e = guard(r.op.name(), [&] { k = std::make_unique<K>(r); })) return e;
    return k;
  };
}

} // namespace dtnn::onednn
