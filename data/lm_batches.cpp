#include "data/lm_batches.h"

#include <algorithm>

#include "data/char_ids.h"
#include "engine/core/error.h"

namespace sa {

LmStream::LmStream(std::unique_ptr<ShardedCorpus> corpus, const Vocab& vocab, int rows, int steps, bool reverse)
    : corpus_(std::move(corpus)), vocab_(vocab), rows_(rows), steps_(steps), reverse_(reverse), row_(static_cast<size_t>(rows)) {}

void LmStream::refill(Row& r) {
  const Sentence& s = corpus_->next();
  r.lang = static_cast<uint8_t>(corpus_->last_language());
  r.own.clear();
  r.own.push_back("<S>");
  r.own.insert(r.own.end(), s.begin(), s.end());
  r.own.push_back("</S>");
  if (reverse_) std::reverse(r.own.begin(), r.own.end());
  r.ids.clear();
  for (const std::string& w : r.own) r.ids.push_back(vocab_.id(w));
  r.at = 0;
}

LmBatch batch_rows(const LmBatch& b, int first, int n) {
  SA_CHECK(first >= 0 && n >= 0 && first + n <= b.rows, "batch_rows: rows [{}, {}) of a batch of {}", first, first + n, b.rows);
  const size_t cells = static_cast<size_t>(b.steps), at = static_cast<size_t>(first) * cells, len = static_cast<size_t>(n) * cells;
  LmBatch r;
  r.rows = n;
  r.steps = b.steps;
  r.char_ids.assign(b.char_ids.begin() + at * chars::kPerToken, b.char_ids.begin() + (at + len) * chars::kPerToken);
  r.targets.assign(b.targets.begin() + at, b.targets.begin() + at + len);
  r.lang.assign(b.lang.begin() + at, b.lang.begin() + at + len);
  return r;
}

void LmStream::next(LmBatch& b) {
  b.rows = rows_;
  b.steps = steps_;
  b.char_ids.assign(static_cast<size_t>(rows_) * steps_ * chars::kPerToken, 0);
  b.targets.assign(static_cast<size_t>(rows_) * steps_, 0);
  b.lang.assign(static_cast<size_t>(rows_) * steps_, 0);
  for (int r = 0; r < rows_; ++r) {
    Row& row = row_[r];
    int pos = 0;
    while (pos < steps_) {
      if (row.ids.size() - row.at <= 1) refill(row);
      int n = std::min<int>(static_cast<int>(row.ids.size() - row.at) - 1, steps_ - pos);
      for (int k = 0; k < n; ++k) {
        size_t cell = static_cast<size_t>(r) * steps_ + pos + k;
        chars::token_ids(row.own[row.at + k], &b.char_ids[cell * chars::kPerToken]);
        b.targets[cell] = row.ids[row.at + k + 1];
        b.lang[cell] = row.lang;
      }
      row.at += static_cast<size_t>(n);
      pos += n;
    }
  }
}

}  // namespace sa
