// bucket-allreduce: merges the allreduces of a step into buckets, each one
// reduction of a flat buffer (buffer assignment lays a bucket's gradients
// out back to back, so it goes as one message without copies).
//
// Algorithm: the allreduce pairs (start and wait) are taken in the order
// their operands are produced, the order of backward. A run of consecutive
// pairs may merge when all of them reduce one dtype with one reduction, and
// none of them depends on another's result (merging those would make a
// cycle). Boundaries come from one of two rules:
//   - `bytes=N`: greedy; a bucket takes the next pair while it stays within
//     N bytes (a pair larger than N stays alone);
//   - otherwise, the cost model (passes/CostModel.h): each pair is ready
//     when backward has run up to its last producer (per-op times from
//     `profile=FILE`, else estimated at `batch=B` samples), a bucket's
//     reduction starts when its last gradient is ready and the previous
//     bucket's is done, and takes 2(P-1)α + 2(P-1)/P·bytes·β (`ranks=P`,
//     `net=FILE`). A dynamic program over the boundaries minimises when the
//     last reduction finishes, which is the communication that backward
//     cannot hide; ties go to fewer buckets.
// On several nodes (`nodes=N`, dividing P), each bucket also goes the faster
// way the cost model finds: a flat ring over every rank, or hierarchically
// (within each node, across the nodes, back within each node), which the
// bucket's ops say as algorithm="hierarchical".
// A merged pair becomes one start with every operand and one wait yielding
// every result; buckets are numbered in order (`bucket=K`). Ops are then
// reordered, stably, so that each use follows its wait.
#include "ir/Builder.h"
#include "ir/Log.h"
#include "ir/RunSettings.h"
#include "passes/CommUtil.h"
#include "passes/CostModel.h"
#include "passes/PassRegistry.h"
#include "passes/PassUtil.h"

#include <charconv>
#include <limits>
#include <set>

namespace dtnn::passes {

namespace {

struct Item {
  AllreducePair pair;
  size_t readyPos = 0; // graph position of its last producer
  ir::Op *lastDef = nullptr;
  double ready = 0;    // seconds into the step
  double bytes = 0;
  ir::DType dtype = ir::DType::F32;
  std::string op;
  bool mixed = false; // reduces several dtypes already: never merged
  std::set<const ir::Op *> dependsOn; // the waits whose results it reads, transitively
};

bool parseInt(const std::string &s, int64_t &out) {
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && end == s.data() + s.size();
}

class BucketAllreducePass final : public Pass {
public:
  std::string_view name() const override { return "bucket-allreduce"; }
  std::string_view description() const override {
    return "Merges allreduces into buckets whose boundaries minimise the predicted exposed "
           "communication (or a fixed byte threshold).";
  }

  Error setOption(const std::string &key, const std::string &value) override {
    int64_t v = 0;
    if (key == "algorithm") {
      if (value != "auto" && value != "flat" && value != "hierarchical")
        return Error::make("bucket-allreduce: algorithm expects auto, flat or hierarchical, got '" +
                           value + "'");
      algorithm_ = value;
      return Error::success();
    }
    if (key == "net" || key == "profile") {
      if (value.empty()) return Error::make("bucket-allreduce: " + key + "= needs a file");
      (key == "net" ? netPath_ : profilePath_) = value;
      return Error::success();
    }
    if (key != "bytes" && key != "ranks" && key != "batch" && key != "nodes")
      return Pass::setOption(key, value);
    if (!parseInt(value, v) || v < (key == "bytes" ? 0 : 1))
      return Error::make("bucket-allreduce: " + key + " expects a " +
                         (key == "bytes" ? "non-negative" : "positive") + " integer, got '" +
                         value + "'");
    (key == "bytes" ? bytes_ : key == "ranks" ? ranks_ : key == "nodes" ? nodes_ : batch_) = v;
    return Error::success();
  }

