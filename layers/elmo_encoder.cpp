#include "layers/elmo_encoder.h"

#include "data/char_ids.h"

namespace sa {

namespace {

struct ElmoState : EncoderState {
  BilmState lstm;  // [max_batch, ...] per direction and layer
};

}  // namespace

std::unique_ptr<EncoderState> ElmoEncoder::new_state(int max_batch) const {
  auto s = std::make_unique<ElmoState>();
  s->lstm = BilmState::zeros(model.opt, max_batch, model.device(), model.char_embed.dtype());
  return s;
}

std::vector<Tensor> ElmoEncoder::embed(const Sentences& sentences, EncoderState* state) const {
  NoGrad ng;
  const int64_t N = static_cast<int64_t>(sentences.size());
  ElmoState* carried = nullptr;
  if (state) {
    carried = dynamic_cast<ElmoState*>(state);
    SA_CHECK(carried, "embed: the state was not made by an ELMo encoder");
  }
  SA_CHECK(N > 0, "embed: an empty batch");
  SA_CHECK(!carried || N <= carried->lstm.dir[0][0].c.dim(0), "embed: {} sentences in a batch of at most {}", N,
           carried ? carried->lstm.dir[0][0].c.dim(0) : 0);
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
  const Device dev = model.device();
  const int64_t P = model.opt.projection_dim;
  Tensor tok = model.encode_tokens(ids, {N, S});  // [N, S, P]
  // The backward LM reads each row's tokens in reverse: a per-row permutation (its own inverse).
  std::vector<int32_t> rev(static_cast<size_t>(N * S));
  for (int64_t r = 0; r < N; ++r)
    for (int64_t t = 0; t < S; ++t) rev[r * S + t] = static_cast<int32_t>(r * S + (t < len[r] ? len[r] - 1 - t : t));
  Tensor rev_idx = Tensor::from(rev, {N, S}, dev);
  auto reverse = [&](const Tensor& x) { return ops::gather_rows(ops::reshape(x, {N * S, P}), rev_idx); };

  // Stateless: whole padded rows, from zero. Past a row's end the LSTM reads padding, but those
  // outputs are never read and no state is kept. Stateful: each row stops at its end, so its state
  // is the one the next batch continues from.
  BilmState st;
  if (carried) {
    st = carried->lstm;
    for (auto& d : st.dir)
      for (LstmState& s : d) s = {s.c.rows(0, N).clone(), s.m.rows(0, N).clone()};
  } else {
    st = BilmState::zeros(model.opt, N, dev, tok.dtype());
  }
  Generator no_dropout(0);
  BilmOutputs out = bilm_forward(model, {tok, reverse(tok)}, st, 0.0, no_dropout, carried ? &len : nullptr);
  if (carried)
    for (int d = 0; d < 2; ++d)
      for (size_t l = 0; l < st.dir[d].size(); ++l) {
        carried->lstm.dir[d][l].c.rows(0, N).copy_from(st.dir[d][l].c);
        carried->lstm.dir[d][l].m.rows(0, N).copy_from(st.dir[d][l].m);
      }
  for (Tensor& t : out.layers[1]) t = reverse(t);
  // Per sentence: [L + 1, n, 2P], positions 1 .. len-2.
  std::vector<Tensor> result;
  for (int64_t r = 0; r < N; ++r) {
    const int64_t n = len[r] - 2;
    auto rowslice = [&](const Tensor& x) { return ops::reshape(ops::slice(ops::slice(x, 0, r, r + 1), 1, 1, 1 + n), {1, n, P}); };
    std::vector<Tensor> per_layer;
    Tensor t0 = rowslice(tok);
    per_layer.push_back(ops::concat({t0, t0}, 2));
    for (int l = 0; l < model.opt.n_layers; ++l)
      per_layer.push_back(ops::concat({rowslice(out.layers[0][l]), rowslice(out.layers[1][l])}, 2));
    result.push_back(ops::concat(per_layer, 0));
  }
  return result;
}

}  // namespace sa
