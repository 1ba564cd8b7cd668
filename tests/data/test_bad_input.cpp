// Bad input gets a clear error naming the file, the line and the problem.
#include <gtest/gtest.h>

#include "tests/test_util.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "data/corpus.h"
#include "data/hdf5_file.h"
#include "data/input_limits.h"
#include "data/run_files.h"
#include "eval/alignment.h"
#include "eval/anchors.h"
#include "data/vocab.h"
#include "layers/elmo.h"
#include "data/safetensors.h"
#include "train/config.h"

namespace sa {
namespace {

std::string tmp(const std::string& name) { return ::testing::TempDir() + "/" + name; }

using testing::error_of;

void contains(const std::string& msg, std::initializer_list<const char*> parts) {
  for (const char* p : parts) EXPECT_NE(msg.find(p), std::string::npos) << "'" << p << "' missing in: " << msg;
}

TEST(BadInput, InvalidUtf8NamesFileLineAndByte) {
  std::ofstream(tmp("bad.txt")) << "fine line\nbad \xff\xfe bytes\n";
  contains(error_of([] { read_sentences(tmp("bad.txt"), false); }), {"bad.txt:2", "invalid UTF-8", "byte 5"});
  std::ofstream(tmp("trunc.txt")) << "cut \xe2\x82\n";  // a truncated 3-byte sequence
  contains(error_of([] { read_sentences(tmp("trunc.txt"), false); }), {"trunc.txt:1", "invalid UTF-8"});
}

TEST(BadInput, EmptyCorpus) {
  std::ofstream(tmp("empty.txt")) << "\n   \n";
  contains(error_of([] { ShardedCorpus c(tmp("empty.txt"), 1, false); }), {"empty.txt", "no sentences"});
  contains(error_of([] { ShardedCorpus c(tmp("nothing-*.txt"), 1, false); }), {"nothing-*.txt", "no such file"});
}

TEST(BadInput, VocabularyWithoutSpecials) {
  std::ofstream(tmp("v.txt")) << "<S>\n</S>\nthe\n";
  contains(error_of([] { Vocab::load(tmp("v.txt")); }), {"v.txt", "<UNK>"});
  std::ofstream(tmp("v2.txt")) << "the\ncat\n";
  contains(error_of([] { Vocab::load(tmp("v2.txt")); }), {"v2.txt", "<S>, </S>"});
}

TEST(BadInput, ConfigUnknownAndIllTypedKeys) {
  std::ofstream(tmp("a.cfg")) << "train_prefix = \"x\"\nrun_dir = \"r\"\nbatch_sise = 3\n";
  contains(error_of([] { TrainConfig::load(tmp("a.cfg")); }), {"a.cfg:3", "unknown key 'batch_sise'", "did you mean batch_size"});
  // The nearest keys, not all of them.
  EXPECT_EQ(error_of([] { TrainConfig::load(tmp("a.cfg")); }).find("checkpoint_every"), std::string::npos);
  std::ofstream(tmp("e.cfg")) << "train_prefix = \"x\"\nrun_dir = \"r\"\n";
  contains(error_of([] { TrainConfig::load(tmp("e.cfg"), {"n_step=3"}); }), {"--set n_step=3", "did you mean n_steps"});
  contains(error_of([] { TrainConfig::load(tmp("e.cfg"), {"projection_dim=3"}); }), {"lstm.projection_dim"});
  contains(error_of([] { TrainConfig::load(tmp("e.cfg"), {"qqqqqqqqqqqqqqqq=3"}); }), {"none of the", "valid keys"});
  std::ofstream(tmp("b.cfg")) << "train_prefix = \"x\"\nrun_dir = \"r\"\n[lstm]\ndim = \"big\"\n";
  contains(error_of([] { TrainConfig::load(tmp("b.cfg")); }), {"b.cfg:4", "lstm.dim", "integer"});
  std::ofstream(tmp("c.cfg")) << "train_prefix = \"x\"\nrun_dir = \"r\"\nbatch_size = [\n";
  contains(error_of([] { TrainConfig::load(tmp("c.cfg")); }), {"c.cfg:"});
  std::ofstream(tmp("d.cfg")) << "train_prefix = \"x\"\nrun_dir = \"r\"\n";
  contains(error_of([] { TrainConfig::load(tmp("d.cfg"), {"dropout=lots"}); }), {"--set dropout=lots", "number"});
  contains(error_of([] { TrainConfig::load(tmp("d.cfg"), {"lstm.cudnn=yes"}); }), {"lstm.cudnn", "\"auto\", \"on\", \"off\" or \"stacked\"", "yes"});
  // Sharded sense tables: SaELMo only, and not with settings that touch every row each step.
  contains(error_of([] { TrainConfig::load(tmp("d.cfg"), {"sense_tables=split"}); }), {"sense_tables", "\"sharded\"", "split"});
  contains(error_of([] { TrainConfig::load(tmp("d.cfg"), {"sense_tables=sharded"}); }), {"sense_tables", "SaELMo"});
  contains(error_of([] { TrainConfig::load(tmp("d.cfg"), {"sense_tables=sharded", "n_context=3", "sense_negatives=full"}); }),
           {"sense_tables", "sampled negatives"});
  contains(error_of([] { TrainConfig::load(tmp("d.cfg"), {"sense_tables=sharded", "n_context=3", "center_update=released"}); }),
           {"sense_tables", "decays every center"});
  EXPECT_EQ(TrainConfig::load(tmp("d.cfg"), {"sense_tables=sharded", "n_context=3"}).sense_tables, "sharded");
  TrainConfig ok = TrainConfig::load(tmp("d.cfg"), {"lstm.dim=32", "train_prefix=other.txt", "lstm.cudnn=on"});
  EXPECT_EQ(ok.model.lstm_path(), ops::LstmPath::Cudnn);
  // Only "stacked" stacks a layer's directions; "auto" (the default) steps each on its own.
  EXPECT_EQ(TrainConfig::load(tmp("d.cfg"), {"lstm.cudnn=stacked"}).model.lstm_path(), ops::LstmPath::Stacked);
  EXPECT_EQ(TrainConfig::load(tmp("d.cfg"), {}).model.lstm_path(), ops::LstmPath::Auto);
  EXPECT_EQ(ok.model.lstm_dim, 32);
  EXPECT_EQ(ok.train_prefix, "other.txt");
}

TEST(BadInput, TruncatedCheckpoint) {
  Tensor t = Tensor::of({1, 2, 3, 4, 5, 6}, {2, 3});
  save_safetensors(tmp("ck.safetensors"), {{"w", t}}, {{"step", 3}});
  SafetensorsFile f = load_safetensors(tmp("ck.safetensors"));
  EXPECT_EQ(f.tensors.at("w").values(), t.values());
  EXPECT_EQ(f.metadata.at("step"), 3);
  std::filesystem::resize_file(tmp("ck.safetensors"), std::filesystem::file_size(tmp("ck.safetensors")) - 5);
  contains(error_of([] { load_safetensors(tmp("ck.safetensors")); }), {"ck.safetensors", "truncated"});
  std::ofstream(tmp("junk.safetensors")) << "hello";
  contains(error_of([] { load_safetensors(tmp("junk.safetensors")); }), {"junk.safetensors", "truncated or not"});
}

// Stated limits: a line, a token and a settings file each have a maximum and a clear error past it;
// sizes a header states are checked against the file before anything is allocated from them.
TEST(BadInput, LimitsOnLinesTokensSettingsAndStatedSizes) {
  std::ofstream(tmp("long-line.txt")) << "short\n" << std::string(kMaxLineBytes + 1, 'a') << "\n";
  contains(error_of([] { read_sentences(tmp("long-line.txt"), false); }), {"long-line.txt:2", "lines may hold at most"});
  std::ofstream(tmp("long-token.txt")) << "<S>\n</S>\n<UNK>\n" << std::string(kMaxTokenBytes + 1, 'b') << "\n";
  contains(error_of([] { Vocab::load(tmp("long-token.txt")); }), {"long-token.txt:4", "tokens may hold at most"});
  std::ofstream(tmp("corpus-token.txt")) << "a " << std::string(kMaxTokenBytes + 1, 'c') << " b\n";
  contains(error_of([] { read_sentences(tmp("corpus-token.txt"), false); }), {"corpus-token.txt:1", "a token of 4097 bytes"});
  {
    std::ofstream f(tmp("huge.cfg"));
    f << "run_dir = \"" << std::string(kMaxSettingsBytes, 'r') << "\"\n";
  }
  contains(error_of([] { TrainConfig::load(tmp("huge.cfg")); }), {"huge.cfg", "a config file may hold at most"});
  std::ofstream(tmp("W.huge.txt")) << "1099511627776 1024\n1 2\n";
  contains(error_of([] { read_map(tmp("W.huge.txt")); }), {"W.huge.txt", "announces more than the file"});
  std::ofstream(tmp("vec.huge.txt")) << "3 1099511627776\nx 1\n";
  contains(error_of([] { read_word_vectors(tmp("vec.huge.txt")); }), {"vec.huge.txt", "announces more than the file"});
  // A safetensors shape of 2^62 x 2^62 floats in a small file: rejected before the product overflows.
  auto with_header = [](const std::string& name, const std::string& header) {
    std::ofstream f(tmp(name), std::ios::binary);
    const uint64_t n = header.size();
    f.write(reinterpret_cast<const char*>(&n), 8);
    f << header << std::string(16, '\0');
    return tmp(name);
  };
  const std::string big = with_header(
      "shape.safetensors", R"({"w":{"dtype":"F32","shape":[4611686018427387904,4611686018427387904],"data_offsets":[0,16]}})");
  contains(error_of([&] { load_safetensors(big); }), {"shape.safetensors", "larger than the file"});
  // Numbers no size holds (converting them would be undefined): named, not converted.
  const std::string huge = with_header("huge.safetensors", R"({"w":{"dtype":"F32","shape":[1e40],"data_offsets":[0,16]}})");
  contains(error_of([&] { load_safetensors(huge); }), {"huge.safetensors", "tensor 'w' shape is 1e+40, expected an integer"});
  const std::string neg = with_header("neg.safetensors", R"({"w":{"dtype":"F32","shape":[4],"data_offsets":[-0.5,16]}})");
  contains(error_of([&] { load_safetensors(neg); }), {"neg.safetensors", "data_offsets is -0.5, expected an integer"});
}

// read_line reads in chunks (a line past the limit fails before it is held whole) and otherwise
// gives what std::getline gives: lines across chunk boundaries, empty lines, a last line without
// its newline.
TEST(BadInput, ReadLineGivesWhatGetlineGives) {
  const std::string chunk(16383, 'x');
  for (const std::string& text :
       {std::string(), std::string("a"), std::string("a\n"), std::string("a\n\nb"), std::string("\n\n"),
        chunk + "\n", chunk + "y\n", chunk + "y", chunk + chunk + "zz\r\nnext", std::string(40000, 'q')}) {
    std::istringstream a(text), b(text);
    std::vector<std::string> ours, theirs;
    int64_t n = 0;
    for (std::string line; read_line(a, line, "t.txt", ++n);) ours.push_back(line);
    for (std::string line; std::getline(b, line);) theirs.push_back(line);
    EXPECT_EQ(ours, theirs) << "text of " << text.size() << " bytes";
  }
}

// A corpus line splits into the tokens `>>` gives in the C locale: runs of space, tab, vertical
// tab, form feed and CR; bytes of other characters (a UTF-8 no-break space) stay inside a token.
TEST(BadInput, CorpusTokensAreWhatAStreamGives) {
  const std::vector<std::string> lines = {"a b  c", "\t lead and trail \t", "x\vy\fz", "one\r", "nbsp\xc2\xa0inside",
                                          "   ", "many     spaces\there", "\xe2\x80\x83" "em-space stays"};
  std::ofstream f(tmp("split.txt"), std::ios::binary);
  for (const std::string& l : lines) f << l << "\n";
  f.close();
  std::vector<Sentence> want;
  for (const std::string& l : lines) {
    std::istringstream ss(l);
    Sentence s;
    for (std::string w; ss >> w;) s.push_back(w);
    EXPECT_EQ(split_tokens(l), s);  // as the embedder and the task readers split
    if (!s.empty()) want.push_back(s);
  }
  EXPECT_EQ(read_sentences(tmp("split.txt"), false), want);
  EXPECT_EQ(want.size(), 7u);
}

// Checkpoint metadata of the wrong type is damage naming the file and field; metrics.jsonl lines
// name their line, except a last line cut by a kill, which is dropped.
TEST(BadInput, CheckpointMetadataAndMetricsLines) {
  save_safetensors(tmp("meta.safetensors"), {{"w", Tensor::of({1, 2}, {2})}}, {{"step", "three"}, {"dropout_offset", 1}});
  const SafetensorsFile f = load_safetensors(tmp("meta.safetensors"));
  try {
    f.meta<int64_t>("step");
    ADD_FAILURE() << "no error";
  } catch (const CheckpointDamaged& e) {
    contains(e.what(), {"meta.safetensors", "\"step\"", "\"three\"", "expected an integer"});
  }
  EXPECT_EQ(f.meta<uint64_t>("dropout_offset"), 1u);
  EXPECT_EQ(f.meta<int>("ranks", 1), 1);
  contains(error_of([&] { f.meta<bool>("pca_fitted"); }), {"meta.safetensors", "without \"pca_fitted\""});
  std::ofstream(tmp("metrics.jsonl")) << "{\"step\":1,\"loss\":2}\n{\"step\":2,\"lo";  // cut by a kill
  EXPECT_EQ(run_files::read_metrics(tmp("metrics.jsonl")).size(), 1u);
  std::ofstream(tmp("bad-metrics.jsonl")) << "{\"step\":1}\n[1, 2]\n{\"step\":3}\n";
  contains(error_of([] { run_files::read_metrics(tmp("bad-metrics.jsonl")); }),
           {"bad-metrics.jsonl:2", "expected a JSON object with an integer \"step\""});
}

TEST(BadInput, TruncatedWeightsFile) {
  const std::string src = "../shared/data/fixtures/bilm-tf/lm_weights.hdf5";
  if (!std::filesystem::exists(src)) GTEST_SKIP() << "no ../shared/data fixture here";
  std::filesystem::copy_file(src, tmp("w.hdf5"), std::filesystem::copy_options::overwrite_existing);
  std::filesystem::resize_file(tmp("w.hdf5"), std::filesystem::file_size(tmp("w.hdf5")) / 2);
  ElmoOptions o;
  o.char_dim = 4;
  o.filters = {{1, 4}, {2, 8}, {3, 16}, {4, 32}, {5, 64}};
  o.lstm_dim = 64;
  o.projection_dim = 16;
  contains(error_of([&] { ElmoModel::load_bilm(o, tmp("w.hdf5")); }), {"w.hdf5"});
  std::ofstream(tmp("notes.hdf5")) << "not hdf5";
  contains(error_of([&] { ElmoModel::load_bilm(o, tmp("notes.hdf5")); }), {"notes.hdf5", "cannot open as HDF5"});
}

}  // namespace
}  // namespace sa

