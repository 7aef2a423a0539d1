#include "tools/lib/DataParallel.h"

#include <charconv>

namespace dtnn::cli {

const std::vector<OptionSpec> kDataParallelOptions = {
    {"net", "FILE", "the network model for bucketing (written by dtnn-run --calibrate; default: "
                    "alpha 5 us, 12.5 GB/s)", false, Agree::Presence},
    {"bucket-bytes", "N", "buckets of at most N bytes instead of the cost model's", false,
     Agree::Value},
    {"op-profile", "FILE", "per-op times for bucketing (written by dtnn-run --op-profile-out)",
     false, Agree::Presence},
    {"sync-bn", "", "batch norm over the global batch: statistics reduced over the ranks", false,
     Agree::Value},
    {"allreduce", "ALGO", "on several nodes, how buckets are reduced: auto (the cost model "
                          "chooses, the default), flat or hierarchical", false, Agree::Value},
};

Error readDataParallelOptions(const ParsedArgs &args, passes::DataParallelOptions &o) {
  if (args.has("bucket-bytes")) {
    const std::string v = args.get("bucket-bytes");
    int64_t n = 0;
    auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
    if (ec != std::errc() || end != v.data() + v.size() || n < 0)
      return Error::make("--bucket-bytes expects a non-negative integer, got '" + v + "'");
    o.bucketBytes = n;
  }
  for (const char *k : {"net", "op-profile"})
    if (args.has(k) && args.get(k).empty())
      return Error::make(std::string("--") + k + " expects a file");
  if (args.has("net") && args.get("net").find_first_of(" {}") != std::string::npos)
    return Error::make("--net: the file name may not contain spaces or braces");
  if (args.has("op-profile") && args.get("op-profile").find_first_of(" {}") != std::string::npos)
    return Error::make("--op-profile: the file name may not contain spaces or braces");
  if (args.has("allreduce")) {
    const std::string a = args.get("allreduce");
    if (a != "auto" && a != "flat" && a != "hierarchical")
      return Error::make("--allreduce expects auto, flat or hierarchical, got '" + a + "'");
    o.algorithm = a;
  }
  o.syncBatchNorm = args.has("sync-bn");
  o.netPath = args.get("net");
  o.profilePath = args.get("op-profile");
  return Error::success();
}

} // namespace dtnn::cli
