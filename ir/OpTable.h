// The registry of op definitions. Each op family registers its entries from
// its own file under ir/ops/; lookups are by the op's textual name.
#pragma once

#include "ir/OpDef.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace dtnn::ir {

class OpTable {
public:
  // The process-wide table holding every built-in op.
  static const OpTable &get();

  const OpDef *lookup(const std::string &name) const;
  // All ops, sorted by name.
  std::vector<const OpDef *> all() const;
  std::vector<std::string> names() const;

  void add(OpDef def);

private:
  std::map<std::string, std::unique_ptr<OpDef>> ops_;
};

// Registration functions, one per file under ir/ops/.
void registerConvOps(OpTable &t);
void registerDenseOps(OpTable &t);
void registerPoolOps(OpTable &t);
void registerNormOps(OpTable &t);
void registerShapeOps(OpTable &t);
void registerElementwiseOps(OpTable &t);
void registerActivationOps(OpTable &t);
void registerDropoutOps(OpTable &t);
void registerEncodingOps(OpTable &t);
void registerLossOps(OpTable &t);
void registerOptimizerOps(OpTable &t);
void registerCollectiveOps(OpTable &t);

} // namespace dtnn::ir
