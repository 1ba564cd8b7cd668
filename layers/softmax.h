// Output layers of the plain ELMo LM: TF's sampled_softmax_loss as bilm-tf calls it (a
// log-uniform candidate sampler over the frequency-sorted vocabulary with unique samples,
// accidental hits removed, logits corrected by log expected count), and the full softmax.
#pragma once
#include <cstdint>
#include <random>
#include <vector>

#include "engine/engine.h"

namespace sa {

// TF's LogUniformSampler: P(k) = log((k+2)/(k+1)) / log(V+1).
class LogUniformSampler {
 public:
  explicit LogUniformSampler(int64_t range) : range_(range), log_range_(std::log(static_cast<double>(range) + 1)) {}
  double prob(int64_t k) const { return (std::log(k + 2.0) - std::log(k + 1.0)) / log_range_; }
  // `n` distinct ids (n <= range); `tries` gets the number of draws it took.
  std::vector<int32_t> sample_unique(int n, std::mt19937_64& rng, int64_t& tries) const;
  // Expected count of id k in a unique sample of n drawn in `tries` draws (TF's formula).
  double expected_count(int64_t k, int n, int64_t tries) const;
  // -log expected_count of each id: the log-Q shift of the sampled softmax, the same bits.
  std::vector<double> log_q_shift(const std::vector<int32_t>& ids, int n, int64_t tries) const;
  double log_q_shift(int32_t id, int n, int64_t tries) const;
  // Keeps log(1 - P(k)) for every id, so log_q_shift takes two transcendentals an id instead of
  // five: a trainer shifts every target and negative on the host each step.
  void tabulate();
  int64_t range() const { return range_; }

 private:
  int64_t range_;
  double log_range_;
  std::vector<double> log1m_p_;  // tabulate()'s log1p(-P(k)), or empty
};

// A tabulated sampler over `range` ids, made once a process and shared (read only once made): the
// sense softmax shifts every target and negative word through it each step.
const LogUniformSampler& tabulated_log_uniform(int64_t range);

// The core of every sampled softmax here: per-row cross entropy [N] where row n's candidates are
// its true row true_rows[n] (column 0) and the shared `sampled` rows; logit = x . W[r] + b[r] plus
// an optional per-candidate shift (e.g. -log Q); a sampled row equal to the row's true row is
// masked out (accidental hit). Masks are booleans: masked logits are -inf, never -FLT_MAX sums.
Tensor candidate_softmax_loss(const Tensor& x, const Tensor& W, const Tensor& b, const std::vector<int32_t>& true_rows,
                              const std::vector<int32_t>& sampled, const std::vector<double>* true_shift = nullptr,
                              const std::vector<double>* sampled_shift = nullptr);
// The same with the true rows i32 [N] on x's device (a sense selection that never left it).
Tensor candidate_softmax_loss(const Tensor& x, const Tensor& W, const Tensor& b, const Tensor& true_rows,
                              const std::vector<int32_t>& sampled, const std::vector<double>* true_shift = nullptr,
                              const std::vector<double>* sampled_shift = nullptr);
// The same with the sampled rows i32 [S] on x's device too (drawn there: ops::draw_distinct).
Tensor candidate_softmax_loss(const Tensor& x, const Tensor& W, const Tensor& b, const Tensor& true_rows,
                              const Tensor& sampled, const std::vector<double>* true_shift = nullptr,
                              const std::vector<double>* sampled_shift = nullptr);
// The same through separate ops (a [N, S] logits matrix, masked_fill, cross_entropy): the reference
// the fused path is tested against.
Tensor candidate_softmax_loss_unfused(const Tensor& x, const Tensor& W, const Tensor& b, const std::vector<int32_t>& true_rows,
                              const std::vector<int32_t>& sampled, const std::vector<double>* true_shift = nullptr,
                              const std::vector<double>* sampled_shift = nullptr);

// A sampled softmax's host work: the negatives and both log-Q shifts (TF's subtract_log_q), made
// before the step needs them (a trainer makes the next step's while this one runs).
struct SampledCandidates {
  std::vector<int32_t> sampled;                   // distinct ids, in the order drawn
  std::vector<double> true_shift, sampled_shift;  // -log expected count of each label and each sampled id
  int n = 0;                                      // ids asked for
  int64_t tries = 0;                              // draws it took
};
// The negatives and their shifts, without the labels': they do not depend on the batch, so a
// trainer draws them beside reading it.
SampledCandidates draw_negatives(const LogUniformSampler& sampler, int n_samples, std::mt19937_64& rng);
// The labels' shifts, which need the draw's count of tries.
void shift_labels(SampledCandidates& c, const std::vector<int32_t>& labels, const LogUniformSampler& sampler);
// Both.
SampledCandidates draw_candidates(const std::vector<int32_t>& labels, const LogUniformSampler& sampler, int n_samples,
                                  std::mt19937_64& rng);

// Per-row loss [N] of x [N, P] against labels (vocab ids) with the sampled softmax over table
// W [V, P] and bias b [V, 1]; draws its candidates from `rng` (into `drawn` when given).
Tensor sampled_softmax_loss(const Tensor& x, const Tensor& W, const Tensor& b, const std::vector<int32_t>& labels,
                            const LogUniformSampler& sampler, int n_samples, std::mt19937_64& rng,
                            std::vector<int32_t>* drawn = nullptr);
// The same with candidates drawn for these labels beforehand.
Tensor sampled_softmax_loss(const Tensor& x, const Tensor& W, const Tensor& b, const std::vector<int32_t>& labels,
                            const SampledCandidates& c);

// The output table of the plain ELMo LM before training: N(0, 1/sqrt(dim)) rows [vocab, dim] from
// one stream of `seed`, drawn word by word. SaELMo's sense 0 rows come from the same stream, so a
// one-sense SaELMo starts where ELMo does.
std::vector<double> softmax_init_rows(int64_t vocab, int64_t dim, uint64_t seed);
// The seed of direction d's output table (ELMo's shared table is direction 0's).
uint64_t softmax_init_seed(uint64_t model_seed, int direction);

// Per-row loss [N] with the full softmax over all V rows.
Tensor full_softmax_loss(const Tensor& x, const Tensor& W, const Tensor& b, const std::vector<int32_t>& labels);

}  // namespace sa
