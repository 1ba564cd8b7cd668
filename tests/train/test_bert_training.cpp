// BERT's masked-LM data and schedule: which positions are predicted and how they are shown, the
// stream as a function of the step, and the learning-rate schedule.
#include <gtest/gtest.h>

#include "tests/test_util.h"

#include <filesystem>
#include <fstream>
#include <set>

#include "data/mlm_batches.h"
#include "data/safetensors.h"
#include "train/bert_trainer.h"
#include "train/families.h"

namespace sa {
namespace {

WordPieceTokenizer letters() {
  std::vector<std::string> p = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"};
  for (char ch = 'a'; ch <= 'z'; ++ch) p.push_back(std::string(1, ch));
  return WordPieceTokenizer(WordPieceVocab::from_pieces(p));
}

std::string corpus() {
  std::string text;
  for (int i = 0; i < 60; ++i) {
    for (int w = 0; w < 5 + i % 17; ++w) text += std::string(1, static_cast<char>('a' + (i * 7 + w) % 26)) + " ";
    text += "\n";
  }
  return testing::temp_file("mlm-corpus.txt", text);
}

TEST(MlmData, PacksSentencesAndMasksAsBertDoes) {
  const WordPieceTokenizer tok = letters();
  const MlmData data(corpus(), tok, {24, 0.15, 3, 7});
  EXPECT_GT(data.sequences(), 10u);
  int masked = 0, random = 0, kept = 0;
  for (int64_t k = 0; k < 200; ++k) {
    const MlmBatch b = data.batch(k, 4, Device::cpu());
    const int64_t T = b.ids.dim(1);
    EXPECT_LE(T, 24);
    const std::vector<double> ids = b.ids.values(), mask = b.mask.values();
    std::set<int32_t> seen;
    for (size_t n = 0; n < b.positions.size(); ++n) {
      const int32_t pos = b.positions[n];
      EXPECT_TRUE(seen.insert(pos).second);
      EXPECT_GT(pos % T, 0) << "[CLS] is never predicted";
      EXPECT_EQ(mask[pos], 1);
      EXPECT_NE(b.labels[n], tok.vocab().sep());
      const int shown = static_cast<int>(ids[pos]);
      if (shown == tok.vocab().mask()) ++masked;
      else if (shown == b.labels[n]) ++kept;
      else ++random;
    }
    // Per sequence: at least 1, at most 3 predictions (max_predictions).
    for (int i = 0; i < 4; ++i) {
      int n = 0;
      for (int32_t pos : b.positions) n += pos / T == i;
      EXPECT_GE(n, 1);
      EXPECT_LE(n, 3);
    }
  }
  const double all = masked + random + kept;
  EXPECT_NEAR(masked / all, 0.8, 0.04);
  EXPECT_NEAR(random / all, 0.1, 0.03);
  EXPECT_NEAR(kept / all, 0.1, 0.03);
}

TEST(MlmData, BatchIsAFunctionOfItsIndexAndEpochsRedrawMasks) {
  const WordPieceTokenizer tok = letters();
  const MlmData a(corpus(), tok, {24, 0.15, 3, 7}), b(corpus(), tok, {24, 0.15, 3, 7});
  const MlmBatch x = a.batch(5, 4, Device::cpu());
  (void)a.batch(500, 4, Device::cpu());  // another epoch in between
  EXPECT_EQ(a.batch(5, 4, Device::cpu()).ids.values(), x.ids.values());
  EXPECT_EQ(b.batch(5, 4, Device::cpu()).positions, x.positions);
  // One epoch later the same sequences come in another order with other masks.
  const int64_t per_epoch = static_cast<int64_t>(a.sequences());
  std::multiset<std::vector<double>> first, second;
  int64_t differ = 0;
  for (int64_t s = 0; s < per_epoch; ++s) {
    const MlmBatch e0 = a.batch(s, 1, Device::cpu()), e1 = a.batch(per_epoch + s, 1, Device::cpu());
    first.insert(e0.mask.values()), second.insert(e1.mask.values());
    differ += e0.ids.values() != e1.ids.values();
  }
  EXPECT_EQ(first, second);  // the same sequence lengths: every sequence once per epoch
  EXPECT_GT(differ, per_epoch / 2);
}

// The run directory doubles as a Hugging Face directory: config.json, vocab.txt and
// model.safetensors read back through the reader users use, equal to the newest checkpoint.
TEST(BertTraining, RunDirectoryIsAHuggingFaceDirectory) {
  const std::string dir = ::testing::TempDir() + "/bert-hf-run";
  std::filesystem::remove_all(dir);
  const std::string cfg = testing::temp_file("bert-hf.cfg", "model = \"bert\"\ntrain_prefix = \"" + corpus() +
      "\"\nrun_dir = \"" + dir + "\"\nbatch_size = 4\nn_steps = 6\ncheckpoint_every = 3\nmax_seq_length = 24\n"
      "vocab_max_size = 100\nlog_every = 1\ndevice = \"cpu\"\n[bert]\nhidden = 8\nlayers = 1\nheads = 2\n"
      "intermediate = 16\nmax_positions = 32\n");
  const TrainResult r = train_model(TrainConfig::load(cfg), {.quiet = true});
  EXPECT_EQ(r.steps_done, 6);
  BertModel m = BertModel::load_hf(dir);
  EXPECT_EQ(m.config.hidden, 8);
  EXPECT_EQ(WordPieceVocab::load(dir + "/vocab.txt").size(), m.config.vocab_size);
  const SafetensorsFile ckpt = load_safetensors(dir + "/checkpoints/ckpt-00000006.safetensors");
  EXPECT_EQ(ckpt.metadata.at("step").get<int64_t>(), 6);
  for (NamedTensor& nt : m.named()) EXPECT_EQ(nt.tensor->values(), ckpt.tensors.at(nt.name).values()) << nt.name;
  // bin/export writes the same model as a standalone Hugging Face directory, with the standard
  // names only (query/key/value apart) and the tokenizer's lowercasing.
  const std::string out = ::testing::TempDir() + "/bert-hf-export";
  std::filesystem::remove_all(out);
  const testing::ToolRun e = testing::run_tool("./bin/export --model " + dir + " --output " + out);
  ASSERT_EQ(e.rc, 0) << e.out;
  BertModel x = BertModel::load_hf(out);
  std::vector<NamedTensor> a = m.named(), b = x.named();
  for (size_t i = 0; i < a.size(); ++i) EXPECT_EQ(a[i].tensor->values(), b[i].tensor->values()) << a[i].name;
  const SafetensorsFile written = load_safetensors(out + "/model.safetensors");
  EXPECT_EQ(written.tensors.size(), 5u + 16u + 5u);
  EXPECT_TRUE(written.tensors.count("bert.encoder.layer.0.attention.self.value.bias"));
  EXPECT_TRUE(testing::contains(testing::run_tool("cat " + out + "/tokenizer_config.json").out, "\"do_lower_case\": false"));
}

TEST(BertSchedule, LinearWarmupThenLinearDecay) {
  EXPECT_DOUBLE_EQ(bert_learning_rate(1e-4, 5, 10, 110), 5e-5);
  EXPECT_DOUBLE_EQ(bert_learning_rate(1e-4, 10, 10, 110), 1e-4);
  EXPECT_DOUBLE_EQ(bert_learning_rate(1e-4, 60, 10, 110), 5e-5);
  EXPECT_DOUBLE_EQ(bert_learning_rate(1e-4, 110, 10, 110), 0.0);
  EXPECT_DOUBLE_EQ(bert_learning_rate(1e-4, 1, 0, 2), 5e-5);
}

}  // namespace
}  // namespace sa

