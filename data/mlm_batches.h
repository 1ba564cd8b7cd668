// Masked-LM data for BERT: each line of the corpus (a sentence) is split into WordPiece ids, and
// consecutive sentences are packed, in file order, into sequences of at most max_len pieces:
// [CLS] pieces [SEP] (a longer sentence is cut). An epoch visits every sequence once in a seeded
// order, and each visit draws its masks anew: mask_prob of the positions (at least 1, at most
// max_predictions; never [CLS] or [SEP]) are predicted, 80% shown as [MASK], 10% as a random
// piece, 10% unchanged. Batch k is a pure function of (seed, k), so a resumed run continues
// the same stream from its step alone.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "data/wordpiece.h"
#include "engine/engine.h"

namespace sa {

struct MlmOptions {
  int max_len = 128;
  double mask_prob = 0.15;
  int max_predictions = 20;
  uint64_t seed = 1;
};

struct MlmBatch {
  Tensor ids, types, mask;          // [B, T]: the masked input, segment ids (0), 1 on real pieces (u8)
  std::vector<int32_t> positions;   // b * T + t of each predicted position
  std::vector<int32_t> labels;      // the original piece there
  int64_t pieces = 0;               // real pieces in the batch, for tokens/s
};

class MlmData {
 public:
  // `corpus`: a file or a glob; fails naming the file and line of invalid UTF-8, and when no
  // sequence results.
  MlmData(const std::string& corpus, const WordPieceTokenizer& tokenizer, const MlmOptions& o);
  size_t sequences() const { return seqs_.size(); }
  int64_t pieces() const { return pieces_; }
  // Batch k (0-based) of `size` sequences: positions k*size .. of the epochs' orders laid end to end.
  MlmBatch batch(int64_t k, int size, Device dev) const;

 private:
  std::vector<std::vector<int32_t>> seqs_;
  MlmOptions o_;
  int vocab_size_, cls_, sep_, mask_id_;
  int64_t pieces_ = 0;
  mutable int64_t cached_epoch_ = -1;
  mutable std::vector<int64_t> order_;
  const std::vector<int64_t>& order(int64_t epoch) const;
};

}  // namespace sa
