// What xling_eval's classifiers read from a frozen encoder: which layers (--layers), and features
// computed once per model and data file and cached on disk, so several runs and tasks never embed a
// file twice.
#pragma once
#include <cstdint>
#include <functional>
#include <string>

#include "data/tokenizer.h"
#include "engine/engine.h"
#include "layers/encoder.h"

namespace sa {

// "concat" (Flair's default for ELMo: every layer side by side), "average", "top", or a layer
// index ("0" is the token layer).
struct LayerSpec {
  enum class Kind { Concat, Average, Top, One } kind = Kind::Concat;
  int layer = 0;
  std::string name() const;
};
LayerSpec parse_layer_spec(const std::string& s, int n_layers);
// e [n_layers, n_tokens, dim] -> [n_tokens, dim'] (dim' = n_layers * dim for concat).
Tensor select_layers(const Tensor& e, const LayerSpec& spec);
int64_t feature_dim(const LayerSpec& spec, int n_layers, int64_t dim);

// Each sentence's token vectors (select_layers of its stateless embedding) as rows of one
// [tokens of all sentences, dim'] f32 matrix on the CPU: rows offsets[i]..offsets[i+1] belong
// to sentence i. Tokens are lowercased when the encoder was trained so.
std::vector<int64_t> sentence_offsets(const Sentences& sentences);
Tensor token_features(const ContextualEncoder& encoder, const Sentences& sentences, const LayerSpec& spec,
                      const std::string& label);

// token_features of sentences that come one CJK character a token (PAN-X zh/ja) for an encoder
// trained on segmented text: each sentence's character runs regrouped into `lexicon`'s words
// (regroup_cjk_characters), the words embedded, and every character given its word's vector.
// One row per input token, as token_features.
Tensor regrouped_token_features(const ContextualEncoder& encoder, const Sentences& sentences, const CjkLexicon& lexicon,
                                const LayerSpec& spec, const std::string& label);
// The share of tokens that are one CJK character (0 when there are no tokens).
double cjk_character_share(const Sentences& sentences);

// A batch of sentences `rows` on `dev`: their lengths, the features x, and with `tag_ids` (one i32
// per token) tags [B, T] with T the longest length (0 past each length, as the CRF reads them).
struct SentenceBatch {
  Tensor x, tags;
  std::vector<int> lengths;
};
// x padded, [B, T, dim].
SentenceBatch padded_batch(const Tensor& features, const std::vector<int64_t>& offsets, const std::vector<size_t>& rows,
                           const std::vector<std::vector<int32_t>>* tag_ids, Device dev);
// x packed, the sentences' rows back to back, [N, dim] (as NerTagger reads them).
SentenceBatch packed_batch(const Tensor& features, const std::vector<int64_t>& offsets, const std::vector<size_t>& rows,
                           const std::vector<std::vector<int32_t>>* tag_ids, Device dev);

// The tensor cached under `key` in `dir` (one HDF5 file per key), computed and written atomically
// when absent, or when the cached one has not `rows` rows (-1: any; a file cached by other code
// is computed again); `dir` empty: always computed. `what` names it in messages.
Tensor cached_tensor(const std::string& dir, uint64_t key, const std::string& what, Device dev,
                     const std::function<Tensor()>& compute, int64_t rows = -1);

}  // namespace sa
