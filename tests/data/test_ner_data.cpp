// NER readers (CoNLL columns, PAN-X TSV, Latin-1), their errors, and the tag schemes.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>

#include "data/ner_corpus.h"
#include "eval/conlleval.h"
#include "tests/test_util.h"

namespace sa {
namespace {

using testing::contains;
using testing::temp_file;

using Tags = std::vector<std::string>;

TEST(NerData, ConllColumnsDocumentsAndSentences) {
  const std::string path = temp_file("ner.conll",
                                 "-DOCSTART- -X- O O\n\nEU NNP I-NP I-ORG\nrejects VBZ I-VP O\nGerman JJ I-NP I-MISC\n"
                                 "\n\nPeter NNP I-NP I-PER\nBlackburn NNP I-NP I-PER\r\n\n-DOCSTART- -X- O O\n\nx X X O\n");
  NerCorpus c = read_conll_ner(path);
  EXPECT_EQ(c.documents, 2);
  ASSERT_EQ(c.sentences.size(), 3u);
  EXPECT_EQ(c.sentences[0].tokens, (Tags{"EU", "rejects", "German"}));
  EXPECT_EQ(c.sentences[0].tags, (Tags{"I-ORG", "O", "I-MISC"}));
  EXPECT_EQ(c.sentences[1].tags, (Tags{"I-PER", "I-PER"}));  // the CR of a CRLF line is not part of the tag
  EXPECT_FALSE(c.latin1);
}

TEST(NerData, Latin1FilesAreReadAsLatin1) {
  NerCorpus c = read_conll_ner(temp_file("latin1.conll", "Gro\xdf" "er Gro\xdf" "e NN I-NC O\nM\xfc" "ller M\xfc" "ller NE I-NC I-PER\n"));
  EXPECT_TRUE(c.latin1);
  EXPECT_EQ(c.sentences[0].tokens, (Tags{"Gro\u00dfer", "M\u00fcller"}));
}

TEST(NerData, BadLinesNameFileAndLine) {
  const std::string cols = temp_file("cols.conll", "a NN O\nb NN\nc NN B-PER\n");
  EXPECT_TRUE(contains(testing::error_of([&] { read_conll_ner(cols); }), cols + ":2: 2 columns, but line 1 has 3"));
  const std::string tag = temp_file("tag.conll", "a O\nb X-PER\n");
  EXPECT_TRUE(contains(testing::error_of([&] { read_conll_ner(tag); }), tag + ":2: unknown tag 'X-PER'"));
  const std::string one = temp_file("one.tsv", "a\tO\nb\n");
  EXPECT_TRUE(contains(testing::error_of([&] { read_panx(one); }), one + ":2: expected a token and a tag"));
}

TEST(NerData, PanxTsvWithAndWithoutLanguagePrefixes) {
  NerCorpus p = read_panx(temp_file("p1.tsv", "de:Anton\tB-PER\nde:Wilhelm\tI-PER\n\nde:10:30\tO\n"));
  ASSERT_EQ(p.sentences.size(), 2u);
  EXPECT_EQ(p.sentences[0].tokens, (Tags{"Anton", "Wilhelm"}));
  EXPECT_EQ(p.sentences[1].tokens, (Tags{"10:30"}));
  NerCorpus q = read_panx(temp_file("p2.tsv", "10:30\tO\nab:cd\tO\n"));
  EXPECT_EQ(q.sentences[0].tokens, (Tags{"10:30", "ab:cd"}));
}

TEST(NerData, TagSchemes) {
  // IOB1: I- opens a chunk, B- separates two adjacent chunks of one type.
  EXPECT_EQ(iob_to_bioes({"I-ORG", "O", "I-PER", "I-PER", "B-PER", "I-LOC", "I-ORG"}),
            (Tags{"S-ORG", "O", "B-PER", "E-PER", "S-PER", "S-LOC", "S-ORG"}));
  EXPECT_EQ(iob_to_bioes({"B-PER", "I-PER", "I-PER", "O", "B-LOC"}), (Tags{"B-PER", "I-PER", "E-PER", "O", "S-LOC"}));
  EXPECT_EQ(bioes_to_iob2({"B-PER", "I-PER", "E-PER", "S-PER", "O", "E-LOC", "I-ORG", "E-ORG"}),
            (Tags{"B-PER", "I-PER", "I-PER", "B-PER", "O", "B-LOC", "B-ORG", "I-ORG"}));
  // Any IOB tagging -> BIOES -> IOB2 keeps every chunk: conlleval scores it 100 against the original.
  std::mt19937 rng(3);
  const Tags pool = {"O", "O", "B-PER", "I-PER", "B-LOC", "I-LOC", "I-ORG"};
  for (int trial = 0; trial < 200; ++trial) {
    Tags t;
    for (int i = 0, n = 1 + static_cast<int>(rng() % 10); i < n; ++i) t.push_back(pool[rng() % pool.size()]);
    const Tags back = bioes_to_iob2(iob_to_bioes(t));
    TaggedSentence s;
    for (size_t i = 0; i < t.size(); ++i) s.push_back({"w", t[i], back[i]});
    const ConllevalReport r = conlleval({s});
    EXPECT_EQ(r.all.correct, r.all.gold);
    EXPECT_EQ(r.all.guessed, r.all.gold);
    EXPECT_EQ(bioes_to_iob2(iob_to_bioes(back)), back);  // IOB2 is a fixed point
  }
}

TEST(NerData, TheSharedCorporaReadWhole) {
  const std::string d = "../shared/data/ner/";
  if (!std::filesystem::exists(d + "conll2003/eng.train")) GTEST_SKIP() << "no ../shared/data here";
  auto count = [](const NerCorpus& c) {
    size_t n = 0;
    for (const NerSentence& s : c.sentences) n += s.tokens.size();
    return n;
  };
  NerCorpus eng = read_conll_ner(d + "conll2003/eng.train");
  EXPECT_EQ(eng.sentences.size(), 14041u);  // the CoNLL-2003 statistics
  EXPECT_EQ(count(eng), 203621u);
  EXPECT_EQ(eng.documents, 946);
  NerCorpus deu = read_conll_ner(d + "conll2003/deu.testa");
  EXPECT_TRUE(deu.latin1);
  EXPECT_EQ(deu.sentences.size(), 2867u);
  NerCorpus esp = read_conll_ner(d + "conll2002/esp.testa");
  EXPECT_FALSE(esp.latin1);
  EXPECT_EQ(count(esp), 52923u);
  NerCorpus zh = read_panx(d + "panx/dev-zh.tsv");
  EXPECT_EQ(zh.sentences.size(), 10000u);
  EXPECT_EQ(count(zh), 213682u);
}

}  // namespace
}  // namespace sa
