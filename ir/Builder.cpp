#include "ir/Builder.h"

#include "ir/OpTable.h"

namespace dtnn::ir {

Builder::Builder(Graph &g, Location loc) : g_(g), loc_(std::move(loc)) {}

Op *Builder::append(const std::string &name, std::vector<Value *> operands, AttrMap attrs) {
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
  InferCtx ctx{types, attrs, {}, {}};
  if (Error e = inferResultTypes(*def, ctx)) {
    error_ = name + ": " + e.message();
    return nullptr;
  }
  if (insertAt_ < 0)
    return g_.addOp(*def, std::move(operands), std::move(attrs), std::move(ctx.results), loc_);
  return g_.insertOp(static_cast<size_t>(insertAt_++), *def, std::move(operands),
                     std::move(attrs), std::move(ctx.results), loc_);
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
