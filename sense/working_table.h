// One training step's rows of a sharded sense table (sense_tables = "sharded", docs/design.md
// §6.9): every sense row of the words the step reads (the global batch's targets, the words of the
// negatives, their dictionary translations), gathered from the ranks that store them into a table
// of its own, word by word in increasing global order. The step's loss and selection read it as
// a whole table of those words; after the gradients are averaged and clipped, each rank applies
// the update to the rows it stores and writes back the centers the step moved.
#pragma once
#include <optional>
#include <random>
#include <vector>

#include "data/dictionary.h"
#include "sense/sense_softmax.h"
#include "sense/sense_table.h"

namespace sa {

class WorkingTable {
  // First: `table` is gathered from them.
  std::vector<int32_t> words_;  // global ids, increasing (a word's index is its position)
  int first_word_ = 0;           // the shard's first word
  int64_t own_begin_ = 0, own_end_ = 0;  // words_[own_begin_, own_end_) are stored by this rank
  int C_ = 0;

 public:
  // Collective: every rank passes the same `words` (any order, repeats allowed).
  WorkingTable(const SenseTable& shard, std::vector<int32_t> words);

  SenseTable table;                         // vocab = the distinct words, trainable W and b
  SenseNegatives negatives;                 // the step's negatives as rows of `table`
  std::optional<TranslationTable> dict;     // the dictionary over these words (Bi-SaELMo)

  // Global word ids and rows to this table's, and back.
  int32_t find_word(int32_t global) const;  // -1 when not gathered
  int32_t global_word(int32_t word) const { return words_[static_cast<size_t>(word)]; }
  std::vector<int32_t> words(const std::vector<int32_t>& global) const;
  std::vector<int32_t> rows(const std::vector<int32_t>& global_rows) const;
  std::vector<int32_t> global_rows(const std::vector<int32_t>& rows) const;

  // The coalesced row gradient of this table's W or b restricted to the rows `shard` stores, as
  // the shard's row ids and the gradient rows (empty when it stores none of them).
  std::pair<Tensor, Tensor> stored_gradient(const Tensor& param) const;
  // Writes the centers of the rows `shard` stores back into it.
  void store_centers(SenseTable& shard) const;
};

// The working table of one direction's training step: `targets` are this rank's, the negatives are
// drawn from the whole table with `rng` as a replicated table's step draws them (uniform, or
// log-uniform by o.negatives), and with `dict` the targets' translations join. Collective.
WorkingTable step_working_table(const SenseTable& shard, const SenseOptions& o, const std::vector<int32_t>& targets,
                                int n_negatives, std::mt19937_64& rng, const TranslationTable* dict);

}  // namespace sa
