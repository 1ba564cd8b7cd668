// xling_eval sent's data and features: reviews tokenized as the encoder's training corpus was
// (data/tokenizer.h), split into sentences and cut after `max_tokens` tokens, 3-star reviews left
// out; each review's feature is the mean of its token vectors.
#pragma once
#include <string>
#include <vector>

#include "data/review_corpus.h"
#include "data/tokenizer.h"
#include "eval/xling_features.h"
#include "eval/xling_harness.h"
#include "layers/encoder.h"

namespace sa {

struct SentimentData {
  std::vector<Sentences> reviews;  // each review: its sentences of tokens
  std::vector<int32_t> labels;     // 0 negative, 1 positive
  int neutral = 0;                 // 3-star reviews left out
  int empty = 0;                   // reviews without a token, left out
  int truncated = 0;               // reviews cut at max_tokens
};

// `lexicon`: segment Chinese and Japanese as the bilingual corpora were (data/tokenizer.h).
SentimentData prepare_sentiment(const ReviewSet& set, int max_tokens, bool lowercase,
                                const CjkLexicon* lexicon = nullptr);
// Keeps the reviews at `rows` (a train/dev split).
SentimentData subset(const SentimentData& d, const std::vector<size_t>& rows);

// [N, dim'] f32 on the CPU: the mean over each review's tokens of select_layers(embedding). With
// a `label`, embedding prints progress.
Tensor review_means(const ContextualEncoder& encoder, const SentimentData& data, const LayerSpec& spec,
                    const std::string& label);

// Accuracy of argmax(logits [N, classes]) against labels.
double accuracy(const Tensor& logits, const std::vector<int32_t>& labels);

// bin/xling_eval sent: its subcommand, defaults, options and run (eval/xling_harness.h).
XlingTask sentiment_xling_task();

}  // namespace sa
