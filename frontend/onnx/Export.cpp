#include "frontend/onnx/Export.h"

#include <onnx/checker.h>
#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>

#include <cmath>
#include <functional>

namespace dtnn::onnximport {

namespace {

std::optional<int32_t> elemTypeOf(ir::DType t) {
  switch (t) {
  case ir::DType::F32: return onnx::TensorProto::FLOAT;
  case ir::DType::F64: return onnx::TensorProto::DOUBLE;
  case ir::DType::I32: return onnx::TensorProto::INT32;
  case ir::DType::I64: return onnx::TensorProto::INT64;
  case ir::DType::U8: return onnx::TensorProto::UINT8;
  case ir::DType::Bool: return onnx::TensorProto::BOOL;
  case ir::DType::BF16: return onnx::TensorProto::BFLOAT16;
  default: return std::nullopt;
  }
}

// The graph being written: value names, initializers and nodes.
class Writer {
public:
  explicit Writer(onnx::GraphProto &g) : g_(g) {}

  std::string fresh(const std::string &base) { return base + "_" + std::to_string(counter_++); }

  // A node of `op` over `inputs`, its one output returned; `attrs` sets its attributes.
  std::string node(const std::string &op, std::vector<std::string> inputs,
                   const std::function<void(onnx::NodeProto &)> &attrs = {}, std::string out = "") {
    onnx::NodeProto *n = g_.add_node();
    n->set_op_type(op);
    n->set_name(fresh(op));
    for (auto &i : inputs) n->add_input(i);
    if (out.empty()) out = fresh("t");
    n->add_output(out);
    if (attrs) attrs(*n);
    return out;
  }

  std::string ints(const std::vector<int64_t> &v, bool scalar = false) {
    onnx::TensorProto *t = g_.add_initializer();
    t->set_name(fresh("const"));
    t->set_data_type(onnx::TensorProto::INT64);
    if (!scalar) t->add_dims(int64_t(v.size()));
    for (int64_t x : v) t->add_int64_data(x);
    return t->name();
  }
  std::string floats(const std::vector<float> &v, const std::vector<int64_t> &dims, const std::string &name = "") {
    onnx::TensorProto *t = g_.add_initializer();
    t->set_name(name.empty() ? fresh("const") : name);
    t->set_data_type(onnx::TensorProto::FLOAT);
    for (int64_t d : dims) t->add_dims(d);
    t->set_raw_data(std::string(reinterpret_cast<const char *>(v.data()), v.size() * sizeof(float)));
    return t->name();
  }
  std::string scalar(float v) { return floats({v}, {}); }

private:
  onnx::GraphProto &g_;
  int counter_ = 0;
};

void setInt(onnx::NodeProto &n, const char *name, int64_t v) {
  auto *a = n.add_attribute();
  a->set_name(name), a->set_type(onnx::AttributeProto::INT), a->set_i(v);
}
void setFloat(onnx::NodeProto &n, const char *name, double v) {
  auto *a = n.add_attribute();
  a->set_name(name), a->set_type(onnx::AttributeProto::FLOAT), a->set_f(float(v));
}
void setInts(onnx::NodeProto &n, const char *name, const std::vector<int64_t> &v) {
  auto *a = n.add_attribute();
  a->set_name(name), a->set_type(onnx::AttributeProto::INTS);
  for (int64_t x : v) a->add_ints(x);
}

// The shape a Reshape to type `t` takes: its static dimensions, -1 for the one of the batch.
std::vector<int64_t> reshapeTarget(const ir::TensorType &t) {
  std::vector<int64_t> s;
  for (int64_t d : t.dims) s.push_back(ir::isBatchDim(d) ? -1 : d);
  return s;
}

class Exporter {
public:
  Exporter(onnx::GraphProto &g, const ExportOptions &opts) : w_(g), opts_(opts) {}

  std::string &name(const ir::Value *v) { return names_[v]; }

