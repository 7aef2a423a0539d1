// The state of one ONNX import: what each ONNX value is (a tensor of the .dtnn source being
// written, or a value known while importing), the lines written so far, the weights they own,
// and the names in use. The translators of frontend/onnx/ops read ONNX nodes through it and
// write lines of source with it.
#pragma once

#include "frontend/onnx/Door.h"
#include "frontend/onnx/OnnxFile.h"
#include "ir/Types.h"

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace dtnn::onnximport {

// A value the importer knows: an initializer or what constant folding made of one (a Shape,
// Gather, Concat chain). Elements of `batch` > 0 are that many times the batch size N (their
// `data` entry is unused); `batch` is empty when no element depends on N.
struct Known {
  TensorData data;
  std::vector<int64_t> batch;
  std::string initializer; // the initializer's name, if the value is one
  bool dependsOnBatch() const;
  bool isScalar() const; // one element, of any rank
  double scalar() const; // its only element, as a number
};

// A tensor of the source: the name bound to it, its element type and dimensions (as the IR
// writes them: a negative d is -d times N).
struct Tensor {
  std::string var;
  ir::DType dtype = ir::DType::F32;
  std::vector<int64_t> dims;
  int64_t rank() const { return int64_t(dims.size()); }
};

// One `let` of the source: `var = head |> call`, or `var = call` when head is empty; `uses` the
// names it reads, `nodes` the ONNX nodes it came from.
struct Line {
  std::string var;
  std::string head;
  std::string call;
  std::vector<std::string> uses;
  std::vector<std::string> nodes;
};

class Context;

// One ONNX node as a translator sees it.
class Node {
public:
  Node(Context &ctx, const onnx::NodeProto &proto, int opset) : ctx_(ctx), p_(proto), opset_(opset) {}
  const onnx::NodeProto &proto() const { return p_; }
  const std::string &op() const { return p_.op_type(); }
  int opset() const { return opset_; }
  // "node 'Conv_3' (Conv, opset 13)".
  std::string describe() const;
  Error fail(const std::string &problem) const;

  size_t inputs() const { return size_t(p_.input_size()); }
  bool has(size_t i) const { return i < inputs() && !p_.input(int(i)).empty(); }
  // Input i as a known value, or null when it is not known (or absent).
  const Known *known(size_t i) const;
  // Input i as a tensor of the source; a known float value becomes a `param` of its own.
  Expected<Tensor> tensor(size_t i) const;
  // Input i, which must be known, as integers (a shape, axes, pads); fails naming `what`.
  Expected<std::vector<int64_t>> ints(size_t i, const std::string &what) const;

  bool hasAttr(const std::string &name) const;
  int64_t attrInt(const std::string &name, int64_t fallback) const;
  double attrFloat(const std::string &name, double fallback) const;
  std::string attrString(const std::string &name, const std::string &fallback) const;
  std::optional<std::vector<int64_t>> attrInts(const std::string &name) const;
  const onnx::AttributeProto *attr(const std::string &name) const;

  // The number of outputs the graph uses; output i's name.
  size_t outputs() const { return size_t(p_.output_size()); }
  bool outputUsed(size_t i) const;

private:
  Context &ctx_;
  const onnx::NodeProto &p_;
  int opset_;
};

class Context {
public:
  // Binds ONNX value `name`.
  void bindTensor(const std::string &name, Tensor t) {
    tensors_.push_back(t);
    values_[name] = Value{std::move(t), {}};
  }
  void bindKnown(const std::string &name, Known k) { values_[name] = Value{{}, std::move(k)}; }
  void bindAlias(const std::string &name, const std::string &other) { values_[name] = values_.at(other); }
  bool bound(const std::string &name) const { return values_.count(name) > 0; }
  const Known *known(const std::string &name) const;
  Expected<Tensor> tensor(const std::string &name, const std::string &user);

  // Writes `let var = head |> call` for `node`, binding ONNX output `output` to it; `base`
  // suggests the name. Returns the tensor.
  Tensor emit(const Node &node, const std::string &base, const std::string &head,
              const std::string &call, std::vector<std::string> uses, ir::DType dtype,
              std::vector<int64_t> dims, const std::string &output);
  // A fresh name of the source, from `base` (made an identifier, not a keyword, unique).
  std::string freshVar(const std::string &base);
  // The `name=` of a layer whose weight is the initializer `weight`, else of node `node`.
  std::string layerName(const std::string &weight, const Node &node);
  void addWeight(const std::string &name, std::vector<int64_t> dims, const TensorData &data);

  const std::vector<Line> &lines() const { return lines_; }
  std::vector<Line> &lines() { return lines_; }
  const std::vector<Weight> &weights() const { return weights_; }
  // Every tensor bound so far, in order (graph inputs, then what the lines compute).
  const std::vector<Tensor> &tensors() const { return tensors_; }
  std::set<std::string> usedOutputs; // ONNX values some node or the graph reads

private:
  struct Value {
    std::optional<Tensor> tensor;
    std::optional<Known> known;
  };
  std::map<std::string, Value> values_;
  std::vector<Line> lines_;
  std::vector<Weight> weights_;
  std::vector<Tensor> tensors_;
  std::set<std::string> vars_, layers_;
};

// An identifier made of `name`: other characters become '_', a leading digit gets a letter,
// a keyword a trailing '_'.
std::string identifier(const std::string &name, const std::string &fallback);

// Text of numbers and lists as the source writes them.
std::string intList(const std::vector<int64_t> &v);
std::string number(double v);
// Dimensions as a type writes them: "N" for the batch, "N * 3" for a multiple (not in a type).
std::string dimsText(const std::vector<int64_t> &dims);

} // namespace dtnn::onnximport
