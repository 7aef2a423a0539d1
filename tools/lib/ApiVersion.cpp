// The version calls of dtnn/Version.h, and where the standard library of blocks is.
#include "dtnn/Compiler.h"
#include "dtnn/Version.h"

#include <dlfcn.h>

#include <filesystem>

namespace dtnn {

#define DTNN_STRINGIFY_(x) #x
#define DTNN_STRINGIFY(x) DTNN_STRINGIFY_(x)

const char *versionString() {
  return DTNN_STRINGIFY(DTNN_VERSION_MAJOR) "." DTNN_STRINGIFY(DTNN_VERSION_MINOR);
}

int apiVersion() { return DTNN_API_VERSION; }

std::string standardLibraryDir() {
  // An installed libdtnn finds the blocks it was installed with (DTNN_LIB_TO_STDLIB is the
  // path from the library's folder to them); a library in its build tree uses the sources.
  Dl_info info;
  if (dladdr(reinterpret_cast<void *>(&standardLibraryDir), &info) && info.dli_fname) {
    std::error_code ec;
    std::filesystem::path dir =
        std::filesystem::path(info.dli_fname).parent_path() / DTNN_LIB_TO_STDLIB;
    if (std::filesystem::is_directory(dir / "std", ec)) return dir.lexically_normal().string();
  }
  return DTNN_STDLIB_DIR;
}

} // namespace dtnn
