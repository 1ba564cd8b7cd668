#include "sense/sense_head.h"

#include "engine/dist/communicator.h"
#include "engine/dist/tensor_collectives.h"
#include "sense/selection.h"
#include "sense/sense_softmax.h"

namespace sa {

SenseHead::SenseHead(int vocab, const SenseOptions& o, int dim, uint64_t seed, Device dev, DType dt, TableShard shard,
                     std::optional<uint64_t> first_sense_seed)
    : table(vocab, o.n_context, dim, seed, dev, dt, shard, first_sense_seed), proj(dim, o.cluster_proj_dim, o.pca_sample, seed ^ 0x9e3779b9ull),
      usage(o.context_record_window) {}

std::string sense_head_prefix(size_t d) { return "sense/" + std::to_string(d) + "/"; }

std::vector<NamedTensor> SenseHead::params(const std::string& p) { return {{p + "W", &table.W}, {p + "b", &table.b}}; }

void SenseHead::save(std::vector<std::pair<std::string, Tensor>>& out, const std::string& p) const {
  out.emplace_back(p + "centers", table.centers);
  out.emplace_back(p + "enabled", Tensor::from(table.enabled, {table.rows()}));
  out.emplace_back(p + "projection", proj.matrix());
  out.emplace_back(p + "pca_queue", proj.queue_tensor());
  out.emplace_back(p + "pca_queue_steps", proj.queue_steps_tensor());
  out.emplace_back(p + "pca_mean", proj.mean());
  out.emplace_back(p + "usage", usage.to_tensor(table.vocab()));
}

const Tensor& SenseHead::enabled_rows_on_device() {
  if (!enabled_list.defined()) {
    const std::vector<int32_t> rows = table.enabled_rows();
    enabled_list = Tensor::from(rows, {static_cast<int64_t>(rows.size())}, table.W.device());
  }
  return enabled_list;
}

std::vector<int32_t> SenseStep::negatives() const { return drawn_rows.defined() ? host_rows(drawn_rows) : negative_rows; }

void SenseHead::restore(const SafetensorsFile& f, const std::string& origin, const std::string& p, bool pca_fitted) {
  table.take(f, origin, p + "centers", table.centers);
  Tensor en = Tensor::empty({table.rows()});
  take_tensor(f, origin, p + "enabled", en);
  std::vector<double> ev = en.values();
  table.enabled.assign(ev.begin(), ev.end());
  enabled_list = Tensor();
  Tensor matrix = proj.matrix().clone(), windows = usage.to_tensor(table.vocab());
  take_tensor(f, origin, p + "projection", matrix);
  take_tensor(f, origin, p + "usage", windows);
  usage.restore(windows);
  auto q = f.tensors.find(p + "pca_queue");
  SA_CHECK(q != f.tensors.end(), "{}: tensor '{}pca_queue' missing", origin, p);
  auto optional = [&](const std::string& name) {  // absent in checkpoints of earlier versions
    auto it = f.tensors.find(p + name);
    return it == f.tensors.end() ? Tensor() : it->second;
  };
  proj.restore(q->second, optional("pca_queue_steps"), optional("pca_mean"), matrix, pca_fitted);
}

void take_param(const SafetensorsFile& f, const std::string& origin, const std::string& name,
                const std::vector<SenseHead>& heads, const Tensor& param, Tensor& dst) {
  for (const SenseHead& h : heads)
    if (param.impl() == h.table.W.impl() || param.impl() == h.table.b.impl()) return h.table.take(f, origin, name, dst);
  take_tensor(f, origin, name, dst);
}

void restore_trained_model(const SafetensorsFile& f, const std::string& origin, const std::vector<NamedTensor>& params,
                           std::vector<SenseHead>& heads) {
  for (const NamedTensor& nt : params) take_param(f, origin, nt.name, heads, *nt.tensor, *nt.tensor);
  const bool fitted = f.meta<bool>("pca_fitted", false);
  for (size_t d = 0; d < heads.size(); ++d) heads[d].restore(f, origin, sense_head_prefix(d), fitted);
}

Tensor selection_context(const Tensor& top) {
  NoGrad ng;
  const int64_t B = top.dim(0), T = top.dim(1), P = top.dim(2);
  Tensor t = top.detach();
  Tensor ctx = T > 1 ? ops::concat({ops::slice(t, 1, 1, T), ops::slice(t, 1, T - 1, T)}, 1) : t;
  return ops::reshape(ctx, {B * T, P});
}

Tensor sense_direction_loss(SenseHead& h, const Tensor& top, const LmBatch& b, const SenseOptions& o, int n_negatives,
                            bool training, std::mt19937_64& rng, SenseStep* step, const TranslationTable* dict,
                            const Tensor& select_top, WorkingTable* work, WordsDrawnAhead* ahead) {
  const int64_t B = top.dim(0), T = top.dim(1), P = top.dim(2);
  SA_CHECK(work || !training || h.table.stores_all(), "sense_direction_loss: a sharded table trains through a WorkingTable");
  SenseTable& table = work ? work->table : h.table;
  std::vector<int32_t> local_targets;  // a working table's ids; otherwise the batch's are read as they are
  const std::vector<int32_t>& targets = work ? (local_targets = work->words(b.targets)) : b.targets;
  if (work && work->dict) dict = &*work->dict;
  Tensor ctx = selection_context(select_top.defined() ? select_top : top);
  const bool offsets = o.selection_mean == SenseOptions::SelectionMean::WordOffset;
  // Data-parallel training: the offsets' batch mean is the global batch's (every rank's rows).
  // Evaluation runs on one rank and needs none of it.
  const Tensor batch_mean = !offsets ? Tensor() : training ? dist::mean_rows(ctx) : ops::mean(ctx, 0, true);
  const WordMeans mean_of = [&](const std::vector<int32_t>& words) {
    return selection_mean(table, o, h.proj.mean(), words, batch_mean);
  };
  Tensor flat = ops::reshape(top, {B * T, P});
  // Evaluation: the word's probability, summed over its senses (ELMo's scale).
  if (!training)
    return ops::mean(table.stores_all() ? sense_word_nll(flat, table, targets) : sharded_word_nll(flat, table, targets));
  const Tensor mean = mean_of(targets);
  using N = SenseOptions::Negatives;
  // Negatives: drawn here, or for a working table when its rows were gathered. `negatives` keeps the
  // rows drawn on the host, `drawn` those drawn on the device, for the coverage log.
  std::vector<int32_t> negatives;
  Tensor drawn;
  auto uniform = [&] { return work ? work->negatives.rows : sample_enabled_rows(table, n_negatives, rng); };
  // Uniform rows where the losses take them, on the device: a head that stores its table draws
  // them there (no scan of the enabled flags, no upload per step, one key from rng).
  auto uniform_rows = [&] {
    if (work) {
      negatives = uniform();
      return Tensor::from(negatives, {static_cast<int64_t>(negatives.size())}, flat.device());
    }
    return drawn = h.uniform_negatives(n_negatives, rng());
  };
  auto log_uniform = [&] {
    return sample_log_uniform_senses(table, n_negatives, targets, rng, o.negative_budget, o.negative_rows_max, ahead);
  };
  // The common training case runs selection inside the fused softmax; seeding (sequential over
  // tokens), the translation loss and the other negatives select first. The selection stays on the
  // device (sel_rows) unless seeding, the translation loss or a working table's ids need it on
  // the host (sel).
  const bool fused = training && !dict && o.negatives == N::Uniform && !o.seed_centers();
  std::vector<int32_t> sel;
  Tensor sel_rows;
  // Selection is per token, except that seeding sets a center for the tokens after it: data-parallel
  // ranks then select over the global batch, in its order, and keep their own rows.
  const bool seeding = training && o.seed_centers(), global = seeding && dist::size() > 1;
  Tensor all_ctx;
  std::vector<int32_t> all_targets;
  if (global) {
    all_ctx = dist::allgather_rows(ctx), all_targets = dist::allgather(targets);
    const std::vector<int32_t> all_sel =
        select_senses(table, all_ctx, all_targets, h.proj.matrix(), mean_of(all_targets), true);
    const auto first = all_sel.begin() + static_cast<int64_t>(dist::rank()) * B * T;
    sel.assign(first, first + B * T);
  } else if (!fused && (seeding || dict)) {
    sel = select_senses(table, ctx, targets, h.proj.matrix(), mean, seeding);
  } else if (!fused) {
    sel_rows = select_sense_rows(table, ctx, targets, h.proj.matrix(), mean);
  }
  // The selection as the loss and the center update take it: on the device.
  auto selected = [&] { return sel_rows.defined() ? sel_rows : Tensor::from(sel, {B * T}, flat.device()); };
  Tensor per_row;
  if (fused) {
    SelectedLoss r = select_and_sampled_loss(flat, table, ctx, targets, h.proj.matrix(), mean, uniform_rows());
    per_row = r.per_row, sel_rows = r.selected;
  } else if (dict) {  // Bi-SaELMo: uniform or log-uniform negatives (the config allows no others)
    TranslationCandidates cand = translation_candidates(table, *dict, targets, ctx, h.proj.matrix(), mean_of, &b.lang);
    if (o.translation_candidates == SenseOptions::Translations::Best) keep_best_only(cand);
    if (o.negatives == N::LogUniform) {
      const SenseNegatives neg = work ? work->negatives : log_uniform();
      std::function<int32_t(int32_t)> global_word;  // a working table's words are local
      if (work) global_word = [&](int32_t w) { return work->global_word(w); };
      const TranslationShifts sh = translation_shifts(neg, table, sel, cand, global_word);
      per_row = sense_translation_loss(flat, table, sel, cand, neg.rows, &sh);
      negatives = neg.rows;
    } else {
      negatives = uniform();
      per_row = sense_translation_loss(flat, table, sel, cand, negatives);
    }
  } else if (o.negatives == N::Full) {
    per_row = sense_full_loss(flat, table, selected());
  } else if (o.negatives == N::LogUniform) {
    const SenseNegatives neg = work ? work->negatives : log_uniform();
    per_row = sense_sampled_loss(flat, table, selected(), neg);
    negatives = neg.rows;
  } else {  // uniform negatives with seeding
    per_row = sense_sampled_loss(flat, table, selected(), uniform_rows());
  }
  if (work) negatives = work->global_rows(negatives);
  // after_step sees what every rank selected, so the ranks keep one sense state.
  if (step && dist::size() > 1) {
    const std::vector<int32_t> all_sel = dist::allgather(sel_rows.defined() ? host_rows(sel_rows) : sel);
    const Tensor gathered_ctx = all_ctx.defined() ? all_ctx : dist::allgather_rows(ctx);
    *step = {gathered_ctx, Tensor::from(all_sel, {static_cast<int64_t>(all_sel.size())}, gathered_ctx.device()),
             all_targets.empty() ? dist::allgather(targets) : all_targets, std::move(negatives), drawn};
  } else if (step) {
    *step = {ctx, selected(), targets, std::move(negatives), drawn};
  }
  return ops::mean(per_row);
}

SenseEvents after_step(SenseHead& h, const SenseOptions& o, int64_t step, const SenseStep& s, WorkingTable* work,
                       const std::vector<int32_t>& rare) {
  SenseEvents ev;
  update_sense_centers(work ? work->table : h.table, o, s.ctx, s.selected, s.targets);
  if (work) work->store_centers(h.table);
  // The usage windows take the selection where it is: a working table's local rows through the host.
  if (work)
    h.usage.record(work->global_rows(host_rows(s.selected)), h.table.n_context());
  else
    h.usage.record(s.selected, h.table.n_context());
  // Refits at steps 1, 1 + M, 1 + 2M, ... (a fitted projection from the start); pushes at those and
  // every pca_push_every steps from step 1; a refit sees only the last pca_queue_steps steps.
  const bool refit = (step - 1) % o.pca_every == 0;
  if (refit || (step - 1) % o.push_every() == 0) h.proj.push(s.ctx, step);
  if (refit) {
    if (o.pca_queue_steps > 0) h.proj.drop_before(step - o.pca_queue_steps + 1);
    h.proj.refit();
  }
  if (step == o.contextual_warmup) {
    h.enabled_list = Tensor();  // the released senses join the negatives
    h.table.end_warmup(o.warmup_init_copy());
    if (o.warmup_zero_centers()) h.table.zero_new_centers();
    h.table.keep_first_sense(rare);
    ev.warmup_ended = true;
  }
  if (step >= o.prune_first && step % o.prune_every == 0) ev.pruned = h.usage.prune(h.table, o.remove_less_freqent_contexts);
  if (ev.pruned > 0) h.enabled_list = Tensor();
  return ev;
}

}  // namespace sa
