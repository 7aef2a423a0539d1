// The version of dtnn, for programs and plugins built against libdtnn. The top CMakeLists.txt
// refuses to configure when these numbers differ from its project version.
#pragma once

// The release: major.minor.
#define DTNN_VERSION_MAJOR 0
#define DTNN_VERSION_MINOR 1

// The version of the extension API (registries and the types they take): raised whenever a
// change to them would break a library built against an older libdtnn. Plugins report the one
// they were built with, and libdtnn refuses any other.
#define DTNN_API_VERSION 1

namespace dtnn {

// The release of the libdtnn this program runs with, as "major.minor".
const char *versionString();

// The extension API version of the libdtnn this program runs with (DTNN_API_VERSION when it
// was built).
int apiVersion();

} // namespace dtnn
