// What bin/senses shows: label layout without overlaps, neighbours only among selected senses, and
// identical rows of a word shown as one.
#include <gtest/gtest.h>

#include "tests/test_util.h"

#include <random>
#include <set>

#include "eval/alignment.h"
#include "eval/label_layout.h"
#include "eval/sense_neighbours.h"

namespace sa {
namespace {

void expect_clean_layout(const std::vector<LabelRequest>& req, const std::vector<PlacedLabel>& out, const Box& frame) {
  ASSERT_EQ(out.size(), req.size());
  for (size_t i = 0; i < out.size(); ++i) {
    EXPECT_TRUE(out[i].fits) << req[i].text;
    EXPECT_TRUE(out[i].box.inside(frame)) << req[i].text << " leaves the picture";
    // The drawn text's box is the one checked.
    const Box b = text_box(req[i].text, out[i].x, out[i].y, req[i].size);
    EXPECT_DOUBLE_EQ(b.x1, out[i].box.x1);
    for (size_t j = 0; j < out.size(); ++j) {
      if (j != i) {
        EXPECT_FALSE(out[i].box.overlaps(out[j].box)) << req[i].text << " overlaps " << req[j].text;
      }
      const LabelRequest& p = req[j];
      EXPECT_FALSE(out[i].box.overlaps({p.px - p.radius, p.py - p.radius, p.px + p.radius, p.py + p.radius}))
          << req[i].text << " covers the point of " << p.text;
    }
  }
}

// The layout of the issue's picture: several labels on one spot (identical rows drawn apart),
// long labels at the right edge, and a dense cloud.
TEST(LabelLayout, NoOverlapsAndInsideThePicture) {
  const Box frame{4, 44, 956, 716};
  std::vector<LabelRequest> req;
  for (int s = 1; s <= 5; ++s) req.push_back({500, 300, "bank#" + std::to_string(s), 15, 7});
  for (int i = 0; i < 5; ++i) req.push_back({806, 100 + 10.0 * i, "Dickson#1,2,3,4,5", 11, 4});
  std::mt19937_64 rng(3);
  std::normal_distribution<double> n(0, 40);
  for (int i = 0; i < 30; ++i) req.push_back({480 + n(rng), 400 + n(rng), "neighbour" + std::to_string(i) + "#2", 11, 4});
  req.push_back({955, 715, "corner#1", 11, 4});
  const std::vector<PlacedLabel> out = place_labels(req, frame);
  expect_clean_layout(req, out, frame);
  EXPECT_LT(out[0].box.x0 - 500, 40) << "an uncrowded label stays next to its point";
}

TEST(LabelLayout, FullPictureSaysSo) {
  const Box frame{0, 0, 120, 40};
  std::vector<LabelRequest> req;
  for (int i = 0; i < 12; ++i) req.push_back({60, 20, "long label " + std::to_string(i), 11, 2});
  const std::vector<PlacedLabel> out = place_labels(req, frame);
  EXPECT_TRUE(out[0].fits);
  EXPECT_FALSE(out.back().fits);
  for (const PlacedLabel& p : out) EXPECT_TRUE(p.box.inside(frame));
}

// Word 0: senses 1 and 2 chosen, 3 never (a copy of 1). Word 1: only sense 1 chosen; its senses 2
// and 3 are identical copies. Word 2: never chosen at all.
struct Head {
  SenseOptions o;
  SenseHead h;
  Head() : o(make()), h(3, o, 4, 5, Device::cpu()) {
    h.table.end_warmup(false);
    std::vector<double> w(static_cast<size_t>(h.table.rows() * 4));
    for (size_t i = 0; i < w.size(); ++i) w[i] = std::sin(1.3 * static_cast<double>(i) + 0.2);
    auto copy_row = [&](int from, int to) { std::copy_n(w.begin() + from * 4, 4, w.begin() + to * 4); };
    copy_row(h.table.row(0, 1), h.table.row(0, 3));
    copy_row(h.table.row(1, 2), h.table.row(1, 3));
    h.table.W.copy_from(Tensor::of(w, {h.table.rows(), 4}));
    h.usage.record({h.table.row(0, 1), h.table.row(0, 2), h.table.row(0, 1), h.table.row(1, 1)}, 4);
  }
  static SenseOptions make() {
    SenseOptions o;
    o.n_context = 4, o.cluster_proj_dim = 2;
    return o;
  }
};

TEST(SenseNeighbours, OnlySelectedSensesAreCandidates) {
  Head f;
  const SenseTable& t = f.h.table;
  std::vector<uint8_t> c = neighbour_candidates(f.h, 1);
  std::vector<int32_t> rows;
  for (int32_t r = 0; r < t.rows(); ++r)
    if (c[r]) rows.push_back(r);
  EXPECT_EQ(rows, (std::vector<int32_t>{t.row(0, 1), t.row(0, 2), t.row(1, 1)}));
  c = neighbour_candidates(f.h, 2);
  EXPECT_EQ(std::count(c.begin(), c.end(), 1), 1);  // only word 0's sense 1, chosen twice
  c = neighbour_candidates(f.h, 1, 2);  // words with 2 or more selections: word 0 (3), not word 1 (1)
  EXPECT_EQ(std::count(c.begin(), c.end(), 1), 2);
  EXPECT_TRUE(c[t.row(0, 1)] && c[t.row(0, 2)]);
  c = neighbour_candidates(f.h, 0);
  EXPECT_EQ(std::count(c.begin(), c.end(), 1), 9);  // every enabled row: senses 1-3 of three words
  // Word 2's neighbours among all enabled rows: each word's identical pair comes as one.
  const Tensor unit = unit_rows(t.W);
  std::set<std::vector<int32_t>> pairs;
  const auto groups = nearest_sense_groups(t, unit, t.row(2, 1), 8, c);
  EXPECT_EQ(groups.size(), 4u);  // six rows of words 0 and 1, two pairs collapsed
  for (const auto& g : groups) {
    for (int32_t r : g) EXPECT_NE(r / 4, 2) << "a word is not its own neighbour";
    if (g.size() == 2) pairs.insert(g);
  }
  EXPECT_EQ(pairs, (std::set<std::vector<int32_t>>{{t.row(0, 1), t.row(0, 3)}, {t.row(1, 2), t.row(1, 3)}}));
  // With the default (selected senses only) word 0's never-chosen copy is not shown.
  for (const auto& g : nearest_sense_groups(t, unit, t.row(2, 1), 8, neighbour_candidates(f.h, 1)))
    for (int32_t r : g) EXPECT_TRUE(r == t.row(0, 1) || r == t.row(0, 2) || r == t.row(1, 1)) << r;
}

TEST(SenseNeighbours, IdenticalRowsOfOneWordCollapse) {
  Head f;
  const SenseTable& t = f.h.table;
  const Tensor unit = unit_rows(t.W);
  const auto g = collapse_identical({t.row(0, 1), t.row(0, 2), t.row(0, 3), t.row(1, 2), t.row(1, 3)}, unit, 4);
  ASSERT_EQ(g.size(), 3u);
  EXPECT_EQ(g[0], (std::vector<int32_t>{t.row(0, 1), t.row(0, 3)}));
  EXPECT_EQ(g[1], (std::vector<int32_t>{t.row(0, 2)}));
  const Vocab v = Vocab::from_words({"<S>", "</S>", "<UNK>", "bank", "Dickson"});
  EXPECT_EQ(sense_group_name(v, {3 * 4 + 1, 3 * 4 + 3}, 4), "bank#1,3");
  EXPECT_EQ(sense_group_name(v, {4 * 4 + 2}, 4), "Dickson#2");
}

}  // namespace
}  // namespace sa
