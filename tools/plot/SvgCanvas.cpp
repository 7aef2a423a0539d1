// The SVG canvas: elements appended as text, numbers with two decimals, text escaped for XML.
#include "tools/plot/Canvas.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

namespace dtnn::plot {

namespace {

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", v);
  return buf;
}

std::string colour(const Colour &c) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "#%02x%02x%02x", int(c.r * 255 + 0.5), int(c.g * 255 + 0.5),
                int(c.b * 255 + 0.5));
  return buf;
}

std::string escaped(const std::string &s) {
  std::string out;
  for (char c : s) {
    switch (c) {
    case '&': out += "&amp;"; break;
    case '<': out += "&lt;"; break;
    case '>': out += "&gt;"; break;
    case '"': out += "&quot;"; break;
    default: out += c;
    }
  }
  return out;
}

std::string strokeAttrs(const Stroke &s) {
  return " stroke=\"" + colour(s.colour) + "\" stroke-width=\"" + num(s.width) + "\"" +
         (s.dashed ? " stroke-dasharray=\"6,4\"" : "") + " fill=\"none\"";
}

class SvgCanvas : public Canvas {
public:
  SvgCanvas(int w, int h) {
    body_ << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << w << "\" height=\"" << h
          << "\" viewBox=\"0 0 " << w << " " << h << "\" font-family=\"DejaVu Sans, sans-serif\">\n"
          << "<rect x=\"0\" y=\"0\" width=\"" << w << "\" height=\"" << h << "\" fill=\"#ffffff\"/>\n";
  }
  void line(double x0, double y0, double x1, double y1, const Stroke &s) override {
    body_ << "<line x1=\"" << num(x0) << "\" y1=\"" << num(y0) << "\" x2=\"" << num(x1)
          << "\" y2=\"" << num(y1) << "\"" << strokeAttrs(s) << "/>\n";
  }
  void polyline(const std::vector<std::pair<double, double>> &points, const Stroke &s) override {
    body_ << "<polyline points=\"";
    for (size_t i = 0; i < points.size(); ++i)
      body_ << (i ? " " : "") << num(points[i].first) << "," << num(points[i].second);
    body_ << "\"" << strokeAttrs(s) << "/>\n";
  }
  void rect(double x, double y, double w, double h, const Stroke &s) override {
    body_ << "<rect x=\"" << num(x) << "\" y=\"" << num(y) << "\" width=\"" << num(w)
          << "\" height=\"" << num(h) << "\"" << strokeAttrs(s) << "/>\n";
  }
  void text(double x, double y, const std::string &s, double size, Anchor a,
            bool rotated) override {
    const char *anchor = a == Anchor::Start ? "start" : a == Anchor::Middle ? "middle" : "end";
    body_ << "<text x=\"" << num(x) << "\" y=\"" << num(y) << "\" font-size=\"" << num(size)
          << "\" text-anchor=\"" << anchor << "\"";
    if (rotated) body_ << " transform=\"rotate(-90 " << num(x) << " " << num(y) << ")\"";
    body_ << ">" << escaped(s) << "</text>\n";
  }
  std::string save(const std::string &path) override {
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    f << body_.str() << "</svg>\n";
    f.close();
    if (!f) return "cannot write '" + path + "': " + std::strerror(errno);
    return "";
  }

private:
  std::ostringstream body_;
};

} // namespace

std::unique_ptr<Canvas> makeSvgCanvas(int w, int h) { return std::make_unique<SvgCanvas>(w, h); }

} // namespace dtnn::plot
