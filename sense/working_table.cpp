#include "sense/working_table.h"

#include <algorithm>

#include "engine/dist/communicator.h"
#include "engine/dist/tensor_collectives.h"

namespace sa {

namespace {

std::vector<int32_t> distinct_sorted(std::vector<int32_t> v) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  return v;
}

// The rows of `words` (increasing) from the ranks that store them, concatenated in rank order:
// the shards are contiguous word ranges, so that is the words' order.
SenseTable gather_rows_of(const SenseTable& shard, const std::vector<int32_t>& words, int64_t own_begin,
                          int64_t own_end) {
  NoGrad ng;
  const int C = shard.n_context();
  const Device dev = shard.W.device();
  std::vector<int32_t> local;
  for (int64_t i = own_begin; i < own_end; ++i)
    for (int s = 0; s < C; ++s) local.push_back((words[static_cast<size_t>(i)] - shard.first_word()) * C + s);
  const Tensor idx = Tensor::from(local, {static_cast<int64_t>(local.size())}, dev);
  auto part = [&](const Tensor& t) {
    return dist::allgather_rows(local.empty() ? Tensor::empty({0, t.dim(1)}, t.dtype(), dev) : ops::gather_rows(t, idx));
  };
  std::vector<float> enabled;
  for (int32_t w : words)
    for (int s = 0; s < C; ++s) enabled.push_back(shard.enabled[static_cast<size_t>(shard.row(w, s))]);
  Tensor W = part(shard.W), b = part(shard.b), centers = part(shard.centers);
  W.set_requires_grad().set_sparse_grad();
  b.set_requires_grad().set_sparse_grad();
  return SenseTable(static_cast<int>(words.size()), C, W, b, centers, std::move(enabled));
}

}  // namespace

WorkingTable::WorkingTable(const SenseTable& shard, std::vector<int32_t> words)
    : C_(shard.n_context()), table([&] {
        words_ = distinct_sorted(std::move(words));
        first_word_ = shard.first_word();
        own_begin_ = std::lower_bound(words_.begin(), words_.end(), shard.first_word()) - words_.begin();
        own_end_ = std::lower_bound(words_.begin(), words_.end(), shard.first_word() + shard.stored_words()) - words_.begin();
        return gather_rows_of(shard, words_, own_begin_, own_end_);
      }()) {}

int32_t WorkingTable::find_word(int32_t global) const {
  const auto it = std::lower_bound(words_.begin(), words_.end(), global);
  return it == words_.end() || *it != global ? -1 : static_cast<int32_t>(it - words_.begin());
}

std::vector<int32_t> WorkingTable::words(const std::vector<int32_t>& global) const {
  std::vector<int32_t> out(global.size());
  for (size_t i = 0; i < global.size(); ++i) {
    out[i] = find_word(global[i]);
    SA_CHECK(out[i] >= 0, "working table: word {} was not gathered for this step", global[i]);
  }
  return out;
}

std::vector<int32_t> WorkingTable::rows(const std::vector<int32_t>& global_rows) const {
  std::vector<int32_t> w(global_rows.size());
  for (size_t i = 0; i < w.size(); ++i) w[i] = global_rows[i] / C_;
  std::vector<int32_t> out = words(w);
  for (size_t i = 0; i < out.size(); ++i) out[i] = out[i] * C_ + global_rows[i] % C_;
  return out;
}

std::vector<int32_t> WorkingTable::global_rows(const std::vector<int32_t>& rows) const {
  std::vector<int32_t> out(rows.size());
  for (size_t i = 0; i < rows.size(); ++i) out[i] = words_[static_cast<size_t>(rows[i] / C_)] * C_ + rows[i] % C_;
  return out;
}

