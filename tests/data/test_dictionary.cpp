// Dictionary readers: MUSE, CC-CEDICT, EDICT (EUC-JP) and Ding; malformed lines and wrong
// encodings are counted skips or clear errors, never crashes; the translation table's limits.
#include <gtest/gtest.h>
#include <iconv.h>

#include <filesystem>
#include <fstream>

#include "data/dictionary.h"
#include "tests/test_util.h"

namespace sa {
namespace {

namespace fs = std::filesystem;
using testing::error_of;
std::string tmp(const std::string& n) { return ::testing::TempDir() + "/" + n; }

bool has_pair(const Dictionary& d, const std::string& a, const std::string& b) {
  return std::find(d.pairs.begin(), d.pairs.end(), std::make_pair(a, b)) != d.pairs.end();
}

std::string to_euc_jp(const std::string& utf8) {
  iconv_t cd = iconv_open("EUC-JP", "UTF-8");
  std::string in = utf8, out(utf8.size() * 2 + 8, '\0');
  char *src = in.data(), *dst = out.data();
  size_t il = in.size(), ol = out.size();
  iconv(cd, &src, &il, &dst, &ol);
  iconv_close(cd);
  out.resize(out.size() - ol);
  return out;
}

TEST(Dictionary, MuseCountsMalformedAndNonUtf8Lines) {
  std::ofstream(tmp("m.txt")) << "The Die\nlonely\nÄrger anger\nbad \xff\xfe x\na b c\nbank bank\n";
  Dictionary d = read_muse_dictionary(tmp("m.txt"));
  EXPECT_EQ(d.lines, 6u);
  EXPECT_EQ(d.skipped, 3u);
  EXPECT_NE(d.first_skip.find("m.txt:2"), std::string::npos) << d.first_skip;
  EXPECT_TRUE(has_pair(d, "the", "die"));
  EXPECT_TRUE(has_pair(d, "ärger", "anger"));  // Latin-1 capitals are lowercased too
  EXPECT_TRUE(has_pair(d, "bank", "bank"));
  EXPECT_EQ(d.pairs.size(), 3u);
  EXPECT_NE(error_of([] { read_muse_dictionary(tmp("none.txt")); }).find("cannot open"), std::string::npos);
  EXPECT_EQ(read_dictionary(tmp("m.txt"), "muse").pairs, d.pairs);
  EXPECT_NE(error_of([] { read_dictionary(tmp("m.txt"), "xml"); }).find("unknown dictionary format"), std::string::npos);
}

TEST(Dictionary, CedictTakesOneWordGlosses) {
  std::ofstream(tmp("c.u8")) << "# CC-CEDICT\n"
                                "銀行 银行 [yin2 hang2] /bank/CL:家[jia1],個|个[ge4]/\n"
                                "學 学 [xue2] /to learn/to study/science/-ology/\n"
                                "110 110 [yao1 yao1 ling2] /the emergency number for law enforcement/\n"
                                "broken line without glosses\n";
  Dictionary d = read_cedict(tmp("c.u8"));
  EXPECT_TRUE(has_pair(d, "银行", "bank"));
  EXPECT_TRUE(has_pair(d, "学", "learn"));
  EXPECT_TRUE(has_pair(d, "学", "science"));
  EXPECT_TRUE(has_pair(d, "学", "-ology"));
  EXPECT_EQ(d.pairs.size(), 5u);  // bank, learn, study, science, -ology: no classifier note, no phrase
  EXPECT_EQ(d.skipped, 1u);
  EXPECT_NE(d.first_skip.find("c.u8:5"), std::string::npos) << d.first_skip;
}

TEST(Dictionary, EdictReadsEucJpAndRejectsOtherEncodings) {
  std::ofstream(tmp("e.euc"), std::ios::binary)
      << to_euc_jp("銀行 [ぎんこう] /(n) bank/(P)/EntL1234X/\n") << to_euc_jp("ここ /(n) here/this place/\n")
      << to_euc_jp("見る;観る [みる] /(v1,vt) (1) to see/to look/EntL1259290X/\n") << "\xa1\n"  // a cut EUC-JP char
      << to_euc_jp("no slash here\n");
  Dictionary d = read_edict(tmp("e.euc"));
  EXPECT_TRUE(has_pair(d, "銀行", "bank"));
  EXPECT_TRUE(has_pair(d, "ここ", "here"));
  EXPECT_TRUE(has_pair(d, "見る", "see"));
  EXPECT_TRUE(has_pair(d, "観る", "look"));
  EXPECT_EQ(d.skipped, 2u);
  // The same entries in UTF-8: most lines fail to convert, and the reader says which encoding it wants.
  std::ofstream(tmp("e.utf8")) << "銀行 [ぎんこう] /(n) bank/\n見る [みる] /to see/\nここ /(n) here/\n";
  EXPECT_NE(error_of([] { read_edict(tmp("e.utf8")); }).find("not EUC-JP"), std::string::npos);
}

TEST(Dictionary, DingPairsWordsWithinGroups) {
  std::ofstream(tmp("d.txt")) << "# Ding\n"
                                 "Bank {f}; Sitzbank {f} | Bänke {pl} :: bench | benches\n"
                                 "Abholung {f} (von etw.) | zur Abholung bereit :: collection; pick-up | ready for collection\n"
                                 "eins | zwei :: one\n"
                                 "kein Trenner\n";
  Dictionary d = read_ding(tmp("d.txt"));
  EXPECT_TRUE(has_pair(d, "bank", "bench"));
  EXPECT_TRUE(has_pair(d, "sitzbank", "bench"));
  EXPECT_TRUE(has_pair(d, "bänke", "benches"));
  EXPECT_TRUE(has_pair(d, "abholung", "pick-up"));
  EXPECT_FALSE(has_pair(d, "bank", "benches"));  // groups stay aligned
  EXPECT_EQ(d.pairs.size(), 5u);
  EXPECT_EQ(d.skipped, 2u);
  Dictionary r = reversed(d);
  EXPECT_TRUE(has_pair(r, "bench", "bank"));
}

TEST(Dictionary, TranslationTableKeepsFourPerWord) {
  Vocab v = Vocab::from_words({"<S>", "</S>", "<UNK>", "bank", "die", "der", "das", "den", "dem", "ufer"});
  Dictionary d;
  for (const char* t : {"die", "der", "die", "das", "ufer", "dem", "missing"}) d.pairs.emplace_back("bank", t);
  d.pairs.emplace_back("ufer", "bank");
  TranslationTable t = translation_table(d, v, 4);
  const int32_t* bank = t.of(v.id("bank"));
  EXPECT_EQ(std::vector<int32_t>(bank, bank + 4),
            (std::vector<int32_t>{v.id("die"), v.id("der"), v.id("das"), v.id("ufer")}));
  EXPECT_EQ(t.dropped_for_limit, 1u);  // dem; the repeat and the unknown word are not counted
  EXPECT_EQ(t.pairs_in_vocab, 6u);
  EXPECT_EQ(t.sources, 2u);
  EXPECT_EQ(t.of(v.id("die"))[0], -1);
  EXPECT_NE(describe(d, t).find("2 source words with translations"), std::string::npos) << describe(d, t);
}

TEST(Dictionary, RealDictionariesRead) {
  const std::string cedict = "../shared/data/dict/cedict_ts.u8", edict = "/usr/share/edict/edict",
                    ding = "/usr/share/trans/de-en", muse = "../shared/data/dict/muse/en-de.train.txt";
  if (!fs::exists(cedict) || !fs::exists(edict) || !fs::exists(ding) || !fs::exists(muse))
    GTEST_SKIP() << "needs ../shared/data and Debian's edict and trans-de-en (make deps)";
  Dictionary c = read_cedict(cedict), e = read_edict(edict), g = read_ding(ding), m = read_muse_dictionary(muse);
  EXPECT_GT(c.pairs.size(), 50000u) << c.describe();
  EXPECT_GT(e.pairs.size(), 50000u) << e.describe();
  EXPECT_GT(g.pairs.size(), 50000u) << g.describe();
  EXPECT_GT(m.pairs.size(), 10000u) << m.describe();
  EXPECT_TRUE(has_pair(c, "银行", "bank"));
  EXPECT_TRUE(has_pair(e, "銀行", "bank"));
  EXPECT_TRUE(has_pair(g, "bank", "bench"));
  EXPECT_LT(e.skipped, e.lines / 100) << e.describe();
}

}  // namespace
}  // namespace sa
