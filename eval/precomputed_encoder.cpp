#include "eval/precomputed_encoder.h"

#include <nlohmann/json.hpp>

#include "data/corpus.h"

namespace sa {

namespace {

std::string joined(const std::vector<std::string>& tokens) {
  std::string s;
  for (const std::string& t : tokens) s += (s.empty() ? "" : " ") + t;
  return s;
}

// [L, n, D] as stored, or [1, n, D] for a [n, D] dataset.
Tensor as_layers(const Tensor& t) { return t.rank() == 2 ? t.view({1, t.dim(0), t.dim(1)}) : t; }

}  // namespace

PrecomputedEncoder::PrecomputedEncoder(const std::vector<std::string>& files) {
  SA_CHECK(!files.empty(), "--embeddings: no file given");
  for (const std::string& path : files) {
    files_.push_back(H5File::open(path));
    const H5File& f = files_.back();
    nlohmann::json index;
    try {
      index = nlohmann::json::parse(f.read_string("sentence_to_index"));
    } catch (const nlohmann::json::exception& e) {
      fail("{}: sentence_to_index is not JSON ({})", path, e.what());
    }
    SA_CHECK(index.is_object(), "{}: sentence_to_index is not a JSON object of sentence -> dataset name", path);
    for (const auto& [sentence, key] : index.items()) {
      SA_CHECK(key.is_string(), "{}: sentence_to_index maps \"{}\" to {}, not a dataset name", path,
               sentence.substr(0, 80), key.dump());
      // The line as the embedder read it: whitespace-separated tokens.
      index_.emplace(joined(split_tokens(sentence)), std::make_pair(files_.size() - 1, key.get<std::string>()));
    }
  }
  SA_CHECK(!index_.empty(), "--embeddings: no sentence in {}", files[0]);
  const auto& [file, key] = index_.begin()->second;
  const Tensor first = as_layers(files_[file].read(key));
  SA_CHECK(first.rank() == 3, "{}: dataset '{}' is {}, expected [layers, tokens, dim] or [tokens, dim]",
           files_[file].path(), key, describe(first));
  n_layers_ = static_cast<int>(first.dim(0));
  dim_ = first.dim(2);
  origin = files.size() == 1 ? files[0] : files[0] + " and " + std::to_string(files.size() - 1) + " more";
}

std::vector<Tensor> PrecomputedEncoder::embed(const Sentences& batch, EncoderState*) const {
  std::vector<Tensor> out;
  for (const auto& s : batch) {
    const std::string key = joined(s);
    auto it = index_.find(key);
    SA_CHECK(it != index_.end(), "--embeddings ({}): no vectors for the sentence \"{}\"", origin,
             key.size() > 80 ? key.substr(0, 80) + "..." : key);
    const H5File& f = files_[it->second.first];
    const Tensor e = as_layers(f.read(it->second.second));
    SA_CHECK(e.rank() == 3 && e.dim(0) == n_layers_ && e.dim(1) == static_cast<int64_t>(s.size()) && e.dim(2) == dim_,
             "{}: dataset '{}' is {}, expected [{}, {}, {}] for \"{}\"", f.path(), it->second.second, describe(e),
             n_layers_, s.size(), dim_, key.size() > 80 ? key.substr(0, 80) + "..." : key);
    out.push_back(e);
  }
  return out;
}

std::unique_ptr<EncoderState> PrecomputedEncoder::new_state(int) const {
  fail("--embeddings: precomputed vectors carry no state");
}

}  // namespace sa
