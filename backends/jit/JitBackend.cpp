// The jit backend: runs fused ops with kernels that LLVM's ORC JIT compiles
// from their regions (backends/jit/Codegen.h), on host buffers in the layout
// their operands arrive in (oneDNN's blocked channels included) where the
// loop plan can follow it, else plain. It is planned after the chosen
// backend in every run, so that oneDNN runs what it has primitives for and
// the jit the fused groups between them; where LLVM cannot compile a region,
// the fused op goes to the reference interpreter.
#include "backends/jit/JitBackend.h"

#include "backends/jit/Codegen.h"
#include "ir/ops/FusedActivation.h"
#include "ir/ops/FusedUpdate.h"
#include "runtime/BackendRegistry.h"
#include "runtime/KernelRegistry.h"
#include "runtime/UpdateGroups.h"
#include "runtime/plan/Plan.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <optional>
#include <set>

namespace dtnn::jit {

std::string kernelCacheDir(const std::string &requested) {
  std::string dir = requested;
  if (dir.empty())
    if (const char *env = std::getenv("DTNN_JIT_CACHE")) dir = env;
  if (dir == "off") return "";
  if (!dir.empty()) return dir;
  if (const char *xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg)
    return std::string(xdg) + "/dtnn/jit";
  if (const char *home = std::getenv("HOME"); home && *home)
    return std::string(home) + "/.cache/dtnn/jit";
  return "";
}

namespace {

using runtime::infiniteAtZero;
using runtime::planLoops;

constexpr const char *kBackendName = "jit";
// The fewest elements a thread takes of an inner loop that is split.
constexpr int64_t kMinChunk = 16384;
// The most pieces a reduction across the rows is cut into.
constexpr int64_t kMaxPieces = 16;

class JitBackend final : public runtime::HostBackend {
public:
  explicit JitBackend(const runtime::BackendOptions &o)
      : cacheDir_(kernelCacheDir(o.kernelCache)) {}
  std::string_view name() const override { return kBackendName; }
  const std::string &cacheDir() const { return cacheDir_; }

  // "jit: 52 kernels, 40 compiled and 12 loaded from DIR, in 0.61 s (steps
  // waited 0.20 s for them)": the seconds of the compile threads, and those
  // the steps spent waiting for a kernel's code.
  std::string summary() const override {
    CompileStats s = compileStats();
    if (s.compiled + s.loaded == 0) return "";
    char seconds[96];
    std::snprintf(seconds, sizeof seconds, "%.2f s (steps waited %.2f s for them)", s.seconds,
                  waitedSeconds());
    return "jit: " + std::to_string(s.compiled + s.loaded) + " kernels, " +
           std::to_string(s.compiled) + " compiled and " + std::to_string(s.loaded) +
           " loaded from " + (cacheDir_.empty() ? std::string("no cache") : cacheDir_) + ", in " +
           seconds;
  }

private:
  std::string cacheDir_;
};

// Warns once per region that LLVM could not compile.
void warnOnce(const std::string &key, const std::string &message) {
  static std::mutex mu;
  static std::set<std::string> said;
  std::lock_guard<std::mutex> lock(mu);
  if (said.insert(key).second)
    std::fprintf(stderr, "dtnn: warning: %s; the fused op runs on the reference backend\n",
                 message.c_str());
}

class FusedKernel final : public runtime::Kernel {
public:
  // Operands and results in `in` and `out`, as the plan asks.
  FusedKernel(const runtime::KernelRequest &r, LoopPlan plan, PendingKernel code,
              std::vector<runtime::BufferDesc> in, std::vector<runtime::BufferDesc> out)
      : Kernel(r), plan_(std::move(plan)), code_(std::move(code)) {
    in_ = std::move(in);
    out_ = std::move(out);
    markFeedsFirst(*r.op.body());
    // A reduction that sums across every row (or along the one row) would
    // run on one thread: the work is cut into pieces instead, each summing
    // into partial results of its own, added up in piece order. The pieces
    // depend on the sizes alone, so the result does not depend on the
    // thread count.
    int64_t rows = plan_.rows(), inner = plan_.inner();
    bool serial = rows > 1 ? plan_.rowUnit >= rows : !plan_.parallelInner;
    if (serial && rows * inner >= 2 * kMinChunk) {
      pieces_ = std::min<int64_t>(kMaxPieces, rows * inner / kMinChunk);
      if (rows > 1) pieces_ = std::min(pieces_, rows);
      for (size_t y = 0; y < out_.size(); ++y)
        if (plan_.reduced[y]) partialBytes_ += out_[y].bytes;
    }
  }

