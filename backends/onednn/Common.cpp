#include "backends/onednn/Common.h"

#include "runtime/ResourceLimits.h"

#include <algorithm>
#include <memory>
#include <numeric>

namespace dtnn::onednn {

dnnl::engine &engine() {
  static dnnl::engine e(dnnl::engine::kind::cpu, 0);
  return e;
}

dnnl::stream &stream() {
  static dnnl::stream s(engine());
  return s;
}

memory::dims dimsOf(const ir::TensorType &t) { return memory::dims(t.dims.begin(), t.dims.end()); }

memory::data_type dataTypeOf(ir::DType t) {
  return t == ir::DType::BF16 ? memory::data_type::bf16 : memory::data_type::f32;
}

memory::desc plainDesc(const memory::dims &dims, memory::data_type dt) {
  memory::dims strides(dims.size(), 1);
  for (size_t i = dims.size(); i-- > 1;) strides[i - 1] = strides[i] * std::max<int64_t>(dims[i], 1);
  return memory::desc(dims, dt, strides);
}

bool isPlain(const memory::desc &md) { return md == plainDesc(md.dims(), md.data_type()); }

std::string tagOf(const memory::desc &md) {
  const dnnl_memory_desc_t &d = md.data;
  if (d.format_kind != dnnl_blocked) return "format" + std::to_string(int(d.format_kind));
  const dnnl_blocking_desc_t &b = d.format_desc.blocking;
  std::vector<int> order(d.ndims);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int x, int y) { return b.strides[x] > b.strides[y]; });
  std::vector<bool> blocked(d.ndims, false);
  for (int k = 0; k < b.inner_nblks; ++k) blocked[b.inner_idxs[k]] = true;
  std::string tag;
  for (int i : order) tag += static_cast<char>((blocked[i] ? 'A' : 'a') + i);
  for (int k = 0; k < b.inner_nblks; ++k)
    tag += std::to_string(b.inner_blks[k]) + static_cast<char>('a' + b.inner_idxs[k]);
  return tag;
}

BufferDesc bufferOf(const memory::desc &md, const ir::TensorType &t) {
  if (isPlain(md)) return BufferDesc::plain(t);
  BufferDesc d;
  d.type = t;
  d.layout = runtime::Layout::native(kBackendName, tagOf(md), std::make_shared<memory::desc>(md));
  d.bytes = md.get_size();
  return d;
}

memory::desc descOf(const BufferDesc &d, const memory::dims &dims) {
  if (d.layout.backend() == kBackendName) return *d.layout.descAs<memory::desc>();
  return plainDesc(dims, dataTypeOf(d.type.dtype));
}

Error guard(const std::string &what, const std::function<void()> &f) {
  try {
    f();
  } catch (const dnnl::error &e) {
    return Error::make(what + ": oneDNN: " + e.what());
  }
  return Error::success();
}

