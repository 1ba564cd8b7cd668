// BERT's tokenizer: the basic tokenizer on constructed text (accents, CJK, punctuation, control
// characters, special tokens), greedy WordPiece with [UNK], vocab.txt errors, and the two
// vocabulary builders.
#include <gtest/gtest.h>

#include "tests/test_util.h"

#include "data/wordpiece.h"
#include "data/wordpiece_trainer.h"

namespace sa {
namespace {

using testing::contains;
using testing::temp_file;
using Words = std::vector<std::string>;

TEST(BertBasicTokenizer, LowercasesStripsAccentsAndSplitsPunctuation) {
  EXPECT_EQ(bert_basic_tokenize("Héllo, WORLD!  naïve\tCAFÉ"), (Words{"hello", ",", "world", "!", "naive", "cafe"}));
  // Decomposed input (e + combining acute) gives the same.
  EXPECT_EQ(bert_basic_tokenize("cafe\xCC\x81"), (Words{"cafe"}));
  EXPECT_EQ(bert_basic_tokenize("$5.00 e-mail (don't)"),
            (Words{"$", "5", ".", "00", "e", "-", "mail", "(", "don", "'", "t", ")"}));
  // Non-ASCII punctuation (categories P*): guillemets, an em dash, the ideographic full stop.
  EXPECT_EQ(bert_basic_tokenize("«Ja»—nein"), (Words{"«", "ja", "»", "—", "nein"}));
}

TEST(BertBasicTokenizer, CasedKeepsAccentsInComposedForm) {
  BasicTokenizerOptions cased;
  cased.lowercase = false;
  EXPECT_EQ(bert_basic_tokenize("Héllo CAFE\xCC\x81!", cased), (Words{"Héllo", "CAFÉ", "!"}));
  cased.strip_accents = true;
  EXPECT_EQ(bert_basic_tokenize("Héllo CAFÉ", cased), (Words{"Hello", "CAFE"}));
  BasicTokenizerOptions keep;
  keep.strip_accents = false;
  EXPECT_EQ(bert_basic_tokenize("Héllo", keep), (Words{"héllo"}));
}

TEST(BertBasicTokenizer, CjkIdeographsStandAloneOtherScriptsDoNot) {
  EXPECT_EQ(bert_basic_tokenize("我爱NLP。"), (Words{"我", "爱", "nlp", "。"}));
  // Hiragana and Hangul are not CJK ideographs: they stay in words. Uncased BERT strips the voicing
  // mark of が (NFD: か + U+3099, a nonspacing mark) as it strips accents; cased keeps it.
  EXPECT_EQ(bert_basic_tokenize("ひらがな"), (Words{"ひらかな"}));
  BasicTokenizerOptions cased;
  cased.lowercase = false;
  EXPECT_EQ(bert_basic_tokenize("ひらがな 한국어", cased), (Words{"ひらがな", "한국어"}));
  BasicTokenizerOptions o;
  o.split_cjk = false;
  EXPECT_EQ(bert_basic_tokenize("我爱你", o), (Words{"我爱你"}));
}

TEST(BertBasicTokenizer, DropsControlCharactersAndKeepsSpecialTokens) {
  // U+0001 (Cc), U+200B zero-width space (Cf) and U+FFFD vanish; a no-break space (Zs) splits.
  EXPECT_EQ(bert_basic_tokenize("a\x01" "b\xE2\x80\x8B" "c\xEF\xBF\xBD" "d\xC2\xA0" "e\r\nf"), (Words{"abcd", "e", "f"}));
  EXPECT_EQ(bert_basic_tokenize("The [MASK] sat [SEP]"), (Words{"the", "[MASK]", "sat", "[SEP]"}));
  EXPECT_THROW(bert_basic_tokenize("bad \xFF byte", {}, "input.txt"), std::exception);
  try {
    bert_basic_tokenize("bad \xFF byte", {}, "input.txt: line 3");
  } catch (const std::exception& e) {
    EXPECT_TRUE(contains(e.what(), "input.txt: line 3")) << e.what();
  }
}

WordPieceVocab small_vocab() {
  return WordPieceVocab::from_pieces({"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "un", "##aff", "##able", "a", "##a",
                                      "runn", "##ing", "run", ",", "我"});
}

TEST(WordPiece, GreedyLongestMatchFirst) {
  const WordPieceVocab v = small_vocab();
  auto pieces = [&](const std::string& w) {
    Words out;
    for (int id : wordpiece_ids(w, v)) out.push_back(v.piece(id));
    return out;
  };
  EXPECT_EQ(pieces("unaffable"), (Words{"un", "##aff", "##able"}));
  EXPECT_EQ(pieces("running"), (Words{"runn", "##ing"}));  // "runn" is longer than "run"
  EXPECT_EQ(pieces("unx"), (Words{"[UNK]"}));               // one part unmatched: the whole word
  EXPECT_EQ(pieces("[MASK]"), (Words{"[MASK]"}));
  EXPECT_EQ(pieces(std::string(100, 'a')).size(), 100u);   // a ##a ##a ...
  EXPECT_EQ(pieces(std::string(101, 'a')), (Words{"[UNK]"}));  // over 100 characters
  EXPECT_EQ(pieces(std::string(40, 'a') + "\xC3\xA9"), (Words{"[UNK]"}));
}

TEST(WordPiece, TokenizerKeepsWordsOfPieces) {
  WordPieceTokenizer t(small_vocab());
  EXPECT_EQ(t.pieces("Unaffable, RUNNING 我"), (Words{"un", "##aff", "##able", ",", "runn", "##ing", "我"}));
  const WordPieces p = t.encode_words({"unaffable,", "zzz", "run"});
  EXPECT_EQ(p.ids.size(), 6u);  // un ##aff ##able , [UNK] run
  EXPECT_EQ(p.word_of, (std::vector<int>{0, 0, 0, 0, 1, 2}));
  EXPECT_EQ(p.ids[4], t.vocab().unk());
}

TEST(WordPiece, VocabFileErrorsNameFileAndLine) {
  const std::string dup = temp_file("dup-vocab.txt", "[PAD]\n[UNK]\nrun\n##s\nrun\n");
  try {
    WordPieceVocab::load(dup);
    FAIL() << "a duplicate entry must fail";
  } catch (const std::exception& e) {
    EXPECT_TRUE(contains(e.what(), dup + ": line 5: 'run' already on line 3")) << e.what();
  }
  const std::string no_unk = temp_file("no-unk-vocab.txt", "[PAD]\nrun\n");
  EXPECT_THROW(WordPieceVocab::load(no_unk), std::exception);
  // Hugging Face's files may end lines with \r\n; ids are line indices.
  const WordPieceVocab v = WordPieceVocab::load(temp_file("crlf-vocab.txt", "[PAD]\r\n[UNK]\r\n[CLS]\r\n[SEP]\r\n[MASK]\r\nx\r\n"));
  EXPECT_EQ(v.id("x"), 5);
  EXPECT_EQ(v.mask(), 4);
  const std::string saved = ::testing::TempDir() + "/saved-vocab.txt";
  v.save(saved);
  EXPECT_EQ(WordPieceVocab::load(saved).size(), v.size());
}

TEST(WordPieceTrainer, LearnsFrequentWordsAndCoversTheCorpus) {
  std::string text;
  for (int i = 0; i < 30; ++i) text += "the lower newest widest lowest runner runs running\n";
  text += "Überraschung naïve 我们\n";
  const std::string corpus = temp_file("wp-corpus.txt", text);
  WordPieceTrainOptions o;
  o.vocab_size = 100;
  const WordPieceVocab v = train_wordpiece({corpus}, o);
  // Merging stops when no pair occurs twice: every frequent word is then one piece, and the words
  // seen once stay in characters.
  EXPECT_LT(v.size(), 100);
  EXPECT_EQ(v.piece(0), "[PAD]");
  for (const char* w : {"the", "lower", "newest", "widest", "lowest", "runner", "runs", "running"})
    EXPECT_GE(v.id(w), 0) << w;
  EXPECT_EQ(v.id("naive"), -1);
  EXPECT_GE(v.id("##v"), 0);  // "naïve" lowercased and unaccented: its letters as continuations
  EXPECT_GE(v.id("我"), 0);
  o.vocab_size = 40;  // the alphabet (33 with the specials) and 7 merges
  EXPECT_EQ(train_wordpiece({corpus}, o).size(), 40);
  o.vocab_size = 100;
  WordPieceTokenizer t(v);
  for (const std::string& w : bert_basic_tokenize(text))
    for (int id : wordpiece_ids(w, v)) EXPECT_NE(id, v.unk()) << w;
  // Deterministic.
  const WordPieceVocab again = train_wordpiece({corpus}, o);
  for (int i = 0; i < v.size(); ++i) EXPECT_EQ(v.piece(i), again.piece(i));
}

TEST(WordPieceTrainer, WordLevelVocabularyMakesEachWordOnePiece) {
  const std::string corpus = temp_file("wl-corpus.txt", "the bank the banks the river\nbank\n");
  const WordPieceVocab v = word_level_vocab({corpus}, 2, 0, {});
  EXPECT_EQ(v.size(), 7);  // 5 specials, "the" (3), "bank" (2)
  EXPECT_EQ(v.piece(5), "the");
  WordPieceTokenizer t(v);
  EXPECT_EQ(t.pieces("the banks bank"), (Words{"the", "[UNK]", "bank"}));
  EXPECT_EQ(word_level_vocab({corpus}, 1, 6, {}).size(), 6);
}

}  // namespace
}  // namespace sa
