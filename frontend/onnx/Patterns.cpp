#include "frontend/onnx/Patterns.h"

#include "frontend/onnx/OnnxFile.h"

#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <string>

namespace dtnn::onnximport {

namespace {

// The graph as the matchers read it: who makes each value, how many read it, and the values
// known from initializers and Constant nodes.
class Index {
public:
  Index(const onnx::GraphProto &g, const std::vector<onnx::NodeProto> &nodes,
        const std::map<std::string, TensorData> &initializers)
      : known_(initializers) {
    for (const auto &o : g.output()) ++reads_[o.name()];
    for (size_t i = 0; i < nodes.size(); ++i) {
      const auto &n = nodes[i];
      for (const auto &o : n.output()) producer_[o] = i;
      for (const auto &in : n.input()) ++reads_[in], reader_[in] = i;
      if (n.op_type() == "Constant" && n.domain().empty() && n.attribute_size() == 1) {
        const auto &a = n.attribute(0);
        if (a.name() == "value" && a.has_t()) {
          auto d = readTensor(a.t());
          if (d) known_.emplace(n.output(0), std::move(*d));
        } else if (a.name() == "value_float") {
          TensorData d;
          d.elemType = onnx::TensorProto::FLOAT, d.floats = {a.f()};
          known_.emplace(n.output(0), std::move(d));
        }
      }
    }
    for (const auto &vi : g.value_info()) shapes_[vi.name()] = &vi;
    for (const auto &vi : g.input()) shapes_[vi.name()] = &vi;
  }