  std::string optionsStr() const override {
    std::string s;
    auto add = [&](const std::string &kv) { s += (s.empty() ? "" : " ") + kv; };
    if (bytes_ >= 0) add("bytes=" + std::to_string(bytes_));
    if (ranks_ > 0) add("ranks=" + std::to_string(ranks_));
    if (nodes_ > 1) add("nodes=" + std::to_string(nodes_));
    if (algorithm_ != "auto") add("algorithm=" + algorithm_);
    if (batch_ > 0) add("batch=" + std::to_string(batch_));
    if (!netPath_.empty()) add("net=" + netPath_);
    if (!profilePath_.empty()) add("profile=" + profilePath_);
    return s;
  }

  Expected<bool> run(ir::Module &m) override {
    NetModel net;
    if (!netPath_.empty()) {
      auto n = readNetModel(netPath_);
      if (!n) return n.takeError();
      net = *n;
    }
    std::optional<OpProfile> profile;
    if (!profilePath_.empty()) {
      auto p = readOpProfile(profilePath_);
      if (!p) return p.takeError();
      profile = std::move(*p);
    }
    int64_t ranks = ranks_ > 0 ? ranks_ : 2;
    if (std::string bad = checkNodes(ranks, nodes_); !bad.empty())
      return Error::make("bucket-allreduce: nodes=" + std::to_string(nodes_) + ": " + bad);
    int64_t batch = batch_;
    if (batch <= 0) {
      auto settings = ir::readRunSettings(m.trainConfig());
      if (!settings) return settings.takeError();
      int64_t global = settings->batch;
      batch = std::max<int64_t>(1, (global + ranks - 1) / ranks);
    }
    bool changed = false;
    for (const auto &g : m.graphs()) {
      std::vector<double> times;
      if (profile && profile->graph == g->name()) {
        auto t = opTimesFromProfile(*profile, *g, profilePath_);
        if (!t) return t.takeError();
        times = std::move(*t);
      } else {
        times = estimateOpTimes(*g, batch);
      }
      auto c = runOnGraph(*g, times, net, static_cast<int>(ranks), static_cast<int>(nodes_));
      if (!c) return c.takeError();
      changed |= *c;
    }
    return changed;
  }

private:
  std::vector<Item> collect(ir::Graph &g, const std::vector<double> &times) {
    std::vector<AllreducePair> pairs = allreducePairs(g);
    std::set<const ir::Op *> waits;
    std::vector<Item> items;
    for (const AllreducePair &p : pairs) {
      if (!p.wait) continue;
      Item it;
      it.pair = p;
      it.op = p.start->attrs().getString("op");
      it.dtype = p.start->operand(0)->type().dtype;
      for (const ir::Value *v : p.start->operands()) {
        if (v->type().dtype != it.dtype) it.mixed = true;
        double n = static_cast<double>(v->type().staticElements());
        it.bytes += n * ir::dtypeSize(v->type().dtype);
        if (ir::Op *d = v->definingOp(); d && (!it.lastDef || g.indexOf(d) > it.readyPos)) {
          it.readyPos = g.indexOf(d);
          it.lastDef = d;
        }
      }
      waits.insert(p.wait);
      items.push_back(std::move(it));
    }
    // The waits each op depends on, through operands, in graph order.
    std::map<const ir::Op *, std::set<const ir::Op *>> reach;
    std::vector<double> clock(g.ops().size());
    double t = 0;
    for (size_t i = 0; i < g.ops().size(); ++i) {
      const ir::Op *op = g.ops()[i].get();
      t += times[i];
      clock[i] = t;
      std::set<const ir::Op *> &r = reach[op];
      for (const ir::Value *v : op->operands())
        if (const ir::Op *d = v->definingOp()) {
          const auto &rd = reach[d];
          r.insert(rd.begin(), rd.end());
          if (waits.count(d)) r.insert(d);
        }
    }
    for (Item &it : items) {
      it.ready = clock[it.readyPos];
      it.dependsOn = reach[it.pair.start];
    }
    // In the order backward produces them.
    std::stable_sort(items.begin(), items.end(),
                     [](const Item &a, const Item &b) { return a.readyPos < b.readyPos; });
    return items;
  }

