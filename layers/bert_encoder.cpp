#include "layers/bert_encoder.h"

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <toml++/toml.h>

namespace sa {

namespace fs = std::filesystem;

namespace {

// One encoded window: pieces of whole words of one sentence.
struct Window {
  size_t sentence;
  std::vector<int> ids;       // [CLS] pieces [SEP]
  std::vector<int> word_of;   // per piece (not [CLS]/[SEP]): the word's index in the sentence
};

}  // namespace

std::unique_ptr<EncoderState> BertEncoder::new_state(int) const { return std::make_unique<EncoderState>(); }

std::vector<Tensor> BertEncoder::embed(const Sentences& batch, EncoderState*) const {
  NoGrad ng;
  const WordPieceVocab& v = tokenizer.vocab();
  SA_CHECK(v.cls() >= 0 && v.sep() >= 0, "{}: the vocabulary needs [CLS] and [SEP]", origin);
  const size_t room = static_cast<size_t>(model.config.max_positions - 2);
  std::vector<Window> windows;
  for (size_t s = 0; s < batch.size(); ++s) {
    const WordPieces wp = tokenizer.encode_words(batch[s]);
    Window w{s, {v.cls()}, {}};
    for (size_t i = 0; i < wp.ids.size();) {
      size_t j = i;  // the pieces of one word
      while (j < wp.ids.size() && wp.word_of[j] == wp.word_of[i]) ++j;
      const size_t n = std::min(j - i, room);  // a word of more pieces than a window keeps its first
      if (w.word_of.size() + n > room) {
        w.ids.push_back(v.sep());
        windows.push_back(std::move(w));
        w = Window{s, {v.cls()}, {}};
      }
      for (size_t k = i; k < i + n; ++k) w.ids.push_back(wp.ids[k]), w.word_of.push_back(wp.word_of[k]);
      i = j;
    }
    w.ids.push_back(v.sep());
    windows.push_back(std::move(w));
  }
  size_t T = 0;
  for (const Window& w : windows) T = std::max(T, w.ids.size());
  const int64_t N = static_cast<int64_t>(windows.size());
  std::vector<int32_t> ids(N * T, 0), types(N * T, 0);
  std::vector<uint8_t> mask(N * T, 0);
  for (size_t r = 0; r < windows.size(); ++r)
    for (size_t t = 0; t < windows[r].ids.size(); ++t) ids[r * T + t] = windows[r].ids[t], mask[r * T + t] = 1;
  const Device dev = model.device();
  const Shape shape{N, static_cast<int64_t>(T)};
  const std::vector<Tensor> hidden =
      model.forward({Tensor::from(ids, shape, dev), Tensor::from(types, shape, dev), Tensor::from(mask, shape, dev)});
  const int64_t H = model.config.hidden;
  std::vector<Tensor> flat;
  for (const Tensor& h : hidden) flat.push_back(ops::reshape(h, {N * static_cast<int64_t>(T), H}));
  // Per sentence: the rows of its pieces, and a pooling matrix [words, pieces].
  std::vector<Tensor> out;
  for (size_t s = 0; s < batch.size(); ++s) {
    const int64_t words = static_cast<int64_t>(batch[s].size());
    std::vector<int32_t> rows;
    std::vector<int> word;
    for (size_t r = 0; r < windows.size(); ++r)
      if (windows[r].sentence == s)
        for (size_t p = 0; p < windows[r].word_of.size(); ++p)
          rows.push_back(static_cast<int32_t>(r * T + 1 + p)), word.push_back(windows[r].word_of[p]);
    std::vector<double> pool(static_cast<size_t>(words) * rows.size(), 0.0), count(static_cast<size_t>(words), 0.0);
    for (size_t p = 0; p < rows.size(); ++p)
      if (pooling == PiecePooling::Mean || count[word[p]] == 0) pool[word[p] * rows.size() + p] = 1, ++count[word[p]];
    for (int64_t w = 0; w < words; ++w)
      for (size_t p = 0; p < rows.size(); ++p) pool[w * rows.size() + p] /= std::max(count[w], 1.0);
    const Tensor P = Tensor::of(pool, {words, static_cast<int64_t>(rows.size())}, flat[0].dtype(), dev);
    const Tensor idx = Tensor::from(rows, {static_cast<int64_t>(rows.size())}, dev);
    std::vector<Tensor> layers;
    for (const Tensor& f : flat) layers.push_back(ops::reshape(ops::matmul(P, ops::gather_rows(f, idx)), {1, words, H}));
    out.push_back(ops::concat(layers, 0));
  }
  return out;
}

bool is_bert_dir(const std::string& dir) {
  std::ifstream in(dir + "/config.json");
  if (!in) return false;
  try {
    return nlohmann::json::parse(in).value("model_type", std::string()) == "bert";
  } catch (const nlohmann::json::exception&) {
    return false;
  }
}

std::unique_ptr<BertEncoder> load_bert_encoder(const std::string& dir, Device dev, PiecePooling pooling) {
  BasicTokenizerOptions basic;
  if (fs::exists(dir + "/config.cfg")) {  // our run: how it read its text
    try {
      basic.lowercase = toml::parse_file(dir + "/config.cfg")["lowercase"].value_or(false);
    } catch (const toml::parse_error& e) {
      fail("{}/config.cfg: {}", dir, e.what());
    }
  } else if (std::ifstream tc(dir + "/tokenizer_config.json"); tc) {
    try {
      const nlohmann::json j = nlohmann::json::parse(tc);
      basic.lowercase = j.value("do_lower_case", true);
      if (j.contains("strip_accents") && j["strip_accents"].is_boolean()) basic.strip_accents = j["strip_accents"].get<bool>();
    } catch (const nlohmann::json::exception& e) {
      fail("{}/tokenizer_config.json: invalid JSON: {}", dir, e.what());
    }
  }
  auto enc = std::make_unique<BertEncoder>(BertModel::load_hf(dir, dev), WordPieceTokenizer(WordPieceVocab::load(dir + "/vocab.txt"), basic),
                                           pooling);
  enc->origin = dir;
  return enc;
}

}  // namespace sa
