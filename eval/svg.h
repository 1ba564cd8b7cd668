// A small SVG writer for our figures (bin/senses plot, bin/runs plot): white background,
// sans-serif text, escaped labels, written atomically.
#pragma once
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace sa {

std::string xml_escape(const std::string& s);

class SvgWriter {
 public:
  SvgWriter(double width, double height);
  // `attributes`: further SVG attributes as written, e.g. "font-weight=\"bold\"".
  void text(double x, double y, const std::string& s, double size, const std::string& colour = "black",
            const std::string& attributes = "");
  void line(double x1, double y1, double x2, double y2, const std::string& colour, double width = 1,
            const std::string& attributes = "");
  void polyline(const std::vector<std::pair<double, double>>& points, const std::string& colour, double width = 1.5,
                const std::string& attributes = "");
  void circle(double cx, double cy, double r, const std::string& colour);
  void rect(double x, double y, double w, double h, const std::string& fill, const std::string& attributes = "");
  // The whole document; save writes it to path atomically.
  std::string str() const;
  void save(const std::string& path) const;

 private:
  std::ostringstream body_;
  double width_, height_;
};

// Up to about `n` round tick values (1, 2 or 5 times a power of ten) covering [lo, hi].
std::vector<double> nice_ticks(double lo, double hi, int n = 5);

}  // namespace sa