  // Result 0 may take the storage of an argument it is computed from, where
  // the plan stores both alike over the whole domain (the buffer assignment
  // checks that their layouts and sizes agree): the code loads each argument
  // once per element and stores a result only after the loads it is computed
  // from, and no element is read by another than the one that writes it, so
  // an element is read before it is overwritten. The pointers are declared
  // not to alias; that lets LLVM move a load or store only where no data flows
  // between them, which an argument that feeds the result never is.
  bool allowsReuse(size_t operand, size_t result) const override {
    return result == 0 && operand < feedsFirst_.size() && feedsFirst_[operand];
  }

  uint64_t workspaceBytes() const override {
    return pieces_ > 1 ? uint64_t(pieces_) * partialBytes_ : 0;
  }

  Error run(const runtime::KernelArgs &args, runtime::ExecContext &) override {
    Expected<KernelFn> code = code_.get();
    if (!code) return code.takeError();
    fn_ = *code;
    std::vector<void *> ptrs;
    for (const runtime::TensorView &v : args.in) ptrs.push_back(v.data);
    // Reductions add to their results: zero them, padding included.
    for (size_t y = 0; y < args.out.size(); ++y) {
      ptrs.push_back(args.out[y].data);
      if (plan_.reduced[y]) std::memset(args.out[y].data, 0, out_[y].bytes);
    }
    int64_t rows = plan_.rows(), inner = plan_.inner();
    if (rows * inner == 0) return Error::success();
    if (pieces_ > 1) {
      runPieces(args, ptrs);
      return Error::success();
    }
    const int64_t *sizes = plan_.sizes.data();
    void *const *p = ptrs.data();
    KernelFn fn = fn_;
    int64_t unit = plan_.rowUnit;
    if (rows > unit) {
      int64_t perChunk = unit * std::max<int64_t>(1, kMinChunk / (inner * unit));
      int64_t chunks = (rows + perChunk - 1) / perChunk;
#pragma omp parallel for schedule(static)
      for (int64_t c = 0; c < chunks; ++c)
        fn(p, sizes, c * perChunk, std::min(rows, (c + 1) * perChunk), 0, inner);
    } else if (rows == 1 && plan_.parallelInner && inner > kMinChunk) {
      int64_t chunks = (inner + kMinChunk - 1) / kMinChunk;
#pragma omp parallel for schedule(static)
      for (int64_t c = 0; c < chunks; ++c)
        fn(p, sizes, 0, 1, c * kMinChunk, std::min(inner, (c + 1) * kMinChunk));
    } else {
      fn(p, sizes, 0, rows, 0, inner);
    }
    return Error::success();
  }

private:
  // Which arguments the first yield, if an elementwise result over the whole
  // domain, is computed from among those that span the whole domain.
  void markFeedsFirst(const ir::Graph &body) {
    size_t nIn = body.inputs().size();
    feedsFirst_.assign(nIn, false);
    if (body.outputs().empty() || plan_.reduced[0] || !spansAll(nIn)) return;
    std::set<const ir::Value *> reached;
    std::vector<const ir::Value *> work{body.outputs()[0]};
    while (!work.empty()) {
      const ir::Value *v = work.back();
      work.pop_back();
      if (!reached.insert(v).second) continue;
      if (const ir::Op *op = v->definingOp())
        for (const ir::Value *o : op->operands()) work.push_back(o);
    }
    for (size_t i = 0; i < nIn; ++i)
      feedsFirst_[i] = spansAll(i) && reached.count(body.inputs()[i]);
  }

