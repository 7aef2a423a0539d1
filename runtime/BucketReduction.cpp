#include "runtime/BucketReduction.h"

namespace dtnn::runtime {

BucketReduction::BucketReduction(const ir::Op &start, const std::vector<BufferDesc> &in)
    : in_(in) {
  const std::string &op = start.attrs().getString("op");
  mean_ = op == "mean" || op == "mean_deferred";
  deferred_ = op == "mean_deferred";
  // The verifier checked the name.
  if (auto a = parseAlgorithm(start.attrs().getString("algorithm"))) algorithm_ = *a;
  int64_t bucket = start.attrs().getInt("bucket");
  uint64_t bytes = 0;
  for (const auto &d : in) bytes += d.bytes;
  what_ = "allreduce of " +
          (bucket >= 0 ? "bucket " + std::to_string(bucket) : std::string("a gradient")) + " (" +
          std::to_string(bytes) + " bytes)";
}

double BucketReduction::scale(const ExecContext &ctx) const {
  if (!mean_) return 1.0;
  return ctx.share() * (deferred_ && ctx.comm ? ctx.comm->size() : 1);
}

std::vector<BufferRun> BucketReduction::runs(const std::vector<TensorView> &args) const {
  std::vector<BufferRun> out;
  size_t i = 0;
  while (i < args.size()) {
    char *start = static_cast<char *>(args[i].data);
    ir::DType t = args[i].type.dtype;
    size_t elem = ir::dtypeSize(t);
    size_t count = in_[i].bytes / elem;
    char *end = start + in_[i].bytes;
    for (++i; i < args.size() && args[i].data == end && args[i].type.dtype == t; ++i) {
      count += in_[i].bytes / elem;
      end += in_[i].bytes;
    }
    out.push_back({start, t, count});
  }
  return out;
}

} // namespace dtnn::runtime
