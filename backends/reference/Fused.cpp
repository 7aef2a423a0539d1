// The reference interpreter of `fused`: runs the ops of the region one after
// another with their own reference kernels, on plain buffers, keeping every
// value the region computes in the kernel's workspace, then copies what the
// region yields to the op's results. It is the numerical oracle that compiled
// fused kernels are tested against, and what runs a fused op where no backend
// compiles it. fused_update's runs the same over each group of operands.
#include "backends/reference/KernelTable.h"
#include "runtime/UpdateGroups.h"

#include <cstring>
#include <map>

namespace dtnn::reference {

namespace {

using runtime::BufferDesc;
using runtime::KernelRequest;

constexpr uint64_t kAlign = 64;

uint64_t aligned(uint64_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

class FusedInterpreter final : public runtime::Kernel {
public:
  explicit FusedInterpreter(const KernelRequest &r) : Kernel(r) {}

  // Types every value of the region at the request's operand types and makes
  // the reference kernel of each op of the body.
  Error prepare(const KernelRequest &r) {
    const ir::Graph *body = r.op.body();
    if (!body) return Error::make("'fused' has no region");
    std::vector<ir::TensorType> args;
    for (const BufferDesc &d : r.in) args.push_back(d.type);
    Expected<std::map<const ir::Value *, ir::TensorType>> types = ir::inferBodyTypes(*body, args);
    if (!types) return Error::make("'fused': " + types.error().message());
    for (size_t i = 0; i < body->inputs().size(); ++i) slot_[body->inputs()[i]] = {-1 - int(i), 0};
    uint64_t bytes = 0;
    for (const auto &op : body->ops()) {
      Step step{op.get(), nullptr, {}, {}};
      std::vector<ir::TensorType> inTypes, outTypes;
      std::vector<BufferDesc> inDescs;
      for (const ir::Value *v : op->operands()) {
        inTypes.push_back(types->at(v));
        inDescs.push_back(BufferDesc::plain(inTypes.back()));
        step.in.push_back(slot_.at(v));
      }
      for (const ir::Value *v : op->results()) {
        outTypes.push_back(types->at(v));
        slot_[v] = {int(values_.size()), bytes};
        step.out.push_back(slot_[v]);
        values_.push_back(outTypes.back());
        bytes += aligned(runtime::byteSize(outTypes.back()));
      }
      const runtime::KernelEntry *entry =
          runtime::KernelRegistry::get().find(kBackendName, *op, inTypes, outTypes);
      if (!entry) return Error::make("'fused': no reference kernel runs '" + op->name() + "'");
      Expected<std::unique_ptr<runtime::Kernel>> k =
          entry->make(KernelRequest{*op, inDescs, outTypes, r.backend});
      if (!k) return Error::make("'fused': '" + op->name() + "': " + k.error().message());
      for (size_t i = 0; i < inDescs.size(); ++i)
        if ((*k)->operandDescs()[i].layout != inDescs[i].layout)
          return Error::make("'fused': the reference kernel of '" + op->name() +
                             "' wants another layout");
      scratch_ = std::max(scratch_, (*k)->workspaceBytes());
      step.kernel = std::move(*k);
      steps_.push_back(std::move(step));
    }
    for (const ir::Value *v : body->outputs()) yields_.push_back(slot_.at(v));
    valueBytes_ = bytes;
    return Error::success();
  }

  uint64_t workspaceBytes() const override { return valueBytes_ + scratch_; }
  // Results are written after every operand has been read, but the copy of
  // one yield may land on an operand that a later copy reads.
  bool allowsReuse(size_t, size_t) const override { return false; }

  Error bind() override {
    for (Step &s : steps_)
      if (Error e = s.kernel->bind()) return e;
    return Error::success();
  }

  Error run(const runtime::KernelArgs &args, runtime::ExecContext &ctx) override {
    char *ws = static_cast<char *>(args.workspace);
    auto view = [&](const Slot &s) {
      if (s.value < 0) return args.in[size_t(-1 - s.value)];
      return TensorView{ws + s.offset, values_[size_t(s.value)]};
    };
    for (const Step &s : steps_) {
      runtime::KernelArgs sub;
      sub.op = s.op;
      for (const Slot &i : s.in) sub.in.push_back(view(i));
      for (const Slot &o : s.out) sub.out.push_back(view(o));
      sub.workspace = ws + valueBytes_;
      if (Error e = s.kernel->run(sub, ctx))
        return Error::make("'fused': '" + s.op->name() + "': " + e.message());
    }
    for (size_t i = 0; i < yields_.size(); ++i) {
      TensorView from = view(yields_[i]);
      std::memcpy(args.out[i].data, from.data, runtime::byteSize(from.type));
    }
    return Error::success();
  }

private:
  // Where a value of the region lives: argument -1 - value, or value `value`
  // of values_ at `offset` in the workspace.
  struct Slot {
    int value = 0;
    uint64_t offset = 0;
  };
  struct Step {
    const ir::Op *op;
    std::unique_ptr<runtime::Kernel> kernel;
    std::vector<Slot> in, out;
  };
  std::map<const ir::Value *, Slot> slot_;
  std::vector<ir::TensorType> values_;
  std::vector<Step> steps_;
  std::vector<Slot> yields_;
  uint64_t valueBytes_ = 0, scratch_ = 0;
};

// The reference interpreter of fused_update: the region interpreted over
// each group's whole buffers, flattened, one group after another. Each group
// writes its yields over its parameter and states after computing them all.
class FusedUpdateInterpreter final : public runtime::Kernel {
public:
  FusedUpdateInterpreter(const KernelRequest &r, runtime::UpdateGroups groups)
      : Kernel(r), groups_(std::move(groups)) {
    in_ = groups_.descs;
  }

  Error prepare(const KernelRequest &r) {
    for (size_t k = 0; k < groups_.tensors; ++k) {
      ir::DType t = r.in[groups_.member(k, 0)].type.dtype;
      ir::TensorType flat(t, {groups_.elements[k]});
      KernelRequest sub{r.op, {}, {}, r.backend};
      for (size_t i = 0; i < groups_.width; ++i) sub.in.push_back(BufferDesc::plain(flat));
      for (size_t c = 0; c < groups_.coefficients; ++c)
        sub.in.push_back(groups_.descs[groups_.coefficient(c)]);
      sub.out.assign(groups_.written(), flat);
      auto kernel = std::make_unique<FusedInterpreter>(sub);
      if (Error e = kernel->prepare(sub)) return e;
      workspace_ = std::max(workspace_, kernel->workspaceBytes());
      groupKernels_.push_back(std::move(kernel));
    }
    return Error::success();
  }

  uint64_t workspaceBytes() const override { return workspace_; }

  Error bind() override {
    for (auto &k : groupKernels_)
      if (Error e = k->bind()) return e;
    return Error::success();
  }

  Error run(const runtime::KernelArgs &args, runtime::ExecContext &ctx) override {
    for (size_t k = 0; k < groups_.tensors; ++k) {
      runtime::KernelArgs sub;
      sub.op = args.op;
      sub.workspace = args.workspace;
      ir::TensorType flat(args.in[groups_.member(k, 0)].type.dtype, {groups_.elements[k]});
      for (size_t i = 0; i < groups_.width; ++i)
        sub.in.push_back(TensorView{args.in[groups_.member(k, i)].data, flat});
      for (size_t c = 0; c < groups_.coefficients; ++c)
        sub.in.push_back(args.in[groups_.coefficient(c)]);
      // The parameter, then the states: every member but the gradient.
      for (size_t i = 0; i < groups_.width; ++i)
        if (i != 1) sub.out.push_back(sub.in[i]);
      if (Error e = groupKernels_[k]->run(sub, ctx)) return e;
    }
    return Error::success();
  }

private:
  runtime::UpdateGroups groups_;
  std::vector<std::unique_ptr<FusedInterpreter>> groupKernels_;
  uint64_t workspace_ = 0;
};

} // namespace

void registerFusedKernels(KernelTable &t) {
  t.addKernel("fused", [](const KernelRequest &r) -> Expected<std::unique_ptr<runtime::Kernel>> {
    auto k = std::make_unique<FusedInterpreter>(r);
    if (Error e = k->prepare(r)) return e;
    return std::unique_ptr<runtime::Kernel>(std::move(k));
  });
  t.addKernel(
      "fused_update",
      [](const KernelRequest &r) -> Expected<std::unique_ptr<runtime::Kernel>> {
        Expected<runtime::UpdateGroups> groups = runtime::updateGroups(r);
        if (!groups) return groups.takeError();
        auto k = std::make_unique<FusedUpdateInterpreter>(r, std::move(*groups));
        if (Error e = k->prepare(r)) return e;
        return std::unique_ptr<runtime::Kernel>(std::move(k));
      },
      runtime::LayoutKind::Any);
}

} // namespace dtnn::reference
