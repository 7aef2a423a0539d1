#include "frontend/onnx/ImportContext.h"

#include "frontend/Resolve.h"
#include "ir/OpTable.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace dtnn::onnximport {

namespace {

// Names a binding may not take: keywords, and what calls would find instead of an op.
bool reserved(const std::string &name) {
  static const std::set<std::string> keywords = {
      "import", "block", "model", "train", "let", "var", "for", "in", "repeat", "if", "else",
      "return", "true", "false", "True", "False", "None", "and", "or", "not", "is"};
  if (keywords.count(name)) return true;
  const auto &builtins = frontend::builtinFunctionNames();
  if (std::find(builtins.begin(), builtins.end(), name) != builtins.end()) return true;
  return ir::OpTable::get().lookup(name) != nullptr;
}

} // namespace

std::string identifier(const std::string &name, const std::string &fallback) {
  std::string id;
  for (char c : name) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    if (ok) id += c;
    else if (!id.empty() && id.back() != '_') id += '_';
  }
  while (!id.empty() && id.back() == '_') id.pop_back();
  if (id.empty()) id = fallback;
  if (id[0] >= '0' && id[0] <= '9') id = "v" + id;
  if (reserved(id)) id += '_';
  return id;
}

std::string intList(const std::vector<int64_t> &v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

std::string number(double v) {
  if (std::isinf(v)) return v > 0 ? "1e308" : "-1e308";
  char buf[32];
  // The shortest text that reads back as the same float32, as a float literal.
  for (int digits = 1; digits <= 17; ++digits) {
    std::snprintf(buf, sizeof buf, "%.*g", digits, v);
    if (float(std::strtod(buf, nullptr)) == float(v)) break;
  }
  std::string s = buf;
  if (s.find_first_of(".en") == std::string::npos) s += ".0";
  return s;
}

std::string dimsText(const std::vector<int64_t> &dims) {
  std::string s;
  for (size_t i = 0; i < dims.size(); ++i) {
    s += i ? ", " : "";
    s += ir::isBatchDim(dims[i]) ? "N" : std::to_string(dims[i]);
  }
  return s;
}

bool Known::dependsOnBatch() const {
  return std::any_of(batch.begin(), batch.end(), [](int64_t k) { return k != 0; });
}

bool Known::isScalar() const { return data.count() == 1 && !dependsOnBatch(); }

double Known::scalar() const {
  return data.isFloat() ? data.floats[0] : double(data.ints[0]);
}

std::string Node::describe() const {
  std::string name = p_.name().empty() ? "" : "'" + p_.name() + "' ";
  return "node " + name + "(" + p_.op_type() + ", opset " + std::to_string(opset_) + ")";
}

Error Node::fail(const std::string &problem) const { return Error::make(describe() + ": " + problem); }

const Known *Node::known(size_t i) const { return has(i) ? ctx_.known(p_.input(int(i))) : nullptr; }

Expected<Tensor> Node::tensor(size_t i) const {
  if (!has(i)) return fail("input " + std::to_string(i) + " is missing");
  auto t = ctx_.tensor(p_.input(int(i)), describe());
  if (!t) return t.takeError();
  return t;
}

Expected<std::vector<int64_t>> Node::ints(size_t i, const std::string &what) const {
  const Known *k = known(i);
  if (!k)
    return fail("its " + what + " (input " + std::to_string(i) +
                ") is computed at run time; dtnn needs it known when importing");
  if (k->data.isFloat()) return fail("its " + what + " holds floats, not integers");
  if (k->dependsOnBatch())
    return fail("its " + what + " depends on the batch size");
  return k->data.ints;
}

const onnx::AttributeProto *Node::attr(const std::string &name) const {
  for (const auto &a : p_.attribute())
    if (a.name() == name) return &a;
  return nullptr;
}

bool Node::hasAttr(const std::string &name) const { return attr(name) != nullptr; }

int64_t Node::attrInt(const std::string &name, int64_t fallback) const {
  const auto *a = attr(name);
  return a ? a->i() : fallback;
}

double Node::attrFloat(const std::string &name, double fallback) const {
  const auto *a = attr(name);
  return a ? a->f() : fallback;
}

std::string Node::attrString(const std::string &name, const std::string &fallback) const {
  const auto *a = attr(name);
  return a ? a->s() : fallback;
}

std::optional<std::vector<int64_t>> Node::attrInts(const std::string &name) const {
  const auto *a = attr(name);
  if (!a) return std::nullopt;
  return std::vector<int64_t>(a->ints().begin(), a->ints().end());
}

bool Node::outputUsed(size_t i) const {
  return i < outputs() && !p_.output(int(i)).empty() && ctx_.usedOutputs.count(p_.output(int(i)));
}

const Known *Context::known(const std::string &name) const {
  auto it = values_.find(name);
  return it == values_.end() || !it->second.known ? nullptr : &*it->second.known;
}

Expected<Tensor> Context::tensor(const std::string &name, const std::string &user) {
  auto it = values_.find(name);
  if (it == values_.end())
    return Error::make(user + ": its input '" + name + "' is not produced by any earlier node");
  Value &v = it->second;
  if (v.tensor) return *v.tensor;
  const Known &k = *v.known;
  if (!k.data.isFloat())
    return Error::make(user + ": its input '" + name + "' is a known " +
                       elemTypeName(k.data.elemType) +
                       " tensor used as data; dtnn computes on floating-point tensors, and "
                       "integers only as shapes, axes and indices known when importing");
  if (k.dependsOnBatch())
    return Error::make(user + ": its input '" + name + "' depends on the batch size");
  // A known float tensor used as data is a `param` of the model, holding the value.
  std::string weight = identifier(k.initializer.empty() ? name : k.initializer, "constant");
  std::string pname = weight;
  for (int n = 1; layers_.count(pname); ++n) pname = weight + "_" + std::to_string(n);
  layers_.insert(pname);
  Tensor t{freshVar(weight), ir::DType::F32, k.data.dims};
  lines_.push_back(Line{t.var, "", "param(" + intList(k.data.dims) + ", name=\"" + pname + "\")", {},
                        {"initializer " + (k.initializer.empty() ? name : k.initializer)}});
  addWeight(pname, k.data.dims, k.data);
  v.tensor = t;
  tensors_.push_back(t);
  return t;
}

Tensor Context::emit(const Node &node, const std::string &base, const std::string &head,
                     const std::string &call, std::vector<std::string> uses, ir::DType dtype,
                     std::vector<int64_t> dims, const std::string &output) {
  Tensor t{freshVar(base), dtype, std::move(dims)};
  std::string from = node.proto().name().empty() ? node.op() : node.proto().name();
  lines_.push_back(Line{t.var, head, call, std::move(uses), {from}});
  bindTensor(output, t);
  return t;
}

std::string Context::freshVar(const std::string &base) {
  std::string id = identifier(base, "h");
  if (id[0] >= 'A' && id[0] <= 'Z') id[0] = char(id[0] - 'A' + 'a');
  if (reserved(id)) id += '_';
  std::string name = id;
  for (int n = 1; vars_.count(name) || reserved(name); ++n) name = id + "_" + std::to_string(n);
  vars_.insert(name);
  return name;
}

std::string Context::layerName(const std::string &weight, const Node &node) {
  std::string base = weight;
  for (const char *suffix : {".weight", ".bias", "_weight", "_bias", ".scale", ".gamma", ".W", "_W", ".w"}) {
    size_t n = std::string(suffix).size();
    if (base.size() > n && base.compare(base.size() - n, n, suffix) == 0) {
      base.resize(base.size() - n);
      break;
    }
  }
  if (base.empty() || base.rfind("onnx::", 0) == 0) {
    // The node's name, less the operator PyTorch ends it with ("/layer1/layer1.0/conv1/Conv");
    // of a fused node, its first node's.
    base = node.proto().name().empty() ? node.op() : node.proto().name();
    base = base.substr(0, base.find(", "));
    size_t slash = base.rfind('/');
    if (slash != std::string::npos && slash > 0 && base.compare(slash + 1, node.op().size(), node.op()) == 0)
      base.resize(slash);
    // PyTorch nests a module's path in its children's ("/layer2/layer2.1/conv1"): the
    // state_dict's name is the path less the components that the next one extends
    // ("layer2.1.conv1").
    std::vector<std::string> parts;
    for (size_t at = 0; at <= base.size();) {
      size_t next = std::min(base.find('/', at), base.size());
      if (next > at) parts.push_back(base.substr(at, next - at));
      at = next + 1;
    }
    std::string kept;
    for (size_t i = 0; i < parts.size(); ++i)
      if (i + 1 == parts.size() || parts[i + 1].rfind(parts[i] + ".", 0) != 0)
        kept += (kept.empty() ? "" : "/") + parts[i];
    if (!kept.empty()) base = kept;
  }
  std::string id = identifier(base, "layer");
  std::string name = id;
  for (int n = 1; layers_.count(name); ++n) name = id + "_" + std::to_string(n);
  layers_.insert(name);
  return name;
}

void Context::addWeight(const std::string &name, std::vector<int64_t> dims, const TensorData &data) {
  Weight w{name, std::move(dims), {}};
  w.data.reserve(data.floats.size());
  for (double v : data.floats) w.data.push_back(float(v));
  weights_.push_back(std::move(w));
}

} // namespace dtnn::onnximport
