// The sentiment task's data preparation: labels from stars, truncation, neutral reviews left out.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <numeric>
#include <random>
#include <sstream>

#include "eval/sentiment_task.h"
#include "tests/test_util.h"

namespace sa {
namespace {

TEST(SentimentData, LabelsTruncationAndNeutralReviews) {
  ReviewSet set;
  set.reviews = {{"a", "Great phone. Works well!", 5}, {"b", "Meh.", 3}, {"c", "Broke after a day. Bad.", 1},
                 {"d", "   ", 4}, {"e", "One two three four five six seven.", 2}};
  SentimentData d = prepare_sentiment(set, 5, true);
  ASSERT_EQ(d.labels, (std::vector<int32_t>{1, 0, 0}));
  EXPECT_EQ(d.neutral, 1);
  EXPECT_EQ(d.empty, 1);
  EXPECT_EQ(d.reviews[0], (Sentences{{"great", "phone", "."}, {"works", "well"}}));  // cut at 5 tokens
  EXPECT_EQ(d.reviews[1], (Sentences{{"broke", "after", "a", "day", "."}}));       // its second sentence dropped
  EXPECT_EQ(d.reviews[2], (Sentences{{"one", "two", "three", "four", "five"}}));
  EXPECT_EQ(d.truncated, 3);
  EXPECT_THROW(prepare_sentiment(set, 0, false), Error);
  // With a CJK lexicon, Chinese is cut into its words (a one-line CC-CEDICT: traditional, simplified).
  CjkLexicon lex;
  lex.add_cedict(testing::temp_file("mini.u8", "# comment\n中文 中文 [Zhong1 wen2] /Chinese/\n"));
  lex.finish();
  ReviewSet zh;
  zh.reviews = {{"z", "我爱中文。", 5}};
  EXPECT_EQ(prepare_sentiment(zh, 50, false, &lex).reviews[0], (Sentences{{"我", "爱", "中文", "。"}}));
  EXPECT_EQ(prepare_sentiment(zh, 50, false).reviews[0], (Sentences{{"我爱中文", "。"}}));  // no lexicon: one word
}

}  // namespace
}  // namespace sa
