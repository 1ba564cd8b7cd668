#include "train/sense_head.h"

#include "sense/selection.h"
#include "sense/sense_softmax.h"

namespace sa {

SenseHead::SenseHead(int vocab, const SenseOptions& o, int dim, uint64_t seed, Device dev)
    : table(vocab, o.n_context, dim, seed, dev), proj(dim, o.cluster_proj_dim, o.pca_sample, seed ^ 0x9e3779b9ull),
      usage(o.context_record_window) {}

Tensor selection_context(const Tensor& top) {
  NoGrad ng;
  const int64_t B = top.dim(0), T = top.dim(1), P = top.dim(2);
  Tensor t = top.detach();
  Tensor ctx = T > 1 ? ops::concat({ops::slice(t, 1, 1, T), ops::slice(t, 1, T - 1, T)}, 1) : t;
  return ops::reshape(ctx, {B * T, P});
}

Tensor sense_direction_loss(SenseHead& h, const Tensor& top, const LmBatch& b, const SenseOptions& o, int n_negatives,
                            bool training, std::mt19937_64& rng, Tensor* ctx_out, const TranslationTable* dict,
                            const Tensor& select_top) {
  const int64_t B = top.dim(0), T = top.dim(1), P = top.dim(2);
  Tensor ctx = selection_context(select_top.defined() ? select_top : top);
  const bool offsets = o.selection_mean == SenseOptions::SelectionMean::WordOffset;
  const Tensor mean = selection_mean(h.table, o, h.proj.mean(), b.targets, offsets ? ops::mean(ctx, 0, true) : Tensor());
  Tensor flat = ops::reshape(top, {B * T, P});
  using N = SenseOptions::Negatives;
  // The common training case runs selection inside the fused softmax; seeding (sequential over
  // tokens), the translation loss and the other negatives select first.
  const bool fused = training && !dict && o.negatives == N::Uniform && !o.seed_centers;
  std::vector<int32_t> sel;
  if (!fused) sel = select_senses(h.table, ctx, b.targets, h.proj.matrix(), mean, training && o.seed_centers);
  Tensor loss;
  if (training) {
    Tensor per_row;
    if (fused) {
      SelectedLoss r = select_and_sampled_loss(flat, h.table, ctx, b.targets, h.proj.matrix(), mean,
                                               sample_enabled_rows(h.table, n_negatives, rng));
      per_row = r.per_row, sel = std::move(r.selected);
    } else if (dict) {  // Bi-SaELMo (the config allows only uniform negatives with a dictionary)
      TranslationCandidates cand = translation_candidates(h.table, *dict, b.targets, ctx, h.proj.matrix(),
                                                          o.selection_mean == SenseOptions::SelectionMean::Global
                                                              ? h.proj.mean()
                                                              : Tensor());
      per_row = sense_translation_loss(flat, h.table, sel, cand, sample_enabled_rows(h.table, n_negatives, rng));
    } else if (o.negatives == N::Full) {
      per_row = sense_full_loss(flat, h.table, sel);
    } else if (o.negatives == N::LogUniform) {
      per_row = sense_sampled_loss(flat, h.table, sel, sample_log_uniform_senses(h.table, n_negatives, b.targets, rng));
    } else {  // uniform negatives with seeding
      per_row = sense_sampled_loss(flat, h.table, sel, sample_enabled_rows(h.table, n_negatives, rng));
    }
    loss = ops::mean(per_row);
    update_sense_centers(h.table, o, ctx, sel, b.targets);
    h.usage.record(sel, h.table.n_context());
  } else {
    loss = ops::mean(sense_full_loss(flat, h.table, sel));
  }
  if (ctx_out) *ctx_out = ctx;
  return loss;
}

}  // namespace sa
