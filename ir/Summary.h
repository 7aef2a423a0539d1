// A per-layer summary of a model graph: the layer's hierarchical name, op,
// output shape, trainable parameters and multiply-accumulates per sample.
#pragma once

#include "ir/IR.h"

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

namespace dtnn::ir {

struct SummaryRow {
  std::string layer; // parameter name prefix, or "-" for ops without parameters
  std::string op;
  std::string shape;
  int64_t params = 0;
  int64_t macs = 0;
};

struct ModelSummary {
  std::string graph;
  std::vector<SummaryRow> rows;
  int64_t trainableParams = 0;
  int64_t bufferElements = 0; // running statistics and other untrained state
  int64_t macs = 0;
};

ModelSummary summarize(const Module &m, const Graph &g);
// Prints the table; the last line is `Total params: N` (trainable parameters).
void printSummary(const ModelSummary &s, std::ostream &os);

} // namespace dtnn::ir
