#include "runtime/LoopPlan.h"

#include "ir/Attributes.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>

namespace dtnn::runtime {

namespace {

// The elementwise and broadcast ops the code generator emits, and the one
// reduction.
const std::set<std::string> &knownOps() {
  static const std::set<std::string> ops = {
      "add",          "sub",           "mul",           "div",
      "relu",         "relu_backward", "relu6",         "relu6_backward",
      "leaky_relu",   "leaky_relu_backward",            "sigmoid",
      "sigmoid_backward",              "tanh",          "tanh_backward",
      "silu",         "silu_backward", "hard_sigmoid",  "hard_sigmoid_backward",
      "hard_swish",   "hard_swish_backward",            "scale",
      "rsqrt",        "sqrt",          "exp",           "log",
      "erf",          "pow",           "sum_like",      "cast"};
  return ops;
}

// For a tensor of `dims`, aligned to the right of the domain `domain`:
// whether it spans each domain dimension (1) or broadcasts along it (0);
// false when it does not broadcast to the domain.
bool spansOf(const std::vector<int64_t> &dims, const std::vector<int64_t> &domain,
             std::vector<bool> &out) {
  if (dims.size() > domain.size()) return false;
  size_t lead = domain.size() - dims.size();
  out.assign(domain.size(), false);
  for (size_t k = 0; k < domain.size(); ++k) {
    int64_t d = k < lead ? 1 : dims[k - lead];
    if (d == domain[k])
      out[k] = true;
    else if (d != 1)
      return false;
  }
  return true;
}

// One dimension of the loops before merging: a logical dimension of the
// domain, or the blocks or the lanes of a blocked one.
struct LoopDim {
  size_t dim;
  int64_t size;
  enum Part { Whole, Blocks, Lanes } part = Whole;
};

// The loop dimensions that layout `tag` gives a domain: its dimensions in
// stride order, a blocked one split into blocks and (last) lanes; the plain
// order for an empty tag. Fails for tags with more than one block.
Expected<std::vector<LoopDim>> loopDimsOf(const std::string &tag,
                                          const std::vector<int64_t> &domain) {
  std::vector<LoopDim> dims;
  size_t rank = domain.size();
  if (tag.empty() || tag == "plain") {
    for (size_t k = 0; k < rank; ++k) dims.push_back({k, domain[k]});
    return dims;
  }
  auto refuse = [&] { return Error::make("generated kernels cannot follow layout " + tag); };
  size_t pos = 0;
  std::vector<bool> seen(rank, false);
  int blocked = -1;
  for (; pos < tag.size() && std::isalpha(static_cast<unsigned char>(tag[pos])); ++pos) {
    bool upper = std::isupper(static_cast<unsigned char>(tag[pos]));
    size_t d = size_t(std::tolower(static_cast<unsigned char>(tag[pos])) - 'a');
    if (d >= rank || seen[d] || (upper && blocked >= 0)) return refuse();
    seen[d] = true;
    if (upper) blocked = int(d);
    dims.push_back({d, domain[d], upper ? LoopDim::Blocks : LoopDim::Whole});
  }
  if (dims.size() != rank) return refuse();
  if (blocked < 0) return pos == tag.size() ? Expected<std::vector<LoopDim>>(dims) : refuse();
  size_t digits = pos;
  while (pos < tag.size() && std::isdigit(static_cast<unsigned char>(tag[pos]))) ++pos;
  if (pos == digits || pos + 1 != tag.size() || tag[pos] != 'a' + blocked) return refuse();
  int64_t block = std::stoll(tag.substr(digits, pos - digits));
  if (block < 1 || block > 1024) return refuse();
  for (LoopDim &l : dims)
    if (l.part == LoopDim::Blocks) l.size = (l.size + block - 1) / block;
  dims.push_back({size_t(blocked), block, LoopDim::Lanes});
  return dims;
}

// The block size of loop dimensions `dims` (1 when none is blocked).
int64_t blockOf(const std::vector<LoopDim> &dims) {
  return dims.back().part == LoopDim::Lanes ? dims.back().size : 1;
}

// Whether a tensor that spans the domain dimensions `full` is contiguous over
// the loop dimensions it spans when stored plain (row-major over its own
// dims): its plain strides agree with the loops' along every dimension it
// spans, and a blocked dimension it spans has no padded lanes.
bool plainFollows(const std::vector<LoopDim> &dims, const std::vector<bool> &full,
                  const std::vector<int64_t> &domain) {
  std::vector<int64_t> plainStride(domain.size(), 1);
  for (size_t k = domain.size(); k-- > 1;)
    plainStride[k - 1] = plainStride[k] * (full[k] ? domain[k] : 1);
  int64_t block = blockOf(dims), loopStride = 1;
  for (size_t k = dims.size(); k-- > 0;) {
    const LoopDim &l = dims[k];
    if (!full[l.dim] || l.size == 1) continue;
    if (l.part != LoopDim::Whole && domain[l.dim] % block != 0) return false;
    int64_t s = plainStride[l.dim] * (l.part == LoopDim::Blocks ? block : 1);
    if (s != loopStride) return false;
    loopStride *= l.size;
  }
  return true;
}

} // namespace

bool regionKnowsOp(const std::string &name) { return knownOps().count(name) != 0; }

bool storesComputeType(const LoopPlan &plan) {
  for (ir::DType t : plan.stored)
    if (t != plan.dtype) return false;
  return true;
}

bool infiniteAtZero(const ir::Graph &body) {
  for (const auto &op : body.ops()) {
    const std::string &n = op->name();
    if (n == "div" || n == "rsqrt" || n == "log") return true;
    if (n == "pow" && op->attrs().getFloat("exponent") < 0) return true;
  }
  return false;
}

int64_t LoopPlan::rows() const {
  int64_t r = 1;
  for (size_t k = 0; k + 1 < sizes.size(); ++k) r *= sizes[k];
  return r;
}

Expected<LoopPlan> planLoops(const ir::Graph &body, const std::vector<ir::TensorType> &args,
                             const std::string &tag, bool (*knows)(const std::string &)) {
  Expected<std::map<const ir::Value *, ir::TensorType>> types = ir::inferBodyTypes(body, args);
  if (!types) return Error::make(types.error().message());
  LoopPlan plan;
  // f32 and bf16 values compute in f32; f64 ones in f64, alone.
  auto computeType = [](ir::DType t) { return t == ir::DType::BF16 ? ir::DType::F32 : t; };
  plan.dtype = args.empty() ? ir::DType::F32 : computeType(args[0].dtype);
  if (plan.dtype != ir::DType::F32 && plan.dtype != ir::DType::F64)
    return Error::make("generated kernels compute in f32 (f32 and bf16 tensors) and f64 only");
  // The domain: the type every op's result (a reduction's input) has.
  std::vector<int64_t> domain;
  bool haveDomain = false;
  std::set<const ir::Value *> reducedValues;
  std::string structure;
  std::map<const ir::Value *, int> number;
  for (size_t i = 0; i < body.inputs().size(); ++i) number[body.inputs()[i]] = int(i);
  for (const auto &op : body.ops()) {
    if (!knows(op->name())) return Error::make("no generated kernel has code for '" + op->name() + "'");
    for (const ir::Value *v : op->operands()) {
      if (computeType(types->at(v).dtype) != plan.dtype)
        return Error::make("the region mixes element types");
      if (reducedValues.count(v))
        return Error::make("'" + op->name() + "' reads a reduction's result inside the region");
    }
    bool reduce = op->name() == "sum_like";
    const ir::TensorType &t = types->at(reduce ? op->operand(0) : op->result(0));
    if (!haveDomain) {
      domain = t.dims;
      haveDomain = true;
    } else if (t.dims != domain) {
      return Error::make("'" + op->name() + "' computes over " + t.str() +
                         ", not over the region's domain");
    }
    if (reduce) reducedValues.insert(op->result(0));
    ir::DType rt = types->at(op->result(0)).dtype;
    if (computeType(rt) != plan.dtype) return Error::make("the region mixes element types");
    if (reduce && rt == ir::DType::BF16)
      return Error::make("a reduction into bf16 would round each partial sum");
    plan.roundsToBf16.push_back(rt == ir::DType::BF16);
    structure += op->name() + (rt == ir::DType::BF16 ? ":bf16(" : "(");
    for (const ir::Value *v : op->operands()) structure += std::to_string(number.at(v)) + ",";
    structure += "){";
    for (const auto &[name, value] : op->attrs().entries())
      structure += name + "=" + ir::attrValueStr(value) + ",";
    structure += "};";
    number[op->result(0)] = int(number.size());
  }
  if (!haveDomain) return Error::make("the region holds no op");
  // Tensors: the arguments, then the yields.
  std::vector<const ir::Value *> tensors(body.inputs().begin(), body.inputs().end());
  for (const ir::Value *y : body.outputs()) {
    if (!y->definingOp()) return Error::make("the region yields an argument");
    tensors.push_back(y);
    plan.reduced.push_back(reducedValues.count(y) != 0);
    structure += "y" + std::to_string(number.at(y)) + ";";
  }
  for (const ir::Value *t : tensors) {
    plan.stored.push_back(types->at(t).dtype);
    structure += std::string(ir::dtypeName(plan.stored.back())) + ",";
  }
  std::vector<std::vector<bool>> full(tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i)
    if (!spansOf(types->at(tensors[i]).dims, domain, full[i]))
      return Error::make("a tensor of type " + types->at(tensors[i]).str() +
                         " does not broadcast to the domain");
  plan.domain = domain;
  Expected<std::vector<LoopDim>> dims = loopDimsOf(tag, domain);
  if (!dims) return Error::make(dims.error().message());
  bool arrange = !tag.empty() && tag != "plain";
  if (arrange && blockOf(*dims) > 1 && domain[dims->back().dim] % blockOf(*dims) != 0 &&
      infiniteAtZero(body))
    return Error::make("a division, logarithm or negative power would fill the padded lanes of " +
                       tag + " with infinities or NaN");
  // Each tensor plain where that is contiguous along the loops, else in the
  // domain's layout at its own type, which is when it spans the blocked
  // dimension (or no dimension is blocked); a tensor of the domain's type
  // always takes the domain's layout.
  for (size_t i = 0; i < tensors.size(); ++i) {
    bool whole = std::find(full[i].begin(), full[i].end(), false) == full[i].end();
    bool plain = !arrange || (!whole && plainFollows(*dims, full[i], domain));
    if (!plain && !whole && blockOf(*dims) > 1 && !full[i][dims->back().dim])
      return Error::make("a tensor of type " + types->at(tensors[i]).str() +
                         " cannot be read through the blocks of " + tag);
    plan.arranged.push_back(!plain);
  }
  // Drop size-1 dimensions, then merge neighbours every tensor agrees on.
  plan.spans.assign(tensors.size(), {});
  bool lanesLast = false; // the last merged dimension is a block's lanes alone
  for (const LoopDim &l : *dims) {
    if (l.size == 1) continue;
    bool merge = !plan.sizes.empty();
    for (size_t i = 0; merge && i < tensors.size(); ++i)
      merge = plan.spans[i].back() == full[i][l.dim];
    lanesLast = !merge && l.part == LoopDim::Lanes;
    if (merge) {
      plan.sizes.back() *= l.size;
      continue;
    }
    plan.sizes.push_back(l.size);
    for (size_t i = 0; i < tensors.size(); ++i) plan.spans[i].push_back(full[i][l.dim]);
  }
  if (plan.sizes.empty()) {
    plan.sizes.push_back(1);
    for (auto &s : plan.spans) s.push_back(true);
  }
  // Rows split between threads only at row dimensions every reduction's
  // result spans: the leading ones.
  size_t q = plan.sizes.size(), lead = q - 1;
  for (size_t y = 0; y < plan.reduced.size(); ++y) {
    if (!plan.reduced[y]) continue;
    const std::vector<bool> &s = plan.spans[body.inputs().size() + y];
    size_t k = 0;
    while (k + 1 < q && s[k]) ++k;
    lead = std::min(lead, k);
    plan.parallelInner &= s[q - 1];
  }
  for (size_t k = lead; k + 1 < q; ++k) plan.rowUnit *= plan.sizes[k];
  if (lanesLast && plan.sizes.size() > 1) plan.fixedInner = plan.sizes.back();
  plan.key = std::string(ir::dtypeName(plan.dtype)) + "|" + structure + "|" +
             std::to_string(plan.fixedInner) + "|";
  for (const auto &s : plan.spans) {
    for (bool b : s) plan.key += b ? '1' : '0';
    plan.key += ',';
  }
  return plan;
}

} // namespace dtnn::runtime
