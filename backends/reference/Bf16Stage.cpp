#include "backends/reference/Bf16Stage.h"

#include "runtime/BFloat16.h"

#include <map>
#include <memory>

namespace dtnn::reference {

namespace {

using runtime::BufferDesc;
using runtime::KernelArgs;
using runtime::KernelRequest;

ir::TensorType widened(ir::TensorType t) {
  if (t.dtype == ir::DType::BF16) t.dtype = ir::DType::F32;
  return t;
}

// The float32 kernel `inner`, with its bf16 operands and results as plain
// bf16 buffers: run() widens the operands into its workspace (one float32
// copy per distinct buffer, so a result that shares an operand's storage
// shares its copy too), runs `inner` there, and rounds the results back.
class StagedKernel final : public runtime::Kernel {
public:
  StagedKernel(const KernelRequest &r, std::unique_ptr<runtime::Kernel> inner)
      : Kernel(r), inner_(std::move(inner)) {
    in_ = inner_->operandDescs();
    out_ = inner_->resultDescs();
    for (size_t i = 0; i < in_.size(); ++i)
      if (r.in[i].type.dtype == ir::DType::BF16) in_[i] = BufferDesc::plain(r.in[i].type);
    for (size_t j = 0; j < out_.size() && j < r.out.size(); ++j)
      if (r.out[j].dtype == ir::DType::BF16) out_[j] = BufferDesc::plain(r.out[j]);
    for (const BufferDesc &d : r.in) stageBytes_ += slotBytes(d.type);
    for (const ir::TensorType &t : r.out) stageBytes_ += slotBytes(t);
  }

  uint64_t workspaceBytes() const override { return stageBytes_ + inner_->workspaceBytes(); }
  bool allowsReuse(size_t operand, size_t result) const override {
    return inner_->allowsReuse(operand, result);
  }
  runtime::QueueKind queue() const override { return inner_->queue(); }
  uint64_t codeBytes() const override { return inner_->codeBytes(); }
  Error bind() override { return inner_->bind(); }

  Error run(const KernelArgs &args, runtime::ExecContext &ctx) override {
    KernelArgs staged = args;
    char *ws = static_cast<char *>(args.workspace);
    std::map<void *, float *> copies;
    uint64_t at = 0;
    auto stage = [&](runtime::TensorView &v, bool widen) {
      if (v.type.dtype != ir::DType::BF16) return;
      float *&copy = copies[v.data];
      if (!copy) {
        copy = reinterpret_cast<float *>(ws + at);
        at += slotBytes(v.type);
        if (widen) runtime::widenBf16(static_cast<const uint16_t *>(v.data), copy, v.numel());
      }
      v = {copy, widened(v.type)};
    };
    for (runtime::TensorView &v : staged.in) stage(v, true);
    for (runtime::TensorView &v : staged.out) stage(v, false);
    staged.workspace = ws + stageBytes_;
    if (Error e = inner_->run(staged, ctx)) return e;
    for (size_t j = 0; j < args.out.size(); ++j)
      if (args.out[j].type.dtype == ir::DType::BF16)
        runtime::narrowToBf16(staged.out[j].as<float>(), static_cast<uint16_t *>(args.out[j].data),
                              args.out[j].numel());
    return Error::success();
  }

private:
  // The workspace a float32 copy of a bf16 tensor of type t takes, 64-byte aligned.
  static uint64_t slotBytes(const ir::TensorType &t) {
    if (t.dtype != ir::DType::BF16) return 0;
    return (uint64_t(runtime::numElements(t)) * 4 + 63) / 64 * 64;
  }

  std::unique_ptr<runtime::Kernel> inner_;
  uint64_t stageBytes_ = 0;
};

} // namespace

bool hasBf16(const KernelRequest &r) {
  for (const BufferDesc &d : r.in)
    if (d.type.dtype == ir::DType::BF16) return true;
  for (const ir::TensorType &t : r.out)
    if (t.dtype == ir::DType::BF16) return true;
  return false;
}

runtime::KernelMaker stagedBf16(runtime::KernelMaker make) {
  return [make = std::move(make)](const KernelRequest &r)
             -> Expected<std::unique_ptr<runtime::Kernel>> {
    // A collective's start and wait are two kernels: its buffers cannot be staged around one.
    // A region's interpreter runs each op of the body with its own (staged) kernel.
    if (!hasBf16(r) || r.op.def().collective || r.op.def().hasBody) return make(r);
    KernelRequest wide{r.op, r.in, {}, r.backend};
    for (BufferDesc &d : wide.in)
      if (d.type.dtype == ir::DType::BF16) d = BufferDesc::plain(widened(d.type));
    for (const ir::TensorType &t : r.out) wide.out.push_back(widened(t));
    Expected<std::unique_ptr<runtime::Kernel>> inner = make(wide);
    if (!inner) return inner.takeError();
    return std::unique_ptr<runtime::Kernel>(new StagedKernel(r, std::move(*inner)));
  };
}

} // namespace dtnn::reference
