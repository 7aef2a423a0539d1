// The registry of op definitions, open to extensions: registerOp adds an
// entry, and the built-in op families register theirs through it from their
// own files under ir/ops/ (registerBuiltinOps). Lookups are by the op's
// textual name.
#pragma once

#include "dtnn/Error.h"
#include "ir/OpDef.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace dtnn::ir {

class OpTable {
public:
  // The process-wide table holding every registered op.
  static const OpTable &get();

  const OpDef *lookup(const std::string &name) const;
  // Who registered op `name` ("built-in", a library's name), or "".
  std::string origin(const std::string &name) const;
  // All ops, sorted by name.
  std::vector<const OpDef *> all() const;
  std::vector<std::string> names() const;

private:
  friend Error registerOp(OpDef def, const std::string &origin);
  struct Entry {
    std::unique_ptr<OpDef> def;
    std::string origin;
  };
  std::map<std::string, Entry> ops_;
};

// Adds `def` to the process-wide op table; `origin` names the registrant in
// messages. Fails when the name is taken or the entry lacks a shape rule.
Error registerOp(OpDef def, const std::string &origin);

// Registers every built-in op (once; later calls do nothing).
Error registerBuiltinOps();

// What the built-in op families register through: registerOp with origin
// "built-in", keeping the first failure.
class BuiltinOps {
public:
  void add(OpDef def);
  Error takeError() { return std::move(error_); }

private:
  Error error_;
};

// Registration functions, one per file under ir/ops.
void registerConvOps(BuiltinOps &t);
void registerDenseOps(BuiltinOps &t);
void registerPoolOps(BuiltinOps &t);
void registerNormOps(BuiltinOps &t);
void registerShapeOps(BuiltinOps &t);
void registerElementwiseOps(BuiltinOps &t);
void registerActivationOps(BuiltinOps &t);
void registerDropoutOps(BuiltinOps &t);
void registerEncodingOps(BuiltinOps &t);
void registerLossOps(BuiltinOps &t);
void registerOptimizerOps(BuiltinOps &t);
void registerCollectiveOps(BuiltinOps &t);

} // namespace dtnn::ir
