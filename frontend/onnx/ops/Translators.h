// The translators from ONNX operators to .dtnn source, one table entry per operator, grouped
// by family in the files of this folder. Adding an ONNX operator is one entry: its name, the
// attributes it understands (any other refuses the node) and a function that writes lines of
// source through the Context (frontend/onnx/ImportContext.h) or folds known values.
#pragma once

#include "frontend/onnx/ImportContext.h"

#include <map>
#include <string>
#include <vector>

namespace dtnn::onnximport {

using TranslateFn = Error (*)(Context &, const Node &);

struct Translator {
  std::vector<std::string> attrs; // the attributes it reads
  TranslateFn fn;
};

using TranslatorTable = std::map<std::string, Translator>;

// Every translator, by ONNX operator name (the default domain).
const TranslatorTable &translators();

// The families, each in its file.
void addActivationTranslators(TranslatorTable &t); // Activations.cpp
void addArithmeticTranslators(TranslatorTable &t); // Arithmetic.cpp
void addIndexingTranslators(TranslatorTable &t);   // Indexing.cpp
void addLayerTranslators(TranslatorTable &t);      // Layers.cpp
void addReductionTranslators(TranslatorTable &t);  // Reductions.cpp
void addShapeTranslators(TranslatorTable &t);      // Shapes.cpp

// Helpers the families share (Helpers.cpp).

// A dtnn element type for an ONNX one, if dtnn has it.
std::optional<ir::DType> dtypeOf(int32_t elemType);
// Axis `axis` of a rank-`rank` tensor, negative ones counted from the end; fails unless in range.
Expected<int64_t> normalizeAxis(const Node &node, int64_t axis, int64_t rank);
// NumPy broadcasting of two shapes (batch dimensions included); fails naming both.
Expected<std::vector<int64_t>> broadcastDims(const Node &node, const std::vector<int64_t> &a,
                                             const std::vector<int64_t> &b);
// Writes the reshape of `x` to `dims` (at most one of them a batch multiple) for `node`'s
// output `output`, or binds x itself when the dimensions do not change.
Expected<Tensor> reshapeTo(Context &ctx, const Node &node, const Tensor &x,
                           const std::vector<int64_t> &dims, const std::string &output);
// The call text "f(a, k=v)" of a callee and its arguments, leaving out empty ones.
std::string call(const std::string &callee, const std::vector<std::string> &args);
// Refuses the node unless its first output is the only one the graph uses.
Error onlyFirstOutput(const Node &node, const std::string &why);
// The element count of static dimensions.
int64_t product(const std::vector<int64_t> &dims, size_t begin = 0, size_t end = size_t(-1));

} // namespace dtnn::onnximport
