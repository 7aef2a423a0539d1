// A plugin that says it was built against another extension API version than this dtnn's: its
// entry point is written out rather than made by DTNN_PLUGIN, which would report the version
// it is compiled with. libdtnn refuses it before calling its registration function, which would
// fail the run if it were called.
#include "dtnn/Plugin.h"

namespace {

dtnn::Error registerNothing(const std::string &) {
  return dtnn::Error::make("the registration function of a refused plugin was called");
}

} // namespace

extern "C" __attribute__((visibility("default"))) const dtnn::PluginInfo *dtnn_plugin() {
  static const dtnn::PluginInfo info{DTNN_API_VERSION + 1, "wrong-version", registerNothing};
  return &info;
}
