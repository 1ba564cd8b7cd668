#include "eval/sentiment_task.h"

#include "data/corpus.h"
#include "data/tokenizer.h"

namespace sa {

SentimentData prepare_sentiment(const ReviewSet& set, int max_tokens, bool lowercase, const CjkLexicon* lexicon) {
  SA_CHECK(max_tokens > 0, "sentiment: max_tokens must be positive, got {}", max_tokens);
  SentimentData d;
  for (const Review& r : set.reviews) {
    const int label = sentiment_label(r.stars);
    if (label < 0) {
      ++d.neutral;
      continue;
    }
    Sentences kept;
    int n = 0;
    bool cut = false;
    for (std::vector<std::string>& s : tokenize_sentences(r.text, lexicon)) {
      if (n >= max_tokens) {
        cut = true;
        break;
      }
      if (static_cast<int>(s.size()) > max_tokens - n) {
        s.resize(static_cast<size_t>(max_tokens - n));
        cut = true;
      }
      n += static_cast<int>(s.size());
      if (lowercase)
        for (std::string& w : s) lowercase_ascii(w);
      kept.push_back(std::move(s));
    }
    if (n == 0) {
      ++d.empty;
      continue;
    }
    d.truncated += cut;
    d.reviews.push_back(std::move(kept));
    d.labels.push_back(label);
  }
  return d;
}

SentimentData subset(const SentimentData& d, const std::vector<size_t>& rows) {
  SentimentData s;
  for (size_t r : rows) {
    s.reviews.push_back(d.reviews.at(r));
    s.labels.push_back(d.labels.at(r));
  }
  return s;
}

Tensor review_means(const ContextualEncoder& encoder, const SentimentData& data, const LayerSpec& spec,
                    const std::string& label) {
  Sentences flat;
  std::vector<size_t> owner;
  for (size_t r = 0; r < data.reviews.size(); ++r)
    for (const auto& s : data.reviews[r]) {
      flat.push_back(s);
      owner.push_back(r);
    }
  const int64_t D = feature_dim(spec, encoder.n_layers(), encoder.dim());
  std::vector<double> sums(data.reviews.size() * static_cast<size_t>(D), 0.0), counts(data.reviews.size(), 0.0);
  embed_all(encoder, flat, 32, label, [&](size_t i, const Tensor& e) {
    NoGrad ng;
    const Tensor f = select_layers(e, spec);
    const std::vector<double> v = ops::sum(f, 0).values();
    double* row = sums.data() + owner[i] * static_cast<size_t>(D);
    for (int64_t k = 0; k < D; ++k) row[k] += v[static_cast<size_t>(k)];
    counts[owner[i]] += static_cast<double>(f.dim(0));
  });
  for (size_t r = 0; r < counts.size(); ++r)
    for (int64_t k = 0; k < D; ++k) sums[r * static_cast<size_t>(D) + static_cast<size_t>(k)] /= counts[r];
  return Tensor::of(sums, {static_cast<int64_t>(data.reviews.size()), D});
}

double accuracy(const Tensor& logits, const std::vector<int32_t>& labels) {
  const std::vector<double> v = logits.values();
  const int64_t C = logits.dim(1);
  SA_CHECK(static_cast<size_t>(logits.dim(0)) == labels.size() && !labels.empty(),
           "accuracy: {} rows of logits for {} labels", logits.dim(0), labels.size());
  size_t right = 0;
  for (size_t i = 0; i < labels.size(); ++i) {
    int64_t best = 0;
    for (int64_t c = 1; c < C; ++c)
      if (v[i * static_cast<size_t>(C) + static_cast<size_t>(c)] > v[i * static_cast<size_t>(C) + static_cast<size_t>(best)]) best = c;
    right += best == labels[i];
  }
  return static_cast<double>(right) / static_cast<double>(labels.size());
}

}  // namespace sa
