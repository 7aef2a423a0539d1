// Loading one of libdtnn's modules: a shared object beside libdtnn (the jit's code generator,
// the cuda backend's device code, the ONNX door) that libdtnn opens the first time it is
// needed, so that a program that never needs it never maps the large libraries it links
// (LLVM, CUDA, ONNX and protobuf). Each module exports one function returning its interface,
// a struct whose first member is its version.
#pragma once

#include "ir/Error.h"

#include <string>

namespace dtnn {

// The exported function `symbol` of module `file` (opened from libdtnn's folder), or why not:
// "cannot load <what> <path>: <the loader's reason><hint>".
struct SiblingSymbol {
  void *fn = nullptr;
  std::string path;
};
Expected<SiblingSymbol> loadSiblingSymbol(const std::string &file, const std::string &symbol,
                                          const std::string &what, const std::string &hint = "");

// The interface `Api` (with `int version` and `static constexpr int kVersion`) of module
// `file`, or why not; a module of another version is "<path> is not this libdtnn's <what>".
template <typename Api>
Expected<const Api *> loadSiblingApi(const std::string &file, const std::string &symbol,
                                     const std::string &what, const std::string &hint = "") {
  Expected<SiblingSymbol> sym = loadSiblingSymbol(file, symbol, what, hint);
  if (!sym) return sym.takeError();
  const Api *api = reinterpret_cast<const Api *(*)()>(sym->fn)();
  if (!api || api->version != Api::kVersion)
    return Error::make(sym->path + " is not this libdtnn's " + what);
  return api;
}

} // namespace dtnn
