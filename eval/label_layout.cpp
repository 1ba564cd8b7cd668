#include "eval/label_layout.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace sa {

Box text_box(const std::string& text, double x, double y, double size) {
  double chars = 0;
  for (unsigned char c : text) chars += (c & 0xC0) != 0x80;
  return {x, y - 0.8 * size, x + 0.72 * size * chars, y + 0.25 * size};
}

namespace {

Box marker(const LabelRequest& l) { return {l.px - l.radius, l.py - l.radius, l.px + l.radius, l.py + l.radius}; }

// The label's baseline start when its box sits at distance r from the point in direction (c, s):
// to the right of the anchor when c > 0, left of it when c < 0, centred otherwise; likewise above,
// below or centred vertically (s > 0 is up).
std::pair<double, double> baseline_at(const LabelRequest& l, double width, double r, double c, double s) {
  const double ax = l.px + r * c, ay = l.py - r * s;
  const double x = c > 0.3 ? ax : c < -0.3 ? ax - width : ax - width / 2;
  const double top = s > 0.3 ? ay - 1.05 * l.size : s < -0.3 ? ay : ay - 0.525 * l.size;
  return {x, top + 0.8 * l.size};
}

}  // namespace

std::vector<PlacedLabel> place_labels(const std::vector<LabelRequest>& labels, const Box& frame) {
  constexpr double kPad = 2;  // px between labels, and between a label and a marker
  std::vector<Box> taken;
  for (const LabelRequest& l : labels) taken.push_back(marker(l));
  auto free_at = [&](const Box& b) {
    if (!b.inside(frame)) return false;
    return std::none_of(taken.begin(), taken.end(), [&](const Box& t) { return b.overlaps(t, kPad); });
  };
  // Directions tried at each radius: right, left, up, down, then the diagonals and between.
  static const double kAngles[] = {0, 180, 90, 270, 45, 135, 315, 225, 22.5, 157.5, 337.5, 202.5, 67.5, 112.5, 292.5, 247.5};
  std::vector<PlacedLabel> out;
  for (const LabelRequest& l : labels) {
    const double width = text_box(l.text, 0, 0, l.size).x1;
    PlacedLabel p{};
    bool found = false;
    for (double r = l.radius + 2; r <= 240 && !found; r = r < 20 ? r + 6 : r * 1.35)
      for (double deg : kAngles) {
        const double a = deg * M_PI / 180;
        auto [x, y] = baseline_at(l, width, r, std::cos(a), std::sin(a));
        const Box b = text_box(l.text, x, y, l.size);
        if (free_at(b)) {
          p = {x, y, b, r > l.radius + 14, true};
          found = true;
          break;
        }
      }
    if (!found) {  // anywhere in the frame, nearest to the point first
      double best = std::numeric_limits<double>::infinity();
      for (double y = frame.y0 + 0.8 * l.size; y <= frame.y1; y += 4)
        for (double x = frame.x0; x + width <= frame.x1; x += 4) {
          const Box b = text_box(l.text, x, y, l.size);
          const double d = std::hypot((b.x0 + b.x1) / 2 - l.px, (b.y0 + b.y1) / 2 - l.py);
          if (d < best && free_at(b)) best = d, p = {x, y, b, true, true}, found = true;
        }
    }
    if (!found) {  // the picture is full: keep it inside at its point, and say so
      const double x = std::clamp(l.px + l.radius + 2, frame.x0, std::max(frame.x0, frame.x1 - width));
      const double y = std::clamp(l.py + 0.3 * l.size, frame.y0 + 0.8 * l.size, frame.y1 - 0.25 * l.size);
      p = {x, y, text_box(l.text, x, y, l.size), false, false};
    }
    taken.push_back(p.box);
    out.push_back(p);
  }
  return out;
}

}  // namespace sa