namespace sa {
namespace {

// Every shipped config loads, and the paper's settings are where the issues put them.
TEST(Configs, EveryShippedConfigLoads) {
  int n = 0;
  for (const auto& e : std::filesystem::directory_iterator("configs")) {
    if (e.path().extension() != ".cfg") continue;
    ++n;
    EXPECT_EQ(testing::error_of([&] { TrainConfig::load(e.path().string()); }), "(no error)") << e.path();
  }
  EXPECT_GE(n, 9);
  TrainConfig sa = TrainConfig::load("configs/saelmo.cfg"), bi = TrainConfig::load("configs/bi-saelmo.cfg");
  EXPECT_EQ(sa.sense.n_context, 6);
  EXPECT_EQ(bi.sense.n_context, 4);
  EXPECT_EQ(bi.unroll_steps, 12);
  EXPECT_EQ(bi.sense.contextual_warmup, 20000);
  EXPECT_FALSE(bi.dictionary.empty());
  EXPECT_FALSE(bi.train_prefix_l2.empty());
  TrainConfig joint = TrainConfig::load("configs/joint-elmo.cfg");
  EXPECT_EQ(joint.sense.n_context, 0);
  EXPECT_TRUE(joint.dictionary.empty());
  EXPECT_FALSE(joint.train_prefix_l2.empty());
  // A dictionary without the sense-aware softmax is an error that says why.
  EXPECT_NE(testing::error_of([] { TrainConfig::load("configs/joint-elmo.cfg", {"dictionary=x.txt"}); })
                .find("needs the sense-aware softmax"),
            std::string::npos);
  // The translation loss samples its negatives: uniform or log-uniform, not the full softmax.
  EXPECT_NO_THROW(TrainConfig::load("configs/bi-saelmo-small.cfg", {"sense_negatives=log_uniform"}));
  EXPECT_NE(testing::error_of([] { TrainConfig::load("configs/bi-saelmo-small.cfg", {"sense_negatives=full"}); })
                .find("\"log_uniform\""),
            std::string::npos);
}

}  // namespace
}  // namespace sa
