// The ONNX door's one exported symbol (see Door.h).
#include "frontend/onnx/Export.h"
#include "frontend/onnx/Import.h"

namespace {
const dtnn::onnximport::OnnxApi kApi{dtnn::onnximport::OnnxApi::kVersion, &dtnn::onnximport::importModel,
                                     &dtnn::onnximport::exportModel};
} // namespace

extern "C" __attribute__((visibility("default"))) const dtnn::onnximport::OnnxApi *dtnn_onnx_api() {
  return &kApi;
}
