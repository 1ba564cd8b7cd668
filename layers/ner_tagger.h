// The NER task's tagger (xling_eval ner), as Flair's SequenceTagger builds it over frozen
// embeddings: word dropout (whole vectors zeroed) and locked dropout (one mask per sentence) ->
// a linear re-projection of the same size -> one BiLSTM layer -> locked dropout -> linear to the
// tags -> a linear-chain CRF (transitions, start and end scores; loss = log Z - gold score).
#pragma once
#include <cstdint>
#include <vector>

#include "layers/bilstm.h"

namespace sa {

struct NerTaggerOptions {
  int hidden = 256;             // per direction
  double word_dropout = 0.05;   // chance that a token's whole vector is zeroed
  double locked_dropout = 0.5;  // one mask per sentence over the features, before and after the BiLSTM
};

struct NerTagger {
  NerTaggerOptions options;
  Tensor W_re, b_re;             // [F, F], [F]
  BiLstm lstm;                   // hidden H per direction, no projection (as Flair's)
  Tensor W_out, b_out;           // [2H, K], [K]
  Tensor trans, start, end;      // CRF: [K, K] (row: previous tag), [K], [K]

  static NerTagger init(int64_t features, int64_t n_tags, const NerTaggerOptions& o, uint64_t seed, Device dev);
  // Packed sentences x [N, F] (sentence i in rows packed_offsets(lengths)[i] onwards; no padding,
  // which in a shuffled CoNLL batch would be two thirds of the rows) -> emissions [B, T, K] with T
  // the longest length, zeros past each length, for the CRF; dropout only when `train`.
  Tensor emissions(const Tensor& x, const std::vector<int>& lengths, bool train, Generator& gen) const;
  // Mean CRF loss of gold tags (i32 [B, T], anything past a length) over the batch.
  Tensor loss(const Tensor& x, const std::vector<int>& lengths, const Tensor& tags, Generator& gen) const;
  // Best tag path per sentence (Viterbi), i32 [B, T].
  Tensor decode(const Tensor& x, const std::vector<int>& lengths) const;
  std::vector<Tensor> params() const;
};

// The tagger's dropout over packed sentences: a {0, 1/keep} mask per sentence and feature (locked
// dropout), times, with word_keep < 1, a {0, 1} mask per token (word dropout); [N, F] with `like`'s
// dtype and device. Drawn by a host RNG seeded from the generator's stream.
Tensor dropout_mask(const std::vector<int>& lengths, int64_t F, double keep, double word_keep, Generator& gen,
                    const Tensor& like);

}  // namespace sa