  // The node making `value`, if a node does and only one node reads it (`reads` readers).
  const onnx::NodeProto *only(const std::vector<onnx::NodeProto> &nodes, const std::string &value,
                              int reads = 1) const {
    auto it = producer_.find(value);
    if (it == producer_.end() || readers(value) != reads) return nullptr;
    return &nodes[it->second];
  }
  // The one node reading `value`, if exactly one node does and the graph does not return it.
  const onnx::NodeProto *reader(const std::vector<onnx::NodeProto> &nodes, const std::string &value) const {
    auto it = reader_.find(value);
    if (it == reader_.end() || readers(value) != 1) return nullptr;
    return &nodes[it->second];
  }
  int readers(const std::string &value) const {
    auto it = reads_.find(value);
    return it == reads_.end() ? 0 : it->second;
  }
  const TensorData *known(const std::string &value) const {
    auto it = known_.find(value);
    return it == known_.end() ? nullptr : &it->second;
  }
  std::optional<double> scalar(const std::string &value) const {
    const TensorData *d = known(value);
    if (!d || d->count() != 1 || !d->isFloat()) return std::nullopt;
    return d->floats[0];
  }
  // The rank of `value` from shape inference, or -1.
  int rank(const std::string &value) const {
    auto it = shapes_.find(value);
    if (it == shapes_.end() || !it->second->type().tensor_type().has_shape()) return -1;
    return it->second->type().tensor_type().shape().dim_size();
  }

private:
  std::map<std::string, size_t> producer_, reader_;
  std::map<std::string, int> reads_;
  std::map<std::string, TensorData> known_;
  std::map<std::string, const onnx::ValueInfoProto *> shapes_;
};

bool is(const onnx::NodeProto *n, const char *op) { return n && n->domain().empty() && n->op_type() == op; }

bool near(std::optional<double> v, double want) {
  return v && std::fabs(*v - want) <= 1e-6 * std::fabs(want);
}

// The input of binary node `n` that is not `other`, if `n` reads `other` once.
std::optional<std::string> otherInput(const onnx::NodeProto &n, const std::string &other) {
  if (n.input_size() != 2) return std::nullopt;
  if (n.input(0) == other && n.input(1) != other) return n.input(1);
  if (n.input(1) == other && n.input(0) != other) return n.input(0);
  return std::nullopt;
}

struct Match {
  std::vector<const onnx::NodeProto *> nodes; // replaced, the last one's place taken
  onnx::NodeProto fused;
};

onnx::NodeProto makeNode(const std::string &op, std::vector<std::string> inputs, const std::string &output,
                         const std::vector<const onnx::NodeProto *> &from) {
  onnx::NodeProto n;
  n.set_op_type(op);
  for (auto &i : inputs) n.add_input(i);
  n.add_output(output);
  std::string name;
  for (const auto *f : from) name += (name.empty() ? "" : ", ") + (f->name().empty() ? f->op_type() : f->name());
  n.set_name(name);
  return n;
}

// The 1 + Erf(x / sqrt 2) of GELU: the x it reads, and its nodes.
std::optional<std::string> erfTerm(const Index &ix, const std::vector<onnx::NodeProto> &nodes,
                                   const std::string &value, std::vector<const onnx::NodeProto *> &seen) {
  const onnx::NodeProto *add = ix.only(nodes, value);
  if (!is(add, "Add")) return std::nullopt;
  const onnx::NodeProto *erf = nullptr;
  for (int i = 0; i < 2 && !erf; ++i)
    if (near(ix.scalar(add->input(1 - i)), 1.0) && is(ix.only(nodes, add->input(i)), "Erf"))
      erf = ix.only(nodes, add->input(i));
  if (!erf) return std::nullopt;
  const onnx::NodeProto *scale = ix.only(nodes, erf->input(0));
  if (!scale || scale->input_size() != 2) return std::nullopt;
  bool div = is(scale, "Div") && near(ix.scalar(scale->input(1)), std::sqrt(2.0));
  bool mul = is(scale, "Mul") && near(ix.scalar(scale->input(1)), std::sqrt(0.5));
  if (!div && !mul) return std::nullopt;
  seen.insert(seen.end(), {scale, erf, add});
  return scale->input(0);
}

// GELU ending at `last`, a Mul: (x * (1 + erf)) * 0.5 or (x * 0.5) * (1 + erf).
std::optional<Match> gelu(const Index &ix, const std::vector<onnx::NodeProto> &nodes, const onnx::NodeProto &last) {
  if (!is(&last, "Mul") || last.input_size() != 2) return std::nullopt;
  for (int i = 0; i < 2; ++i) {
    std::vector<const onnx::NodeProto *> seen;
    const std::string &a = last.input(i), &b = last.input(1 - i);
    if (near(ix.scalar(b), 0.5)) { // (x * (1 + erf)) * 0.5
      const onnx::NodeProto *m = ix.only(nodes, a);
      if (!is(m, "Mul") || m->input_size() != 2) continue;
      for (int j = 0; j < 2; ++j) {
        seen.clear();
        auto x = erfTerm(ix, nodes, m->input(1 - j), seen);
        if (x && *x == m->input(j) && ix.readers(*x) >= 2) {
          seen.push_back(m), seen.push_back(&last);
          Match r{seen, makeNode("Gelu", {*x}, last.output(0), seen)};
          return r;
        }
      }
    }
    const onnx::NodeProto *half = ix.only(nodes, a); // (x * 0.5) * (1 + erf)
    if (!is(half, "Mul") || half->input_size() != 2) continue;
    for (int j = 0; j < 2; ++j) {
      if (!near(ix.scalar(half->input(1 - j)), 0.5)) continue;
      seen.clear();
      auto x = erfTerm(ix, nodes, b, seen);
      if (x && *x == half->input(j)) {
        seen.push_back(half), seen.push_back(&last);
        return Match{seen, makeNode("Gelu", {*x}, last.output(0), seen)};
      }
    }
  }
  return std::nullopt;
}

// The axes a ReduceMean reduces (attribute, or known input from opset 18), kept dimensions only.
std::optional<std::vector<int64_t>> meanAxes(const Index &ix, const onnx::NodeProto &n) {
  std::vector<int64_t> axes;
  bool keep = true;
  for (const auto &a : n.attribute()) {
    if (a.name() == "axes") axes.assign(a.ints().begin(), a.ints().end());
    else if (a.name() == "keepdims") keep = a.i() != 0;
    else return std::nullopt;
  }
  if (n.input_size() > 1) {
    const TensorData *d = ix.known(n.input(1));
    if (!d || d->isFloat()) return std::nullopt;
    axes = d->ints;
  }
  if (!keep || axes.empty()) return std::nullopt;
  return axes;
}

// The first of the last axes of a rank-`rank` tensor that `axes` names, if they are exactly
// those (as a negative axis), else nothing.
std::optional<int64_t> trailingAxis(std::vector<int64_t> axes, int rank) {
  for (int64_t &a : axes) {
    if (a >= 0) {
      if (rank < 0) return std::nullopt;
      a -= rank;
    }
  }
  std::sort(axes.begin(), axes.end());
  for (size_t i = 0; i < axes.size(); ++i)
    if (axes[i] != -int64_t(axes.size()) + int64_t(i)) return std::nullopt;
  return axes.front();
}

// LayerNorm ending at `div`: (x - mean) / Sqrt(ReduceMean(Pow(x - mean, 2)) + eps), then the
// Mul by gamma and Add of beta that follow when their operands are known.
std::optional<Match> layerNorm(const Index &ix, const std::vector<onnx::NodeProto> &nodes,
                               const onnx::NodeProto &div) {
  if (!is(&div, "Div") || div.input_size() != 2) return std::nullopt;
  const onnx::NodeProto *sub = ix.only(nodes, div.input(0), 2);
  const onnx::NodeProto *sqrt = ix.only(nodes, div.input(1));
  if (!is(sub, "Sub") || !is(sqrt, "Sqrt")) return std::nullopt;
  const std::string &x = sub->input(0);
  const onnx::NodeProto *mean = ix.only(nodes, sub->input(1));
  const onnx::NodeProto *addEps = ix.only(nodes, sqrt->input(0));
  if (!is(mean, "ReduceMean") || mean->input(0) != x || !is(addEps, "Add")) return std::nullopt;
  auto eps = ix.scalar(addEps->input(1));
  const onnx::NodeProto *var = ix.only(nodes, addEps->input(0));
  if (!eps || !is(var, "ReduceMean")) return std::nullopt;
  const onnx::NodeProto *pow = ix.only(nodes, var->input(0));
  if (!is(pow, "Pow") || pow->input(0) != sub->output(0) || !near(ix.scalar(pow->input(1)), 2.0))
    return std::nullopt;
  auto a1 = meanAxes(ix, *mean), a2 = meanAxes(ix, *var);
  if (!a1 || !a2 || *a1 != *a2) return std::nullopt;
  auto axis = trailingAxis(*a1, ix.rank(x));
  if (!axis) return std::nullopt;
  std::vector<const onnx::NodeProto *> seen = {mean, sub, pow, var, addEps, sqrt, &div};
  std::vector<std::string> inputs = {x};
  std::string out = div.output(0);
  // The affine part, when gamma (and then beta) are known values of the normalized shape.
  if (const onnx::NodeProto *mul = ix.reader(nodes, div.output(0)); is(mul, "Mul")) {
    auto gamma = otherInput(*mul, div.output(0));
    if (gamma && ix.known(*gamma) && ix.known(*gamma)->isFloat()) {
      seen.push_back(mul), inputs.push_back(*gamma), out = mul->output(0);
      if (const onnx::NodeProto *add = ix.reader(nodes, mul->output(0)); is(add, "Add")) {
        auto beta = otherInput(*add, mul->output(0));
        if (beta && ix.known(*beta) && ix.known(*beta)->isFloat())
          seen.push_back(add), inputs.push_back(*beta), out = add->output(0);
      }
    }
  }
  onnx::NodeProto n = makeNode("LayerNormalization", inputs, out, seen);
  auto *a = n.add_attribute();
  a->set_name("axis"), a->set_type(onnx::AttributeProto::INT), a->set_i(*axis);
  a = n.add_attribute();
  a->set_name("epsilon"), a->set_type(onnx::AttributeProto::FLOAT), a->set_f(float(*eps));
  return Match{seen, n};
}

// MatMul(x, W) + b, W a known [K, M] and b a known [M].
std::optional<Match> linear(const Index &ix, const std::vector<onnx::NodeProto> &nodes,
                            const onnx::NodeProto &add) {
  if (!is(&add, "Add") || add.input_size() != 2) return std::nullopt;
  for (int i = 0; i < 2; ++i) {
    const onnx::NodeProto *mm = ix.only(nodes, add.input(i));
    const TensorData *b = ix.known(add.input(1 - i));
    if (!is(mm, "MatMul") || !b || !b->isFloat() || b->dims.size() != 1) continue;
    // W known, or the Transpose of a known [M, K] (how dtnnc export writes a dense layer's weight).
    const TensorData *w = ix.known(mm->input(1));
    int64_t units = w && w->dims.size() == 2 ? w->dims[1] : -1;
    if (const onnx::NodeProto *t = ix.only(nodes, mm->input(1)); !w && is(t, "Transpose")) {
      w = ix.known(t->input(0));
      bool swap = t->attribute_size() == 0 ||
                  (t->attribute(0).ints_size() == 2 && t->attribute(0).ints(0) == 1 && t->attribute(0).ints(1) == 0);
      units = w && swap && w->dims.size() == 2 ? w->dims[0] : -1;
    }
    if (!w || !w->isFloat() || units != b->dims[0]) continue;
    std::vector<const onnx::NodeProto *> seen = {mm, &add};
    return Match{seen, makeNode("MatMul", {mm->input(0), mm->input(1), add.input(1 - i)}, add.output(0), seen)};
  }
  return std::nullopt;
}

// Image normalization ending at `div`: ((float(x) / 255) - mean) / std, mean and std known
// (one value, or one per channel), as dtnn's normalize writes it.
std::optional<Match> normalize(const Index &ix, const std::vector<onnx::NodeProto> &nodes,
                               const onnx::NodeProto &div) {
  if (!is(&div, "Div") || div.input_size() != 2) return std::nullopt;
  const onnx::NodeProto *sub = ix.only(nodes, div.input(0));
  if (!is(sub, "Sub")) return std::nullopt;
  const onnx::NodeProto *scale = ix.only(nodes, sub->input(0));
  if (!is(scale, "Div") || !near(ix.scalar(scale->input(1)), 255.0)) return std::nullopt;
  const onnx::NodeProto *cast = ix.only(nodes, scale->input(0));
  if (!is(cast, "Cast") || cast->attribute_size() != 1 || cast->attribute(0).i() != onnx::TensorProto::FLOAT)
    return std::nullopt;
  const TensorData *mean = ix.known(sub->input(1)), *sd = ix.known(div.input(1));
  if (!mean || !sd || !mean->isFloat() || !sd->isFloat()) return std::nullopt;
  std::vector<const onnx::NodeProto *> seen = {cast, scale, sub, &div};
  onnx::NodeProto n = makeNode("Normalize", {cast->input(0)}, div.output(0), seen);
  for (auto [name, d] : {std::pair{"mean", mean}, std::pair{"std", sd}}) {
    auto *a = n.add_attribute();
    a->set_name(name), a->set_type(onnx::AttributeProto::FLOATS);
    for (double v : d->floats) a->add_floats(float(v));
  }
  return Match{seen, n};
}

// The initializers as the matchers read them: the type and dimensions of each, and the values
// of the small ones (a pattern's constants; a weight's values are never looked at).
std::map<std::string, TensorData> initializerShapes(const onnx::GraphProto &g) {
  constexpr int64_t kSmall = 4096;
  std::map<std::string, TensorData> out;
  for (const auto &init : g.initializer()) {
    int64_t n = 1;
    for (int64_t d : init.dims()) n *= d;
    if (n <= kSmall) {
      if (auto d = readTensor(init)) out.emplace(init.name(), std::move(*d));
      continue;
    }
    TensorData d;
    d.elemType = init.data_type();
    d.dims.assign(init.dims().begin(), init.dims().end());
    out.emplace(init.name(), std::move(d));
  }
  return out;
}

} // namespace

std::vector<onnx::NodeProto> fusePatterns(const onnx::GraphProto &g) {
  std::vector<onnx::NodeProto> nodes(g.node().begin(), g.node().end());
  std::map<std::string, TensorData> initializers = initializerShapes(g);
  using Matcher = std::optional<Match> (*)(const Index &, const std::vector<onnx::NodeProto> &,
                                           const onnx::NodeProto &);
  // LayerNorm before Linear: the Add of its beta is not a bias of a MatMul.
  for (Matcher m : {Matcher(normalize), Matcher(gelu), Matcher(layerNorm), Matcher(linear)}) {
    Index ix(g, nodes, initializers);
    std::set<const onnx::NodeProto *> gone;
    std::map<const onnx::NodeProto *, onnx::NodeProto> replaced;
    for (const auto &n : nodes) {
      if (gone.count(&n)) continue;
      auto match = m(ix, nodes, n);
      if (!match) continue;
      bool clash = false;
      for (const auto *p : match->nodes) clash = clash || gone.count(p);
      if (clash) continue;
      for (const auto *p : match->nodes) gone.insert(p);
      replaced[match->nodes.back()] = std::move(match->fused);
    }
    std::vector<onnx::NodeProto> out;
    for (const auto &n : nodes) {
      auto it = replaced.find(&n);
      if (it != replaced.end()) out.push_back(std::move(it->second));
      else if (!gone.count(&n)) out.push_back(n);
    }
    nodes = std::move(out);
  }
  return nodes;
}

} // namespace dtnn::onnximport