std::pair<Tensor, Tensor> WorkingTable::stored_gradient(const Tensor& param) const {
  SA_CHECK(!param.grad().defined(), "working table: '{}' has a dense gradient (the full softmax reads every row; "
           "sense_tables = \"sharded\" needs sampled negatives)", param.name());
  SparseGrad& sg = param.sparse_grad();
  if (sg.empty()) return {};
  sg.coalesce_in_place();
  const std::vector<double> ids = sg.indices[0].values();
  std::vector<int32_t> keep, stored;
  for (size_t k = 0; k < ids.size(); ++k) {
    const int64_t r = static_cast<int64_t>(ids[k]), i = r / C_;
    if (i < own_begin_ || i >= own_end_) continue;
    keep.push_back(static_cast<int32_t>(k));
    stored.push_back(static_cast<int32_t>((words_[static_cast<size_t>(i)] - first_word_) * C_ + r % C_));
  }
  if (keep.empty()) return {};
  NoGrad ng;
  const Device dev = param.device();
  const int64_t n = static_cast<int64_t>(keep.size());
  return {Tensor::from(stored, {n}, dev), ops::gather_rows(sg.rows[0], Tensor::from(keep, {n}, dev))};
}

void WorkingTable::store_centers(SenseTable& shard) const {
  std::vector<int32_t> from, to;
  for (int64_t i = own_begin_; i < own_end_; ++i)
    for (int s = 0; s < C_; ++s) {
      from.push_back(static_cast<int32_t>(i * C_ + s));
      to.push_back((words_[static_cast<size_t>(i)] - first_word_) * C_ + s);
    }
  if (from.empty()) return;
  NoGrad ng;
  const Device dev = shard.centers.device();
  const int64_t n = static_cast<int64_t>(from.size());
  assign_rows(shard.centers, Tensor::from(to, {n}, dev), ops::gather_rows(table.centers, Tensor::from(from, {n}, dev)));
}

WorkingTable step_working_table(const SenseTable& shard, const SenseOptions& o, const std::vector<int32_t>& targets,
                                int n_negatives, std::mt19937_64& rng, const TranslationTable* dict) {
  SA_CHECK(o.negatives != SenseOptions::Negatives::Full,
           "sense_tables = \"sharded\" needs sampled negatives (sense_negatives = \"full\" reads every row)");
  // The draw sense_direction_loss makes on a replicated table, in the same order of `rng`.
  SenseNegatives neg = o.negatives == SenseOptions::Negatives::LogUniform
                           ? sample_log_uniform_senses(shard, n_negatives, targets, rng, o.negative_budget, o.negative_rows_max)
                           : SenseNegatives{sample_enabled_rows(shard, n_negatives, rng), {}, {}};
  std::vector<int32_t> words = dist::allgather(targets);
  const std::vector<int32_t> all_targets = words;
  for (int32_t r : neg.rows) words.push_back(r / shard.n_context());
  if (dict)  // the translations in either language's entries
    for (int32_t w : all_targets)
      for (int lang = 0; lang < 2; ++lang)
        for (int k = 0; k < dict->per_word; ++k)
          if (const int32_t t = dict->of(w, lang)[k]; t >= 0) words.push_back(t);
  WorkingTable work(shard, std::move(words));
  neg.rows = work.rows(neg.rows);
  work.negatives = std::move(neg);
  if (dict) {  // only the targets' entries are read; other words' translations may be absent
    TranslationTable local;
    local.per_word = dict->per_word;
    auto remap = [&](std::vector<int32_t>& ids, int lang) {
      ids.assign(static_cast<size_t>(work.table.vocab()) * dict->per_word, -1);
      for (int i = 0; i < work.table.vocab(); ++i) {
        const int32_t* tr = dict->of(work.global_word(i), lang);
        for (int k = 0; k < dict->per_word; ++k)
          if (tr[k] >= 0) ids[static_cast<size_t>(i) * dict->per_word + k] = work.find_word(tr[k]);
      }
    };
    remap(local.ids, 0);
    if (!dict->ids_l2.empty()) remap(local.ids_l2, 1);
    work.dict = std::move(local);
  }
  return work;
}

}  // namespace sa