  bool spansAll(size_t tensor) const {
    const std::vector<bool> &s = plan_.spans[tensor];
    return std::find(s.begin(), s.end(), false) == s.end();
  }

  // The pieces, each over its share of the rows (or of the one row), its
  // reductions into its own zeroed part of the workspace; then each
  // reduction's result is the sum of the pieces' parts, in piece order.
  void runPieces(const runtime::KernelArgs &args, const std::vector<void *> &ptrs) {
    char *work = static_cast<char *>(args.workspace);
    std::memset(work, 0, size_t(pieces_) * partialBytes_);
    int64_t rows = plan_.rows(), inner = plan_.inner(), pieces = pieces_;
    size_t nIn = args.in.size();
#pragma omp parallel for schedule(static)
    for (int64_t c = 0; c < pieces; ++c) {
      std::vector<void *> local = ptrs;
      char *part = work + uint64_t(c) * partialBytes_;
      for (size_t y = 0; y < out_.size(); ++y)
        if (plan_.reduced[y]) {
          local[nIn + y] = part;
          part += out_[y].bytes;
        }
      if (rows > 1)
        fn_(local.data(), plan_.sizes.data(), c * rows / pieces, (c + 1) * rows / pieces, 0, inner);
      else
        fn_(local.data(), plan_.sizes.data(), 0, 1, c * inner / pieces, (c + 1) * inner / pieces);
    }
    uint64_t offset = 0;
    for (size_t y = 0; y < out_.size(); ++y) {
      if (!plan_.reduced[y]) continue;
      if (plan_.dtype == ir::DType::F64)
        addPieces<double>(args.out[y].data, work + offset, out_[y].bytes);
      else
        addPieces<float>(args.out[y].data, work + offset, out_[y].bytes);
      offset += out_[y].bytes;
    }
  }

  template <typename T> void addPieces(void *out, const char *first, uint64_t bytes) {
    T *o = static_cast<T *>(out);
    int64_t n = int64_t(bytes / sizeof(T));
#pragma omp parallel for schedule(static) if (n > kMinChunk)
    for (int64_t i = 0; i < n; ++i) {
      T sum = 0;
      for (int64_t c = 0; c < pieces_; ++c)
        sum += reinterpret_cast<const T *>(first + uint64_t(c) * partialBytes_)[i];
      o[i] = sum;
    }
  }

