#include "layers/elmo_embedder.h"

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "data/char_ids.h"

namespace sa {

ElmoEmbedder::ElmoEmbedder(const ElmoModel& model, bool stateful, int max_batch)
    : m_(model), stateful_(stateful), max_batch_(max_batch) {
  const DType dt = model.char_embed.dtype();
  for (int d = 0; d < 2; ++d)
    for (int l = 0; l < model.opt.n_layers; ++l)
      state_[d].push_back({Tensor::zeros({max_batch, model.opt.lstm_dim}, dt, model.device()),
                           Tensor::zeros({max_batch, model.opt.projection_dim}, dt, model.device())});
}

std::vector<Tensor> ElmoEmbedder::embed(const std::vector<std::vector<std::string>>& sentences) {
  NoGrad ng;
  const int64_t N = static_cast<int64_t>(sentences.size());
  SA_CHECK(N > 0 && N <= max_batch_, "embed: {} sentences in a batch of at most {}", N, max_batch_);
  std::vector<int> len(static_cast<size_t>(N));
  int64_t S = 0;
  for (int64_t r = 0; r < N; ++r) {
    len[r] = static_cast<int>(sentences[r].size()) + 2;
    S = std::max<int64_t>(S, len[r]);
  }
  // Char ids [N, S, 50]: <S> words </S>, then padding tokens (masked by the lengths).
  std::vector<int32_t> ids(static_cast<size_t>(N * S * chars::kPerToken), chars::kPad);
  for (int64_t r = 0; r < N; ++r)
    for (int t = 0; t < len[r]; ++t) {
      const std::string& w = t == 0 ? std::string("<S>") : t == len[r] - 1 ? std::string("</S>") : sentences[r][t - 1];
      chars::token_ids(w, &ids[static_cast<size_t>((r * S + t) * chars::kPerToken)]);
    }
  const Device dev = m_.device();
  const int64_t P = m_.opt.projection_dim;
  Tensor tok = m_.encode_tokens(ids, {N, S});  // [N, S, P]
  // The backward LM reads each row's tokens in reverse: a per-row permutation (its own inverse).
  std::vector<int32_t> rev(static_cast<size_t>(N * S));
  for (int64_t r = 0; r < N; ++r)
    for (int64_t t = 0; t < S; ++t) rev[r * S + t] = static_cast<int32_t>(r * S + (t < len[r] ? len[r] - 1 - t : t));
  Tensor rev_idx = Tensor::from(rev, {N, S}, dev);
  auto reverse = [&](const Tensor& x) { return ops::gather_rows(ops::reshape(x, {N * S, P}), rev_idx); };

  std::vector<Tensor> layers[2];
  if (!stateful_) {
    // Stateless: whole padded rows through the sequence op, both directions side by side. Past a
    // row's end the LSTM reads padding, but those outputs are never read and no state is kept.
    Tensor x[2] = {tok, reverse(tok)};
    for (int l = 0; l < m_.opt.n_layers; ++l) {
      std::vector<ops::LstmSequenceArgs> args;
      for (int d = 0; d < 2; ++d) {
        const LstmWeights& w = m_.lstm[d][l];
        args.push_back({ops::permute(x[d], {1, 0, 2}), w.W, w.B, w.W_P, Tensor::zeros({N, m_.opt.lstm_dim}, tok.dtype(), dev),
                        Tensor::zeros({N, P}, tok.dtype(), dev), m_.opt.cell_clip, m_.opt.proj_clip});
      }
      std::vector<std::vector<Tensor>> r = ops::lstm_sequences(args);
      for (int d = 0; d < 2; ++d) {
        Tensor out = ops::permute(r[d][0], {1, 0, 2});
        if (m_.opt.use_skip_connections && l > 0) out = ops::add(out, x[d]);
        layers[d].push_back(d == 0 ? out : reverse(out));
        x[d] = out;
      }
    }
  }
  for (int d = 0; d < 2 && stateful_; ++d) {
    Tensor x = d == 0 ? tok : reverse(tok);
    for (int l = 0; l < m_.opt.n_layers; ++l) {
      LstmState& keep = state_[d][l];
      LstmState st = stateful_ ? LstmState{keep.c.rows(0, N).clone(), keep.m.rows(0, N).clone()}
                               : LstmState{Tensor::zeros({N, m_.opt.lstm_dim}, tok.dtype(), dev),
                                           Tensor::zeros({N, P}, tok.dtype(), dev)};
      Tensor out = lstm_forward(m_.lstm[d][l], x, st, m_.opt.cell_clip, m_.opt.proj_clip, &len);
      if (m_.opt.use_skip_connections && l > 0) out = ops::add(out, x);
      if (stateful_) {
        keep.c.rows(0, N).copy_from(st.c);
        keep.m.rows(0, N).copy_from(st.m);
      }
      layers[d].push_back(d == 0 ? out : reverse(out));
      x = out;
    }
  }
  // Per sentence: [L + 1, n, 2P], positions 1 .. len-2.
  std::vector<Tensor> result;
  for (int64_t r = 0; r < N; ++r) {
    const int64_t n = len[r] - 2;
    auto rowslice = [&](const Tensor& x) { return ops::reshape(ops::slice(ops::slice(x, 0, r, r + 1), 1, 1, 1 + n), {1, n, P}); };
    std::vector<Tensor> per_layer;
    Tensor t0 = rowslice(tok);
    per_layer.push_back(ops::concat({t0, t0}, 2));
    for (int l = 0; l < m_.opt.n_layers; ++l)
      per_layer.push_back(ops::concat({rowslice(layers[0][l]), rowslice(layers[1][l])}, 2));
    result.push_back(ops::concat(per_layer, 0));
  }
  return result;
}

void embed_all(const ElmoModel& model, const std::vector<std::vector<std::string>>& sentences, int batch_size,
               const std::string& label, const std::function<void(size_t, const Tensor&)>& f) {
  NoGrad ng;
  std::vector<size_t> order(sentences.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return sentences[a].size() > sentences[b].size(); });
  ElmoEmbedder embedder(model, false, batch_size);
  const auto t0 = std::chrono::steady_clock::now();
  size_t tokens = 0;
  for (size_t b = 0; b < order.size(); b += static_cast<size_t>(batch_size)) {
    const size_t e = std::min(order.size(), b + static_cast<size_t>(batch_size));
    std::vector<std::vector<std::string>> batch;
    for (size_t i = b; i < e; ++i) batch.push_back(sentences[order[i]]), tokens += sentences[order[i]].size();
    std::vector<Tensor> embs = embedder.embed(batch);
    for (size_t i = b; i < e; ++i) f(order[i], embs[i - b]);
    if (label.empty()) continue;
    const double el = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::fprintf(stderr, "\r%s: %zu/%zu sentences | %.0f tokens/s | ETA %.0f s   ", label.c_str(), e, order.size(),
                 tokens / std::max(el, 1e-9), el / e * (order.size() - e));
  }
  if (!label.empty()) std::fprintf(stderr, "\n");
}

}  // namespace sa