  // Writes the activation `act` of a fused op on `x`.
  Expected<std::string> activation(const std::string &act, const std::string &x) {
    if (act == "none") return x;
    if (act == "relu") return w_.node("Relu", {x});
    if (act == "sigmoid") return w_.node("Sigmoid", {x});
    if (act == "tanh") return w_.node("Tanh", {x});
    if (act == "relu6") return w_.node("Clip", {x, w_.scalar(0), w_.scalar(6)});
    if (act == "silu") return w_.node("Mul", {x, w_.node("Sigmoid", {x})});
    if (act == "hard_swish") return w_.node("HardSwish", {x});
    if (act == "hard_sigmoid")
      return w_.node("HardSigmoid", {x}, [](onnx::NodeProto &n) { setFloat(n, "alpha", 1.0 / 6), setFloat(n, "beta", 0.5); });
    if (act == "gelu") return gelu(x, "none");
    return Error::make("the fused activation '" + act + "' has no ONNX form here");
  }

  std::string gelu(const std::string &x, const std::string &approx) {
    if (opts_.opset >= 20)
      return w_.node("Gelu", {x}, [&](onnx::NodeProto &n) {
        auto *a = n.add_attribute();
        a->set_name("approximate"), a->set_type(onnx::AttributeProto::STRING), a->set_s(approx);
      });
    std::string inner;
    if (approx == "tanh") {
      std::string cube = w_.node("Mul", {x, w_.node("Mul", {x, x})});
      std::string sum = w_.node("Add", {x, w_.node("Mul", {cube, w_.scalar(0.044715f)})});
      inner = w_.node("Tanh", {w_.node("Mul", {sum, w_.scalar(float(std::sqrt(2.0 / M_PI)))})});
    } else {
      inner = w_.node("Erf", {w_.node("Div", {x, w_.scalar(float(std::sqrt(2.0)))})});
    }
    return w_.node("Mul", {w_.node("Mul", {x, w_.node("Add", {inner, w_.scalar(1)})}), w_.scalar(0.5)});
  }

  // The last two dimensions of a rank-`rank` value swapped.
  std::string swapLast(const std::string &x, size_t rank) {
    std::vector<int64_t> perm;
    for (size_t i = 0; i < rank; ++i) perm.push_back(int64_t(i));
    std::swap(perm[rank - 1], perm[rank - 2]);
    return w_.node("Transpose", {x}, [&](onnx::NodeProto &n) { setInts(n, "perm", perm); });
  }

