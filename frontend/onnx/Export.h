// `dtnnc export`: a model's inference graph (the front end's forward graph) as an ONNX model,
// one translation per dtnn op into the ONNX operators of a chosen opset, its parameters as
// initializers, the batch axis symbolic ("N"). The result is checked by ONNX's checker and shape
// inference before it is returned.
#pragma once

#include "frontend/onnx/Door.h"

namespace dtnn::onnximport {

Expected<std::string> exportModel(const ir::Module &m, const ExportWeights &weights, const ExportOptions &opts);

} // namespace dtnn::onnximport
