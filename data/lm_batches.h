// bilm-tf's language-model batches: R persistent rows ("streams"), each a queue of sentences
// (<S> words </S>, reversed for the backward LM). A row is filled to T positions with
// inputs = cur[0:n], targets = cur[1:n+1], then the first n tokens are dropped, so rows flow
// across sentence boundaries and the LSTM state carries over between batches.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "data/corpus.h"
#include "data/vocab.h"

namespace sa {

struct LmBatch {
  int rows = 0, steps = 0;
  std::vector<int32_t> char_ids;  // [rows, steps, 50] training char ids of the inputs
  std::vector<int32_t> targets;   // [rows, steps] next-token word ids
  std::vector<uint8_t> lang;      // [rows, steps] the language of each token's sentence (0: train_prefix's)
};

// Rows [first, first + n) of a batch (a data-parallel rank's share of the global batch).
LmBatch batch_rows(const LmBatch& b, int first, int n);

class LmStream {
 public:
  LmStream(std::unique_ptr<ShardedCorpus> corpus, const Vocab& vocab, int rows, int steps, bool reverse);
  void next(LmBatch& b);

 private:
  struct Row {
    std::vector<int32_t> ids;
    std::vector<std::string> own;  // the current sentence's tokens (with <S>/</S>)
    size_t at = 0;
    uint8_t lang = 0;
  };
  void refill(Row& r);
  std::unique_ptr<ShardedCorpus> corpus_;
  const Vocab& vocab_;
  int rows_, steps_;
  bool reverse_;
  std::vector<Row> row_;
};

}  // namespace sa
