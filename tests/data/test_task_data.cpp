// Readers of the sentiment and NLI data: MARC CSV (quoting, header or none), Webis-CLS-10's
// irregular markup, SICK / XNLI / MultiNLI TSV by header, MultiNLI JSON lines; errors with file
// and line; the shared files read whole.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "data/nli_corpus.h"
#include "data/progress_line.h"
#include "data/review_corpus.h"
#include "tests/test_util.h"

namespace sa {
namespace {

using testing::contains;
using testing::temp_file;

TEST(ReviewData, MarcCsvQuotingAndHeaders) {
  ReviewSet with = read_marc_csv(temp_file("h.csv", "row_id,review_text,stars\n7,\"Good, \"\"really\"\"\nsaid it\",5\r\n8,bad,1\n"));
  ASSERT_EQ(with.reviews.size(), 2u);
  EXPECT_EQ(with.reviews[0].id, "7");
  EXPECT_EQ(with.reviews[0].text, "Good, \"really\"\nsaid it");
  EXPECT_EQ(with.reviews[0].stars, 5);
  EXPECT_EQ(with.reviews[1].text, "bad");
  ReviewSet without = read_marc_csv(temp_file("n.csv", "0,first review,2\n1,second,3\n"));
  ASSERT_EQ(without.reviews.size(), 2u);  // review 0 is kept
  EXPECT_EQ(without.reviews[0].text, "first review");
  EXPECT_EQ(sentiment_label(2), 0);
  EXPECT_EQ(sentiment_label(3), -1);
  EXPECT_EQ(sentiment_label(4), 1);
  const std::string bad = temp_file("bad.csv", "0,a,1\n1,\"b\nc\",x\n");
  EXPECT_TRUE(contains(testing::error_of([&] { read_marc_csv(bad); }), bad + ":2: the rating 'x' is not a number"));
  const std::string short_row = temp_file("short.csv", "0,a,1\n1,b\n");
  EXPECT_TRUE(contains(testing::error_of([&] { read_marc_csv(short_row); }), short_row + ":2: expected 3 fields"));
}

TEST(ReviewData, WebisClsToleratesIrregularMarkup) {
  const std::string path = temp_file("books.review",
                                 "<items>\n<item>\n<category>books</category>\n<rating>5.0</rating>\n"
                                 "<text>Great &amp; &quot;fun&quot; read</text>\n</item>\n"
                                 "<item><rating>2.0</rating><title>x</title><text>\n  dull  \n</text></item>\n"
                                 "<item><rating>4.0</rating></item>\n"          // no text: skipped
                                 "<item><text>no rating</text>\n"                // unclosed and no rating: skipped
                                 "<item><rating>1.0</rating><text>awful</text></item>\n</items>\n");
  ReviewSet s = read_webis_cls(path);
  ASSERT_EQ(s.reviews.size(), 3u);
  EXPECT_EQ(s.skipped, 2);
  EXPECT_EQ(s.reviews[0].text, "Great & \"fun\" read");
  EXPECT_EQ(s.reviews[0].stars, 5.0);
  EXPECT_EQ(s.reviews[1].text, "dull");
  EXPECT_EQ(s.reviews[2].stars, 1.0);
}

TEST(NliData, TsvByHeaderOrPositionAndJsonl) {
  NliSet sick = read_nli_tsv(temp_file("sick.txt", "pair_ID\tsentence_A\tsentence_B\trelatedness_score\tentailment_judgment\n"
                                               "1\tA man runs\tA person runs\t4.5\tENTAILMENT\n2\tx\ty\t1\tNEUTRAL\n"));
  ASSERT_EQ(sick.pairs.size(), 2u);
  EXPECT_EQ(sick.pairs[0].premise, "A man runs");
  EXPECT_EQ(sick.pairs[0].hypothesis, "A person runs");
  EXPECT_EQ(sick.pairs[0].label, NliLabel::Entailment);
  NliSet mnli = read_nli_tsv(temp_file("mnli.tsv", "gold_label\tsentence1_parse\tsentence1\tsentence2\n"
                                               "contradiction\t(x)\tP one\tH one\n-\t(y)\tP two\tH two\n"));
  ASSERT_EQ(mnli.pairs.size(), 1u);
  EXPECT_EQ(mnli.unlabeled, 1);
  EXPECT_EQ(mnli.pairs[0].premise, "P one");
  EXPECT_EQ(mnli.pairs[0].label, NliLabel::Contradiction);
  NliSet plain = read_nli_tsv(temp_file("xnli.tsv", "Er kam.\tEr ging.\tcontradiction\nA\tB\tneutral\r\n"));
  ASSERT_EQ(plain.pairs.size(), 2u);
  EXPECT_EQ(plain.pairs[1].label, NliLabel::Neutral);
  NliSet j = read_nli_jsonl(temp_file("mnli.jsonl", "{\"gold_label\": \"entailment\", \"sentence1\": \"a\", \"sentence2\": \"b\"}\n"
                                                "{\"gold_label\": \"-\", \"sentence1\": \"c\", \"sentence2\": \"d\"}\n"));
  ASSERT_EQ(j.pairs.size(), 1u);
  EXPECT_EQ(j.unlabeled, 1);
  const std::string bad = temp_file("bad.tsv", "a\tb\tmaybe\n");
  EXPECT_TRUE(contains(testing::error_of([&] { read_nli_tsv(bad); }), bad + ":1: unknown label 'maybe'"));
  const std::string few = temp_file("few.tsv", "a\tb\tneutral\nc\td\n");
  EXPECT_TRUE(contains(testing::error_of([&] { read_nli_tsv(few); }), few + ":2: 2 tab-separated fields"));
  const std::string js = temp_file("bad.jsonl", "{\"sentence1\": \"a\"}\n");
  EXPECT_TRUE(contains(testing::error_of([&] { read_nli_jsonl(js); }), js + ":1: expected a JSON object"));
}

// A Latin-1 byte in a file that must be UTF-8: the error names the file, the line and the byte.
TEST(TaskData, InvalidUtf8NamesFileLineAndByte) {
  const std::string marc = temp_file("latin1.csv", "0,fine,5\n1,\"two\nlines caf\xe9\",1\n");
  EXPECT_TRUE(contains(testing::error_of([&] { read_marc_csv(marc); }), marc + ":3: invalid UTF-8 at byte 10"));
  const std::string webis = temp_file("latin1.review", "<item><rating>5.0</rating>\n<text>tr\xe8s bien</text></item>\n");
  EXPECT_TRUE(contains(testing::error_of([&] { read_webis_cls(webis); }), webis + ":2: invalid UTF-8 at byte 9"));
  const std::string tsv = temp_file("latin1.tsv", "a\tb\tneutral\n\xc4rger\tb\tneutral\n");
  EXPECT_TRUE(contains(testing::error_of([&] { read_nli_tsv(tsv); }), tsv + ":2: invalid UTF-8 at byte 1"));
  const std::string js = temp_file("latin1.jsonl", "{\"gold_label\": \"neutral\", \"sentence1\": \"ni\xf1o\", \"sentence2\": \"b\"}\n");
  EXPECT_TRUE(contains(testing::error_of([&] { read_nli_jsonl(js); }), js + ":1: invalid UTF-8 at byte 43"));
}

TEST(TaskData, TheSharedFilesReadWhole) {
  const std::string d = "../shared/data/";
  if (!std::filesystem::exists(d + "sentiment/marc-train-en.csv")) GTEST_SKIP() << "no ../shared/data here";
  EXPECT_EQ(read_marc_csv(d + "sentiment/marc-train-en.csv").reviews.size(), 12457u);  // 12,458 rows, a header
  ReviewSet es = read_marc_csv(d + "sentiment/marc-test-es.csv");
  ASSERT_EQ(es.reviews.size(), 5000u);
  EXPECT_EQ(es.reviews[0].id, "0");
  NliSet sick = read_nli_tsv(d + "nli/SICK.txt");
  EXPECT_EQ(sick.pairs.size(), 9927u);  // its last line has no newline
  for (const char* lang : {"en", "de", "es", "zh"})
    EXPECT_EQ(read_nli_tsv(d + "xnli/dev-" + lang + ".tsv").pairs.size(), 2490u) << lang;
}

}  // namespace
}  // namespace sa

// Progress in a log: the first line and the last, not one per batch.
TEST(ProgressLine, InALogPrintsPlainLinesAtItsInterval) {
  ::testing::internal::CaptureStderr();
  sa::ProgressLine p(false);
  for (int i = 0; i < 100; ++i) p.update("step " + std::to_string(i), i == 99);
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "step 0\nstep 99\n");
}