  Error op(const ir::Op &o) {
    const std::string &k = o.name();
    const ir::AttrMap &a = o.attrs();
    auto in = [&](size_t i) { return names_.at(o.operand(unsigned(i))); };
    const ir::TensorType &rt = o.result(0)->type();
    std::string y;
    auto unary = [&](const char *onnxOp) { return w_.node(onnxOp, {in(0)}); };
    if (k == "relu" || k == "sigmoid" || k == "tanh" || k == "relu6" || k == "silu" || k == "hard_swish" ||
        k == "hard_sigmoid") {
      auto r = activation(k, in(0));
      if (!r) return r.takeError();
      y = *r;
    } else if (k == "gelu") {
      y = gelu(in(0), a.getString("approximate"));
    } else if (k == "leaky_relu") {
      y = w_.node("LeakyRelu", {in(0)}, [&](onnx::NodeProto &n) { setFloat(n, "alpha", a.getFloat("alpha")); });
    } else if (k == "exp" || k == "log" || k == "sqrt" || k == "erf") {
      static const std::map<std::string, const char *> ops = {{"exp", "Exp"}, {"log", "Log"}, {"sqrt", "Sqrt"}, {"erf", "Erf"}};
      y = unary(ops.at(k));
    } else if (k == "rsqrt") {
      y = w_.node("Reciprocal", {w_.node("Sqrt", {w_.node("Add", {in(0), w_.scalar(float(a.getFloat("eps")))})})});
    } else if (k == "pow") {
      y = w_.node("Pow", {in(0), w_.scalar(float(a.getFloat("exponent")))});
    } else if (k == "scale") {
      y = w_.node("Mul", {in(0), w_.scalar(float(a.getFloat("factor")))});
    } else if (k == "add" || k == "sub" || k == "mul" || k == "div") {
      static const std::map<std::string, const char *> ops = {{"add", "Add"}, {"sub", "Sub"}, {"mul", "Mul"}, {"div", "Div"}};
      y = w_.node(ops.at(k), {in(0), in(1)});
    } else if (k == "dropout" || k == "drop_path") {
      y = in(0); // the identity at inference
    } else if (k == "normalize") {
      // u8 pixels: Cast, / 255, - mean, / std, per channel (dimension 1).
      const auto &mean = a.getFloats("mean"), &sd = a.getFloats("std");
      size_t rank = o.operand(0)->type().rank();
      std::vector<int64_t> dims(rank, 1);
      dims[1] = int64_t(mean.size());
      std::vector<float> m(mean.begin(), mean.end()), s(sd.begin(), sd.end());
      std::string f = w_.node("Cast", {in(0)}, [](onnx::NodeProto &n) { setInt(n, "to", onnx::TensorProto::FLOAT); });
      f = w_.node("Div", {f, w_.scalar(255)});
      f = w_.node("Sub", {f, mean.size() == 1 ? w_.scalar(m[0]) : w_.floats(m, dims)});
      y = w_.node("Div", {f, sd.size() == 1 ? w_.scalar(s[0]) : w_.floats(s, dims)});
    } else if (k == "conv2d") {
      bool residual = a.getBool("residual");
      size_t plain = o.operands().size() - (residual ? 1 : 0);
      std::vector<std::string> ins = {in(0), in(1)};
      if (plain > 2) ins.push_back(in(2));
      y = w_.node("Conv", ins, [&](onnx::NodeProto &n) {
        setInts(n, "strides", a.getInts("stride"));
        setInts(n, "pads", a.getInts("pad"));
        setInts(n, "dilations", a.getInts("dilation"));
        setInt(n, "group", a.getInt("groups"));
        const auto &wd = o.operand(1)->type().dims;
        setInts(n, "kernel_shape", {wd[2], wd[3]});
      });
      if (residual) y = w_.node("Add", {y, in(o.operands().size() - 1)});
      auto r = activation(a.getString("act"), y);
      if (!r) return r.takeError();
      y = *r;
    } else if (k == "batchnorm") {
      y = w_.node("BatchNormalization", {in(0), in(1), in(2), in(3), in(4)}, [&](onnx::NodeProto &n) {
        setFloat(n, "epsilon", a.getFloat("eps"));
        setFloat(n, "momentum", 1 - a.getFloat("momentum"));
      });
      auto r = activation(a.getString("act"), y);
      if (!r) return r.takeError();
      y = *r;
    } else if (k == "maxpool" || k == "avgpool") {
      y = w_.node(k == "maxpool" ? "MaxPool" : "AveragePool", {in(0)}, [&](onnx::NodeProto &n) {
        setInts(n, "kernel_shape", a.getInts("kernel"));
        auto stride = a.getInts("stride");
        setInts(n, "strides", stride.empty() ? a.getInts("kernel") : stride);
        setInts(n, "pads", a.getInts("pad"));
        if (a.getBool("ceil")) setInt(n, "ceil_mode", 1);
        if (k == "avgpool") setInt(n, "count_include_pad", a.getBool("count_pad") ? 1 : 0);
      });
    } else if (k == "global_avgpool") {
      y = unary("GlobalAveragePool");
    } else if (k == "flatten" || k == "reshape") {
      y = w_.node("Reshape", {in(0), w_.ints(reshapeTarget(rt))});
    } else if (k == "transpose") {
      y = w_.node("Transpose", {in(0)}, [&](onnx::NodeProto &n) { setInts(n, "perm", a.getInts("perm")); });
    } else if (k == "slice") {
      y = w_.node("Slice", {in(0), w_.ints({a.getInt("begin")}), w_.ints({a.getInt("end")}), w_.ints({a.getInt("axis")})});
    } else if (k == "concat") {
      std::vector<std::string> ins;
      for (size_t i = 0; i < o.operands().size(); ++i) ins.push_back(in(i));
      y = w_.node("Concat", ins, [&](onnx::NodeProto &n) { setInt(n, "axis", a.getInt("axis")); });
    } else if (k == "softmax" || k == "log_softmax") {
      y = w_.node(k == "softmax" ? "Softmax" : "LogSoftmax", {in(0)}, [&](onnx::NodeProto &n) { setInt(n, "axis", a.getInt("axis")); });
    } else if (k == "dense") {
      size_t rank = o.operand(0)->type().rank();
      bool bias = o.operands().size() > 2;
      if (rank == 2) {
        std::vector<std::string> ins = {in(0), in(1)};
        if (bias) ins.push_back(in(2));
        y = w_.node("Gemm", ins, [](onnx::NodeProto &n) { setInt(n, "transB", 1); });
      } else {
        y = w_.node("MatMul", {in(0), swapLast(in(1), 2)});
        if (bias) y = w_.node("Add", {y, in(2)});
      }
      auto r = activation(a.getString("act"), y);
      if (!r) return r.takeError();
      y = *r;
    } else if (k == "matmul") {
      std::string lhs = in(0), rhs = in(1);
      if (a.getBool("transpose_a")) lhs = swapLast(lhs, o.operand(0)->type().rank());
      if (a.getBool("transpose_b")) rhs = swapLast(rhs, o.operand(1)->type().rank());
      y = w_.node("MatMul", {lhs, rhs});
    } else if (k == "layernorm") {
      int64_t axes = a.getInt("axes");
      std::vector<std::string> ins = {in(0)};
      if (o.operands().size() > 1) {
        ins.push_back(in(1)), ins.push_back(in(2));
      } else {
        const auto &d = o.operand(0)->type().dims;
        std::vector<int64_t> shape(d.end() - axes, d.end());
        int64_t count = 1;
        for (int64_t x : shape) count *= x;
        ins.push_back(w_.floats(std::vector<float>(size_t(count), 1.0f), shape));
      }
      y = w_.node("LayerNormalization", ins, [&](onnx::NodeProto &n) {
        setInt(n, "axis", -axes);
        setFloat(n, "epsilon", a.getFloat("eps"));
      });
    } else if (k == "embedding") {
      y = w_.node("Gather", {in(1), in(0)}, [](onnx::NodeProto &n) { setInt(n, "axis", 0); });
    } else if (k == "scaled_dot_product_attention") {
      const auto &qd = o.operand(0)->type().dims, &kd = o.operand(1)->type().dims;
      double scale = a.getFloat("scale");
      if (scale == 0) scale = 1 / std::sqrt(double(qd.back()));
      std::string s = w_.node("MatMul", {in(0), swapLast(in(1), kd.size())});
      s = w_.node("Mul", {s, w_.scalar(float(scale))});
      if (o.operands().size() > 3) s = w_.node("Add", {s, in(3)});
      if (a.getBool("is_causal")) {
        int64_t t = qd[qd.size() - 2], sk = kd[kd.size() - 2];
        std::vector<float> mask(size_t(t * sk), 0.0f);
        for (int64_t i = 0; i < t; ++i)
          for (int64_t j = i + 1; j < sk; ++j) mask[size_t(i * sk + j)] = -1e30f; // exp gives 0, as of -inf
        s = w_.node("Add", {s, w_.floats(mask, {t, sk})});
      }
      s = w_.node("Softmax", {s}, [](onnx::NodeProto &n) { setInt(n, "axis", -1); });
      y = w_.node("MatMul", {s, in(2)});
    } else if (k == "reduce_sum" || k == "reduce_max") {
      const auto &axes = a.getInts("axes");
      if (k == "reduce_sum" && opts_.opset >= 13) {
        y = w_.node("ReduceSum", {in(0), w_.ints(axes)});
      } else {
        y = w_.node(k == "reduce_sum" ? "ReduceSum" : "ReduceMax", {in(0)}, [&](onnx::NodeProto &n) { setInts(n, "axes", axes); });
      }
    } else if (k == "broadcast_like") {
      y = w_.node("Expand", {in(0), w_.node("Shape", {in(1)})});
    } else {
      return Error::make("the op '" + k + "' has no ONNX form in dtnnc export yet");
    }
    names_[o.result(0)] = y;
    return Error::success();
  }

