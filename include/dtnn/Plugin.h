// Plugins: shared libraries that add ops with their gradient rules and kernels, passes,
// optimizers, losses, metrics, data sources or schedules to dtnn when a program loads them
// (`dtnnc --plugin LIB.so`, `dtnn-run --plugin LIB.so`, or $DTNN_PLUGINS). A plugin is built
// against an installed libdtnn (find_package(dtnn)) and registers through the same registries as
// dtnn's own entries (dtnn/Registry.h); it exports one entry point, which DTNN_PLUGIN defines:
//
//   dtnn::Error registerMine(const std::string &origin) {
//     return dtnn::passes::registerPass([] { return std::make_unique<MyPass>(); }, origin);
//   }
//   DTNN_PLUGIN("my-pass", registerMine)
//
// The entry point reports the extension API version the plugin was built against
// (DTNN_API_VERSION); a libdtnn of another version refuses the plugin, naming both, before the
// plugin registers anything.
#pragma once

#include "dtnn/Error.h"
#include "dtnn/Version.h"

#include <string>
#include <vector>

namespace dtnn {

// What a plugin's entry point `dtnn_plugin` returns. apiVersion is the first member in every
// version of this struct, so that any libdtnn can read it.
struct PluginInfo {
  int apiVersion;   // DTNN_API_VERSION when the plugin was built
  const char *name; // the plugin's name: the origin of its entries, in catalogues and errors
  // Registers the plugin's entries, each with `origin` (its name and file); returns the first
  // failure.
  Error (*registerEntries)(const std::string &origin);
};

// Loads the plugin at `path` (a path, or a file name the dynamic loader searches for) and
// registers its entries. Loading the same file again does nothing. Errors name the file: one
// that cannot be loaded, that has no entry point, that was built for another API version, or
// whose entries clash with registered ones (naming both registrants).
Error loadPlugin(const std::string &path);

// The plugins of $DTNN_PLUGINS (paths separated by ':') and of the `--plugin LIB` and
// `--plugin=LIB` arguments of argv (in that order), loaded as loadPlugin does.
Error loadPlugins(int argc, char **argv);

// The files of the plugins loaded so far, in load order.
std::vector<std::string> loadedPlugins();

} // namespace dtnn

// Defines the entry point of a plugin named NAME whose entries REGISTER (an
// Error(const std::string &origin) function) registers.
#define DTNN_PLUGIN(NAME, REGISTER)                                                             \
  extern "C" __attribute__((visibility("default"))) const ::dtnn::PluginInfo *dtnn_plugin() {  \
    static const ::dtnn::PluginInfo info{DTNN_API_VERSION, NAME, REGISTER};                     \
    return &info;                                                                               \
  }
