// Nearest-sense WSD (docs/design.md §5.1): the contextual vector of every tagged token of a
// training corpus, averaged per sense key; each test instance gets the sense whose average is the
// closest by cosine, over all sense entries (default) or among its lemma's senses. Plus the
// baselines: most frequent sense in the training keys, and WordNet's first sense.
#pragma once
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "data/wordnet.h"
#include "data/wsd_corpus.h"
#include "layers/encoder.h"

namespace sa {

// Which layer of the biLM a vector comes from: "0".."L", "top", "average" or "concat".
struct WsdLayer {
  std::string spec = "top";
  // The feature vector of each token [n_tokens, D] from an embedding [L+1, n_tokens, 2P].
  Tensor select(const Tensor& embedding) const;
  void check(int n_layers) const;  // fails naming the valid choices
};

struct InstanceVectors {
  std::vector<std::string> ids;
  std::vector<std::string> lemma_pos;  // lemma#POS, as lemma_pos_index
  Tensor vectors;                      // [N, D] float32 on the CPU
};

struct EmbedOptions {
  WsdLayer layer;
  int batch_size = 64;
  bool lowercase = false;
  std::string label;  // progress line: "embedding <label>: ..."
  // A multi-word surface ("belong to", SemCor's "Grand_Jury") as one token, spaces kept (`_` read
  // as a space), as the paper's evaluation code feeds it to the biLM; else split into its words,
  // the instance's vector their mean.
  bool mwe_one_token = false;
};

// Embeds every sentence with at least one instance (stateless, batches of similar length) and
// returns each instance's vector: at its one token, or the mean over its words (mwe_one_token).
InstanceVectors embed_instances(const ContextualEncoder& encoder, const WsdCorpus& corpus, const EmbedOptions& o);

// One layer's vectors out of vectors embedded with the "concat" layer ([N, n_layers * D]): the same
// as embedding again with `layer`, without running the model again.
InstanceVectors layer_of_concat(const InstanceVectors& concat, const WsdLayer& layer, int64_t n_layers);

struct SenseCentroids {
  std::vector<std::string> keys;
  Tensor unit;  // [K, D] unit-length mean vectors
  std::unordered_map<std::string, std::vector<int>> by_lemma_pos;
  std::unordered_set<std::string> lemmas;  // the training instances' lemmas, whatever their POS
};

// An instance with several gold keys adds its vector to each of them.
SenseCentroids sense_centroids(const InstanceVectors& train, const WsdKeys& train_keys);

struct NearestOptions {
  bool filter_lemma = false;                // only the lemma's senses (lemma#POS)
  // WordNet's first sense where nearest-sense cannot answer as the protocol wants: over all sense
  // entries, for a lemma never seen in training (any POS; the paper's evaluation code); among the
  // lemma's senses, for a lemma#POS with no trained sense.
  const WordNetSenses* backoff = nullptr;
};

struct WsdPrediction {
  WsdKeys keys;
  size_t backed_off = 0, unanswered = 0;
};

WsdPrediction predict_nearest(const SenseCentroids& c, const InstanceVectors& test, const NearestOptions& o);

// Per lemma#POS the key seen most often in `train_keys` (ties: WordNet order when `wn`, then the
// key's spelling). Unseen lemmas take WordNet's first sense when `backoff`, else no answer.
WsdPrediction predict_mfs(const WsdKeys& train_keys, const WsdCorpus& test, const WordNetSenses* wn,
                          const WordNetSenses* backoff);
WsdPrediction predict_first_sense(const WsdCorpus& test, const WordNetSenses& wn);

}  // namespace sa
