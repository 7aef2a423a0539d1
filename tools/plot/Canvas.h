// What dtnn-plot draws with: lines, polylines, rectangles and text on a canvas of pixels, with
// two implementations: SVG written as text (the legend's and axes' words stay text, which
// readers and tests can search) and a PNG rasterized by Cairo.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace dtnn::plot {

struct Colour {
  double r, g, b;
};

struct Stroke {
  Colour colour{0, 0, 0};
  double width = 1;
  bool dashed = false;
};

enum class Anchor { Start, Middle, End };

class Canvas {
public:
  virtual ~Canvas() = default;
  virtual void line(double x0, double y0, double x1, double y1, const Stroke &s) = 0;
  virtual void polyline(const std::vector<std::pair<double, double>> &points, const Stroke &s) = 0;
  virtual void rect(double x, double y, double w, double h, const Stroke &s) = 0;
  // Text with its baseline at y; rotated: read bottom to top (a vertical axis's label).
  virtual void text(double x, double y, const std::string &s, double size, Anchor a,
                    bool rotated = false) = 0;
  // Writes the drawing to `path`; returns an error message or "".
  virtual std::string save(const std::string &path) = 0;
};

// A canvas of w x h pixels on a white background.
std::unique_ptr<Canvas> makeSvgCanvas(int w, int h);
std::unique_ptr<Canvas> makePngCanvas(int w, int h);

} // namespace dtnn::plot