namespace sa {
namespace {

// wsd_eval and bin/embed take a BERT directory as they take an ELMo run: the fixture model (no
// signal in it) scores its one test instance against the one training instance.
TEST(BertTools, WsdEvalAndEmbedReadABertDirectory) {
  const std::string dir = ::testing::TempDir() + "/bert-tools";
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/t.data.xml")
      << "<?xml version=\"1.0\" encoding=\"UTF-8\" ?>\n<corpus lang=\"en\" source=\"t\">\n<text id=\"d000\">\n"
      << "<sentence id=\"d000.s000\">\n<wf lemma=\"the\" pos=\"DET\">The</wf>\n"
      << "<instance id=\"d000.s000.t000\" lemma=\"bank\" pos=\"NOUN\">banks</instance>\n"
      << "<wf lemma=\"of\" pos=\"ADP\">of</wf>\n<wf lemma=\"the\" pos=\"DET\">the</wf>\n<wf lemma=\"river\" pos=\"NOUN\">river</wf>\n"
      << "</sentence>\n</text>\n</corpus>\n";
  std::ofstream(dir + "/t.gold.key.txt") << "d000.s000.t000 bank%1:17:01::\n";
  const testing::ToolRun w = testing::run_tool("./bin/wsd_eval --model tests/reference/bert_small --train " + dir +
                                               "/t.data.xml --test " + dir + "/t.data.xml --filter-lemma --out " + dir + "/keys");
  ASSERT_EQ(w.rc, 0) << w.out;
  EXPECT_TRUE(testing::contains(w.out, "100.0%")) << w.out;  // the test instance is the training instance
  std::ofstream(dir + "/in.txt") << "the banks of the river\nwe sat\n";
  const testing::ToolRun e = testing::run_tool("./bin/embed --model tests/reference/bert_small --pieces first --input " +
                                               dir + "/in.txt --output " + dir + "/e.hdf5");
  ASSERT_EQ(e.rc, 0) << e.out;
  EXPECT_TRUE(std::filesystem::exists(dir + "/e.hdf5"));
}

}  // namespace
}  // namespace sa
