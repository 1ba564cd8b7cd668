// Which sense vectors bin/senses shows as a word's neighbours. Rows that training never selected
// (a rare word's copies of its warm-up row, or senses no context chose) carry no meaning of their
// own, so neighbours come only from rows selected at least `min_selections` times in their word's
// usage window; and rows of one word that are (nearly) the same vector are shown as one,
// "word#1,3,5".
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "data/vocab.h"
#include "sense/sense_head.h"

namespace sa {

// Enabled rows chosen at least min_selections times in their word's usage window (the last
// context_record_window selections of the word), of words with at least min_count selections in
// that window (rare words' rows are barely trained: only as negatives); with both 0, every
// enabled row.
std::vector<uint8_t> neighbour_candidates(const SenseHead& h, int min_selections, int min_count = 0);

// Rows of one word whose unit vectors have cosine above this are the same sense for display.
constexpr double kSameRowCosine = 0.9999;

// Groups `rows` (in order) into runs of the same word and (nearly) the same vector; each group keeps
// the order of its first row. `unit`: the table's rows scaled to unit length.
std::vector<std::vector<int32_t>> collapse_identical(const std::vector<int32_t>& rows, const Tensor& unit, int n_context);

// The `top` groups of other words' rows closest (cosine) to `row`, among `candidates` (and, with
// `langs`, only words of language `lang`), identical rows of a word collapsed.
std::vector<std::vector<int32_t>> nearest_sense_groups(const SenseTable& t, const Tensor& unit, int32_t row, int top,
                                                       const std::vector<uint8_t>& candidates,
                                                       const std::vector<uint8_t>* langs = nullptr, int lang = 0);

// "word#s" for one row, "word#1,3,5" for a group.
std::string sense_group_name(const Vocab& vocab, const std::vector<int32_t>& group, int n_context);

}  // namespace sa
