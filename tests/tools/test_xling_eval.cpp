// bin/xling_eval end to end on the bilm-tf fixture (sent, ner, xnli: every run and the mean and
// sample std in the report, the cache read back), its model arguments and errors, and vectors
// written by bin/embed read back through --embeddings.
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

#include "eval/conlleval.h"
#include "eval/ner_task.h"
#include "eval/precomputed_encoder.h"
#include "eval/xling_features.h"
#include "layers/load_encoder.h"
#include "tests/test_util.h"

namespace sa {
namespace {

const std::string kFixture = "../shared/data/fixtures/bilm-tf";

// Reviews whose sentiment words are chosen per label among fillers (a constructed MARC file).
std::string reviews_csv(int n, bool header, uint64_t seed) {
  std::mt19937_64 rng(seed);
  const std::vector<std::string> pos = {"excellent", "wonderful", "great", "perfect"},
                                 neg = {"terrible", "awful", "broken", "useless"},
                                 fill = {"the", "it", "this", "product", "was", "very"};
  std::string s = header ? "id,text,stars\n" : "";
  for (int i = 0; i < n; ++i) {
    const bool good = i % 2;
    std::string text;
    for (int k = 0; k < 6; ++k) text += (k % 2 ? (good ? pos : neg)[rng() % 4] : fill[rng() % 6]) + " ";
    s += std::to_string(i) + ",\"" + text + ".\"," + (good ? "5" : "1") + "\n";
  }
  return s + "99,\"fine, I guess.\",3\n";  // a 3-star review, left out
}

// The sent task end to end on the bilm-tf fixture: the report holds every run and their mean and
// sample std; a second invocation reads the cached vectors and reproduces the numbers exactly.
TEST(XlingEval, SentEndToEndOnTheBilmTfFixture) {
  if (!std::filesystem::exists(kFixture + "/lm_weights.hdf5")) GTEST_SKIP() << "no ../shared/data fixture here";
  const std::string dir = ::testing::TempDir() + "/xling_sent";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string train = testing::temp_file("xling_sent/train.csv", reviews_csv(120, true, 1));
  const std::string test = testing::temp_file("xling_sent/test.csv", reviews_csv(40, false, 2));
  const std::string cmd = "./bin/xling_eval sent --device cpu --options " + kFixture + "/options.json --weights " +
                          kFixture + "/lm_weights.hdf5 --train " + train + " --test en=" + test + " --test xx=" + test +
                          " --runs 2 --lr 0.01 --max-epochs 15 --cache " + dir + "/cache --out ";
  const testing::ToolRun first = testing::run_tool(cmd + dir + "/a.json");
  ASSERT_EQ(first.rc, 0) << first.out;
  EXPECT_TRUE(testing::contains(first.out, "1 with 3 stars")) << first.out;
  const testing::ToolRun second = testing::run_tool(cmd + dir + "/b.json");
  ASSERT_EQ(second.rc, 0) << second.out;
  EXPECT_TRUE(testing::contains(second.out, "cached in")) << second.out;
  const nlohmann::json a = nlohmann::json::parse(std::ifstream(dir + "/a.json")),
                       b = nlohmann::json::parse(std::ifstream(dir + "/b.json"));
  ASSERT_EQ(a["runs"].size(), 2u);
  EXPECT_EQ(a["runs"], b["runs"]);
  EXPECT_EQ(a["settings"]["train_reviews"].get<int>() + a["settings"]["dev_reviews"].get<int>(), 120);
  for (const char* lang : {"en", "xx"}) {
    const double r0 = a["runs"][0]["test"][lang], r1 = a["runs"][1]["test"][lang];
    EXPECT_NEAR(a["test"][lang]["mean"].get<double>(), (r0 + r1) / 2, 1e-12);
    EXPECT_NEAR(a["test"][lang]["std"].get<double>(), std::abs(r0 - r1) / std::sqrt(2.0), 1e-12);
    EXPECT_EQ(a["test"][lang]["reviews"].get<int>(), 40);
  }
  EXPECT_EQ(a["test"]["en"]["mean"], a["test"]["xx"]["mean"]);  // the same file under two names
  // +Proj: --align maps only the named test language. A zero map leaves xx's classifier one
  // constant input, so it predicts one class for every review (the balanced test: 0.5), while
  // English and its numbers stay as they were.
  std::string zero = "32 32\n";
  for (int i = 0; i < 32; ++i) {
    for (int k = 0; k < 32; ++k) zero += k ? " 0" : "0";
    zero += "\n";
  }
  const std::string map = testing::temp_file("xling_sent/zero.txt", zero);
  const testing::ToolRun mapped = testing::run_tool(cmd + dir + "/c.json --align xx=" + map);
  ASSERT_EQ(mapped.rc, 0) << mapped.out;
  const nlohmann::json c = nlohmann::json::parse(std::ifstream(dir + "/c.json"));
  for (int run = 0; run < 2; ++run) {
    EXPECT_EQ(c["runs"][run]["test"]["xx"].get<double>(), 0.5);
    EXPECT_EQ(c["runs"][run]["test"]["en"], a["runs"][run]["test"]["en"]);
  }
  EXPECT_EQ(c["encoders"]["xx"]["align"], map);
  EXPECT_FALSE(c["encoders"]["en"].contains("align"));
  for (const std::string& bad : {" --align yy=" + map, " --test en=" + test}) {
    const testing::ToolRun r = testing::run_tool(cmd + dir + "/d.json" + bad);
    EXPECT_NE(r.rc, 0) << bad;
    EXPECT_TRUE(testing::contains(r.out, "no --test file") || testing::contains(r.out, "given twice")) << r.out;
  }
}

// xling_eval names a model as bin/embed does: a BERT directory with --pieces (which keys the cache
// too: mean and first pieces are different vectors), and bilm-tf files with a --vocab that is checked.
TEST(XlingEval, TakesTheModelsBinEmbedTakes) {
  const std::string bert = "tests/reference/bert_small";
  const std::string dir = ::testing::TempDir() + "/xling_models";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string train = testing::temp_file("xling_models/train.csv", reviews_csv(40, true, 5));
  const std::string cmd = "./bin/xling_eval sent --device cpu --train " + train + " --test en=" + train +
                          " --runs 1 --max-epochs 2 --cache " + dir + "/cache --out " + dir + "/r.json";
  const testing::ToolRun first = testing::run_tool(cmd + " --model " + bert + " --pieces first");
  ASSERT_EQ(first.rc, 0) << first.out;
  EXPECT_EQ(nlohmann::json::parse(std::ifstream(dir + "/r.json"))["encoders"]["en"]["model"], bert);
  const testing::ToolRun mean = testing::run_tool(cmd + " --model " + bert + " --pieces mean");
  ASSERT_EQ(mean.rc, 0) << mean.out;
  EXPECT_TRUE(testing::contains(mean.out, "embed " + train)) << mean.out;  // other vectors: embedded anew
  const testing::ToolRun again = testing::run_tool(cmd + " --model " + bert + " --pieces mean");
  ASSERT_EQ(again.rc, 0) << again.out;
  EXPECT_FALSE(testing::contains(again.out, "embed " + train)) << again.out;  // now from the cache
  EXPECT_TRUE(testing::contains(again.out, "cached in")) << again.out;
  if (!std::filesystem::exists(kFixture + "/lm_weights.hdf5")) GTEST_SKIP() << "no ../shared/data fixture here";
  const std::string bilm = cmd + " --options " + kFixture + "/options.json --weights " + kFixture + "/lm_weights.hdf5";
  const testing::ToolRun vocab = testing::run_tool(bilm + " --vocab " + kFixture + "/vocab_test.txt");
  EXPECT_EQ(vocab.rc, 0) << vocab.out;
  const testing::ToolRun missing = testing::run_tool(bilm + " --vocab " + dir + "/no-vocab.txt");
  EXPECT_NE(missing.rc, 0);
  EXPECT_TRUE(testing::contains(missing.out, "no-vocab.txt: cannot open vocabulary file")) << missing.out;
}

TEST(XlingEval, SentBadArgumentsSayWhatIsExpected) {
  if (!std::filesystem::exists(kFixture + "/lm_weights.hdf5")) GTEST_SKIP() << "no ../shared/data fixture here";
  const std::string train = testing::temp_file("xling_bad_train.csv", reviews_csv(20, true, 3));
  const std::string base = "./bin/xling_eval sent --device cpu --cache '' --options " + kFixture +
                           "/options.json --weights " + kFixture + "/lm_weights.hdf5 --train " + train;
  testing::ToolRun r = testing::run_tool(base + " --test " + train);
  EXPECT_NE(r.rc, 0);
  EXPECT_TRUE(testing::contains(r.out, "expected LANG=FILE")) << r.out;
  r = testing::run_tool(base + " --test en=" + train + " --layers 7");
  EXPECT_NE(r.rc, 0);
  EXPECT_TRUE(testing::contains(r.out, "layer index 0..2")) << r.out;
  r = testing::run_tool(base + " --test en=/nonexistent.csv");
  EXPECT_NE(r.rc, 0);
  EXPECT_TRUE(testing::contains(r.out, "/nonexistent.csv")) << r.out;
}

// The ner task end to end on the bilm-tf fixture: CoNLL files (IOB1, a -DOCSTART-, a Latin-1
// German file) and a PAN-X file without MISC; two runs, the report's numbers agree with the
// prediction files scored again, and MISC is counted as O where the gold tags have none.
TEST(XlingEval, NerEndToEndOnTheBilmTfFixture) {
  if (!std::filesystem::exists(kFixture + "/lm_weights.hdf5")) GTEST_SKIP() << "no ../shared/data fixture here";
  const std::string dir = ::testing::TempDir() + "/xling_ner";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  auto english = [](int n) {
    std::string en = "-DOCSTART- -X- O O\n\n";
    for (int i = 0; i < n; ++i)
      en += "John NNP I-NP I-PER\nlives VBZ I-VP O\nin IN I-PP O\nParis NNP I-NP I-LOC\n. . O O\n\n"
            "The DT I-NP O\nEuro NNP I-NP I-MISC\nfell VBD I-VP O\n. . O O\n\n";
    return en;
  };
  const std::string train = testing::temp_file("xling_ner/eng.train", english(30));
  const std::string dev = testing::temp_file("xling_ner/eng.testa", english(3));
  const std::string de = testing::temp_file("xling_ner/deu.testa", "J\xfcrgen X X I-PER\nwohnt X X O\nin X X O\nK\xf6ln X X I-LOC\nDeutsch X X I-MISC\n\n");
  const std::string es = testing::temp_file("xling_ner/dev-es.tsv", "es:Juan\tB-PER\nes:vive\tO\nes:en\tO\nes:Madrid\tB-LOC\n\n");
  const std::string cmd = "./bin/xling_eval ner --device cpu --options " + kFixture + "/options.json --weights " +
                          kFixture + "/lm_weights.hdf5 --train " + train + " --dev " + dev + " --test de=" + de +
                          " --test es=" + es + " --runs 2 --max-epochs 3 --hidden 8 --cache " + dir + "/cache";
  // Both runs side by side (--jobs 2, a thread each), then one after the other on one thread:
  // each run's numbers are the same.
  const testing::ToolRun r = testing::run_tool(cmd + " --jobs 2 --predictions " + dir + "/pred --out " + dir + "/ner.json");
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_TRUE(testing::contains(r.out, "2 at a time on a thread each")) << r.out;
  const testing::ToolRun one = testing::run_tool("OMP_NUM_THREADS=1 " + cmd + " --jobs 1 --out " + dir + "/ner1.json");
  ASSERT_EQ(one.rc, 0) << one.out;
  EXPECT_EQ(nlohmann::json::parse(std::ifstream(dir + "/ner1.json"))["runs"],
            nlohmann::json::parse(std::ifstream(dir + "/ner.json"))["runs"]);
  EXPECT_TRUE(testing::contains(r.out, "read as ISO-8859-1")) << r.out;
  EXPECT_TRUE(testing::contains(r.out, "predicted MISC counted as O")) << r.out;
  const nlohmann::json rep = nlohmann::json::parse(std::ifstream(dir + "/ner.json"));
  ASSERT_EQ(rep["runs"].size(), 2u);
  EXPECT_TRUE(rep["test"]["es"]["misc_as_o"].get<bool>());
  EXPECT_FALSE(rep["test"]["de"]["misc_as_o"].get<bool>());
  for (int run = 1; run <= 2; ++run) {
    // The prediction file, scored again, gives the run's number.
    std::ifstream f(dir + "/pred/de.run" + std::to_string(run) + ".txt");
    std::vector<TaggedSentence> sents(1);
    for (std::string line; std::getline(f, line);) {
      if (line.empty()) {
        sents.emplace_back();
        continue;
      }
      std::istringstream ss(line);
      TaggedToken t;
      ASSERT_TRUE(ss >> t.token >> t.gold >> t.guess) << line;
      sents.back().push_back(t);
    }
    if (sents.back().empty()) sents.pop_back();
    ASSERT_EQ(sents.size(), 1u);
    EXPECT_EQ(sents[0][0].token, "J\xc3\xbcrgen");  // Latin-1 read and written as UTF-8
    EXPECT_EQ(sents[0][0].gold, "B-PER");  // IOB1 as read, IOB2 as written
    EXPECT_EQ(sents[0][3].gold, "B-LOC");
    for (size_t i = 0; i < sents[0].size(); ++i)  // IOB2: an I- tag continues a chunk of its type
      if (sents[0][i].gold.rfind("I-", 0) == 0) {
        EXPECT_TRUE(i > 0 && sents[0][i - 1].gold.substr(2) == sents[0][i].gold.substr(2)) << i;
      }
    EXPECT_NEAR(conlleval(sents).all.f1(), rep["runs"][run - 1]["test"]["de"].get<double>(), 1e-9);
  }
}

// The xnli task end to end on the bilm-tf fixture: SICK-format training pairs, XNLI-format dev and
// test pairs; the report holds both runs.
TEST(XlingEval, XnliEndToEndOnTheBilmTfFixture) {
  if (!std::filesystem::exists(kFixture + "/lm_weights.hdf5")) GTEST_SKIP() << "no ../shared/data fixture here";
  std::string sick = "pair_ID\tsentence_A\tsentence_B\trelatedness_score\tentailment_judgment\n", xnli;
  const char* labels[] = {"ENTAILMENT", "NEUTRAL", "CONTRADICTION"};
  for (int i = 0; i < 30; ++i) {
    sick += std::to_string(i) + "\tA man is playing a guitar.\tA " + (i % 3 == 2 ? "woman is sleeping." : "man plays.") +
            "\t3.0\t" + labels[i % 3] + "\n";
    xnli += std::string("A man is playing a guitar.\tA man plays.\t") + (i % 2 ? "entailment" : "neutral") + "\n";
  }
  const std::string dir = ::testing::TempDir() + "/xling_xnli";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string train = testing::temp_file("xling_xnli/SICK.txt", sick);
  const std::string dev = testing::temp_file("xling_xnli/dev-en.tsv", xnli);
  const testing::ToolRun r = testing::run_tool(
      "./bin/xling_eval xnli --device cpu --options " + kFixture + "/options.json --weights " + kFixture +
      "/lm_weights.hdf5 --train " + train + " --dev " + dev + " --test de=" + dev +
      " --max-epochs 2 --hidden 8 --dense 8 --cache '' --out " + dir + "/x.json");
  ASSERT_EQ(r.rc, 0) << r.out;
  const nlohmann::json rep = nlohmann::json::parse(std::ifstream(dir + "/x.json"));
  EXPECT_EQ(rep["runs"].size(), 2u);  // the task's default
  EXPECT_EQ(rep["settings"]["train_pairs"].get<int>(), 30);
  EXPECT_EQ(rep["test"]["de"]["pairs"].get<int>(), 30);
  EXPECT_NEAR(rep["test"]["de"]["mean"].get<double>(),
              (rep["runs"][0]["test"]["de"].get<double>() + rep["runs"][1]["test"]["de"].get<double>()) / 2, 1e-12);
}

// Vectors written by bin/embed, read back through --embeddings' encoder, equal the model's own;
// a sentence that is not in the files is an error that quotes it.
TEST(PrecomputedEncoder, ReadsWhatBinEmbedWrote) {
  if (!std::filesystem::exists(kFixture + "/lm_weights.hdf5")) GTEST_SKIP() << "no ../shared/data fixture here";
  const Sentences sentences = {{"The", "cat", "sat", "."}, {"Paris", "is", "big"}, {"Hello"}};
  const std::string input = testing::temp_file("precomputed.txt", "The cat sat .\nParis is big\nHello\n");
  const std::string out = ::testing::TempDir() + "/precomputed.hdf5";
  const testing::ToolRun r = testing::run_tool("./bin/embed --device cpu --options " + kFixture + "/options.json --weights " +
                                               kFixture + "/lm_weights.hdf5 --input " + input + " --output " + out);
  ASSERT_EQ(r.rc, 0) << r.out;
  PrecomputedEncoder pre({out});
  std::unique_ptr<ContextualEncoder> model = load_encoder({"", kFixture + "/options.json", kFixture + "/lm_weights.hdf5"},
                                                          Device::cpu());
  EXPECT_EQ(pre.n_layers(), model->n_layers());
  EXPECT_EQ(pre.dim(), model->dim());
  const std::vector<Tensor> a = pre.embed(sentences), b = model->embed(sentences);
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(a[i].shape(), b[i].shape());
    const std::vector<double> va = a[i].values(), vb = b[i].values();
    for (size_t k = 0; k < va.size(); ++k) ASSERT_NEAR(va[k], vb[k], 1e-5) << "sentence " << i;
  }
  const std::string err = testing::error_of([&] { pre.embed({{"not", "there"}}); });
  EXPECT_TRUE(testing::contains(err, "no vectors for the sentence \"not there\"")) << err;
  // xling_eval ner scores such files without a model; a model and --embeddings together are refused.
  const std::string conll = testing::temp_file("precomputed.conll", "The O\ncat B-PER\nsat O\n. O\n\nParis B-LOC\nis O\nbig O\n\n");
  const std::string base = "./bin/xling_eval ner --device cpu --cache '' --runs 1 --max-epochs 2 --hidden 4 --train " +
                           conll + " --dev " + conll + " --test xx=" + conll + " --embeddings " + out;
  const testing::ToolRun ok = testing::run_tool(base);
  EXPECT_EQ(ok.rc, 0) << ok.out;
  EXPECT_TRUE(testing::contains(ok.out, "precomputed.hdf5")) << ok.out;
  const testing::ToolRun both = testing::run_tool(base + " --options " + kFixture + "/options.json --weights " + kFixture +
                                                  "/lm_weights.hdf5");
  EXPECT_NE(both.rc, 0);
  EXPECT_TRUE(testing::contains(both.out, "not both")) << both.out;
}

}  // namespace
}  // namespace sa