  LoopPlan plan_;
  KernelCode code_;
  KernelFn fn_ = nullptr;        // code_'s, once it is there
  std::vector<bool> feedsFirst_; // by argument: see allowsReuse
  int64_t pieces_ = 1;
  uint64_t partialBytes_ = 0; // of one piece: every reduction's result
};

std::vector<ir::TensorType> typesOf(const std::vector<runtime::BufferDesc> &descs) {
  std::vector<ir::TensorType> out;
  for (const runtime::BufferDesc &d : descs) out.push_back(d.type);
  return out;
}

// The buffers a plan over `tag` wants, `like` being the domain's buffer in
// that layout: the domain's layout where the plan arranges a tensor (at the
// tensor's own type), plain elsewhere. Fails when the layout's owner cannot
// arrange a type.
Expected<std::vector<runtime::BufferDesc>> descsFor(const LoopPlan &plan,
                                                    const std::vector<ir::TensorType> &types,
                                                    const runtime::BufferDesc *like, size_t first) {
  std::vector<runtime::BufferDesc> out;
  for (size_t i = 0; i < types.size(); ++i) {
    if (!plan.arranged[first + i]) {
      out.push_back(runtime::BufferDesc::plain(types[i]));
    } else if (types[i] == like->type) {
      out.push_back(*like);
    } else {
      Expected<runtime::BufferDesc> d = runtime::layoutLike(*like, types[i]);
      if (!d) return Error::make(d.error().message());
      out.push_back(*d);
    }
  }
  return out;
}

// How the kernel of a fused op runs: its loop plan and the buffers it wants.
struct KernelShape {
  LoopPlan plan;
  std::vector<runtime::BufferDesc> in, out;
};

// The plan over the layout of `like` and the buffers it wants, or nothing
// when the jit cannot follow that layout.
std::optional<KernelShape> arrange(const ir::Graph &body,
                                   const std::vector<ir::TensorType> &inTypes,
                                   const std::vector<ir::TensorType> &outTypes,
                                   const runtime::BufferDesc &like) {
  Expected<LoopPlan> plan = planLoops(body, inTypes, like.layout.tag());
  if (!plan) return std::nullopt;
  Expected<std::vector<runtime::BufferDesc>> in = descsFor(*plan, inTypes, &like, 0);
  if (!in) return std::nullopt;
  Expected<std::vector<runtime::BufferDesc>> out = descsFor(*plan, outTypes, &like, inTypes.size());
  if (!out) return std::nullopt;
  return KernelShape{std::move(*plan), std::move(*in), std::move(*out)};
}

// A region whose every argument and yield has the domain's type and which
// reduces nothing computes the same at every element whatever the layout: it
// runs over whole buffers of any layout, padding included (where a division
// cannot fill the padding with NaN).
bool runsOverWholeBuffers(const ir::Graph &body, const LoopPlan &plan,
                          const std::vector<ir::TensorType> &inTypes,
                          const std::vector<ir::TensorType> &outTypes,
                          const runtime::BufferDesc &like) {
  for (bool red : plan.reduced)
    if (red) return false;
  for (const std::vector<ir::TensorType> *types : {&inTypes, &outTypes})
    for (const ir::TensorType &t : *types)
      if (t != like.type) return false;
  return like.bytes == runtime::byteSize(like.type) || !infiniteAtZero(body);
}

// The kernel shape of fused op `op` whose operands arrive in `in`: it
// follows the layout of the first operand of the domain's type that arrives
// in one (oneDNN's blocked channels), so that no conversion surrounds the
// kernel; else it runs on plain buffers.
Expected<KernelShape> shapeOf(const ir::Op &op, const std::vector<runtime::BufferDesc> &in,
                              const std::vector<ir::TensorType> &outTypes) {
  if (!op.body()) return Error::make("'fused' has no region");
  const ir::Graph &body = *op.body();
  std::vector<ir::TensorType> inTypes = typesOf(in);
  Expected<LoopPlan> plan = planLoops(body, inTypes);
  if (!plan) return Error::make(plan.error().message());
  KernelShape shape{std::move(*plan), {}, {}};
  for (const ir::TensorType &t : inTypes) shape.in.push_back(runtime::BufferDesc::plain(t));
  for (const ir::TensorType &t : outTypes) shape.out.push_back(runtime::BufferDesc::plain(t));
  const runtime::BufferDesc *like = nullptr;
  for (const runtime::BufferDesc &d : in)
    if (!d.layout.isPlain() && d.type.dims == shape.plan.domain &&
        d.space == runtime::MemorySpace::Host) {
      like = &d;
      break;
    }
  if (!like) return shape;
  if (std::optional<KernelShape> a = arrange(body, inTypes, outTypes, *like)) return std::move(*a);
  if (runsOverWholeBuffers(body, shape.plan, inTypes, outTypes, *like)) {
    // One merged dimension already, which every tensor spans.
    shape.plan.sizes = {static_cast<int64_t>(like->bytes / ir::dtypeSize(like->type.dtype))};
    shape.in.assign(shape.in.size(), *like);
    shape.out.assign(shape.out.size(), *like);
  }
  return shape;
}

// Starts compiling the code of the kernel of `r` over `plan` (the region of
// its op); where the jit cannot (its module does not load, LLVM's JIT does
// not start), warns once and fails, and the op goes to the next backend.
Expected<PendingKernel> startCode(const runtime::KernelRequest &r, const LoopPlan &plan) {
  const auto *jit = dynamic_cast<const JitBackend *>(&r.backend);
  Expected<PendingKernel> code =
      startKernel(*r.op.body(), plan, jit ? jit->cacheDir() : kernelCacheDir(""));
  if (!code) {
    warnOnce(plan.key, code.error().message());
    return Error::make(code.error().message());
  }
  return code;
}

Expected<std::unique_ptr<runtime::Kernel>> makeFused(const runtime::KernelRequest &r) {
  Expected<KernelShape> shape = shapeOf(r.op, r.in, r.out);
  if (!shape) return Error::make(shape.error().message());
  Expected<PendingKernel> code = startCode(r, shape->plan);
  if (!code) return code.takeError();
  return std::unique_ptr<runtime::Kernel>(new FusedKernel(
      r, std::move(shape->plan), std::move(*code), std::move(shape->in), std::move(shape->out)));
}

// A fused_update: the region compiled once over one flat buffer per member
// and the coefficients, run over every group's whole buffers, cut into
// chunks that the threads share. Each member that a yield updates is read
// before it is written at every element, as in a fused op's in-place result.
class FusedUpdateKernel final : public runtime::Kernel {
public:
  FusedUpdateKernel(const runtime::KernelRequest &r, runtime::UpdateGroups groups,
                    PendingKernel code)
      : Kernel(r), groups_(std::move(groups)), code_(std::move(code)) {
    in_ = groups_.descs;
    for (size_t k = 0; k < groups_.tensors; ++k)
      for (int64_t b = 0; b < groups_.elements[k]; b += kMinChunk)
        chunks_.push_back({k, b, std::min(groups_.elements[k], b + kMinChunk)});
  }

