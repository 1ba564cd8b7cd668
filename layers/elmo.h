// The ELMo biLM of bilm-tf: a character token encoder (char embedding, char-CNN with max over
// positions, highway layers, projection) shared by both directions, and per direction a stack of
// LSTMs with projection. Parameters carry bilm-tf's weights.hdf5 names.
#pragma once
#include <initializer_list>
#include <span>
#include <string>
#include <vector>

#include "layers/elmo_options.h"
#include "layers/lstm.h"

namespace sa {

struct HighwayWeights {
  Tensor W_carry, b_carry, W_transform, b_transform;
};

struct NamedTensor {
  std::string name;  // bilm-tf dataset path, or the model's own naming
  Tensor* tensor;
};

// The tensors of a named list, in its order (they share storage with the model's).
std::vector<Tensor> tensors_of(const std::vector<NamedTensor>& named);

// Host char ids [n, 50] with each distinct token once, and where each of the n tokens finds its
// row: encode_tokens' host half, which a trainer runs ahead of the step on a thread of its own.
struct DistinctTokens {
  std::vector<int32_t> chars;  // [count, 50]
  std::vector<int32_t> index;  // [n]: each token's row in chars
  int64_t count() const;
};
DistinctTokens distinct_tokens(const std::vector<int32_t>& char_ids);
// The same over several runs of tokens taken as one, in order (no copy of them joined).
DistinctTokens distinct_tokens(std::initializer_list<std::span<const int32_t>> parts);
// Pads the distinct rows up to a multiple of `bucket` (at most one row a token), repeating the
// first: rows no token finds, whose gradient is zero, so that the char-CNN's shapes repeat.
void pad_distinct_tokens(DistinctTokens& t, int64_t bucket);

class ElmoModel {
 public:
  ElmoOptions opt;
  Tensor char_embed;                // [261, C]: training char ids index it directly
  std::vector<Tensor> cnn_w, cnn_b;  // [width, C, n] and [n]
  std::vector<HighwayWeights> highway;
  Tensor proj_w, proj_b;             // [F, P], [P] when opt.use_proj()
  std::vector<LstmWeights> lstm[2];  // [direction 0 = forward, 1 = backward][layer]

  // bilm-tf's initializers (docs/design.md §3.3), from a seed.
  static ElmoModel init(const ElmoOptions& opt, uint64_t seed, Device dev = Device::cpu(), DType dt = DType::F32);
  // A bilm-tf weights.hdf5 (float32), converted to `dt` on `dev`.
  static ElmoModel load_bilm(const ElmoOptions& opt, const std::string& path, Device dev = Device::cpu(),
                             DType dt = DType::F32);
  // Written atomically (temporary file, checked close, fsync, rename).
  void save_bilm(const std::string& path) const;

  // Every parameter with its bilm-tf name, in a fixed order.
  std::vector<NamedTensor> named();
  std::vector<Tensor> params();
  ElmoModel to(Device dev, DType dt) const;
  Device device() const { return char_embed.device(); }

  // Token vectors [..., P] from training char ids i32 [..., 50].
  Tensor encode(const Tensor& char_ids) const;
  // The same from host char ids ([lead..., 50] flattened), encoding each distinct token once and
  // gathering: batches repeat many words, and the char-CNN is a large share of the cost.
  // `distinct` (if given) gets the number of tokens encoded.
  Tensor encode_tokens(const std::vector<int32_t>& char_ids, const Shape& lead, int64_t* distinct = nullptr) const;
  // The same from tokens already made distinct (distinct_tokens), lead being the tokens' shape.
  Tensor encode_distinct(const DistinctTokens& tokens, const Shape& lead) const;
};

}  // namespace sa
