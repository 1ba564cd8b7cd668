#include "eval/svg.h"

#include <cmath>

#include "data/atomic_file.h"

namespace sa {

std::string xml_escape(const std::string& s) {
  std::string o;
  for (char ch : s) o += ch == '<' ? "&lt;" : ch == '>' ? "&gt;" : ch == '&' ? "&amp;" : ch == '"' ? "&quot;" : std::string(1, ch);
  return o;
}

SvgWriter::SvgWriter(double width, double height) : width_(width), height_(height) {
  body_ << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
}

void SvgWriter::text(double x, double y, const std::string& s, double size, const std::string& colour,
                     const std::string& attributes) {
  body_ << "<text x=\"" << x << "\" y=\"" << y << "\" font-size=\"" << size << "\" fill=\"" << colour << "\""
        << (attributes.empty() ? "" : " ") << attributes << ">" << xml_escape(s) << "</text>\n";
}

void SvgWriter::line(double x1, double y1, double x2, double y2, const std::string& colour, double width,
                     const std::string& attributes) {
  body_ << "<line x1=\"" << x1 << "\" y1=\"" << y1 << "\" x2=\"" << x2 << "\" y2=\"" << y2 << "\" stroke=\"" << colour
        << "\" stroke-width=\"" << width << "\"" << (attributes.empty() ? "" : " ") << attributes << "/>\n";
}

void SvgWriter::polyline(const std::vector<std::pair<double, double>>& points, const std::string& colour, double width,
                         const std::string& attributes) {
  body_ << "<polyline fill=\"none\" stroke=\"" << colour << "\" stroke-width=\"" << width << "\""
        << (attributes.empty() ? "" : " ") << attributes << " points=\"";
  for (const auto& [x, y] : points) body_ << x << "," << y << " ";
  body_ << "\"/>\n";
}

void SvgWriter::circle(double cx, double cy, double r, const std::string& colour) {
  body_ << "<circle cx=\"" << cx << "\" cy=\"" << cy << "\" r=\"" << r << "\" fill=\"" << colour << "\"/>\n";
}

void SvgWriter::rect(double x, double y, double w, double h, const std::string& fill, const std::string& attributes) {
  body_ << "<rect x=\"" << x << "\" y=\"" << y << "\" width=\"" << w << "\" height=\"" << h << "\" fill=\"" << fill
        << "\"" << (attributes.empty() ? "" : " ") << attributes << "/>\n";
}

std::string SvgWriter::str() const {
  std::ostringstream o;
  o << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << width_ << "\" height=\"" << height_
    << "\" font-family=\"sans-serif\">\n"
    << body_.str() << "</svg>\n";
  return o.str();
}

void SvgWriter::save(const std::string& path) const { write_file_atomically(path, str()); }

std::vector<double> nice_ticks(double lo, double hi, int n) {
  if (!(hi > lo)) return {lo};
  const double raw = (hi - lo) / std::max(n, 1), mag = std::pow(10.0, std::floor(std::log10(raw)));
  double step = mag;
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (m * mag >= raw) {
      step = m * mag;
      break;
    }
  std::vector<double> out;
  const double first = std::ceil(lo / step - 1e-9);
  for (int i = 0; i <= 4 * n + 2; ++i) {  // an index, not v += step: a step below the spacing of v would never end
    const double v = (first + i) * step;
    if (v > hi + step * 1e-9) break;
    out.push_back(std::abs(v) < step * 1e-9 ? 0 : v);
  }
  return out;
}

}  // namespace sa
