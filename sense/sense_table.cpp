#include "sense/sense_table.h"

#include <cmath>
#include <random>

#include "layers/softmax.h"

namespace sa {

namespace {
// Rows [first, first + count) of `rows` x `dim` normal draws taken row by row.
std::vector<double> normal_rows(int64_t rows, int64_t dim, int64_t first, int64_t count, double stddev,
                                std::mt19937_64& rng) {
  std::normal_distribution<double> n(0.0, stddev);
  std::vector<double> v(static_cast<size_t>(count * dim));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < dim; ++j) {
      const double x = n(rng);
      if (r >= first && r < first + count) v[static_cast<size_t>((r - first) * dim + j)] = x;
    }
  return v;
}

}  // namespace

void assign_rows(Tensor& t, const Tensor& rows, const Tensor& values) {
  NoGrad ng;
  backend(t.device()).scatter_add_rows(ops::neg(ops::gather_rows(t, rows)), rows, t);
  backend(t.device()).scatter_add_rows(values, rows, t);
}

SenseTable::SenseTable(int vocab, int n_context, int dim, uint64_t seed, Device dev, DType dt, TableShard shard,
                       std::optional<uint64_t> first_sense_seed)
    : vocab_(vocab), C_(n_context) {
  SA_CHECK(vocab > 0 && n_context >= 2 && dim > 0, "sense table: vocab {}, n_context {} (>= 2: sense 0 is the warm-up "
           "sense) and dim {} must be positive", vocab, n_context, dim);
  SA_CHECK(shard.count >= 1 && shard.index >= 0 && shard.index < shard.count, "sense table: shard {} of {}",
           shard.index, shard.count);
  first_word_ = static_cast<int>(shard.first_word(vocab)), stored_words_ = static_cast<int>(shard.words(vocab));
  std::mt19937_64 rng(seed);
  const int64_t R = static_cast<int64_t>(vocab) * n_context, first = first_row(), n = stored_rows();
  std::vector<double> w = normal_rows(R, dim, first, n, 1.0 / std::sqrt(static_cast<double>(dim)), rng);
  if (first_sense_seed) {
    const std::vector<double> elmo = softmax_init_rows(vocab, dim, *first_sense_seed);
    for (int word = first_word_; word < first_word_ + stored_words_; ++word)
      std::copy_n(elmo.begin() + static_cast<int64_t>(word) * dim, dim,
                  w.begin() + static_cast<int64_t>(row(word, 0) - first) * dim);
  }
  W = Tensor::of(w, {n, dim}, dt, dev).set_requires_grad().set_sparse_grad();
  w = {};
  b = Tensor::zeros({n, 1}, dt, dev).set_requires_grad().set_sparse_grad();
  centers = Tensor::of(normal_rows(R, dim, first, n, 16.0, rng), {n, dim}, dt, dev);
  enabled.resize(static_cast<size_t>(R));
  begin_warmup();
}

SenseTable::SenseTable(int vocab, int n_context, Tensor W_, Tensor b_, Tensor centers_, std::vector<float> en)
    : W(std::move(W_)), b(std::move(b_)), centers(std::move(centers_)), enabled(std::move(en)), vocab_(vocab),
      C_(n_context), first_word_(0), stored_words_(vocab) {
  SA_CHECK(W.dim(0) == rows() && b.dim(0) == rows() && centers.dim(0) == rows() &&
               static_cast<int64_t>(enabled.size()) == rows(),
           "sense table over tensors: {} words x {} senses, but W has {} rows", vocab, n_context, W.dim(0));
}

void SenseTable::take(const SafetensorsFile& f, const std::string& origin, const std::string& name, Tensor& t) const {
  if (stores_all()) return take_tensor(f, origin, name, t);
  auto it = f.tensors.find(name);
  if (it == f.tensors.end()) throw CheckpointDamaged(fmt::format("{}: tensor '{}' missing", origin, name));
  SA_CHECK(it->second.dim(0) == rows() && it->second.numel() / rows() == t.numel() / stored_rows(),
           "{}: tensor '{}' is {} but the config needs {} rows of {}", origin, name, to_string(it->second.shape()),
           rows(), t.numel() / stored_rows());
  t.copy_from(it->second.rows(first_row(), first_row() + stored_rows()).to(t.dtype()).to(t.device()));
}

std::vector<int32_t> SenseTable::enabled_rows() const {
  std::vector<int32_t> r;
  for (int i = 0; i < rows(); ++i)
    if (is_enabled(i)) r.push_back(i);
  return r;
}

int64_t SenseTable::enabled_count() const {
  int64_t n = 0;
  for (int i = 0; i < rows(); ++i) n += is_enabled(i);
  return n;
}

void SenseTable::begin_warmup() {
  for (int r = 0; r < rows(); ++r) enabled[static_cast<size_t>(r)] = r % C_ == 0 ? 1.f : 0.f;
}

void SenseTable::end_warmup(bool copy) {
  for (int r = 0; r < rows(); ++r) enabled[static_cast<size_t>(r)] = r % C_ == 0 ? 0.f : 1.f;
  if (!copy) return;
  for (Tensor* t : {&W, &b, &centers}) copy_first_sense(*t);
}

void SenseTable::copy_first_sense(Tensor& t) const {
  if (stored_words_ == 0) return;
  // Stored rows: a word's rows share a shard.
  std::vector<int32_t> from, to;
  for (int w = 0; w < stored_words_; ++w)
    for (int s = 1; s < C_; ++s) {
      from.push_back(w * C_);
      to.push_back(w * C_ + s);
    }
  NoGrad ng;
  const Device dev = t.device();
  Tensor src = Tensor::from(from, {static_cast<int64_t>(from.size())}, dev);
  Tensor dst = Tensor::from(to, {static_cast<int64_t>(to.size())}, dev);
  assign_rows(t, dst, ops::gather_rows(t, src));
}

void SenseTable::keep_first_sense(const std::vector<int32_t>& words) {
  for (int32_t w : words)
    for (int s = 0; s < C_; ++s) enabled[static_cast<size_t>(row(w, s))] = s == 0 ? 1.f : 0.f;
}

void SenseTable::zero_new_centers() {
  NoGrad ng;
  std::vector<double> keep(static_cast<size_t>(stored_rows()));
  for (int r = 0; r < stored_rows(); ++r) keep[r] = r % C_ == 0 ? 1.0 : 0.0;
  centers.copy_from(ops::mul(centers, Tensor::of(keep, {stored_rows(), 1}, centers.dtype(), centers.device())));
}

double SenseTable::bytes_needed(int64_t vocab, int n_context, int dim, DType dt, int ranks) {
  const double rows = static_cast<double>((vocab + ranks - 1) / ranks) * n_context;
  // W and b with their Adagrad accumulators, and the centers.
  return rows * (2.0 * dim + 2.0 + dim) * static_cast<double>(dtype_size(dt));
}

}  // namespace sa
