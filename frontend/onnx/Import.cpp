#include "frontend/onnx/Import.h"

#include "frontend/Frontend.h"
#include "frontend/onnx/Patterns.h"
#include "frontend/onnx/Write.h"
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

  std::string name = opts.modelName.empty() ? identifier(g.name(), "Imported") : opts.modelName;
  if (name[0] >= 'a' && name[0] <= 'z') name[0] = char(name[0] - 'a' + 'A');
  ModelText text;
  text.header = "# " + name + ", imported from ONNX";
  if (!model->producer_name().empty())
    text.header += " (" + model->producer_name() +
                   (model->producer_version().empty() ? "" : " " + model->producer_version()) + ", opset " +
                   std::to_string(opset) + ")";
  text.header += ". Each line names the ONNX nodes it came from.\n";
  text.signature = "model " + name + "(";
  for (size_t i = 0; i < params.size(); ++i) text.signature += (i ? ", " : "") + params[i];
  text.signature += ") -> ";
  if (outs.size() != 1) text.signature += "(";
  for (size_t i = 0; i < outs.size(); ++i) text.signature += (i ? ", " : "") + typeText(outs[i]);
  if (outs.size() != 1) text.signature += ")";
  for (const auto &t : outs) text.results.push_back(t.var);

  // Folded into blocks and loops where the graph repeats; should that source not compile (a
  // folding the language refuses), the flat one.
  std::string sourceName = opts.sourceName.empty() ? name + ".dtnn" : opts.sourceName;
  auto fresh = [&](const std::string &base) { return ctx.freshVar(base); };
  Folded flat;
  std::string foldNote;
  for (const auto &l : ctx.lines()) flat.body.push_back({false, l, {}});
  if (opts.fold) {
    std::set<std::string> results(text.results.begin(), text.results.end()), taken = {name};
    Folded folded = foldRepeats(ctx.lines(), results, taken);
    if (!folded.blocks.empty()) {
      ImportResult result{writeSource(text, folded, fresh), ctx.weights(), {}};
      for (Weight &w : result.weights) {
        size_t dot = w.name.find('.');
        auto it = folded.renamed.find(w.name.substr(0, dot));
        if (it != folded.renamed.end()) w.name = it->second + (dot == std::string::npos ? "" : w.name.substr(dot));
      }
      Error e = verify(sourceName, result.source, result.weights);
      if (!e) return result;
      foldNote = "the source folded into blocks does not compile, so it is written flat (" + e.message() + ")";
    }
  }
  ImportResult result{writeSource(text, flat, fresh), ctx.weights(), {}};
  if (!foldNote.empty()) result.notes.push_back(foldNote);
  if (Error e = verify(sourceName, result.source, result.weights))
    return Error::make(path + ": " + e.message());
  return result;
}

} // namespace dtnn::onnximport
