// BERT for masked LM (Devlin et al.), post-LN, as Hugging Face's BertForMaskedLM computes it:
// token + position + segment embeddings, LayerNorm, dropout; N layers of self-attention (fused
// QKV projection, scaled dot product with the padding mask, dropout on the probabilities, output
// projection, residual + LayerNorm) and feed-forward (GELU; residual + LayerNorm); the MLM head
// (dense + GELU + LayerNorm, then the word embeddings, tied, plus a bias). LayerNorm eps 1e-12.
// GELU is the tanh form (BERT's reference code; what we train) unless a Hugging Face config says
// "gelu", the exact erf form most published checkpoints use. Matrices are stored [out, in] as in Hugging Face's files.
#pragma once
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "layers/elmo.h"

namespace sa {

struct BertConfig {
  int vocab_size = 0;
  int hidden = 512, layers = 4, heads = 8, intermediate = 2048;
  int max_positions = 128, type_vocab = 2;
  double layer_norm_eps = 1e-12;
  double hidden_dropout = 0.1, attention_dropout = 0.1;
  bool exact_gelu = false;  // hidden_act "gelu" (erf); "gelu_new" / "gelu_pytorch_tanh" is the tanh form

  int head_dim() const { return hidden / heads; }
  // Every setting Hugging Face's config.json holds, as v(config key or nullptr, field, its
  // config.json key, the value a file without it means, or nullopt when it is required). The
  // hidden activation (`exact_gelu`) is read and written apart. This list drives the [bert] config
  // keys, --set, the echo, config.json and from_hf_json.
  template <typename Visit>
  void visit(Visit&& v) {
    v(nullptr, vocab_size, "vocab_size", std::optional<int>());
    v("bert.hidden", hidden, "hidden_size", std::optional<int>());
    v("bert.layers", layers, "num_hidden_layers", std::optional<int>());
    v("bert.heads", heads, "num_attention_heads", std::optional<int>());
    v("bert.intermediate", intermediate, "intermediate_size", std::optional<int>());
    v("bert.max_positions", max_positions, "max_position_embeddings", std::optional<int>(512));
    v("bert.type_vocab", type_vocab, "type_vocab_size", std::optional<int>(2));
    v(nullptr, layer_norm_eps, "layer_norm_eps", std::optional<double>(1e-12));
    v("bert.hidden_dropout", hidden_dropout, "hidden_dropout_prob", std::optional<double>(0.1));
    v("bert.attention_dropout", attention_dropout, "attention_probs_dropout_prob", std::optional<double>(0.1));
  }
  // Hugging Face's config.json (model_type "bert"; hidden_act must be GELU). Fails naming the file.
  static BertConfig from_hf_json(const std::string& path);
  // `masked_lm`: BERT's own MLM head was trained (a SaBERT's is the sense-aware head, which
  // transformers does not know: its config then names BertModel, the encoder it can use).
  void save_hf_json(const std::string& path, bool masked_lm = true) const;
  void check(const std::string& origin) const;
};

struct BertLayer {
  Tensor qkv_w, qkv_b;        // [3H, H], [3H]: query, key and value stacked
  Tensor attn_out_w, attn_out_b;
  Tensor attn_ln_g, attn_ln_b;
  Tensor ff_in_w, ff_in_b;    // [I, H]
  Tensor ff_out_w, ff_out_b;  // [H, I]
  Tensor ff_ln_g, ff_ln_b;
};

// The inputs of a batch: ids, segment ids [B, T] i32, and the padding mask [B, T] u8 (1 = a token).
struct BertBatch {
  Tensor ids, types, mask;
};

class BertModel {
 public:
  BertConfig config;
  Tensor word_emb, pos_emb, type_emb, emb_ln_g, emb_ln_b;
  std::vector<BertLayer> layer;
  Tensor mlm_w, mlm_b, mlm_ln_g, mlm_ln_b, mlm_bias;  // the MLM head; its output matrix is word_emb
  bool has_mlm_head = true;  // false when read from a checkpoint of the bare encoder

  // BERT's initializer: N(0, 0.02) matrices and embeddings, zero biases, LayerNorm 1 and 0.
  static BertModel init(const BertConfig& c, uint64_t seed, Device dev = Device::cpu(), DType dt = DType::F32);
  // A Hugging Face directory (config.json + model.safetensors), or our own checkpoint's tensors
  // under the same names. Also reads LayerNorm parameters named gamma/beta (Google's converted
  // checkpoints) and the bare encoder's names (no "bert." prefix, no MLM head). Fails naming the
  // file and the tensor that is missing or misshaped.
  static BertModel load_hf(const std::string& dir, Device dev = Device::cpu(), DType dt = DType::F32);
  // model.safetensors with Hugging Face's names (query, key, value apart), and `extra` tensors
  // under their own names, written atomically.
  void save_hf_weights(const std::string& path, const std::vector<std::pair<std::string, Tensor>>& extra = {}) const;

  // Every parameter with our name (Hugging Face's, but "attention.self.qkv" for the fused matrix).
  std::vector<NamedTensor> named();
  std::vector<Tensor> params();
  Device device() const { return word_emb.device(); }

  // Every layer's output [B, T, H]: the embeddings, then each transformer layer. Dropout only with
  // `gen` (training).
  std::vector<Tensor> forward(const BertBatch& b, Generator* gen = nullptr) const;
  // MLM logits [N, V] of hidden vectors [N, H].
  Tensor mlm_logits(const Tensor& h) const;
  // The MLM head's transform (dense, GELU, LayerNorm) alone: the sense-aware head starts here.
  Tensor mlm_transform(const Tensor& h) const;
};

// Hugging Face's names of the parameters, with query, key and value apart, each with its tensor:
// a view into the fused QKV (for writing) or a fresh tensor (for reading).
std::vector<std::pair<std::string, Tensor>> bert_hf_tensors(const BertModel& m);

// SaBERT's sense tables in model.safetensors: the tensors among `ours` (our checkpoint names,
// "sense/0/W" ...) under names of their own ("sense.output.weight" ...; Hugging Face's loader
// leaves unknown names alone), the bias as a vector.
std::vector<std::pair<std::string, Tensor>> hf_sense_tensors(const std::map<std::string, Tensor>& ours);

}  // namespace sa
