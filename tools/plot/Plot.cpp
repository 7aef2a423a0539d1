// dtnn-plot: the loss, the accuracy and the learning rate of one or more training runs per
// epoch, from their `dtnn-run --metrics` files, as an SVG or a PNG:
//
//   dtnn-plot sgd.jsonl adam.jsonl -o runs.svg [--label SGD --label Adam] [--title TEXT]
//
// Three panels side by side share the epoch axis. Each run has a colour of its own and one
// legend entry; training values are solid lines, test (or validation) values dashed.
#include "tools/plot/Canvas.h"
#include "tools/plot/Metrics.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <iostream>

namespace dtnn::plot {

namespace {

constexpr int kUsageError = 2, kInputError = 1;

// Distinct colours (Tableau 10), reused past ten runs.
const Colour kColours[] = {{0.12, 0.47, 0.71}, {1.00, 0.50, 0.05}, {0.17, 0.63, 0.17},
                           {0.84, 0.15, 0.16}, {0.58, 0.40, 0.74}, {0.55, 0.34, 0.29},
                           {0.89, 0.47, 0.76}, {0.50, 0.50, 0.50}, {0.74, 0.74, 0.13},
                           {0.09, 0.75, 0.81}};

int usage(const std::string &msg) {
  std::cerr << "dtnn-plot: error: " << msg << "\n"
            << "usage: dtnn-plot RUN.jsonl... -o FILE.svg|FILE.png [--label NAME]... [--title TEXT]\n";
  return kUsageError;
}

// A panel: what it plots and its place.
struct Panel {
  const char *title, *axis;
  std::vector<std::string> trainKeys, testKeys; // the first key a run has is plotted
  double scale;                                 // value * scale is drawn (accuracy in %)
  double x, y, w, h;
};

// Tick values for [lo, hi]: steps of 1, 2 or 5 times a power of ten, about five of them.
std::vector<double> ticks(double lo, double hi) {
  double span = hi - lo;
  if (!(span > 0)) span = std::abs(hi) > 0 ? std::abs(hi) : 1;
  double raw = span / 5, power = std::pow(10.0, std::floor(std::log10(raw)));
  double step = power;
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (m * power >= raw) {
      step = m * power;
      break;
    }
  std::vector<double> out;
  for (double t = std::ceil(lo / step) * step; t <= hi + step * 1e-9; t += step)
    out.push_back(std::abs(t) < step * 1e-9 ? 0 : t);
  return out;
}

std::string label(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

const std::string *firstKey(const Run &r, const std::vector<std::string> &keys) {
  for (const std::string &k : keys)
    if (std::any_of(r.epochs.begin(), r.epochs.end(), [&](const auto &e) { return e.count(k); }))
      return &k;
  return nullptr;
}

void drawPanel(Canvas &c, const Panel &p, const std::vector<Run> &runs, double maxEpoch) {
  // The value range over every run's lines.
  double lo = INFINITY, hi = -INFINITY;
  for (const Run &r : runs)
    for (const auto *keys : {&p.trainKeys, &p.testKeys})
      if (const std::string *k = firstKey(r, *keys))
        for (const auto &e : r.epochs)
          if (auto it = e.find(*k); it != e.end() && std::isfinite(it->second)) {
            lo = std::min(lo, it->second * p.scale);
            hi = std::max(hi, it->second * p.scale);
          }
  if (!std::isfinite(lo)) lo = 0, hi = 1;
  double pad = (hi - lo) * 0.05;
  if (pad <= 0) pad = std::max(std::abs(hi) * 0.05, 1e-6);
  lo -= pad, hi += pad;
  double x0 = 1, x1 = std::max(2.0, maxEpoch);
  auto px = [&](double epoch) { return p.x + (epoch - x0) / (x1 - x0) * p.w; };
  auto py = [&](double v) { return p.y + p.h - (v - lo) / (hi - lo) * p.h; };
  Stroke frame{{0.2, 0.2, 0.2}, 1, false}, grid{{0.88, 0.88, 0.88}, 1, false};
  for (double t : ticks(lo, hi)) {
    c.line(p.x, py(t), p.x + p.w, py(t), grid);
    c.text(p.x - 6, py(t) + 4, label(t), 11, Anchor::End);
  }
  for (double t : ticks(x0, x1)) {
    if (t != std::floor(t)) continue; // whole epochs
    c.line(px(t), p.y + p.h, px(t), p.y + p.h + 4, frame);
    c.text(px(t), p.y + p.h + 17, label(t), 11, Anchor::Middle);
  }
  c.rect(p.x, p.y, p.w, p.h, frame);
  c.text(p.x + p.w / 2, p.y - 10, p.title, 14, Anchor::Middle);
  c.text(p.x + p.w / 2, p.y + p.h + 34, "epoch", 12, Anchor::Middle);
  c.text(p.x - 48, p.y + p.h / 2, p.axis, 12, Anchor::Middle, true);
  for (size_t i = 0; i < runs.size(); ++i) {
    const Colour &colour = kColours[i % (sizeof kColours / sizeof kColours[0])];
    for (bool test : {false, true}) {
      const std::string *k = firstKey(runs[i], test ? p.testKeys : p.trainKeys);
      if (!k) continue;
      std::vector<std::pair<double, double>> points;
      for (const auto &e : runs[i].epochs)
        if (auto it = e.find(*k); it != e.end() && std::isfinite(it->second))
          points.push_back({px(e.at("epoch")), py(it->second * p.scale)});
      c.polyline(points, Stroke{colour, 2, test});
    }
  }
}

// The file's extension, lower-cased.
std::string extension(const std::string &path) {
  size_t dot = path.rfind('.');
  if (dot == std::string::npos || path.find('/', dot) != std::string::npos) return "";
  std::string e = path.substr(dot + 1);
  for (char &ch : e) ch = char(std::tolower(static_cast<unsigned char>(ch)));
  return e;
}

// The legend's name of a run read from `path`: the file's name without its folder and
// extension.
std::string runName(const std::string &path) {
  std::string base = path.substr(path.rfind('/') == std::string::npos ? 0 : path.rfind('/') + 1);
  size_t dot = base.rfind('.');
  return dot == std::string::npos || dot == 0 ? base : base.substr(0, dot);
}

} // namespace

int plotMain(int argc, char **argv) {
  std::vector<std::string> files, labels;
  std::string out, title;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&](const char *flag) -> const char * {
      if (a == flag) return i + 1 < argc ? argv[++i] : nullptr;
      std::string prefix = std::string(flag) + "=";
      if (a.compare(0, prefix.size(), prefix) == 0) return argv[i] + prefix.size();
      return nullptr;
    };
    if (a == "--help" || a == "-h") {
      std::cout << "usage: dtnn-plot RUN.jsonl... -o FILE.svg|FILE.png [--label NAME]... "
                   "[--title TEXT]\n\nDraws the loss, accuracy and learning rate per epoch of "
                   "the runs whose dtnn-run --metrics files are given, one legend entry a run "
                   "(--label names them in order; default: the file's name).\n";
      return 0;
    }
    if (a == "-o" || a.rfind("-o=", 0) == 0 || a == "--output" || a.rfind("--output=", 0) == 0) {
      const char *v = a[1] == 'o' ? value("-o") : value("--output");
      if (!v) return usage("-o needs a file name");
      out = v;
    } else if (a == "--label" || a.rfind("--label=", 0) == 0) {
      const char *v = value("--label");
      if (!v) return usage("--label needs a name");
      labels.push_back(v);
    } else if (a == "--title" || a.rfind("--title=", 0) == 0) {
      const char *v = value("--title");
      if (!v) return usage("--title needs a text");
      title = v;
    } else if (!a.empty() && a[0] == '-') {
      return usage("unknown option '" + a + "'");
    } else {
      files.push_back(a);
    }
  }
  if (files.empty()) return usage("no metrics file given");
  if (out.empty()) return usage("-o FILE.svg or -o FILE.png is required");
  std::string kind = extension(out);
  if (kind != "svg" && kind != "png")
    return usage("-o " + out + ": the output's name must end in .svg or .png");
  if (!labels.empty() && labels.size() != files.size())
    return usage(std::to_string(labels.size()) + " --label for " + std::to_string(files.size()) +
                 " runs: give one a run, or none");
  std::vector<Run> runs(files.size());
  double maxEpoch = 1;
  for (size_t i = 0; i < files.size(); ++i) {
    if (std::string e = readRun(files[i], runs[i]); !e.empty()) {
      std::cerr << "dtnn-plot: error: " << e << "\n";
      return kInputError;
    }
    runs[i].name = labels.empty() ? runName(files[i]) : labels[i];
    for (const auto &e : runs[i].epochs) maxEpoch = std::max(maxEpoch, e.at("epoch"));
  }

