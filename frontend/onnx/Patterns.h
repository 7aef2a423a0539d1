// The decomposed forms exporters write for one layer, recognised before translation and each
// replaced by one node that the translators write as the dtnn layer:
//   GELU      x * 0.5 * (1 + Erf(x / sqrt(2)))        -> Gelu (approximate "none")
//   LayerNorm (x - m) / Sqrt(ReduceMean((x - m)^2) + eps) with m = ReduceMean(x) over the last
//             axes, then optionally * gamma and + beta   -> LayerNormalization
//   Linear    MatMul(x, W) + b with W [K, M] and b [M] known -> MatMul with b as a third input
//   Normalize (Cast(x, FLOAT) / 255 - mean) / std, mean and std known -> Normalize (dtnn's
//             normalize: u8 images to floats, what dtnnc export writes it as)
// A fused node lists the names of the nodes it replaces (its comment in the source) and takes
// the place of the last of them; a value inside a pattern that anything else reads keeps the
// pattern from matching.
#pragma once

#include <onnx/onnx_pb.h>

#include <vector>

namespace dtnn::onnximport {

// The nodes of `g` with the patterns above fused, in an order that still runs.
std::vector<onnx::NodeProto> fusePatterns(const onnx::GraphProto &g);

} // namespace dtnn::onnximport
