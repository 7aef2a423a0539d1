#include "ir/Builder.h"

#include "ir/OpTable.h"

namespace dtnn::ir {

Builder::Builder(Graph &g, Location loc) : g_(g), loc_(std::move(loc)) {}

Op *Builder::append(const std::string &name, std::vector<Value *> operands, AttrMap attrs,
                    std::unique_ptr<Graph> body) {
  const OpDef *def = OpTable::get().lookup(name);
  if (!def) {
    error_ = "unknown op '" + name + "'";
    return nullptr;
  }
  for (Value *v : operands)
    if (!v) {
      error_ = name + ": null operand";
      return nullptr;
    }
  fillDefaultAttrs(*def, attrs);
  std::vector<TensorType> types;
  for (Value *v : operands) types.push_back(v->type());
  if (def->hasBody != (body != nullptr)) {
    error_ = name + (body ? ": the op takes no region" : ": the op needs a region");
    return nullptr;
  }
  InferCtx ctx{types, attrs, {}, {}, body.get()};
  if (Error e = inferResultTypes(*def, ctx)) {
    error_ = name + ": " + e.message();
    return nullptr;
  }
  Op *op = insertAt_ < 0 ? g_.addOp(*def, std::move(operands), std::move(attrs),
                                    std::move(ctx.results), loc_)
                         : g_.insertOp(static_cast<size_t>(insertAt_++), *def, std::move(operands),
                                       std::move(attrs), std::move(ctx.results), loc_);
  if (body) op->setBody(std::move(body));
  return op;
}

std::vector<Value *> Builder::create(const std::string &name, std::vector<Value *> operands,
                                     AttrMap attrs) {
  Op *op = append(name, std::move(operands), std::move(attrs));
  if (!op) return {};
  return op->results();
}

Value *Builder::create1(const std::string &name, std::vector<Value *> operands, AttrMap attrs) {
  Op *op = append(name, std::move(operands), std::move(attrs));
  if (!op) return nullptr;
  if (op->results().size() != 1) {
    error_ = name + ": expected one result";
    return nullptr;
  }
  return op->result(0);
}

Op *Builder::createOp(const std::string &name, std::vector<Value *> operands, AttrMap attrs) {
  return append(name, std::move(operands), std::move(attrs));
}

Op *Builder::createWithBody(const std::string &name, std::vector<Value *> operands,
                            std::unique_ptr<Graph> body, AttrMap attrs) {
  return append(name, std::move(operands), std::move(attrs), std::move(body));
}

Error Builder::takeError() {
  if (!error_) return Error::success();
  Error e = Error::make(std::move(*error_));
  error_.reset();
  return e;
}

AttrMap attrs(std::initializer_list<std::pair<std::string, AttrValue>> entries) {
  AttrMap m;
  for (const auto &[k, v] : entries) m.set(k, v);
  return m;
}

} // namespace dtnn::ir
