// Loads the ONNX door (libdtnn-onnx.so, beside libdtnn) the first time a model is imported.
#include "frontend/onnx/Door.h"
#include "ir/SiblingModule.h"

#include <mutex>

namespace dtnn::onnximport {

namespace {

Expected<const OnnxApi *> onnxApi() {
  static std::once_flag once;
  static const OnnxApi *api = nullptr;
  static std::string failure;
  std::call_once(once, [] {
    Expected<const OnnxApi *> found = loadSiblingApi<OnnxApi>(
        kOnnxModule, kOnnxSymbol, "the ONNX importer",
        " (it needs the ONNX and protobuf libraries, Debian's libonnx1 and libprotobuf32)");
    if (found) api = *found;
    else failure = found.error().message();
  });
  if (!api) return Error::make(failure);
  return api;
}

} // namespace

Expected<ImportResult> importOnnx(const std::string &path, const ImportOptions &opts) {
  Expected<const OnnxApi *> api = onnxApi();
  if (!api) return api.takeError();
  return (*api)->importModel(path, opts);
}

Expected<std::string> exportOnnx(const ir::Module &m, const ExportWeights &weights, const ExportOptions &opts) {
  Expected<const OnnxApi *> api = onnxApi();
  if (!api) return api.takeError();
  return (*api)->exportModel(m, weights, opts);
}

} // namespace dtnn::onnximport
