// Loading plugins (dtnn/Plugin.h). A plugin is opened with RTLD_NOW (an unresolved symbol fails
// the load, not a later call) and RTLD_LOCAL; its libdtnn is the one already loaded (the same
// soname), so it registers into this process's registries. Plugins stay loaded until the
// process ends: their entries point into them.
#include "dtnn/Plugin.h"

#include "dtnn/Registry.h"

#include <dlfcn.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <mutex>

namespace dtnn {
namespace {

std::mutex &pluginMutex() {
  static std::mutex m;
  return m;
}

std::vector<std::string> &loaded() {
  static std::vector<std::string> files;
  return files;
}

// The file `path` names, resolved when it exists (so that one file loads once however it is
// named), else as given (a name the dynamic loader searches for).
std::string canonical(const std::string &path) {
  std::error_code ec;
  std::filesystem::path p = std::filesystem::canonical(path, ec);
  return ec ? path : p.string();
}

} // namespace

Error loadPlugin(const std::string &path) {
  if (path.empty()) return Error::make("--plugin: the plugin's path is empty");
  if (Error e = registerBuiltins()) return e;
  std::lock_guard<std::mutex> lock(pluginMutex());
  std::string file = canonical(path);
  for (const std::string &f : loaded())
    if (f == file) return Error::success();
  void *handle = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char *why = dlerror();
    return Error::make("plugin " + path + ": cannot be loaded: " + (why ? why : "unknown error"));
  }
  using Entry = const PluginInfo *(*)();
  auto entry = reinterpret_cast<Entry>(dlsym(handle, "dtnn_plugin"));
  if (!entry) {
    dlclose(handle);
    return Error::make("plugin " + path + ": has no entry point dtnn_plugin (a plugin defines it "
                       "with DTNN_PLUGIN(name, register) of dtnn/Plugin.h)");
  }
  const PluginInfo *info = entry();
  if (!info || info->apiVersion != DTNN_API_VERSION) {
    int theirs = info ? info->apiVersion : -1;
    dlclose(handle);
    return Error::make("plugin " + path + ": built against dtnn API version " +
                       std::to_string(theirs) + ", but this dtnn (" + versionString() +
                       ") has API version " + std::to_string(DTNN_API_VERSION) +
                       "; rebuild the plugin against this dtnn");
  }
  if (!info->name || !*info->name || !info->registerEntries) {
    dlclose(handle);
    return Error::make("plugin " + path + ": its entry point gives no name or no registration "
                       "function");
  }
  // Kept loaded from here on, even if registering fails: entries it made point into it.
  loaded().push_back(file);
  std::string origin = "plugin " + std::string(info->name) + " (" + path + ")";
  if (Error e = info->registerEntries(origin))
    return Error::make("plugin " + path + ": " + e.message());
  return Error::success();
}

Error loadPlugins(int argc, char **argv) {
  std::vector<std::string> paths;
  if (const char *env = std::getenv("DTNN_PLUGINS")) {
    std::string list = env;
    for (size_t begin = 0; begin <= list.size();) {
      size_t end = list.find(':', begin);
      if (end == std::string::npos) end = list.size();
      if (end > begin) paths.push_back(list.substr(begin, end - begin));
      begin = end + 1;
    }
  }
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--") == 0) break;
    if (std::strcmp(argv[i], "--plugin") == 0 && i + 1 < argc)
      paths.push_back(argv[++i]);
    else if (std::strncmp(argv[i], "--plugin=", 9) == 0)
      paths.push_back(argv[i] + 9);
  }
  for (const std::string &p : paths)
    if (Error e = loadPlugin(p)) return e;
  return Error::success();
}

std::vector<std::string> loadedPlugins() {
  std::lock_guard<std::mutex> lock(pluginMutex());
  return loaded();
}

} // namespace dtnn