  // Whether two items may share a bucket: one dtype, one reduction, neither
  // reading the other's result.
  static bool compatible(const Item &a, const Item &b) {
    return !a.mixed && !b.mixed && a.dtype == b.dtype && a.op == b.op &&
           !b.dependsOn.count(a.pair.wait) && !a.dependsOn.count(b.pair.wait);
  }

  // Whether items[j..i] may form one bucket, given that items[j+1..i] may.
  static bool joins(const std::vector<Item> &items, size_t j, size_t i) {
    for (size_t k = j + 1; k <= i; ++k)
      if (!compatible(items[j], items[k])) return false;
    return true;
  }

  // Whether a bucket of `bytes` goes hierarchically (only on several nodes).
  bool hierarchical(const NetModel &net, double bytes, int ranks, int nodes) const {
    if (nodes <= 1 || algorithm_ == "flat") return false;
    return algorithm_ == "hierarchical" || chooseAllreduce(net, bytes, ranks, nodes).hierarchical;
  }
  double reduceSeconds(const NetModel &net, double bytes, int ranks, int nodes) const {
    return hierarchical(net, bytes, ranks, nodes) ? net.hierarchicalSeconds(bytes, ranks, nodes)
                                                  : net.allreduceSeconds(bytes, ranks, nodes);
  }

  // Bucket boundaries: the first item of each bucket.
  std::vector<size_t> boundaries(const std::vector<Item> &items, const NetModel &net,
                                 int ranks, int nodes) const {
    size_t n = items.size();
    std::vector<size_t> starts;
    if (bytes_ >= 0) {
      double used = 0;
      for (size_t i = 0; i < n; ++i) {
        bool fits = i > 0 && used + items[i].bytes <= static_cast<double>(bytes_);
        for (size_t k = fits ? starts.back() : i; k < i; ++k)
          fits = fits && compatible(items[k], items[i]);
        if (fits) {
          used += items[i].bytes;
        } else {
          starts.push_back(i);
          used = items[i].bytes;
        }
      }
      return starts;
    }
    // f[i]: earliest finish of the reductions of items[0..i) ; cnt: buckets.
    const double inf = std::numeric_limits<double>::infinity();
    std::vector<double> f(n + 1, inf);
    std::vector<size_t> cnt(n + 1, 0), from(n + 1, 0);
    f[0] = 0;
    for (size_t i = 1; i <= n; ++i) {
      double bytes = 0;
      for (size_t j = i; j-- > 0;) { // bucket items[j..i-1]
        if (j + 1 < i && !joins(items, j, i - 1)) break;
        bytes += items[j].bytes;
        double done = std::max(items[i - 1].ready, f[j]) + reduceSeconds(net, bytes, ranks, nodes);
        // Equal within a nanosecond counts as a tie.
        if (done < f[i] - 1e-9 || (done <= f[i] + 1e-9 && cnt[j] + 1 < cnt[i])) {
          f[i] = done;
          cnt[i] = cnt[j] + 1;
          from[i] = j;
        }
      }
    }
    for (size_t i = n; i > 0; i = from[i]) starts.insert(starts.begin(), from[i]);
    return starts;
  }