  Error run(const runtime::KernelArgs &args, runtime::ExecContext &) override {
    Expected<KernelFn> code = code_.get();
    if (!code) return code.takeError();
    KernelFn fn = *code;
    // Per group: its members, the coefficients, then where each yield goes
    // (the parameter and the states, in place).
    std::vector<std::vector<void *>> ptrs(groups_.tensors);
    for (size_t k = 0; k < groups_.tensors; ++k) {
      for (size_t i = 0; i < groups_.width; ++i)
        ptrs[k].push_back(args.in[groups_.member(k, i)].data);
      for (size_t c = 0; c < groups_.coefficients; ++c)
        ptrs[k].push_back(args.in[groups_.coefficient(c)].data);
      for (size_t i = 0; i < groups_.width; ++i)
        if (i != 1) ptrs[k].push_back(args.in[groups_.member(k, i)].data);
    }
    int64_t n = int64_t(chunks_.size());
#pragma omp parallel for schedule(static)
    for (int64_t c = 0; c < n; ++c) {
      const Chunk &ch = chunks_[size_t(c)];
      int64_t size = groups_.elements[ch.group];
      fn(ptrs[ch.group].data(), &size, 0, 1, ch.begin, ch.end);
    }
    return Error::success();
  }

private:
  // The work the threads share: a range of one group's elements each.
  struct Chunk {
    size_t group;
    int64_t begin, end;
  };
  runtime::UpdateGroups groups_;
  KernelCode code_;
  std::vector<Chunk> chunks_;
};

// A plan over one group of a fused_update at operand types `in`: every
// member flat, at a size that only stands for any (the code takes sizes at
// run time), and the coefficients.
Expected<LoopPlan> updatePlan(const ir::Op &op, const std::vector<ir::TensorType> &in) {
  std::optional<ir::UpdateGroupCounts> g = ir::fusedUpdateGroups(op.attrs(), in.size());
  if (!op.body() || !g)
    return Error::make("'fused_update' has no region or its operands do not fit it");
  std::vector<ir::TensorType> args(g->width(), ir::TensorType(in[0].dtype, {kMinChunk}));
  args.insert(args.end(), in.end() - int64_t(g->coefficients), in.end());
  return planLoops(*op.body(), args);
}

Expected<std::unique_ptr<runtime::Kernel>> makeFusedUpdate(const runtime::KernelRequest &r) {
  Expected<runtime::UpdateGroups> groups = runtime::updateGroups(r);
  if (!groups) return groups.takeError();
  Expected<LoopPlan> plan = updatePlan(r.op, typesOf(r.in));
  if (!plan) return Error::make(plan.error().message());
  Expected<PendingKernel> code = startCode(r, *plan);
  if (!code) return code.takeError();
  return std::unique_ptr<runtime::Kernel>(
      new FusedUpdateKernel(r, std::move(*groups), std::move(*code)));
}

// The jit takes a fused_update whose region it can plan.
bool claimsFusedUpdate(const ir::Op &op, const std::vector<ir::TensorType> &in) {
  return static_cast<bool>(updatePlan(op, in));
}

// The jit takes a fused op whose region it can plan at these operand types.
bool claimsFused(const ir::Op &op, const std::vector<ir::TensorType> &in) {
  if (!op.body()) return false;
  Expected<LoopPlan> plan = planLoops(*op.body(), in);
  return static_cast<bool>(plan);
}

} // namespace

Error registerJitBackend() {
  static bool done = false;
  if (done) return Error::success();
  done = true;
  if (Error e = runtime::registerBackend(
          {kBackendName, 5, true, "fused elementwise kernels compiled by LLVM's ORC JIT",
           [](const runtime::BackendOptions &o) {
             return std::unique_ptr<runtime::Backend>(new JitBackend(o));
           }}))
    return e;
  for (ir::DType t : {ir::DType::F32, ir::DType::F64, ir::DType::BF16}) {
    if (Error e = runtime::registerKernel(
            {"fused", kBackendName, t, runtime::LayoutKind::Native, makeFused, claimsFused}))
      return e;
    if (t == ir::DType::BF16) continue; // an update's parameters are float32 master weights
    if (Error e =
            runtime::registerKernel({"fused_update", kBackendName, t, runtime::LayoutKind::Any,
                                     makeFusedUpdate, claimsFusedUpdate}))
      return e;
  }
  return Error::success();
}

Expected<std::string> fusedKernelsIR(const runtime::Plan &plan, const std::string &cpu) {
  std::string out;
  size_t number = 0;
  for (const runtime::PlanStep &s : plan.steps) {
    if (!s.op || !s.op->body()) continue;
    std::string name = "fused_" + std::to_string(number++);
    std::string head = "; " + name + ": " + ir::kernelLabel(*s.op);
    if (s.backend != kBackendName) {
      out += head + " runs on the " + s.backend + " backend\n";
      continue;
    }
    std::vector<runtime::BufferDesc> in;
    std::vector<ir::TensorType> outTypes;
    for (int id : s.in) in.push_back(plan.values[id].desc);
    if (s.op->name() == "fused_update") {
      Expected<LoopPlan> update = updatePlan(*s.op, typesOf(in));
      if (!update) return Error::make(name + ": " + update.error().message());
      Expected<std::string> ir = kernelIR(*s.op->body(), *update, name, cpu);
      if (!ir) return Error::make(ir.error().message());
      out += head + ", over each group's whole buffers, flat\n" + *ir;
      continue;
    }
    for (unsigned r = 0; r < s.op->ownResults(); ++r)
      outTypes.push_back(plan.values[s.out[r]].desc.type);
    Expected<KernelShape> shape = shapeOf(*s.op, in, outTypes);
    if (!shape) return Error::make(name + ": " + shape.error().message());
    head += ", over";
    for (const std::vector<runtime::BufferDesc> *list : {&shape->in, &shape->out})
      for (const runtime::BufferDesc &d : *list) head += " " + d.str();
    Expected<std::string> ir = kernelIR(*s.op->body(), shape->plan, name, cpu);
    if (!ir) return Error::make(ir.error().message());
    out += head + "\n" + *ir;
  }
  return out;
}

} // namespace dtnn::jit
