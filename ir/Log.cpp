// The logger (see Log.h). Lines are written whole under a lock, so that threads' lines do not
// interleave.
#include "ir/Log.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

namespace dtnn::log {

namespace {

Level readLevel() {
  const char *v = std::getenv("DTNN_LOG");
  if (!v || !*v || std::strcmp(v, "off") == 0 || std::strcmp(v, "0") == 0) return Level::Off;
  if (std::strcmp(v, "info") == 0) return Level::Info;
  if (std::strcmp(v, "debug") == 0) return Level::Debug;
  if (std::strcmp(v, "trace") == 0) return Level::Trace;
  std::fprintf(stderr, "dtnn: warning: DTNN_LOG=%s is not off, info, debug or trace; logging "
                       "stays off\n", v);
  return Level::Off;
}

const char *levelName(Level l) {
  switch (l) {
  case Level::Info: return "info";
  case Level::Debug: return "debug";
  case Level::Trace: return "trace";
  case Level::Off: break;
  }
  return "off";
}

std::atomic<int> rank{-1};

} // namespace

namespace detail {
const Level current = readLevel();
} // namespace detail

void setRank(int r) { rank = r; }

void write(Level l, std::string_view component, std::string_view message) {
  static std::mutex mutex;
  std::string prefix = std::string("dtnn[") + levelName(l) + "] ";
  if (int r = rank.load(); r >= 0) prefix += "rank " + std::to_string(r) + " ";
  prefix += std::string(component) + ": ";
  std::string text;
  for (size_t begin = 0; begin <= message.size();) {
    size_t end = message.find('\n', begin);
    if (end == std::string_view::npos) end = message.size();
    if (end > begin || begin == 0) text += prefix + std::string(message.substr(begin, end - begin)) + "\n";
    begin = end + 1;
  }
  std::lock_guard<std::mutex> lock(mutex);
  std::fwrite(text.data(), 1, text.size(), stderr);
}

} // namespace dtnn::log
