// wsd_eval: readers, the scorer (against the framework's Scorer.java), the nearest-sense protocol
// and the baselines.
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "data/wordnet.h"
#include "data/wsd_corpus.h"
#include "eval/wsd.h"
#include "eval/wsd_scorer.h"
#include "layers/elmo_encoder.h"
#include "tests/test_util.h"

namespace sa {
namespace {

namespace fs = std::filesystem;
using testing::error_of;

const std::string kData = "../shared/data/wsd";
std::string tmp(const std::string& name) { return ::testing::TempDir() + "/" + name; }

bool has(const std::string& msg, const std::string& part) { return msg.find(part) != std::string::npos; }

// Gold and system keys covering Scorer.java's cases: right, wrong, one of several gold keys, two
// answers (one right: half credit), a repeated answer (a set), ids missing from the gold
// (ignored) and gold ids left unanswered (recall only).
struct ScorerCase {
  WsdKeys gold, system;
};

std::vector<ScorerCase> scorer_cases() {
  WsdKeys gold = {{"d0.s0.t0", {"art%1:09:00::"}},
                  {"d0.s0.t1", {"peculiar%5:00:00:specific:00", "peculiar%5:00:00:characteristic:00"}},
                  {"d0.s0.t2", {"world%1:14:02::"}},
                  {"d0.s1.t0", {"bank%1:14:00::"}},
                  {"d0.s1.t1", {"say%2:32:00::"}},
                  {"d0.s1.t2", {"rest%1:24:00::"}},
                  {"d0.s1.t3", {"most%3:00:02::"}}};
  std::vector<ScorerCase> cases;
  cases.push_back({gold, gold});  // all right
  cases.push_back({gold,
                   {{"d0.s0.t0", {"art%1:09:00::"}},
                    {"d0.s0.t1", {"peculiar%5:00:00:characteristic:00"}},
                    {"d0.s0.t2", {"world%1:14:01::"}},
                    {"d0.s1.t0", {"bank%1:14:00::", "bank%1:17:01::"}},
                    {"d0.s1.t1", {"say%2:32:00::", "say%2:32:00::"}},
                    {"d9.s9.t9", {"art%1:09:00::"}}}});
  cases.push_back({gold, {{"d0.s0.t2", {"world%1:14:01::"}}, {"d0.s1.t3", {"most%3:00:02::"}}}});
  cases.push_back({gold, {{"x.y", {"art%1:09:00::"}}}});  // nothing scorable: P = R = 0
  return cases;
}

// One decimal place, as Scorer.java prints.
double java_round(double x) { return std::round(x * 1000.0) / 10.0; }

TEST(WsdScorer, MatchesHandComputedScores) {
  auto cases = scorer_cases();
  WsdScore s = score_wsd(cases[0].gold, cases[0].system);
  EXPECT_DOUBLE_EQ(s.p, 1.0);
  EXPECT_DOUBLE_EQ(s.r, 1.0);
  // Case 1: ok = 1 + 1 + 0 + 0.5 + 1 = 3.5 of 5 answered; 7 gold.
  s = score_wsd(cases[1].gold, cases[1].system);
  EXPECT_DOUBLE_EQ(s.p, 3.5 / 5);
  EXPECT_DOUBLE_EQ(s.r, 3.5 / 7);
  EXPECT_DOUBLE_EQ(s.f1, 2 * (3.5 / 5) * (3.5 / 7) / (3.5 / 5 + 3.5 / 7));
  EXPECT_EQ(s.answered, 5);
  s = score_wsd(cases[2].gold, cases[2].system);
  EXPECT_DOUBLE_EQ(s.p, 0.5);
  EXPECT_DOUBLE_EQ(s.r, 1.0 / 7);
  s = score_wsd(cases[3].gold, cases[3].system);
  EXPECT_EQ(s.f1, 0.0);
}

TEST(WsdScorer, EqualsScorerJava) {
  const std::string scorer = kData + "/eval/Scorer.java";
  if (!fs::exists(scorer) || std::system("java -version >/dev/null 2>&1") != 0)
    GTEST_SKIP() << "needs java and " << scorer;
  auto cases = scorer_cases();
  for (size_t c = 0; c + 1 < cases.size(); ++c) {  // the last: Java prints NaN for 0/0
    const std::string g = tmp("gold" + std::to_string(c) + ".key.txt"), sys = tmp("sys" + std::to_string(c) + ".key.txt");
    write_wsd_keys(cases[c].gold, g);
    // Write the repeated answer as Scorer.java reads it: one line per answer set.
    write_wsd_keys(cases[c].system, sys);
    FILE* p = popen(("java " + scorer + " " + g + " " + sys + " 2>&1").c_str(), "r");
    ASSERT_TRUE(p);
    std::array<char, 256> buf{};
    std::map<std::string, double> java;
    while (std::fgets(buf.data(), buf.size(), p)) {
      char name[8];
      double v;
      if (std::sscanf(buf.data(), "%7[^=]=\t%lf%%", name, &v) == 2) java[name] = v;
    }
    pclose(p);
    ASSERT_EQ(java.size(), 3u) << "unexpected Scorer.java output for case " << c;
    const WsdScore s = score_wsd(cases[c].gold, cases[c].system);
    EXPECT_DOUBLE_EQ(java["P"], java_round(s.p)) << "case " << c;
    EXPECT_DOUBLE_EQ(java["R"], java_round(s.r)) << "case " << c;
    EXPECT_DOUBLE_EQ(java["F1"], java_round(s.f1)) << "case " << c;
  }
}

TEST(WsdCorpus, XmlRoundTripAndNaming) {
  WsdCorpus c;
  c.source = "t&t";
  c.sentences.push_back({"d000.s000", {{"The", "the", "DET", ""}, {"bank", "bank", "NOUN", "d000.s000.t000"},
                                       {"Fulton County <Jury>", "group", "NOUN", "d000.s000.t001"}}});
  c.sentences.push_back({"d001.s000", {{"ran", "run", "VERB", "d001.s000.t000"}}});
  write_wsd_xml(c, tmp("rt.data.xml"));
  WsdCorpus back = read_wsd_xml(tmp("rt.data.xml"));
  EXPECT_EQ(back.source, "t&t");
  ASSERT_EQ(back.sentences.size(), 2u);
  EXPECT_EQ(back.sentences[0].tokens[2].surface, "Fulton County <Jury>");
  EXPECT_EQ(back.sentences[0].tokens[1].id, "d000.s000.t000");
  EXPECT_EQ(back.instances(), 3u);
  EXPECT_EQ(surface_words("Fulton_County Grand_Jury"), (std::vector<std::string>{"Fulton", "County", "Grand", "Jury"}));
  EXPECT_EQ(gold_key_path("a/b/semeval2007.data.xml"), "a/b/semeval2007.gold.key.txt");
  EXPECT_EQ(wsd_set_name("a/b/semeval2007.data.xml"), "semeval2007");
}

TEST(WsdCorpus, MalformedInputNamesFileAndLine) {
  std::ofstream(tmp("bad.data.xml")) << "<?xml version=\"1.0\"?>\n<corpus>\n<text id=\"d0\">\n<sentence id=\"s\">\n"
                                        "<wf lemma=\"a\" pos=\"X\">a</wf>\n<instance lemma=\"b\">b</wf>\n";
  std::string e = error_of([] { read_wsd_xml(tmp("bad.data.xml")); });
  EXPECT_TRUE(has(e, "bad.data.xml:6") && has(e, "malformed XML")) << e;
  std::ofstream(tmp("noid.data.xml")) << "<corpus>\n<text id=\"d0\">\n<sentence id=\"s\">\n"
                                         "<instance lemma=\"b\" pos=\"NOUN\">b</instance>\n</sentence></text></corpus>\n";
  e = error_of([] { read_wsd_xml(tmp("noid.data.xml")); });
  EXPECT_TRUE(has(e, "noid.data.xml:4") && has(e, "needs id")) << e;
  std::ofstream(tmp("bad.key.txt")) << "d0.s0.t0 art%1:09:00::\nd0.s0.t1\n";
  e = error_of([] { read_wsd_keys(tmp("bad.key.txt")); });
  EXPECT_TRUE(has(e, "bad.key.txt:2") && has(e, "at least one sense key")) << e;
  std::ofstream(tmp("bad2.key.txt")) << "d0.s0.t0 art\n";
  e = error_of([] { read_wsd_keys(tmp("bad2.key.txt")); });
  EXPECT_TRUE(has(e, "bad2.key.txt:1") && has(e, "not a WordNet sense key")) << e;
  fs::create_directories(tmp("semcor/brown1/tagfiles"));
  fs::create_directories(tmp("semcor/brown2/tagfiles"));
  fs::create_directories(tmp("semcor/brownv/tagfiles"));
  std::ofstream(tmp("semcor/brown1/tagfiles/br-x")) << "<s snum=1>\n<wf cmd=done pos=NN lemma=a wnsn=1 lexsn=x>a</wf>\n";
  e = error_of([] { read_semcor(tmp("semcor")); });
  EXPECT_TRUE(has(e, "br-x:2") && has(e, "lexsn")) << e;
}

TEST(WordNet, SenseKeysAndFirstSenses) {
  if (!fs::exists(WordNetSenses::kDefaultPath)) GTEST_SKIP() << "needs wordnet-sense-index (make deps)";
  const WordNetSenses wn = WordNetSenses::load();
  EXPECT_GT(wn.size(), 200000u);
  EXPECT_TRUE(wn.contains("bank%1:14:00::"));
  EXPECT_EQ(wn.sense_number("bank%1:14:00::"), 2);
  EXPECT_EQ(wn.sense_number("bank%9:99:99::"), 0);
  EXPECT_EQ(wn.first_sense("bank", "NOUN"), "bank%1:17:01::");  // sloping land
  EXPECT_EQ(wn.first_sense("Change ringing", "NOUN"), "change_ringing%1:04:00::");
  EXPECT_EQ(wn.sense_number(wn.first_sense("peculiar", "ADJ")), 1);
  EXPECT_EQ(sense_key_pos("peculiar%5:00:00:specific:00"), "ADJ");
  EXPECT_EQ(sense_key_lemma("peculiar%5:00:00:specific:00"), "peculiar");
  EXPECT_TRUE(has(error_of([] { WordNetSenses::load(tmp("none/index.sense")); }), "wordnet-sense-index"));
}

TEST(WsdCorpus, SemcorConvertsWithEveryKeyInWordNet) {
  const std::string dir = kData + "/semcor3.0";
  if (!fs::exists(dir) || !fs::exists(WordNetSenses::kDefaultPath)) GTEST_SKIP() << "needs " << dir << " and WordNet";
  const WordNetSenses wn = WordNetSenses::load();
  SemcorConversion raw = read_semcor(dir);
  EXPECT_EQ(raw.files, 352u);
  EXPECT_EQ(raw.corpus.sentences.size(), 37176u);
  EXPECT_EQ(raw.corpus.instances(), 234136u);  // every tagged word (docs/results.md §4.1)
  SemcorConversion s = read_semcor(dir, &wn);
  EXPECT_EQ(s.corpus.sentences.size(), 37176u);
  EXPECT_EQ(s.corpus.instances() + s.dropped_instances, 234136u);
  EXPECT_EQ(s.keys.size(), s.corpus.instances());
  for (const auto& [id, ks] : s.keys)
    for (const std::string& k : ks) ASSERT_TRUE(wn.contains(k)) << id << " " << k;
  // Stale keys exist but are few (the framework's SemCor keeps 226,036 of these words).
  EXPECT_GT(s.dropped_keys, 0u);
  EXPECT_LT(s.dropped_instances, 234136u / 20);
  // First words as in the tag file br-a01.
  const WsdSentence& first = s.corpus.sentences[0];
  EXPECT_EQ(first.tokens[1].surface, "Fulton_County_Grand_Jury");
  EXPECT_EQ(s.keys.at(first.tokens[1].id), (std::vector<std::string>{"group%1:03:00::"}));
  EXPECT_EQ(first.tokens[2].pos, "VERB");
}

InstanceVectors vectors(std::vector<std::string> ids, std::vector<std::string> lemma_pos, std::vector<double> v, int D) {
  return {std::move(ids), std::move(lemma_pos), Tensor::of(v, {static_cast<int64_t>(v.size() / D), D})};
}

TEST(WsdProtocol, NearestCentroidFilteringAndBackoff) {
  // Training: bank has two senses in directions x and y; river's one sense is near x too.
  InstanceVectors train = vectors({"a", "b", "c", "d"}, {"bank#NOUN", "bank#NOUN", "bank#NOUN", "river#NOUN"},
                                  {2, 0.1, 0, 1, 0, 0, 0, 1, 0, 1, 0.2, 0.05}, 3);
  WsdKeys keys = {{"a", {"bank%1:14:00::"}}, {"b", {"bank%1:14:00::"}}, {"c", {"bank%1:17:01::"}},
                  {"d", {"river%1:17:00::"}}};
  SenseCentroids c = sense_centroids(train, keys);
  ASSERT_EQ(c.keys.size(), 3u);
  EXPECT_EQ(c.by_lemma_pos.at("bank#NOUN").size(), 2u);
  // Test: a bank near river's centroid, a bank near y, an unseen lemma.
  InstanceVectors test = vectors({"t1", "t2", "t3"}, {"bank#NOUN", "bank#NOUN", "shore#NOUN"},
                                 {1, 0.2, 0.05, 0.1, 1, 0, 1, 0, 0}, 3);
  WsdPrediction all = predict_nearest(c, test, {});
  EXPECT_EQ(all.keys.at("t1"), (std::vector<std::string>{"river%1:17:00::"}));  // no lemma filter: paper setting
  EXPECT_EQ(all.keys.at("t2"), (std::vector<std::string>{"bank%1:17:01::"}));
  EXPECT_EQ(all.keys.at("t3"), (std::vector<std::string>{"bank%1:14:00::"}));
  WsdPrediction lemma = predict_nearest(c, test, {true, nullptr});
  EXPECT_EQ(lemma.keys.at("t1"), (std::vector<std::string>{"bank%1:14:00::"}));
  EXPECT_EQ(lemma.keys.count("t3"), 0u);
  EXPECT_EQ(lemma.unanswered, 1u);
  if (!fs::exists(WordNetSenses::kDefaultPath)) GTEST_SKIP() << "back-off needs WordNet";
  const WordNetSenses wn = WordNetSenses::load();
  WsdPrediction back = predict_nearest(c, test, {true, &wn});
  EXPECT_EQ(back.keys.at("t3"), (std::vector<std::string>{wn.first_sense("shore", "NOUN")}));
  EXPECT_EQ(back.backed_off, 1u);
}

// Over all sense entries the back-off follows the paper's evaluation code: only a lemma never seen
// in training backs off, whatever its POS; among the lemma's senses, an unseen lemma#POS does.
TEST(WsdProtocol, AllSensesBackOffOnlyForUnseenLemmas) {
  if (!fs::exists(WordNetSenses::kDefaultPath)) GTEST_SKIP() << "back-off needs WordNet";
  const WordNetSenses wn = WordNetSenses::load();
  InstanceVectors train = vectors({"a", "b"}, {"bank#NOUN", "river#NOUN"}, {1, 0, 0, 0, 1, 0}, 3);
  WsdKeys keys = {{"a", {"bank%1:14:00::"}}, {"b", {"river%1:17:00::"}}};
  SenseCentroids c = sense_centroids(train, keys);
  EXPECT_EQ(c.lemmas.count("bank"), 1u);
  // bank as a verb (its lemma seen as a noun only), and a lemma never seen.
  InstanceVectors test = vectors({"t1", "t2"}, {"bank#VERB", "shore#NOUN"}, {0.1, 1, 0, 1, 0, 0}, 3);
  WsdPrediction all = predict_nearest(c, test, {false, &wn});
  EXPECT_EQ(all.keys.at("t1"), (std::vector<std::string>{"river%1:17:00::"}));  // nearest, not WordNet's first
  EXPECT_EQ(all.keys.at("t2"), (std::vector<std::string>{wn.first_sense("shore", "NOUN")}));
  EXPECT_EQ(all.backed_off, 1u);
  WsdPrediction lemma = predict_nearest(c, test, {true, &wn});
  EXPECT_EQ(lemma.keys.at("t1"), (std::vector<std::string>{wn.first_sense("bank", "VERB")}));
  EXPECT_EQ(lemma.backed_off, 2u);
}

TEST(WsdProtocol, MostFrequentSenseBaseline) {
  WsdKeys train = {{"a", {"bank%1:14:00::"}}, {"b", {"bank%1:17:01::"}}, {"c", {"bank%1:17:01::"}},
                   {"d", {"run%2:38:00::"}}};
  WsdCorpus test;
  test.sentences.push_back({"s", {{"Bank", "bank", "NOUN", "t1"}, {"ran", "run", "VERB", "t2"},
                                  {"banked", "bank", "VERB", "t3"}}});
  WsdPrediction p = predict_mfs(train, test, nullptr, nullptr);
  EXPECT_EQ(p.keys.at("t1"), (std::vector<std::string>{"bank%1:17:01::"}));
  EXPECT_EQ(p.keys.at("t2"), (std::vector<std::string>{"run%2:38:00::"}));
  EXPECT_EQ(p.keys.count("t3"), 0u);  // bank#VERB never seen
}

// The instance vector is the chosen layer at the instance's words (mean over a multi-word
// surface), the same as embedding the sentence directly.
TEST(WsdProtocol, InstanceVectorsComeFromTheEmbedder) {
  ElmoEncoder m(ElmoModel::init(testing::tiny_elmo_options(), 5));
  WsdCorpus c;
  c.sentences.push_back({"s0", {{"The", "the", "DET", ""}, {"Grand_Jury", "jury", "NOUN", "i0"}, {"said", "say", "VERB", "i1"}}});
  c.sentences.push_back({"s1", {{"nothing", "nothing", "X", ""}}});
  c.sentences.push_back({"s2", {{"banks", "bank", "NOUN", "i2"}}});
  for (const char* layer : {"top", "0", "average", "concat"}) {
    InstanceVectors iv = embed_instances(m, c, {{layer}, 2, true, "test"});
    ASSERT_EQ(iv.ids, (std::vector<std::string>{"i0", "i1", "i2"}));
    EXPECT_EQ(iv.lemma_pos[1], "say#VERB");
    const ElmoEncoder& e = m;
    Tensor direct = WsdLayer{layer}.select(e.embed({{"the", "grand", "jury", "said"}})[0]);
    const int64_t D = direct.dim(1);
    ASSERT_EQ(iv.vectors.dim(1), D);
    std::vector<double> d = direct.values(), v = iv.vectors.values();
    for (int64_t j = 0; j < D; ++j) {
      EXPECT_NEAR(v[j], (d[1 * D + j] + d[2 * D + j]) / 2, 1e-5) << layer;
      EXPECT_NEAR(v[D + j], d[3 * D + j], 1e-5) << layer;
    }
  }
  EXPECT_TRUE(has(error_of([&] { WsdLayer{"7"}.check(2); }), "expected 0..2"));
  // As the paper's evaluation code: the multi-word surface is one token, its `_` a space.
  InstanceVectors one = embed_instances(m, c, {{"top"}, 2, true, "test", true});
  const ElmoEncoder& e = m;
  Tensor direct = WsdLayer{"top"}.select(e.embed({{"the", "grand jury", "said"}})[0]);
  const int64_t D = direct.dim(1);
  std::vector<double> d = direct.values(), v = one.vectors.values();
  for (int64_t j = 0; j < D; ++j) {
    EXPECT_NEAR(v[j], d[1 * D + j], 1e-5);
    EXPECT_NEAR(v[D + j], d[2 * D + j], 1e-5);
  }
}

// `wsd_eval --layer 0,1,top`: every layer taken from one pass with the layers side by side equals
// a pass of its own.
TEST(WsdProtocol, LayersTakenFromOneConcatPassEqualTheirOwnPass) {
  ElmoEncoder m(ElmoModel::init(testing::tiny_elmo_options(), 7));
  WsdCorpus c;
  c.sentences.push_back({"s0", {{"The", "the", "DET", ""}, {"bank", "bank", "NOUN", "i0"}, {"ran", "run", "VERB", "i1"}}});
  c.sentences.push_back({"s1", {{"banks", "bank", "NOUN", "i2"}, {"said", "say", "VERB", ""}}});
  const InstanceVectors all = embed_instances(m, c, {{"concat"}, 2, true, "test"});
  for (const char* layer : {"0", "1", "2", "top", "average", "concat"}) {
    const InstanceVectors own = embed_instances(m, c, {{layer}, 2, true, "test"});
    const InstanceVectors taken = layer_of_concat(all, WsdLayer{layer}, m.n_layers());
    EXPECT_EQ(taken.ids, own.ids);
    EXPECT_EQ(taken.lemma_pos, own.lemma_pos);
    ASSERT_EQ(taken.vectors.shape(), own.vectors.shape()) << layer;
    const std::vector<double> a = taken.vectors.values(), b = own.vectors.values();
    for (size_t i = 0; i < a.size(); ++i) ASSERT_NEAR(a[i], b[i], 1e-6) << layer << " element " << i;
  }
  // Layers 0 and 1 differ: the slices are not the same columns twice.
  EXPECT_NE(layer_of_concat(all, WsdLayer{"0"}, m.n_layers()).vectors.values(),
            layer_of_concat(all, WsdLayer{"1"}, m.n_layers()).vectors.values());
  EXPECT_TRUE(has(error_of([&] { layer_of_concat(all, WsdLayer{"5"}, m.n_layers()); }), "expected 0..2"));
}

}  // namespace
}  // namespace sa
