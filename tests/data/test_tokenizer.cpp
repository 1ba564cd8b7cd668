// The C++ tokenizer equals the corpus scripts' Python regexes, token for token and sentence for
// sentence, on constructed edge cases and on real raw text (MARC reviews in en, es, zh; XNLI).
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "data/review_corpus.h"
#include "data/tokenizer.h"
#include "tests/test_util.h"

namespace sa {
namespace {

using Tokens = std::vector<std::string>;

TEST(Tokenizer, EdgeCases) {
  EXPECT_EQ(tokenize("Don't e-mail me at 3.5 p.m., O’Brien!"),
            (Tokens{"Don't", "e-mail", "me", "at", "3.5", "p.m", ".", ",", "O’Brien", "!"}));
  EXPECT_EQ(tokenize("a--b 'quoted' end."), (Tokens{"a", "-", "-", "b", "'", "quoted", "'", "end", "."}));
  EXPECT_EQ(tokenize("Größe über straße_1 ½ 東京です。"), (Tokens{"Größe", "über", "straße_1", "½", "東京です", "。"}));
  EXPECT_EQ(tokenize("\xff" "ab"), (Tokens{"\xff", "ab"}));  // an invalid byte is a token of its own
  EXPECT_EQ(tokenize_sentences("One two. Three?  Four!\nFive 。六"),
            (std::vector<Tokens>{{"One", "two", "."}, {"Three", "?"}, {"Four", "!"}, {"Five", "。", "六"}}));
}

// Text given one character a token (PAN-X zh/ja) is regrouped into the lexicon's words, longest
// first, exactly as tokenize() segments the same characters written together; other tokens stay.
TEST(Tokenizer, RegroupsOneCharacterTokensIntoLexiconWords) {
  const std::string muse = testing::temp_file("regroup.muse", "tokyo 東京\ntokyo 東京都\nuniversity 大學\nstudent 學生\n");
  CjkLexicon lex;
  lex.add_muse_targets(muse, 0, 0);
  lex.finish(8);
  const RegroupedTokens r = regroup_cjk_characters({"東", "京", "都", "的", "A", "大", "學", "生", "x", "生"}, lex);
  EXPECT_EQ(r.words, (Tokens{"東京都", "的", "A", "大學", "生", "x", "生"}));
  EXPECT_EQ(r.word_of, (std::vector<int32_t>{0, 0, 0, 1, 2, 3, 3, 4, 5, 6}));
  // The same characters as raw text: the same words.
  EXPECT_EQ(tokenize("東京都的大學生", &lex), (Tokens{"東京都", "的", "大學", "生"}));
  EXPECT_EQ(regroup_cjk_characters({"東", "京", "都", "的", "大", "學", "生"}, lex).words,
            (Tokens{"東京都", "的", "大學", "生"}));
  // Multi-character tokens are never joined, even when their concatenation is a word.
  EXPECT_EQ(regroup_cjk_characters({"東京", "都"}, lex).words, (Tokens{"東京", "都"}));
  EXPECT_TRUE(is_cjk_character("學"));
  EXPECT_FALSE(is_cjk_character("學生"));
  EXPECT_FALSE(is_cjk_character("a"));
}

// Python's own tokens for each line of `path`, tokens joined by spaces, sentences by " | ".
std::vector<std::string> python_tokens(const std::string& path) {
  const std::string script = ::testing::TempDir() + "/tok.py";
  std::ofstream(script) << "import re, sys\n"
                           "T = re.compile(r\"\\w+(?:[-'\u2019.]\\w+)*|[^\\w\\s]\", re.UNICODE)\n"
                           "S = re.compile(r\"(?<=[.!?\u3002\uff01\uff1f])\\s+\")\n"
                           "for line in open(sys.argv[1], encoding='utf-8'):\n"
                           "    line = line.rstrip('\\n')\n"
                           "    print(' | '.join(' '.join(t) for t in (T.findall(s) for s in S.split(line)) if t))\n";
  std::vector<std::string> out;
  FILE* p = popen(("python3 " + script + " " + path).c_str(), "r");
  std::string cur;
  char buf[4096];
  while (std::fgets(buf, sizeof buf, p)) {
    cur += buf;
    if (!cur.empty() && cur.back() == '\n') cur.pop_back(), out.push_back(cur), cur.clear();
  }
  pclose(p);
  return out;
}

std::string ours(const std::string& line) {
  std::string s;
  for (const Tokens& t : tokenize_sentences(line)) {
    if (!s.empty()) s += " | ";
    for (size_t i = 0; i < t.size(); ++i) s += (i ? " " : "") + t[i];
  }
  return s;
}

TEST(Tokenizer, EqualsThePythonScriptsOnRealText) {
  const std::string d = "../shared/data/";
  if (!std::filesystem::exists(d + "sentiment/marc-test-zh.csv") || std::system("python3 -c 1 2>/dev/null") != 0)
    GTEST_SKIP() << "needs ../shared/data and python3";
  std::vector<std::string> lines;
  for (const char* f : {"sentiment/marc-test-en.csv", "sentiment/marc-test-es.csv", "sentiment/marc-test-zh.csv"}) {
    const ReviewSet r = read_marc_csv(d + f);
    for (size_t i = 0; i < r.reviews.size(); i += 5) {
      std::string t = r.reviews[i].text;
      for (char& c : t)
        if (c == '\n' || c == '\r') c = ' ';  // one review per line for the script
      lines.push_back(t);
    }
  }
  std::ifstream x(d + "xnli/dev-de.tsv");
  for (std::string l; std::getline(x, l);) lines.push_back(l.substr(0, l.find('\t')));
  const std::string path = testing::temp_file("tok-input.txt", "");
  {
    std::ofstream f(path);
    for (const std::string& l : lines) f << l << "\n";
  }
  const std::vector<std::string> want = python_tokens(path);
  ASSERT_EQ(want.size(), lines.size());
  int differ = 0;
  for (size_t i = 0; i < lines.size(); ++i)
    if (ours(lines[i]) != want[i] && ++differ <= 3) ADD_FAILURE() << "line " << i << ": " << lines[i] << "\n ours: " << ours(lines[i]) << "\n python: " << want[i];
  EXPECT_EQ(differ, 0) << "of " << lines.size() << " lines";
}

// With a CJK lexicon, the tokens equal data/scripts/segment_cjk.py's (the bilingual corpora's
// segmentation) on Chinese reviews and XNLI sentences (CC-CEDICT and MUSE en-zh, ranks 4000-5000
// held out) and on Japanese Wikipedia text (EDICT in EUC-JP and MUSE en-ja).
TEST(Tokenizer, CjkSegmentationEqualsTheScript) {
  const std::string d = "../shared/data/";
  if (!std::filesystem::exists(d + "dict/cedict_ts.u8") || !std::filesystem::exists("/usr/share/edict/edict") ||
      std::system("python3 -c 1 2>/dev/null") != 0)
    GTEST_SKIP() << "needs ../shared/data, Debian's edict and python3";
  struct Lang {
    std::string lexicon_flag, lexicon, muse;
    std::vector<std::string> lines;
  };
  Lang zh{"--cedict", d + "dict/cedict_ts.u8", d + "dict/muse/en-zh.train.txt", {}};
  Lang ja{"--edict", "/usr/share/edict/edict", d + "dict/muse/en-ja.train.txt", {}};
  const ReviewSet r = read_marc_csv(d + "sentiment/marc-test-zh.csv");
  for (size_t i = 0; i < r.reviews.size(); i += 10) {
    std::string t = r.reviews[i].text;
    for (char& c : t)
      if (c == '\n' || c == '\r') c = ' ';
    zh.lines.push_back(t);
  }
  std::ifstream x(d + "xnli/dev-zh.tsv");
  for (std::string l; std::getline(x, l) && zh.lines.size() < 1000;) zh.lines.push_back(l.substr(0, l.find('\t')));
  std::ifstream w(d + "corpus/wiki-ja.txt");  // characters split by spaces, "#" = an original space: undone
  for (std::string l; std::getline(w, l) && ja.lines.size() < 800;) {
    std::string raw;
    for (char c : l) raw += c == '#' ? std::string(" ") : c == ' ' ? std::string() : std::string(1, c);
    if (raw.find_first_not_of(' ') != std::string::npos) ja.lines.push_back(raw);
  }
  for (Lang* L : {&zh, &ja}) {
    CjkLexicon lex;
    if (L->lexicon_flag == "--cedict") lex.add_cedict(L->lexicon);
    else lex.add_edict(L->lexicon);
    lex.add_muse_targets(L->muse, 4000, 5000);
    lex.finish(8);
    const std::string in = testing::temp_file("cjk-in.txt", ""), out = ::testing::TempDir() + "/cjk-out.txt";
    {
      std::ofstream f(in);
      for (const std::string& l : L->lines) f << l << "\n";
    }
    const std::string cmd = "python3 data/scripts/segment_cjk.py " + L->lexicon_flag + " " + L->lexicon + " --muse " +
                            L->muse + " --muse-skip-ranks 4000:5000 " + in + " " + out + " > /dev/null";
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
    std::ifstream got(out);
    int differ = 0;
    size_t n = 0;
    for (const std::string& l : L->lines) {
      std::string ours_line;
      for (const std::string& t : tokenize(l, &lex)) ours_line += (ours_line.empty() ? "" : " ") + t;
      if (ours_line.empty()) continue;  // the script writes no line for these
      std::string want;
      std::getline(got, want);
      ++n;
      if (ours_line != want && ++differ <= 3) ADD_FAILURE() << L->lexicon_flag << " line: " << l << "\n ours:   " << ours_line << "\n script: " << want;
    }
    EXPECT_EQ(differ, 0) << "of " << n << " lines (" << L->lexicon_flag << ")";
    EXPECT_GT(n, 500u);
    EXPECT_GT(lex.size(), 50000u);
  }
}

}  // namespace
}  // namespace sa