dnnl::primitive_attr userScratchpad() {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

void PrimitiveKernel::setDesc(const dnnl::primitive_desc_base &pd) {
  steps_.push_back({pd, {}, {}, {}});
  memory::desc sp = pd.scratchpad_desc();
  scratchpadBytes_ = std::max<uint64_t>(scratchpadBytes_, sp.get_size());
  if (sp.get_size())
    steps_.back().bindings.push_back({DNNL_ARG_SCRATCHPAD, Binding::Scratchpad, 0, sp, {}});
}

void PrimitiveKernel::addHostStep(std::function<void(const KernelArgs &, int64_t)> f) {
  steps_.push_back({{}, {}, {}, {}, std::move(f)});
}

void PrimitiveKernel::argIn(int arg, size_t i, const memory::desc &md) {
  steps_.back().bindings.push_back({arg, Binding::In, i, md, {}});
}

void PrimitiveKernel::argOut(int arg, size_t j, const memory::desc &md) {
  steps_.back().bindings.push_back({arg, Binding::Out, j, md, {}});
}

void PrimitiveKernel::use(int arg, size_t i, const memory::desc &md) {
  in_[i] = bufferOf(md, in_[i].type);
  argIn(arg, i, md);
}

void PrimitiveKernel::give(int arg, size_t j, const memory::desc &md) {
  out_[j] = bufferOf(md, out_[j].type);
  argOut(arg, j, md);
}

size_t PrimitiveKernel::temp(const memory::desc &md) {
  tempOffsets_.push_back(tempBytes_);
  tempDescs_.push_back(md);
  tempBytes_ += (md.get_size() + 63) / 64 * 64;
  return tempOffsets_.size() - 1;
}

void PrimitiveKernel::argTemp(int arg, size_t id) {
  steps_.back().bindings.push_back({arg, Binding::Temp, id, tempDescs_[id], {}});
}

float *PrimitiveKernel::tempData(const KernelArgs &args, size_t id) const {
  return reinterpret_cast<float *>(static_cast<char *>(args.workspace) + tempOffsets_[id]);
}

namespace {

constexpr uint64_t kMiB = uint64_t(1) << 20;

// The implementation family of a primitive descriptor: "brgemm_bwd_d" of
// "brgemm_bwd_d:avx512_core".
std::string implFamily(const dnnl::primitive_desc_base &pd) {
  std::string impl = pd.impl_info_str();
  return impl.substr(0, impl.find(':'));
}

// Room left free besides mostCodeBytes when a primitive is created: for what
// oneDNN allocates besides its code, and other threads' allocations meanwhile.
constexpr uint64_t kPrimitiveSlack = 4 * kMiB;

} // namespace

uint64_t expectedCodeBytes(const dnnl::primitive_desc_base &pd) {
  std::string family = implFamily(pd);
  if (family == "brgemm_bwd_d") return 9 * kMiB / 2;
  if (family == "brgemm_bwd_w") return 5 * kMiB / 2;
  if (family.starts_with("brgemm") || family.starts_with("gemm")) return 3 * kMiB / 2;
  return kMiB / 4;
}

uint64_t mostCodeBytes(const dnnl::primitive_desc_base &pd) {
  std::string family = implFamily(pd);
  return family.starts_with("brgemm") || family.starts_with("gemm") ? 8 * kMiB : 2 * kMiB;
}

uint64_t PrimitiveKernel::codeBytes() const {
  uint64_t sum = 0;
  for (const Step &s : steps_)
    if (!s.host) sum += expectedCodeBytes(s.pd);
  return sum;
}

Error PrimitiveKernel::bind() {
  for (Step &s : steps_) {
    if (s.host) continue;
    runtime::SpaceNeed need{"oneDNN's code generator", {}};
    need.add("the code of a primitive '" + std::string(s.pd.impl_info_str()) + "'",
             mostCodeBytes(s.pd));
    if (Error e = runtime::checkAddressSpace(need, "", kPrimitiveSlack)) return e;
    if (Error e = guard("binding a oneDNN primitive", [&] {
          s.prim = dnnl::primitive(s.pd.get());
          for (Binding &b : s.bindings) {
            b.mem = memory(b.md, engine(), DNNL_MEMORY_NONE);
            s.args[b.arg] = b.mem;
          }
        }))
      return e;
  }
  return Error::success();
}

Error PrimitiveKernel::run(const KernelArgs &args, runtime::ExecContext &) {
  return guard("running a oneDNN primitive", [&] {
    char *scratch = static_cast<char *>(args.workspace) + tempBytes_;
    auto at = [](void *base, uint64_t offset) { return static_cast<char *>(base) + offset; };
    for (int64_t r = 0; r < repeats_; ++r) {
      for (Step &s : steps_)
        for (Binding &b : s.bindings) {
          switch (b.source) {
          case Binding::In:
            b.mem.set_data_handle(at(args.in[b.index].data, inOffset(b.index, r)));
            break;
          case Binding::Out:
            b.mem.set_data_handle(at(args.out[b.index].data, outOffset(b.index, r)));
            break;
          case Binding::Temp: b.mem.set_data_handle(tempData(args, b.index)); break;
          case Binding::Scratchpad: b.mem.set_data_handle(scratch); break;
          }
        }
      if (r == 0) before(args);
      for (Step &s : steps_) {
        if (s.host) s.host(args, r);
        else s.prim.execute(stream(), s.args);
      }
    }
    after(args);
  });
}

std::vector<ir::DType> withBf16() { return {ir::DType::F32, ir::DType::BF16}; }

namespace {

// Whether oneDNN has bf16 code of its own here: AVX-512 and up (below it, only reference code).
// Asked at the first plan, after the backend's checkPrecision, so that the ISA it may enable
// counts.
bool nativeBf16() {
  static const bool native = (int(dnnl::get_effective_cpu_isa()) &
                              int(dnnl::cpu_isa::avx512_core)) == int(dnnl::cpu_isa::avx512_core);
  return native;
}

} // namespace

void add(KernelList &r, const std::string &op, runtime::KernelMaker make,
         runtime::KernelClaim claims, std::vector<ir::DType> dtypes) {
  // A bf16 operand is claimed only where oneDNN computes bf16 natively.
  runtime::KernelClaim claim = [claims = std::move(claims)](const ir::Op &o,
                                                            const std::vector<ir::TensorType> &in) {
    if (!in.empty() && in[0].dtype == ir::DType::BF16 && !nativeBf16()) return false;
    return !claims || claims(o, in);
  };
  Error e = runtime::KernelRegistry::get().add(op, kBackendName, std::move(dtypes),
                                               runtime::LayoutKind::Native, std::move(make),
                                               std::move(claim));
  if (e && !r.error) r.error = std::move(e);
}

} // namespace dtnn::onednn
