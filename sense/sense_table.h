// Sense tables of one direction: output vectors W and biases b with n_context rows per word
// (row of word w, sense s = w*C + s), cluster centers of the same shape (moved by the online
// k-means update, never by gradients), and an enabled score per row (> 1e-6 = enabled).
// Sharded (sense_tables = "sharded", docs/design.md §6.9), rank r of R stores only the rows of
// the words [V*r/R, V*(r+1)/R) in W, b and centers; row ids and `enabled` stay global, and a
// training step reads its rows through a WorkingTable (sense/working_table.h).
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "data/safetensors.h"
#include "engine/engine.h"
#include "sense/sense_options.h"

namespace sa {

// Which slice of the words a rank stores: part `index` of `count` contiguous word ranges.
struct TableShard {
  int index = 0, count = 1;
  int64_t first_word(int64_t vocab) const { return vocab * index / count; }
  int64_t words(int64_t vocab) const { return vocab * (index + 1) / count - first_word(vocab); }
};

class SenseTable {
 public:
  // Draws the whole table's initialization in one order and keeps the shard's rows, so a sharded
  // table holds exactly the rows an unsharded one would. With `first_sense_seed`, sense 0's rows of
  // W are ELMo's softmax rows of that seed (softmax_init_rows): a one-sense SaELMo starts as ELMo.
  SenseTable(int vocab, int n_context, int dim, uint64_t seed, Device dev = Device::cpu(), DType dt = DType::F32,
             TableShard shard = {}, std::optional<uint64_t> first_sense_seed = std::nullopt);
  // A table over given tensors ([vocab * n_context, P], [.., 1], [.., P]) and scores: a working table.
  SenseTable(int vocab, int n_context, Tensor W, Tensor b, Tensor centers, std::vector<float> enabled);

  Tensor W;        // [V*C, P] (sharded: the stored rows), trainable, row-sparse gradients, N(0, 1/sqrt(P))
  Tensor b;        // [V*C, 1], trainable, row-sparse gradients, 0
  Tensor centers;  // [V*C, P], N(0, 16), no gradient
  std::vector<float> enabled;  // score per row, every row of the vocabulary

  // The stored rows: global rows [first_row(), first_row() + stored_rows()).
  bool stores_all() const { return stored_words_ == vocab_; }
  int first_word() const { return first_word_; }
  int stored_words() const { return stored_words_; }
  int first_row() const { return first_word_ * C_; }
  int stored_rows() const { return stored_words_ * C_; }
  // Reads a [rows(), ...] tensor `name` of a checkpoint into t, keeping the stored rows.
  void take(const SafetensorsFile& f, const std::string& origin, const std::string& name, Tensor& t) const;

  int vocab() const { return vocab_; }
  int n_context() const { return C_; }
  int rows() const { return vocab_ * C_; }
  int row(int w, int s) const { return w * C_ + s; }
  bool is_enabled(int r) const { return enabled[static_cast<size_t>(r)] > 1e-6f; }
  std::vector<int32_t> enabled_rows() const;
  int64_t enabled_count() const;

  // Warm-up: sense 0 only. After it: senses 1..C-1 only (their rows start from sense 0's when
  // `copy`, else from their initialization).
  void begin_warmup();
  void end_warmup(bool copy);
  // Rows w*C+1 .. w*C+C-1 of t ([stored rows, ...]: W, b, centers or their optimizer state) take
  // row w*C's values.
  void copy_first_sense(Tensor& t) const;
  // `words` keep their warm-up sense 0 alone (rare words are not split).
  void keep_first_sense(const std::vector<int32_t>& words);
  // Centers of senses 1..C-1 set to zero: the state the released schedule reaches when its
  // 20000-step warm-up decays them (x 0.99 per step) below float32's range.
  void zero_new_centers();

  // Bytes of W, b, centers and Adagrad accumulators for this shape, before allocating anything;
  // with `ranks` shards, those of the largest shard.
  static double bytes_needed(int64_t vocab, int n_context, int dim, DType dt, int ranks = 1);

 private:
  int vocab_, C_;
  int first_word_ = 0, stored_words_ = 0;
};

// t[rows] = values exactly, for unique `rows` (i32): each row is cleared (x - x = 0), then added to.
void assign_rows(Tensor& t, const Tensor& rows, const Tensor& values);

}  // namespace sa
