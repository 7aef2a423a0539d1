#include "frontend/onnx/Import.h"

#include "frontend/Frontend.h"
#include "frontend/onnx/Patterns.h"
#include "frontend/onnx/ops/Translators.h"

#include <algorithm>
#include <map>
#include <sstream>

namespace dtnn::onnximport {

const TranslatorTable &translators() {
  static const TranslatorTable table = [] {
    TranslatorTable t;
    addActivationTranslators(t);
    addArithmeticTranslators(t);
    addIndexingTranslators(t);
    addLayerTranslators(t);
    addReductionTranslators(t);
    addShapeTranslators(t);
    return t;
  }();
  return table;
}

namespace {

// The type of a graph input as the source writes it, and as a Tensor.
Expected<Tensor> inputTensor(const onnx::ValueInfoProto &in, const std::string &var) {
  std::string what = "graph input '" + in.name() + "'";
  if (!in.type().has_tensor_type()) return Error::make(what + " is not a tensor");
  const auto &tt = in.type().tensor_type();
  auto dtype = dtypeOf(tt.elem_type());
  if (!dtype) return Error::make(what + " has elements of type " + elemTypeName(tt.elem_type()) +
                                 ", which dtnn does not have");
  Tensor t{var, *dtype, {}};
  if (!tt.has_shape()) return Error::make(what + " has no shape");
  for (int i = 0; i < tt.shape().dim_size(); ++i) {
    const auto &d = tt.shape().dim(i);
    if (d.has_dim_value() && d.dim_value() > 0) t.dims.push_back(d.dim_value());
    else if (i == 0) t.dims.push_back(ir::kDynamic);
    else
      return Error::make(what + " has the symbolic dimension " + std::to_string(i) + " ('" +
                         d.dim_param() + "'); dtnn's only symbolic dimension is the batch, the first");
  }
  return t;
}

std::string typeText(const Tensor &t) {
  return std::string(ir::dtypeName(t.dtype)) + "[" + dimsText(t.dims) + "]";
}

int defaultOpset(const onnx::ModelProto &m) {
  for (const auto &o : m.opset_import())
    if (o.domain().empty() || o.domain() == "ai.onnx") return int(o.version());
  return 1;
}

std::string commentOf(const std::vector<std::string> &nodes) {
  std::string s;
  for (const auto &n : nodes) s += (s.empty() ? "" : ", ") + n;
  return s;
}

// Merges a line into the next when the next pipes the line's single-use result.
void chain(std::vector<Line> &lines, const std::map<std::string, int> &uses) {
  std::vector<Line> out;
  for (Line &l : lines) {
    if (!out.empty() && !l.head.empty() && l.head == out.back().var && !out.back().head.empty() &&
        uses.at(l.head) == 1) {
      Line &prev = out.back();
      // One piped call per line, each with its comment.
      prev.var = l.var;
      prev.call += "  # " + commentOf(prev.nodes) + "\n      |> " + l.call;
      prev.nodes = l.nodes;
      for (const auto &u : l.uses)
        if (u != l.head) prev.uses.push_back(u);
      continue;
    }
    out.push_back(std::move(l));
  }
  lines = std::move(out);
}

// Compiles the source and orders the weights as its parameters; fails if any differs.
Error verify(const std::string &name, const std::string &source, std::vector<Weight> &weights) {
  SourceManager sm;
  std::ostringstream diag;
  DiagnosticEngine diags(sm, diag);
  auto module = frontend::compileSource(name, source, {}, sm, diags);
  if (!module)
    return Error::make("dtnn refuses the imported source:\n" + diag.str());
  std::map<std::string, Weight *> byName;
  for (Weight &w : weights) byName[w.name] = &w;
  std::vector<Weight> ordered;
  for (const auto &p : module->params()) {
    auto it = byName.find(p->name);
    if (it == byName.end()) return Error::make("the imported model's parameter '" + p->name + "' has no weight");
    if (it->second->dims != p->type.dims)
      return Error::make("the weight '" + p->name + "' is [" + dimsText(it->second->dims) +
                         "], but the imported model's parameter is " + p->type.str());
    ordered.push_back(std::move(*it->second));
    byName.erase(it);
  }
  if (!byName.empty())
    return Error::make("the weight '" + byName.begin()->first + "' has no parameter in the imported model");
  weights = std::move(ordered);
  return Error::success();
}

} // namespace

Expected<ImportResult> importModel(const std::string &path, const ImportOptions &opts) {
  auto model = loadModel(path);
  if (!model) return model.takeError();
  const onnx::GraphProto &g = model->graph();
  int opset = defaultOpset(*model);
  Context ctx;
  for (const auto &init : g.initializer()) {
    auto d = readTensor(init);
    if (!d) return Error::make(path + ": " + d.error().message());
    Known k{std::move(*d), {}, init.name()};
    ctx.bindKnown(init.name(), std::move(k));
  }
  for (const auto &[name, file] : opts.constants) {
    bool isInput = std::any_of(g.input().begin(), g.input().end(), [&](const auto &in) { return in.name() == name; });
    if (!isInput) return Error::make(path + ": the constant '" + name + "' is not an input of the graph");
    auto t = loadTensor(file);
    if (!t) return t.takeError();
    auto d = readTensor(*t);
    if (!d) return Error::make(file + ": " + d.error().message());
    ctx.bindKnown(name, Known{std::move(*d), {}, name});
  }
  std::vector<onnx::NodeProto> nodes = fusePatterns(g);
  for (const auto &n : nodes)
    for (const auto &in : n.input()) ctx.usedOutputs.insert(in);
  for (const auto &o : g.output()) ctx.usedOutputs.insert(o.name());

  std::vector<std::string> params;
  for (const auto &in : g.input()) {
    if (ctx.bound(in.name())) continue; // an initializer (IR version < 4) or a bound constant
    auto t = inputTensor(in, ctx.freshVar(in.name()));
    if (!t) return Error::make(path + ": " + t.error().message());
    params.push_back(t->var + ": " + typeText(*t));
    ctx.bindTensor(in.name(), *t);
  }
  for (const auto &proto : nodes) {
    Node node(ctx, proto, opset);
    if (!proto.domain().empty() && proto.domain() != "ai.onnx")
      return Error::make(path + ": " + node.describe() + ": operators of domain '" + proto.domain() +
                         "' are not supported");
    auto it = translators().find(proto.op_type());
    if (it == translators().end())
      return Error::make(path + ": " + node.describe() + ": the operator " + proto.op_type() +
                         " is not supported");
    for (const auto &a : proto.attribute())
      if (std::find(it->second.attrs.begin(), it->second.attrs.end(), a.name()) == it->second.attrs.end())
        return Error::make(path + ": " + node.describe() + ": its attribute '" + a.name() +
                           "' is not supported");
    if (Error e = it->second.fn(ctx, node)) return Error::make(path + ": " + e.message());
  }
  std::vector<Tensor> outs;
  for (const auto &o : g.output()) {
    if (ctx.known(o.name()))
      return Error::make(path + ": graph output '" + o.name() +
                         "' is a constant; dtnn's models compute their results");
    auto t = ctx.tensor(o.name(), "graph output '" + o.name() + "'");
    if (!t) return Error::make(path + ": " + t.error().message());
    outs.push_back(*t);
  }

  std::map<std::string, int> uses;
  for (const auto &l : ctx.lines()) {
    uses[l.var];
    for (const auto &u : l.uses) ++uses[u];
  }
  for (const auto &t : outs) uses[t.var] += 2; // a result is never merged away
  chain(ctx.lines(), uses);

  std::string name = opts.modelName.empty() ? identifier(g.name(), "Imported") : opts.modelName;
  if (name[0] >= 'a' && name[0] <= 'z') name[0] = char(name[0] - 'a' + 'A');
  std::ostringstream src;
  src << "# " << name << ", imported from ONNX";
  if (!model->producer_name().empty())
    src << " (" << model->producer_name()
        << (model->producer_version().empty() ? "" : " " + model->producer_version()) << ", opset "
        << opset << ")";
  src << ". Each line names the ONNX nodes it came from.\n";
  src << "model " << name << "(";
  for (size_t i = 0; i < params.size(); ++i) src << (i ? ", " : "") << params[i];
  src << ") -> ";
  if (outs.size() != 1) src << "(";
  for (size_t i = 0; i < outs.size(); ++i) src << (i ? ", " : "") << typeText(outs[i]);
  if (outs.size() != 1) src << ")";
  src << " {\n";
  for (const auto &l : ctx.lines()) {
    src << "  let " << l.var << " = " << (l.head.empty() ? "" : l.head + " |> ") << l.call
        << "  # " << commentOf(l.nodes) << "\n";
  }
  src << "  return ";
  for (size_t i = 0; i < outs.size(); ++i) src << (i ? ", " : "") << outs[i].var;
  src << "\n}\n";

  ImportResult result{src.str(), ctx.weights()};
  if (Error e = verify(opts.sourceName.empty() ? name + ".dtnn" : opts.sourceName, result.source,
                       result.weights))
    return Error::make(path + ": " + e.message());
  return result;
}

} // namespace dtnn::onnximport
