#include "ir/SiblingModule.h"

#include <dlfcn.h>

#include <filesystem>

namespace dtnn {

Expected<SiblingSymbol> loadSiblingSymbol(const std::string &file, const std::string &symbol,
                                          const std::string &what, const std::string &hint) {
  SiblingSymbol out;
  out.path = file;
  Dl_info info;
  if (dladdr(reinterpret_cast<void *>(&loadSiblingSymbol), &info) && info.dli_fname)
    out.path = (std::filesystem::path(info.dli_fname).parent_path() / file).string();
  void *handle = dlopen(out.path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char *why = dlerror();
    return Error::make("cannot load " + what + " " + out.path + ": " + (why ? why : "unknown") + hint);
  }
  out.fn = dlsym(handle, symbol.c_str());
  if (!out.fn) return Error::make(out.path + " is not this libdtnn's " + what);
  return out;
}

} // namespace dtnn
