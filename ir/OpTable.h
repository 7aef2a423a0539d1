// The registry of op definitions, open to extensions: registerOp
// (ir/OpRegistry.h) adds an entry, and the built-in op families register
// theirs through it from their own files under ir/ops/ (registerBuiltinOps).
// Lookups are by the op's textual name.
#pragma once

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
  // How registerOp (ir/OpRegistry.h) adds entries; defined in OpTable.cpp.
  friend struct OpTableAccess;
  struct Entry {
    std::unique_ptr<OpDef> def;
    std::string origin;
  };
  std::map<std::string, Entry> ops_;
};

// What the built-in op families register through: registerOp
// (ir/OpRegistry.h) with origin "built-in", keeping the first failure.
class BuiltinOps {
public:
  void add(OpDef def);
  // The message of the first registration that failed, or "".
  const std::string &failure() const { return failure_; }

private:
  std::string failure_;
};

// Registration functions, one per file under ir/ops.
void registerConvOps(BuiltinOps &t);
void registerDenseOps(BuiltinOps &t);
void registerPoolOps(BuiltinOps &t);
void registerNormOps(BuiltinOps &t);
void registerShapeOps(BuiltinOps &t);
void registerElementwiseOps(BuiltinOps &t);
void registerMathOps(BuiltinOps &t);
void registerReduceOps(BuiltinOps &t);
void registerLayerNormOps(BuiltinOps &t);
void registerMatmulOps(BuiltinOps &t);
void registerAttentionOps(BuiltinOps &t);
void registerActivationOps(BuiltinOps &t);
void registerDropoutOps(BuiltinOps &t);
void registerEncodingOps(BuiltinOps &t);
void registerLossOps(BuiltinOps &t);
void registerOptimizerOps(BuiltinOps &t);
void registerCollectiveOps(BuiltinOps &t);
void registerFusedOps(BuiltinOps &t);
void registerCastOps(BuiltinOps &t);

} // namespace dtnn::ir
