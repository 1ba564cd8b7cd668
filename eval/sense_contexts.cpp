#include "eval/sense_contexts.h"

#include <algorithm>

#include "data/corpus.h"
#include "sense/selection.h"

namespace sa {

WordContexts sense_contexts(const SenseModel& r, const std::string& word, const SenseContextOptions& o) {
  SA_CHECK(r.sense(), "{}: not a SaELMo run (n_context = 0)", r.run_dir);
  SA_CHECK(r.vocab.contains(word), "'{}' is not in the vocabulary", word);
  SA_CHECK(o.direction == 0 || o.direction == 1, "direction {}: expected 0 (forward) or 1 (backward)", o.direction);
  const SenseHead& h = r.heads[static_cast<size_t>(o.direction)];
  const int32_t w = r.vocab.id(word);
  const int C = h.table.n_context();
  const std::string corpus = o.corpus.empty() ? r.train_prefix : o.corpus;
  // Sentences holding the word, as the run read its text.
  Sentences sentences;
  for (const std::string& file : expand_glob(corpus)) {
    if (static_cast<int>(sentences.size()) >= o.max_sentences) break;
    for (Sentence& s : read_sentences(file, r.lowercase)) {
      if (static_cast<int>(sentences.size()) >= o.max_sentences) break;
      if (std::find(s.begin(), s.end(), word) != s.end()) sentences.push_back(std::move(s));
    }
  }
  WordContexts out;
  out.sentences = static_cast<int64_t>(sentences.size());
  for (int s = 0; s < C; ++s)
    if (h.table.is_enabled(h.table.row(w, s))) out.senses.push_back({s, 0, {}});
  if (sentences.empty() || out.senses.empty()) return out;
  // Top-layer vectors of the word's occurrences in this direction (as the pseudo-word evaluation
  // takes them), and the mean of every token's, which "word_offset" selection adds back.
  const int64_t P = r.dim();
  std::vector<double> ctx, sum(static_cast<size_t>(P), 0.0);
  std::vector<std::pair<int, int>> where;  // (sentence, position)
  int64_t tokens = 0;
  const size_t batch_size = 64;
  for (size_t b = 0; b < sentences.size(); b += batch_size) {
    const Sentences batch(sentences.begin() + static_cast<std::ptrdiff_t>(b),
                          sentences.begin() + static_cast<std::ptrdiff_t>(std::min(sentences.size(), b + batch_size)));
    const std::vector<Tensor> emb = r.encoder->embed(batch);
    for (size_t i = 0; i < batch.size(); ++i) {
      NoGrad ng;
      const Tensor& e = emb[i];  // [layers, n, 2P]
      const std::vector<double> top = ops::slice(e, 0, e.dim(0) - 1, e.dim(0)).values();
      for (size_t t = 0; t < batch[i].size(); ++t) {
        const double* v = top.data() + (t * 2 + static_cast<size_t>(o.direction)) * static_cast<size_t>(P);
        for (int64_t k = 0; k < P; ++k) sum[static_cast<size_t>(k)] += v[k];
        ++tokens;
        if (batch[i][t] != word) continue;
        ctx.insert(ctx.end(), v, v + P);
        where.emplace_back(static_cast<int>(b + i), static_cast<int>(t));
      }
    }
  }
  const int64_t N = static_cast<int64_t>(where.size());
  out.occurrences = N;
  for (double& v : sum) v /= static_cast<double>(std::max<int64_t>(tokens, 1));
  const Tensor ctx_t = Tensor::of(ctx, {N, P}, DType::F32, Device::cpu());
  const Tensor text_mean = Tensor::of(sum, {1, P}, DType::F32, Device::cpu());
  const Tensor mean = selection_mean(h.table, r.options, h.proj.mean(), {w}, text_mean);
  const std::vector<int32_t> words(static_cast<size_t>(N), w);
  const SenseCandidates cand = sense_candidates(h.table, words);
  const SelectionSpace space(h.table, ctx_t, cand.rows, h.proj.matrix(), mean);
  const std::vector<int32_t> chosen = select_senses(h.table, ctx_t, words, h.proj.matrix(), mean);
  for (int64_t n = 0; n < N; ++n) {
    // The margin of the chosen sense over the best other enabled one.
    double best = -2, other = -2;
    for (int s = 0; s < C; ++s) {
      const size_t k = static_cast<size_t>(n * C + s);
      if (!cand.enabled[k]) continue;
      const double cos = space.cosine(n, space.center(n, s));
      if (cand.rows[k] == chosen[static_cast<size_t>(n)]) best = cos;
      else other = std::max(other, cos);
    }
    const int s = chosen[static_cast<size_t>(n)] - w * C;
    auto it = std::find_if(out.senses.begin(), out.senses.end(), [&](const SenseExamples& e) { return e.sense == s; });
    if (it == out.senses.end()) continue;  // no enabled sense: selection fell back to sense 0
    ++it->selected;
    const auto [si, pos] = where[static_cast<size_t>(n)];
    it->clearest.push_back({other > -2 ? best - other : best, sentences[static_cast<size_t>(si)], pos});
  }
  for (SenseExamples& e : out.senses) {
    std::stable_sort(e.clearest.begin(), e.clearest.end(),
                     [](const SenseContext& a, const SenseContext& b) { return a.margin > b.margin; });
    if (static_cast<int>(e.clearest.size()) > o.per_sense) e.clearest.resize(static_cast<size_t>(o.per_sense));
  }
  return out;
}

std::string marked_context(const SenseContext& c, int window) {
  const int n = static_cast<int>(c.tokens.size());
  const int from = std::max(0, c.position - window), to = std::min(n, c.position + window + 1);
  std::string line = from > 0 ? "... " : "";
  for (int t = from; t < to; ++t) {
    if (t > from) line += " ";
    line += t == c.position ? "[" + c.tokens[static_cast<size_t>(t)] + "]" : c.tokens[static_cast<size_t>(t)];
  }
  if (to < n) line += " ...";
  return line;
}

}  // namespace sa
