// Places the text labels of a scatter plot (bin/senses plot) so that no two labels overlap, no
// label covers a point, and every label lies inside the picture. Greedy, in the given order (the
// important labels first): each label takes the first free spot on rings of growing radius around
// its point; a label moved far from its point gets a leader line.
#pragma once
#include <string>
#include <vector>

namespace sa {

struct Box {
  double x0, y0, x1, y1;  // left, top, right, bottom (SVG coordinates: y grows downward)
  bool overlaps(const Box& o, double pad = 0) const {
    return x0 < o.x1 + pad && o.x0 < x1 + pad && y0 < o.y1 + pad && o.y0 < y1 + pad;
  }
  bool inside(const Box& o) const { return x0 >= o.x0 && y0 >= o.y0 && x1 <= o.x1 && y1 <= o.y1; }
};

// The box of `text` drawn at baseline (x, y) in a sans-serif font of `size` px. The width is an
// upper estimate (0.72 em per character, what DejaVu Sans Bold needs; UTF-8 continuation bytes
// are not counted), so real glyphs stay inside it.
Box text_box(const std::string& text, double x, double y, double size);

struct LabelRequest {
  double px, py;      // the point
  std::string text;
  double size;        // font size, px
  double radius;      // the point's marker radius
};

struct PlacedLabel {
  double x, y;          // text baseline start
  Box box;
  bool leader = false;  // drawn away from its point: connect them with a line
  bool fits = true;     // false only when no free spot was left anywhere in the picture
};

// `frame`: where labels may go (the picture minus its title). Every point's marker is kept free.
std::vector<PlacedLabel> place_labels(const std::vector<LabelRequest>& labels, const Box& frame);

}  // namespace sa
