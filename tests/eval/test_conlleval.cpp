// Our conlleval equals the official conlleval.pl, digit for digit, on constructed cases (IOB1,
// IOB2, wrong types, partial spans, I- after O, an empty prediction) and on random tag sequences.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>

#include "eval/conlleval.h"

namespace sa {
namespace {

const std::string kScorer = "../shared/data/ner/conlleval.pl";

std::string official(const std::vector<TaggedSentence>& s) {
  const std::string path = ::testing::TempDir() + "/conlleval-input.txt";
  std::ofstream(path) << conlleval_input(s);
  std::string out;
  FILE* p = popen(("perl " + kScorer + " < " + path).c_str(), "r");
  char buf[512];
  while (std::fgets(buf, sizeof buf, p)) out += buf;
  pclose(p);
  return out;
}

// Sentences from "token gold guess" triples separated by "|".
std::vector<TaggedSentence> parse(const std::vector<std::vector<std::string>>& sents) {
  std::vector<TaggedSentence> out;
  for (const auto& s : sents) {
    TaggedSentence t;
    for (size_t i = 0; i + 1 < s.size(); i += 2) t.push_back({"w" + std::to_string(i), s[i], s[i + 1]});
    out.push_back(t);
  }
  return out;
}

TEST(Conlleval, EqualsTheOfficialScorer) {
  if (!std::filesystem::exists(kScorer) || std::system("perl -e 1 2>/dev/null") != 0)
    GTEST_SKIP() << "needs ../shared/data/ner/conlleval.pl and perl";
  const std::vector<std::vector<std::vector<std::string>>> cases = {
      // IOB2, all right
      {{"B-PER", "B-PER", "I-PER", "I-PER", "O", "O", "B-LOC", "B-LOC"}},
      // IOB1 (I- opens a chunk; B- only between two chunks of one type)
      {{"I-ORG", "I-ORG", "I-ORG", "I-ORG", "B-ORG", "B-ORG", "O", "O", "I-MISC", "I-MISC"}},
      // wrong types, partial spans, a chunk split in two
      {{"B-PER", "B-ORG", "I-PER", "I-ORG", "O", "O"},
       {"B-LOC", "B-LOC", "I-LOC", "O", "I-LOC", "I-LOC"},
       {"B-MISC", "B-MISC", "I-MISC", "B-MISC", "O", "O"}},
      // I- after O in the guesses, gold IOB2
      {{"O", "I-PER", "B-PER", "I-PER", "I-PER", "I-PER", "O", "O"}},
      // an empty prediction
      {{"B-PER", "O", "I-PER", "O", "O", "O", "B-LOC", "O"}, {"B-ORG", "O"}},
      // chunks that run to the sentence end, and across sentences
      {{"O", "O", "B-LOC", "B-LOC"}, {"I-LOC", "I-LOC", "I-LOC", "I-LOC"}},
  };
  for (const auto& c : cases) {
    const auto s = parse(c);
    EXPECT_EQ(format_conlleval(conlleval(s)), official(s));
  }
  // Random sequences over B/I/E/S/O and four types: every rule of the scorer gets exercised.
  std::mt19937 rng(7);
  const std::vector<std::string> kinds = {"O", "O", "O", "B", "I", "I", "E", "S"}, types = {"PER", "LOC", "ORG", "MISC"};
  auto tag = [&] {
    const std::string k = kinds[rng() % kinds.size()];
    return k == "O" ? k : k + "-" + types[rng() % types.size()];
  };
  for (int trial = 0; trial < 40; ++trial) {
    std::vector<TaggedSentence> s(1 + rng() % 4);
    for (TaggedSentence& sent : s)
      for (int i = 0, n = 1 + static_cast<int>(rng() % 12); i < n; ++i) {
        const std::string gold = tag();
        sent.push_back({"t", gold, rng() % 3 == 0 ? gold : tag()});
      }
    EXPECT_EQ(format_conlleval(conlleval(s)), official(s)) << conlleval_input(s);
  }
}

TEST(Conlleval, CountsOfASmallCase) {
  // gold: PER [0,2), LOC [3]; guess: PER [0,2), ORG [3]
  TaggedSentence s = {{"a", "B-PER", "B-PER"}, {"b", "I-PER", "I-PER"}, {"c", "O", "O"}, {"d", "B-LOC", "B-ORG"}};
  ConllevalReport r = conlleval({s});
  EXPECT_EQ(r.tokens, 4);
  EXPECT_EQ(r.correct_tags, 3);
  EXPECT_EQ(r.all.gold, 2);
  EXPECT_EQ(r.all.guessed, 2);
  EXPECT_EQ(r.all.correct, 1);
  EXPECT_DOUBLE_EQ(r.all.f1(), 50.0);
  EXPECT_EQ(r.by_type.at("ORG").guessed, 1);
  EXPECT_EQ(r.by_type.at("ORG").gold, 0);
  EXPECT_EQ(r.by_type.at("LOC").recall(), 0.0);
}

}  // namespace
}  // namespace sa