  const int kPanelW = 340, kPanelH = 240, kLeft = 70, kGap = 80, kTop = title.empty() ? 40 : 70;
  const int legendRows = int(runs.size()) + 1;
  const int width = kLeft + 3 * kPanelW + 2 * kGap + 30;
  const int height = kTop + kPanelH + 60 + 20 * legendRows + 20;
  std::unique_ptr<Canvas> c = kind == "svg" ? makeSvgCanvas(width, height) : makePngCanvas(width, height);
  if (!title.empty()) c->text(width / 2.0, 30, title, 16, Anchor::Middle);
  Panel panels[] = {
      {"loss", "loss", {"train_loss"}, {"test_loss", "val_loss"}, 1, 0, 0, 0, 0},
      {"accuracy", "accuracy (%)", {"train_acc"}, {"test_acc", "val_acc"}, 100, 0, 0, 0, 0},
      {"learning rate", "learning rate", {"lr"}, {}, 1, 0, 0, 0, 0}};
  for (int k = 0; k < 3; ++k) {
    panels[k].x = kLeft + k * (kPanelW + kGap);
    panels[k].y = kTop;
    panels[k].w = kPanelW;
    panels[k].h = kPanelH;
    drawPanel(*c, panels[k], runs, maxEpoch);
  }
  // The legend: a line of each run's colour and its name; then the line styles.
  double ly = kTop + kPanelH + 70;
  for (size_t i = 0; i < runs.size(); ++i, ly += 20) {
    const Colour &colour = kColours[i % (sizeof kColours / sizeof kColours[0])];
    c->line(kLeft, ly - 4, kLeft + 30, ly - 4, Stroke{colour, 3, false});
    c->text(kLeft + 40, ly, runs[i].name, 12, Anchor::Start);
  }
  c->line(kLeft, ly - 4, kLeft + 30, ly - 4, Stroke{{0.3, 0.3, 0.3}, 2, false});
  c->text(kLeft + 40, ly, "training", 12, Anchor::Start);
  c->line(kLeft + 130, ly - 4, kLeft + 160, ly - 4, Stroke{{0.3, 0.3, 0.3}, 2, true});
  c->text(kLeft + 170, ly, "test (or validation)", 12, Anchor::Start);
  if (std::string e = c->save(out); !e.empty()) {
    std::cerr << "dtnn-plot: error: " << e << "\n";
    return kInputError;
  }
  return 0;
}

} // namespace dtnn::plot
