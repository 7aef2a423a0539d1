// Label, token and pixel encodings: one_hot turns class labels into rows of a float matrix,
// embedding looks tokens up in a learned table, as nn.Embedding: i32 indices [...] and a
// weight [V, D] give [..., D], and normalize turns u8 images [N, C, ...] into floats, as
// torchvision's ToTensor and Normalize: (v / 255 - mean[c]) / std[c]. The row of padding_idx (if not -1) starts at zero and takes no
// gradient, so a padding token always maps to zeros; an index outside [0, V) gives a row of
// NaN, which the loss shows, rather than reading outside the table.
#include "ir/Builder.h"
#include "ir/OpTable.h"
#include "ir/ops/ShapeUtil.h"

#include <cmath>
#include <string>

namespace dtnn::ir {

namespace {

// Operand: label i32[N]; result dtype[N, classes].
Error inferOneHot(InferCtx &ctx) {
  const TensorType &label = ctx.operands[0];
  if (label.rank() != 1 || label.dtype != DType::I32)
    return ctx.fail("one_hot expects i32 labels [N], got " + label.str(), {0});
  int64_t classes = ctx.attrs.getInt("classes");
  if (classes < 1) return ctx.fail("one_hot needs classes >= 1, got " + std::to_string(classes));
  std::optional<DType> t = parseDType(ctx.attrs.getString("dtype"));
  if (!t || !isFloatType(*t))
    return ctx.fail("one_hot dtype must be f32 or f64, got '" + ctx.attrs.getString("dtype") + "'");
  ctx.results = {TensorType(*t, {label.dims[0], classes})};
  return Error::success();
}

// Checks integer indices, a float table [V, D] and padding_idx in [-1, V).
Error checkEmbedding(InferCtx &ctx, const TensorType &indices, const TensorType &weight,
                     int index, int table) {
  if (indices.dtype != DType::I32 || indices.rank() < 1)
    return ctx.fail("embedding expects i32 token indices of rank 1 or more, got " + indices.str(),
                    {index});
  if (!isFloatType(weight.dtype) || weight.rank() != 2 || !weight.isStatic())
    return ctx.fail("embedding expects a floating-point table [V, D], got " + weight.str(),
                    {table});
  int64_t pad = ctx.attrs.getInt("padding_idx");
  if (pad < -1 || pad >= weight.dims[0])
    return ctx.fail("embedding padding_idx " + std::to_string(pad) + " is not a row of " +
                    weight.str() + " (or -1 for none)");
  return Error::success();
}

// Operands: indices [...], weight [V, D]. Result: [..., D].
Error inferEmbedding(InferCtx &ctx) {
  const TensorType &idx = ctx.operands[0], &w = ctx.operands[1];
  if (Error e = checkEmbedding(ctx, idx, w, 0, 1)) return e;
  std::vector<int64_t> dims = idx.dims;
  dims.push_back(w.dims[1]);
  ctx.results = {TensorType(w.dtype, dims)};
  return Error::success();
}

// Operands: dy [..., D], indices [...], the table's type. Result: the table's gradient.
Error inferEmbeddingBackward(InferCtx &ctx) {
  const TensorType &dy = ctx.operands[0], &idx = ctx.operands[1], &w = ctx.operands[2];
  if (Error e = checkEmbedding(ctx, idx, w, 1, 2)) return e;
  std::vector<int64_t> want = idx.dims;
  want.push_back(w.dims[1]);
  if (dy != TensorType(w.dtype, want))
    return ctx.fail("embedding_backward dy " + dy.str() + " does not match " +
                        TensorType(w.dtype, want).str(),
                    {0});
  ctx.results = {w};
  return Error::success();
}

Error gradEmbedding(GradCtx &ctx) {
  if (!ctx.dy[0] || !ctx.needed[1]) return Error::success();
  ctx.dx[1] = ctx.b.create1("embedding_backward", {ctx.dy[0], ctx.op.operand(0), ctx.op.operand(1)},
                            ctx.op.attrs());
  return ctx.dx[1] ? Error::success() : ctx.b.takeError();
}

// embedding(num_embeddings, embedding_dim, padding_idx=-1, init=): the table starts N(0, 1),
// as nn.Embedding's, with the padding row zero.
Error buildEmbedding(LayerCtx &ctx) {
  const TensorType &idx = ctx.inputs[0];
  int64_t v = ctx.args.getInt("num_embeddings"), d = ctx.args.getInt("embedding_dim");
  int64_t pad = ctx.args.getInt("padding_idx");
  if (idx.dtype != DType::I32)
    return ctx.fail("embedding looks up i32 token indices, got " + idx.str());
  if (v < 1) return ctx.fail("embedding num_embeddings must be positive", "num_embeddings");
  if (d < 1) return ctx.fail("embedding embedding_dim must be positive", "embedding_dim");
  if (pad < -1 || pad >= v)
    return ctx.fail("embedding padding_idx must be a row in [0, " + std::to_string(v) +
                        ") or -1 for none, got " + std::to_string(pad),
                    "padding_idx");
  ctx.attrs.set("padding_idx", pad);
  // The same with either init_defaults: nn.Embedding's is dtnn's too.
  std::string init = ctx.given.count("init")
                         ? ctx.args.getString("init")
                         : "embedding(padding_idx=" + std::to_string(pad) + ")";
  ctx.params.push_back({"weight", TensorType(DType::F32, {v, d}), init, true});
  return Error::success();
}

// Checks normalize's mean and std against images x: one value each, or one per channel
// (dimension 1), each finite and std positive. Returns the message of the first problem, or "".
std::string normalizeProblem(const TensorType &x, const std::vector<double> &mean,
                             const std::vector<double> &std) {
  if (x.dtype != DType::U8 || x.rank() < 2)
    return "normalize expects u8 images [N, C, ...], got " + x.str();
  if (mean.size() != std.size())
    return "normalize takes as many std values as mean values, got " +
           std::to_string(mean.size()) + " and " + std::to_string(std.size());
  if (mean.size() != 1 && int64_t(mean.size()) != x.dims[1])
    return "normalize takes one mean and std, or one per channel (" + std::to_string(x.dims[1]) +
           " for " + x.str() + "), got " + std::to_string(mean.size());
  for (size_t c = 0; c < mean.size(); ++c)
    if (!std::isfinite(mean[c]) || !std::isfinite(std[c]) || !(std[c] > 0))
      return "normalize needs finite means and positive finite stds, got mean " +
             formatDouble(mean[c]) + " and std " + formatDouble(std[c]);
  return "";
}

// Operand: u8 images [N, C, ...]. Result: floats of the same shape.
Error inferNormalize(InferCtx &ctx) {
  const TensorType &x = ctx.operands[0];
  std::string problem =
      normalizeProblem(x, ctx.attrs.getFloats("mean"), ctx.attrs.getFloats("std"));
  if (!problem.empty()) return ctx.fail(problem, {0});
  std::optional<DType> t = parseDType(ctx.attrs.getString("dtype"));
  if (!t || !isFloatType(*t))
    return ctx.fail("normalize dtype must be f32 or f64, got '" + ctx.attrs.getString("dtype") +
                    "'");
  ctx.results = {TensorType(*t, x.dims)};
  return Error::success();
}

// normalize(mean=[0.0], std=[1.0]): the images' channels scaled to [0, 1], less mean, over std.
Error buildNormalize(LayerCtx &ctx) {
  const TensorType &x = ctx.inputs[0];
  const std::vector<double> &mean = ctx.args.getFloats("mean"), &std = ctx.args.getFloats("std");
  std::string problem = normalizeProblem(x, mean, std);
  if (problem.empty()) {
    ctx.attrs.set("mean", mean);
    ctx.attrs.set("std", std);
    return Error::success();
  }
  if (x.dtype != DType::U8 || x.rank() < 2) return ctx.fail(problem);
  bool stdAtFault = mean.size() != std.size();
  for (double s : std) stdAtFault = stdAtFault || !std::isfinite(s) || !(s > 0);
  return ctx.fail(problem, stdAtFault ? "std" : "mean");
}

} // namespace

void registerEncodingOps(BuiltinOps &t) {
  t.add({
      .name = "embedding",
      .summary = "Rows of a table [V,D] looked up by i32 indices [...], giving [...,D], as "
                 "nn.Embedding; the padding_idx row takes no gradient.",
      .operands = {{"indices"}, {"weight"}},
      .attrs = {{"padding_idx", AttrKind::Int, AttrValue(int64_t{-1})}},
      .fusion = FusionClass::Opaque,
      .inferShape = inferEmbedding,
      .macs = nullptr,
      .layer = LayerSpec{1,
                         {{"num_embeddings", AttrKind::Int, std::nullopt},
                          {"embedding_dim", AttrKind::Int, std::nullopt},
                          {"padding_idx", AttrKind::Int, AttrValue(int64_t{-1})},
                          {"init", AttrKind::String,
                           AttrValue(std::string("embedding(padding_idx=-1)"))}},
                         buildEmbedding},
      .grad = gradEmbedding,
      .trainForm = "",
      .precision = Precision::Follow,
  });
  t.add({
      .name = "embedding_backward",
      .summary = "Gradient of embedding's table: each dy row added to the row its index names, "
                 "in index order; the padding_idx row stays zero.",
      .operands = {{"dy"}, {"indices"}, shapeOnly("weight")},
      .attrs = {{"padding_idx", AttrKind::Int, AttrValue(int64_t{-1})}},
      .fusion = FusionClass::Opaque,
      .inferShape = inferEmbeddingBackward,
      .macs = nullptr,
      .layer = std::nullopt,
      .grad = nullptr,
      .trainForm = "",
      .role = OpRole::Backward,
      .internal = true,
      .precision = Precision::Follow,
  });
  t.add({
      .name = "one_hot",
      .summary = "Encodes i32 class labels [N] as rows [N,classes] with a 1 at the label and 0 "
                 "elsewhere (all 0 for labels out of range).",
      .operands = {{"label"}},
      .attrs = {{"classes", AttrKind::Int, std::nullopt},
                {"dtype", AttrKind::String, AttrValue(std::string("f32"))}},
      .fusion = FusionClass::Opaque,
      .inferShape = inferOneHot,
      .precision = Precision::Follow,
  });
  // No gradient: its operand is integer, so none is ever asked for.
  t.add({
      .name = "normalize",
      .summary = "u8 images [N,C,...] as floats (v/255 - mean[c]) / std[c], as torchvision's "
                 "ToTensor and Normalize; one mean and std, or one per channel.",
      .operands = {{"x"}},
      .attrs = {{"mean", AttrKind::Floats, AttrValue(std::vector<double>{0.0})},
                {"std", AttrKind::Floats, AttrValue(std::vector<double>{1.0})},
                {"dtype", AttrKind::String, AttrValue(std::string("f32"))}},
      .fusion = FusionClass::Opaque,
      .inferShape = inferNormalize,
      .macs = nullptr,
      .layer = LayerSpec{1,
                         {{"mean", AttrKind::Floats, AttrValue(std::vector<double>{0.0})},
                          {"std", AttrKind::Floats, AttrValue(std::vector<double>{1.0})}},
                         buildNormalize},
      .precision = Precision::Follow,
  });
}

} // namespace dtnn::ir
