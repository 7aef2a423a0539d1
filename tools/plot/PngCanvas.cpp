// The PNG canvas: Cairo's image surface, antialiased, text in Cairo's toy font API (a sans-serif
// face), written with cairo_surface_write_to_png.
#include "tools/plot/Canvas.h"

#include <cairo.h>

namespace dtnn::plot {

namespace {

class PngCanvas : public Canvas {
public:
  PngCanvas(int w, int h)
      : surface_(cairo_image_surface_create(CAIRO_FORMAT_RGB24, w, h)), cr_(cairo_create(surface_)) {
    cairo_set_source_rgb(cr_, 1, 1, 1);
    cairo_paint(cr_);
    cairo_select_font_face(cr_, "DejaVu Sans", CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_NORMAL);
  }
  ~PngCanvas() override {
    cairo_destroy(cr_);
    cairo_surface_destroy(surface_);
  }
  void line(double x0, double y0, double x1, double y1, const Stroke &s) override {
    cairo_move_to(cr_, x0, y0);
    cairo_line_to(cr_, x1, y1);
    stroke(s);
  }
  void polyline(const std::vector<std::pair<double, double>> &points, const Stroke &s) override {
    if (points.empty()) return;
    cairo_move_to(cr_, points[0].first, points[0].second);
    for (size_t i = 1; i < points.size(); ++i) cairo_line_to(cr_, points[i].first, points[i].second);
    stroke(s);
  }
  void rect(double x, double y, double w, double h, const Stroke &s) override {
    cairo_rectangle(cr_, x, y, w, h);
    stroke(s);
  }
  void text(double x, double y, const std::string &s, double size, Anchor a,
            bool rotated) override {
    cairo_save(cr_);
    cairo_set_font_size(cr_, size);
    cairo_text_extents_t ext;
    cairo_text_extents(cr_, s.c_str(), &ext);
    double shift = a == Anchor::Start ? 0 : a == Anchor::Middle ? ext.x_advance / 2 : ext.x_advance;
    cairo_translate(cr_, x, y);
    if (rotated) cairo_rotate(cr_, -3.14159265358979323846 / 2);
    cairo_move_to(cr_, -shift, 0);
    cairo_set_source_rgb(cr_, 0, 0, 0);
    cairo_show_text(cr_, s.c_str());
    cairo_restore(cr_);
  }
  std::string save(const std::string &path) override {
    cairo_surface_flush(surface_);
    cairo_status_t st = cairo_surface_write_to_png(surface_, path.c_str());
    if (st != CAIRO_STATUS_SUCCESS)
      return "cannot write '" + path + "': " + cairo_status_to_string(st);
    return "";
  }

private:
  void stroke(const Stroke &s) {
    cairo_set_source_rgb(cr_, s.colour.r, s.colour.g, s.colour.b);
    cairo_set_line_width(cr_, s.width);
    double dash[] = {6, 4};
    cairo_set_dash(cr_, dash, s.dashed ? 2 : 0, 0);
    cairo_stroke(cr_);
  }
  cairo_surface_t *surface_;
  cairo_t *cr_;
};

} // namespace

std::unique_ptr<Canvas> makePngCanvas(int w, int h) { return std::make_unique<PngCanvas>(w, h); }

} // namespace dtnn::plot
