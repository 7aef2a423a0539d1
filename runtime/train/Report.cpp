#include "runtime/train/Report.h"

#include "ir/Attributes.h"

#include <sys/resource.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <iomanip>
#include <sstream>

namespace dtnn::runtime {

namespace {

double nowSeconds() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

bool isWholeNumberKey(const std::string &key) {
  return key == "epoch" || key == "steps" || key == "peak_rss_bytes";
}

// A JSON number; non-finite values become null.
std::string jsonNumber(const std::string &key, double v) {
  if (!std::isfinite(v)) return "null";
  if (isWholeNumberKey(key)) return std::to_string(static_cast<int64_t>(v));
  return ir::formatDouble(v);
}

} // namespace

double EpochRecord::get(const std::string &key) const {
  for (const auto &[k, v] : values)
    if (k == key) return v;
  return std::nan("");
}

int64_t peakRssBytes() {
  struct rusage ru {};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<int64_t>(ru.ru_maxrss) * 1024;
}

void ProgressBar::update(int64_t epoch, int64_t epochs, int64_t step, int64_t steps, double loss,
                         double imagesPerSecond, double dataWait) {
  if (mode_ == ProgressMode::Off) return;
  double now = nowSeconds();
  if (epoch != epoch_) {
    epoch_ = epoch;
    epochStart_ = now;
    startStep_ = step;
    lastDraw_ = now;
    return;
  }
  double interval = mode_ == ProgressMode::Bar ? 0.1 : lineSeconds_;
  if (now - lastDraw_ < interval || (mode_ == ProgressMode::Lines && step == steps)) return;
  lastDraw_ = now;
  double perStep = step > startStep_ ? (now - epochStart_) / double(step - startStep_) : 0;
  std::string left = perStep > 0 ? formatDuration(perStep * double(steps - step)) + " left" : "";
  std::ostringstream line;
  if (mode_ == ProgressMode::Bar) {
    const int width = 30;
    int filled = steps ? static_cast<int>(width * step / steps) : width;
    line << "\repoch " << epoch << "/" << epochs << " [";
    for (int i = 0; i < width; ++i) line << (i < filled ? '=' : i == filled ? '>' : ' ');
    line << "] " << step << "/" << steps;
  } else {
    line << "epoch " << epoch << "/" << epochs << ": step " << step << "/" << steps;
  }
  line << " loss " << std::fixed << std::setprecision(4) << loss;
  if (imagesPerSecond > 0) line << " " << formatRate(imagesPerSecond) << " img/s";
  if (dataWait >= 0.01) line << ", " << int(std::lround(dataWait * 100)) << "% waiting for data";
  if (!left.empty()) line << (mode_ == ProgressMode::Bar ? " " : ", ") << left;
  if (mode_ == ProgressMode::Bar) {
    line << "\033[K";
    drawn_ = true;
  } else {
    line << "\n";
  }
  os_ << line.str() << std::flush;
}

void ProgressBar::clear() {
  if (!drawn_) return;
  os_ << "\r\033[K" << std::flush;
  drawn_ = false;
}

std::string formatDuration(double seconds) {
  auto total = static_cast<int64_t>(seconds + 0.5);
  int64_t h = total / 3600, m = total / 60 % 60, s = total % 60;
  char text[48];
  if (h > 0)
    std::snprintf(text, sizeof text, "%lld:%02lld:%02lld", (long long)h, (long long)m, (long long)s);
  else
    std::snprintf(text, sizeof text, "%lld:%02lld", (long long)m, (long long)s);
  return text;
}

std::string formatRate(double v) {
  std::ostringstream os;
  if (v >= 100)
    os << std::fixed << std::setprecision(0) << v;
  else
    os << std::setprecision(3) << v;
  return os.str();
}

std::string recordValue(const std::string &k, double v) {
  std::ostringstream os;
  if (k.ends_with("_acc") || k.find("_top") != std::string::npos || k == "data_wait")
    os << std::fixed << std::setprecision(2) << 100 * v << "%";
  else if (k == "seconds")
    os << std::fixed << std::setprecision(1) << v;
  else if (k == "images_per_s")
    os << formatRate(v);
  else if (k == "peak_rss_bytes" || k == "steps")
    os << std::fixed << std::setprecision(0) << v;
  else
    os << std::setprecision(5) << v;
  return os.str();
}

std::string epochLine(const EpochRecord &r, int64_t epochs) {
  std::ostringstream os;
  os << "epoch " << r.epoch << "/" << epochs << ":";
  for (const auto &[k, v] : r.values)
    if (k != "epoch") os << " " << k << " " << recordValue(k, v);
  return os.str();
}

Error MetricsWriter::open(const std::string &path, bool append) {
  return out_.open(path, append);
}

Error MetricsWriter::write(const EpochRecord &r) {
  std::string line = "{\"epoch\": " + std::to_string(r.epoch);
  for (const auto &[k, v] : r.values)
    if (k != "epoch") line += ", \"" + k + "\": " + jsonNumber(k, v);
  line += "}\n";
  return out_.append(line);
}

} // namespace dtnn::runtime