  Expected<bool> runOnGraph(ir::Graph &g, const std::vector<double> &times, const NetModel &net,
                            int ranks, int nodes) {
    std::vector<Item> items = collect(g, times);
    if (items.empty()) return false;
    std::vector<size_t> starts = boundaries(items, net, ranks, nodes);
    int hierarchicalBuckets = 0;
    starts.push_back(items.size());
    std::set<const ir::Op *> erase;
    for (size_t b = 0; b + 1 < starts.size(); ++b) {
      size_t lo = starts[b], hi = starts[b + 1];
      std::vector<ir::Value *> operands;
      std::set<const ir::Op *> merged;
      double bucketBytes = 0;
      for (size_t k = lo; k < hi; ++k) {
        bucketBytes += items[k].bytes;
        for (ir::Value *v : items[k].pair.start->operands()) operands.push_back(v);
        merged.insert(items[k].pair.start);
        merged.insert(items[k].pair.wait);
      }
      DTNN_LOG_AT(Debug, "bucket-allreduce", [&] {
        double bytes = 0;
        for (size_t k = lo; k < hi; ++k) bytes += items[k].bytes;
        std::string names;
        for (const ir::Value *v : operands) names += (names.empty() ? "" : ", ") + v->type().str();
        return "@" + g.name() + " bucket " + std::to_string(b) + ": " +
               std::to_string(operands.size()) + " gradients, " +
               std::to_string(static_cast<uint64_t>(bytes)) + " bytes (" + names + ")";
      }());
      // After the last producer of the operands and their other readers.
      std::set<const ir::Value *> mine(operands.begin(), operands.end());
      long pos = 0;
      for (size_t i = 0; i < g.ops().size(); ++i) {
        const ir::Op *op = g.ops()[i].get();
        if (merged.count(op)) continue;
        bool touches = false;
        for (const ir::Value *r : op->results()) touches = touches || mine.count(r);
        for (const ir::Value *v : op->operands()) touches = touches || mine.count(v);
        if (touches) pos = static_cast<long>(i) + 1;
      }
      ir::AttrMap attrs;
      attrs.set("op", items[lo].op);
      attrs.set("bucket", static_cast<int64_t>(b));
      if (hierarchical(net, bucketBytes, ranks, nodes)) {
        attrs.set("algorithm", std::string("hierarchical"));
        ++hierarchicalBuckets;
      }
      ir::Builder bld(g, items[lo].pair.start->loc());
      bld.setInsertPoint(pos);
      ir::Value *token = bld.create1("allreduce_start", operands, attrs);
      if (!token) return Error::make("bucket-allreduce: " + bld.takeError().message());
      std::vector<ir::Value *> waitOperands = {token};
      waitOperands.insert(waitOperands.end(), operands.begin(), operands.end());
      bld.setInsertPoint(static_cast<long>(g.indexOf(token->definingOp())) + 1);
      ir::Op *wait = bld.createOp("allreduce_wait", waitOperands, attrs);
      if (!wait) return Error::make("bucket-allreduce: " + bld.takeError().message());
      std::map<ir::Value *, ir::Value *> subst;
      size_t r = 0;
      for (size_t k = lo; k < hi; ++k) {
        for (ir::Value *old : items[k].pair.wait->results()) subst[old] = wait->result(r++);
        erase.insert(items[k].pair.start);
        erase.insert(items[k].pair.wait);
      }
      g.replaceAllUses(subst);
    }
    g.eraseOpsIf([&](const ir::Op &op) { return erase.count(&op) != 0; });
    scheduleByPriority(g, {});
    DTNN_LOG_AT(Info, "bucket-allreduce",
                "@" + g.name() + ": " + std::to_string(items.size()) + " allreduces in " +
                    std::to_string(starts.size() - 1) + " buckets" +
                    (bytes_ >= 0 ? " of at most " + std::to_string(bytes_) + " bytes"
                                 : " chosen for " + std::to_string(ranks_) + " ranks") +
                    (nodes > 1 ? " on " + std::to_string(nodes) + " nodes, " +
                                     std::to_string(hierarchicalBuckets) + " of them hierarchical"
                               : std::string()));
    return true;
  }

  int64_t bytes_ = -1, ranks_ = 0, batch_ = 0, nodes_ = 1;
  std::string netPath_, profilePath_, algorithm_ = "auto";
};

} // namespace

std::unique_ptr<Pass> createBucketAllreducePass() {
  return std::make_unique<BucketAllreducePass>();
}

} // namespace dtnn::passes