  Writer w_;
  const ExportOptions &opts_;
  std::map<const ir::Value *, std::string> names_;
};

void setType(onnx::ValueInfoProto &vi, const ir::TensorType &t, int32_t elemType) {
  auto *tt = vi.mutable_type()->mutable_tensor_type();
  tt->set_elem_type(elemType);
  auto *shape = tt->mutable_shape();
  for (int64_t d : t.dims) {
    auto *dim = shape->add_dim();
    if (d == ir::kDynamic) dim->set_dim_param("N");
    else if (ir::isBatchDim(d)) dim->set_dim_param("N*" + std::to_string(ir::batchMultiple(d)));
    else dim->set_dim_value(d);
  }
}

} // namespace

Expected<std::string> exportModel(const ir::Module &m, const ExportWeights &weights, const ExportOptions &opts) {
  if (opts.opset < 17 || opts.opset > 20)
    return Error::make("opset " + std::to_string(opts.opset) + " is not one export writes (17 to 20)");
  const ir::Graph *g = m.graphs().empty() ? nullptr : m.graphs().front().get();
  if (!g) return Error::make("the module has no forward graph");
  onnx::ModelProto model;
  model.set_ir_version(8);
  model.set_producer_name("dtnn");
  auto *opset = model.add_opset_import();
  opset->set_domain("");
  opset->set_version(opts.opset);
  onnx::GraphProto &graph = *model.mutable_graph();
  graph.set_name(g->name().empty() ? "model" : g->name());
  Exporter ex(graph, opts);
  for (const ir::Value *in : g->inputs()) {
    auto et = elemTypeOf(in->type().dtype);
    if (!et) return Error::make("input '" + in->name() + "' has an element type ONNX export does not write");
    auto *vi = graph.add_input();
    vi->set_name(in->name());
    setType(*vi, in->type(), *et);
    ex.name(in) = in->name();
  }
  // The parameters the graph reads, as initializers.
  std::set<const ir::Param *> written;
  for (const auto &op : g->ops())
    for (const ir::Value *v : op->operands()) {
      const ir::Param *p = v->param();
      if (!p || written.count(p)) continue;
      written.insert(p);
      auto it = weights.values.find(p->name);
      if (it == weights.values.end()) return Error::make("no value for the parameter '" + p->name + "'");
      ex.w_.floats(it->second, p->type.dims, p->name);
      ex.name(v) = p->name;
    }
  for (const auto &op : g->ops())
    if (Error e = ex.op(*op)) return e;
  for (size_t i = 0; i < g->outputs().size(); ++i) {
    const ir::Value *v = g->outputs()[i];
    std::string out = g->outputs().size() == 1 ? "output" : "output_" + std::to_string(i);
    ex.w_.node("Identity", {ex.name(v)}, {}, out);
    auto et = elemTypeOf(v->type().dtype);
    if (!et) return Error::make("output " + std::to_string(i) + " has an element type ONNX export does not write");
    auto *vi = graph.add_output();
    vi->set_name(out);
    setType(*vi, v->type(), *et);
  }
  try {
    onnx::checker::check_model(model);
    onnx::shape_inference::InferShapes(model);
  } catch (const std::exception &e) {
    return Error::make(std::string("ONNX's checker refuses the exported model: ") + e.what());
  }
  std::string bytes;
  if (!model.SerializeToString(&bytes)) return Error::make("the exported model does not serialize");
  return bytes;
}

} // namespace dtnn::onnximport
