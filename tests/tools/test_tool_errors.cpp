// The tools on bad input and unwritable outputs: a message that names the path and the reason,
// exit code 1 (not an abort), and no output left behind; header/row mismatches in anchor files;
// count options; CRLF input.
#include <gtest/gtest.h>
#include <hdf5.h>
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "data/corpus.h"
#include "data/hdf5_file.h"
#include "data/wordnet.h"
#include "data/wsd_corpus.h"
#include "eval/anchors.h"
#include "tests/test_util.h"
#include "train/config.h"

namespace sa {
namespace {

namespace fs = std::filesystem;
using testing::error_of;

// A fresh directory under the test temp dir.
std::string fresh_dir(const std::string& name) {
  const std::string dir = ::testing::TempDir() + "/" + name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

using testing::ToolRun;
ToolRun run(const std::string& cmd) { return testing::run_tool(cmd); }

void contains(const std::string& msg, std::initializer_list<std::string> parts) {
  for (const std::string& p : parts) EXPECT_NE(msg.find(p), std::string::npos) << "'" << p << "' missing in: " << msg;
}

std::string slurp(const std::string& path) {
  std::stringstream ss;
  ss << std::ifstream(path).rdbuf();
  return ss.str();
}

// What the OS says when a directory is to be made below a regular file.
std::string not_a_directory() { return std::make_error_code(std::errc::not_a_directory).message(); }

// A regular file with known content where the tool wants a directory.
std::string plain_file(const std::string& path) {
  std::ofstream(path) << "keep me\n";
  return path;
}

// `bin/train elmo.cfg` as users type it: a name that is not a file is read from configs/, and the
// tool says which file it read; a name found nowhere names every place looked at.
TEST(ToolErrors, AConfigNameIsLookedUpInConfigs) {
  EXPECT_EQ(TrainConfig::find("configs/bench-small.cfg"), "configs/bench-small.cfg");
  EXPECT_EQ(TrainConfig::find("bench-small.cfg"), "configs/bench-small.cfg");
  const std::string dir = fresh_dir("config-lookup");
  ToolRun r = run("./bin/train bench-small.cfg --set run_dir=" + dir + "/run --set train_prefix=" + dir + "/none.txt");
  EXPECT_EQ(r.rc, 1) << r.out;
  contains(r.out, {"config: configs/bench-small.cfg", dir + "/none.txt"});
  r = run("./bin/train nosuch.cfg");
  EXPECT_EQ(r.rc, 1) << r.out;
  contains(r.out, {"nosuch.cfg: no such config file", "configs/nosuch.cfg"});
}

// Filesystem errors at the tools' boundary.

TEST(ToolErrors, FilesystemErrorsNameThePathAndExitOne) {
  const std::string dir = fresh_dir("tool-errors-fs");
  // wsd_eval --out is a regular file: it creates the directory first.
  const std::string out = plain_file(dir + "/out");
  ToolRun r =
      run("./bin/wsd_eval --baselines --train " + dir + "/x.data.xml --test " + dir + "/y.data.xml --out " + out);
  EXPECT_EQ(r.rc, 1) << r.out;
  contains(r.out, {"wsd_eval: " + out + ": " + not_a_directory()});
  EXPECT_EQ(r.out.find("filesystem error"), std::string::npos) << r.out;
  EXPECT_EQ(slurp(out), "keep me\n");

  // bin/train's run_dir is a regular file: its checkpoint directory cannot be made.
  std::ofstream(dir + "/corpus.txt") << "a b c\n";
  std::ofstream(dir + "/t.cfg") << "train_prefix = \"" << dir << "/corpus.txt\"\nrun_dir = \"" << out << "\"\n";
  r = run("./bin/train " + dir + "/t.cfg");
  EXPECT_EQ(r.rc, 1) << r.out;
  contains(r.out, {"train: " + out, ": " + not_a_directory()});
  EXPECT_EQ(slurp(out), "keep me\n");
}

// A tiny trained ELMo run for bin/export (two steps on one sentence repeated).
bool train_tiny(const std::string& dir) {
  {
    std::ofstream c(dir + "/corpus.txt");
    for (int i = 0; i < 20; ++i) c << "the cat sat on a mat and the dog ran to it\n";
  }
  std::ofstream(dir + "/tiny.cfg") << "train_prefix = \"" << dir << "/corpus.txt\"\nrun_dir = \"" << dir << "/run\"\n"
                                   << "batch_size = 2\nunroll_steps = 4\nn_negative_samples_batch = 8\nn_steps = 2\n"
                                   << "seed = 1\ndevice = \"cpu\"\n"
                                   << "[char_cnn]\nembedding.dim = 4\nfilters = [[1, 4], [2, 4]]\nn_highway = 1\n"
                                   << "[lstm]\ndim = 8\nprojection_dim = 4\nn_layers = 2\n";
  return std::system(("./bin/train " + dir + "/tiny.cfg > /dev/null 2>&1").c_str()) == 0;
}

TEST(ToolErrors, ExportToAFileOrDevFull) {
  const std::string dir = fresh_dir("tool-errors-export");
  ASSERT_TRUE(train_tiny(dir));
  const std::string out = plain_file(dir + "/bundle");
  ToolRun r = run("./bin/export --model " + dir + "/run --output " + out);
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_EQ(r.out, "export: " + out + ": " + not_a_directory() + "\n");
  EXPECT_EQ(slurp(out), "keep me\n");
  r = run("./bin/export --model " + dir + "/run --output /dev/full");
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_EQ(r.out, "export: /dev/full: " + not_a_directory() + "\n");
  // The same run exports into a directory.
  r = run("./bin/export --model " + dir + "/run --output " + dir + "/ok");
  EXPECT_EQ(r.rc, 0) << r.out;
  EXPECT_TRUE(fs::exists(dir + "/ok/weights.hdf5"));
}

// Anchor and map files whose header disagrees with their rows; align's dictionary.

TEST(ToolErrors, WordVectorHeaderMustMatchTheRows) {
  const std::string dir = fresh_dir("tool-errors-vec");
  auto vec = [&](const std::string& name, const std::string& text) {
    std::ofstream(dir + "/" + name) << text;
    return dir + "/" + name;
  };
  std::string p = vec("wide.vec", "2 2\na 1 2 3 4\nb 1 2 3 4\n");  // rows wider than the header says
  contains(error_of([&] { read_word_vectors(p); }), {"wide.vec:2", "a word and 2 numbers (the header's dimension)",
                                                     "found a word and 4 numbers"});
  p = vec("narrow.vec", "2 4\na 1 2 3 4\nb 1 2\n");
  contains(error_of([&] { read_word_vectors(p); }), {"narrow.vec:3", "4 numbers", "found a word and 2 numbers"});
  p = vec("long.vec", "2 2\na 1 2\nb 3 4\nc 5 6\nd 7 8\n\n");  // more rows than the header says
  contains(error_of([&] { read_word_vectors(p); }),
           {"long.vec:4", "the header announces 2 vectors, the file has 4 rows"});
  p = vec("short.vec", "3 2\na 1 2\nb 3 4\n");
  contains(error_of([&] { read_word_vectors(p); }), {"short.vec", "announces 3 vectors, the file ends after 2 rows"});
  p = vec("nan.vec", "1 2\na 1 x\n");
  contains(error_of([&] { read_word_vectors(p); }), {"nan.vec:2", "'x' is not a number"});
  p = vec("ok.vec", "2 2\r\na 1 2\r\nb 3 4e-1\r\n\n");  // CRLF and a trailing blank line are fine
  WordVectors ok = read_word_vectors(p);
  EXPECT_EQ(ok.words, (std::vector<std::string>{"a", "b"}));
  EXPECT_DOUBLE_EQ(ok.vectors(1, 1), 0.4);

  p = vec("W.txt", "2 2\n1 0 0\n0 1 0\n");
  contains(error_of([&] { read_map(p); }), {"W.txt:2", "expected 2 numbers (the header's cols), found 3"});
  p = vec("W3.txt", "2 2\n1 0\n0 1\n0 0\n");
  contains(error_of([&] { read_map(p); }), {"W3.txt:4", "the header announces 2 rows, the file has 3"});
  p = vec("Wx.txt", "1 2\n1 y\n");
  contains(error_of([&] { read_map(p); }), {"Wx.txt:2", "found 1 and then something else"});
  Matrix W(2, 3);
  W(1, 2) = 0.5;
  write_map(W, dir + "/round.txt");
  EXPECT_EQ(read_map(dir + "/round.txt").v, W.v);
}

// Two 3-word spaces, identical; dictionaries written by the caller.
std::string align_eval(const std::string& dir, const std::string& dict_text, const std::string& src_header = "3 2") {
  std::ofstream(dir + "/s.vec") << src_header << "\na 1 0\nb 0 1\nc 1 1\n";
  std::ofstream(dir + "/t.vec") << "3 2\na 1 0\nb 0 1\nc 1 1\n";
  std::ofstream(dir + "/d.txt") << dict_text;
  return "./bin/align eval --src " + dir + "/s.vec --tgt " + dir + "/t.vec --dict " + dir + "/d.txt";
}

TEST(ToolErrors, AlignCountsSkippedDictionaryLines) {
  const std::string dir = fresh_dir("tool-errors-dict");
  ToolRun r = run(align_eval(dir, "a a\nb\nb b\nc c extra\nc c\n"));
  EXPECT_EQ(r.rc, 0) << r.out;
  contains(r.out, {"align: warning: " + dir + "/d.txt: 2 of 5 lines skipped (first: " + dir +
                       "/d.txt:2: expected \"source target\")",
                   "P@1 100.0%", "(3 queries)"});
  // No warning when every line is a pair.
  r = run(align_eval(dir, "a a\nb b\n"));
  EXPECT_EQ(r.rc, 0) << r.out;
  EXPECT_EQ(r.out.find("warning"), std::string::npos) << r.out;
}

TEST(ToolErrors, AlignEvalWithoutUsablePairsIsAnError) {
  const std::string dir = fresh_dir("tool-errors-nopairs");
  ToolRun r = run(align_eval(dir, "x y\nz w\n"));  // pairs, none in the anchor files
  EXPECT_EQ(r.rc, 1) << r.out;
  contains(r.out, {"align: " + dir + "/d.txt: no usable pairs: none of its 2 pairs has its source word in " + dir +
                   "/s.vec and its target in " + dir + "/t.vec"});
  EXPECT_EQ(r.out.find("P@1"), std::string::npos) << r.out;
  r = run(align_eval(dir, ""));  // an empty dictionary
  EXPECT_EQ(r.rc, 1) << r.out;
  contains(r.out, {"d.txt: no usable pairs: none of its 0 pairs"});
  r = run(align_eval(dir, "a a\nb b\n") + " --dev-ranks 5:9");  // a dev split with no pairs
  EXPECT_EQ(r.rc, 1) << r.out;
  contains(r.out, {"none of its 0 --dev-ranks 5:9 pairs"});
  // fit: the same condition, in words instead of LAPACK's
  r = run("./bin/align fit --method procrustes --src " + dir + "/s.vec --tgt " + dir + "/t.vec --dict " + dir +
          "/d.txt --dev-ranks 0:9 -o " + dir + "/W.txt");
  EXPECT_EQ(r.rc, 1) << r.out;
  contains(r.out, {"d.txt: no usable pairs: none of its 0 training pairs"});
  EXPECT_FALSE(fs::exists(dir + "/W.txt"));
  // A source file whose header announces 2 vectors for its 3 rows: refused.
  r = run(align_eval(dir, "a a\n", "2 2"));
  EXPECT_EQ(r.rc, 1) << r.out;
  contains(r.out, {"align: " + dir + "/s.vec:4: the header announces 2 vectors, the file has 3 rows"});
}

// Messages: count options, HDF5 creation, directories, empty corpora, CRLF.

const std::string kFixture = "../shared/data/fixtures/bilm-tf";

const std::string kFixtureArgs = "--device cpu --options " + kFixture + "/options.json --weights " + kFixture +
                                 "/lm_weights.hdf5";

// A one-instance WSD training set (NAME.data.xml + NAME.gold.key.txt).
std::string tiny_wsd_train(const std::string& dir) {
  std::ofstream(dir + "/tiny.data.xml")
      << "<?xml version=\"1.0\" encoding=\"UTF-8\" ?>\n<corpus lang=\"en\" source=\"tiny\">\n<text id=\"d000\">\n"
      << "<sentence id=\"d000.s000\">\n<wf lemma=\"the\" pos=\"DET\">The</wf>\n"
      << "<instance id=\"d000.s000.t000\" lemma=\"bank\" pos=\"NOUN\">bank</instance>\n"
      << "</sentence>\n</text>\n</corpus>\n";
  std::ofstream(dir + "/tiny.gold.key.txt") << "d000.s000.t000 bank%1:14:00::\n";
  return dir + "/tiny.data.xml";
}

TEST(ToolErrors, CountOptionsMustBePositiveIntegers) {
  const std::string dir = fresh_dir("tool-errors-counts");
  const std::string in = dir + "/in.txt";
  std::ofstream(in) << "a b\n";
  struct Case {
    std::string cmd, option, value;
  };
  const std::vector<Case> cases = {
      {"./bin/embed --options o.json --weights w.hdf5 --input " + in + " --output " + dir + "/o.hdf5 --batch-size 0",
       "--batch-size", "0"},
      {"./bin/wsd_eval --baselines --train x.data.xml --test y.data.xml --out " + dir + "/keys --batch-size -2",
       "--batch-size", "-2"},
      {"./bin/align anchors --model run --corpus " + in + " -o " + dir + "/a --batch-size 1.5", "--batch-size", "1.5"},
      {"./bin/bench train --peer '' --steps 0", "--steps", "0"},
      {"./bin/bench train --peer '' --steps -5", "--steps", "-5"},
  };
  for (const Case& c : cases) {
    ToolRun r = run(c.cmd);
    EXPECT_NE(r.rc, 0) << c.cmd;
    contains(r.out, {c.option + ": must be a positive integer, got " + c.value});
    EXPECT_EQ(r.out.find("not in range"), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find("tokens/s"), std::string::npos) << r.out;  // bench never started
  }
  EXPECT_FALSE(fs::exists(dir + "/o.hdf5"));
  EXPECT_FALSE(fs::exists(dir + "/keys"));
}

// Without data, the evaluation tools say what they read and where it comes from, not only which
// flag is missing; --help says the same. bench names an unknown peer with the known ones.
TEST(ToolErrors, EvaluationToolsWithoutDataSayWhatTheyNeed) {
  struct Case {
    std::string cmd;
    std::vector<std::string> says;
  };
  const std::vector<Case> cases = {
      {"./bin/wsd_eval", {"needs --train", "SemCor 3.0", "Raganato et al. (2017)", "NAME.gold.key.txt", "wordnet-sense-index"}},
      {"./bin/xling_eval ner --model run", {"ner needs --train", "--dev", "CoNLL-2003", "CoNLL-2002"}},
      {"./bin/xling_eval xnli --model run --train t.tsv", {"xnli needs --train", "MultiNLI", "XNLI"}},
      {"./bin/xling_eval sent --model run --test es=x.csv", {"sent needs --train", "Multilingual Amazon Reviews Corpus", "Webis-CLS-10"}},
      {"./bin/bench train --peer tensorflow --steps 1", {"--peer tensorflow: no such peer", "bilm-tf", "torch-debian"}},
  };
  for (const Case& c : cases) {
    const ToolRun r = run(c.cmd);
    EXPECT_NE(r.rc, 0) << c.cmd;
    for (const std::string& part : c.says) contains(r.out, {part});
  }
  contains(run("./bin/wsd_eval --help").out, {"SemCor 3.0", "Raganato et al. (2017)"});
  contains(run("./bin/xling_eval ner --help").out, {"CoNLL-2003", "CoNLL-2002"});
}

// bench ops --only runs the named groups alone (a short GPU lease times just the kernels it
// needs) and refuses a group it does not know, naming the choices.
TEST(ToolErrors, BenchOpsRunsOnlyTheGroupsNamed) {
  ToolRun r = run("./bin/bench ops --device cpu --quick --only attention");
  EXPECT_EQ(r.rc, 0) << r.out;
  contains(r.out, {"attention fwd+bwd fused vs unfused", "peak memory in use"});
  EXPECT_EQ(r.out.find("matmul f32 vs raw BLAS"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("lstm_sequence"), std::string::npos) << r.out;
  r = run("./bin/bench ops --device cpu --quick --only elementwise");
  EXPECT_EQ(r.rc, 0) << r.out;
  contains(r.out, {"add (leading-axis broadcast)", "bias gradient (sum over rows)"});
  EXPECT_EQ(r.out.find("matmul f32 vs raw BLAS"), std::string::npos) << r.out;
  r = run("./bin/bench ops --device cpu --quick --only lstm,bogus");
  EXPECT_NE(r.rc, 0);
  contains(r.out, {"--only: bogus not in {core,elementwise,lstm,"});
}

TEST(ToolErrors, HdfCreateSaysWhy) {
  const std::string dir = fresh_dir("tool-errors-h5");
  contains(error_of([&] { H5File::create(dir + "/missing/x.hdf5"); }),
           {dir + "/missing/x.hdf5: cannot create HDF5 file: the directory " + dir + "/missing does not exist"});
  const std::string file = plain_file(dir + "/file");
  contains(error_of([&] { H5File::create(file + "/x.hdf5"); }),
           {"cannot create HDF5 file: " + file + " is not a directory"});
  contains(error_of([&] { H5File::create(dir); }), {dir + ": cannot create HDF5 file: it is a directory"});
  EXPECT_EQ(slurp(file), "keep me\n");
  H5File::create(dir + "/ok.hdf5");  // and where it can, it does
  EXPECT_TRUE(fs::exists(dir + "/ok.hdf5"));
}

TEST(ToolErrors, DirectoryWhereAFileIsExpected) {
  const std::string dir = fresh_dir("tool-errors-dir");
  fs::create_directories(dir + "/sub");
  contains(error_of([&] { read_sentences(dir + "/sub", false); }), {dir + "/sub: is a directory, not a file"});
  contains(error_of([&] { read_wsd_xml(dir + "/sub"); }), {dir + "/sub: is a directory, not a file"});
  if (fs::exists(WordNetSenses::kDefaultPath)) {
    ToolRun r = run("./bin/wsd_eval --baselines --train " + tiny_wsd_train(dir) + " --test " + dir + "/sub --out " +
                    dir + "/keys");
    EXPECT_EQ(r.rc, 1) << r.out;
    contains(r.out, {"wsd_eval: " + dir + "/sub: is a directory, not a file"});
    EXPECT_EQ(r.out.find("allocate"), std::string::npos) << r.out;
  }
  if (!fs::exists(kFixture + "/lm_weights.hdf5")) GTEST_SKIP() << "no ../shared/data fixture here";
  ToolRun r = run("./bin/embed " + kFixtureArgs + " --input " + dir + "/sub --output " + dir + "/o.hdf5");
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_EQ(r.out, "embed: " + dir + "/sub: is a directory, not a file\n");
  EXPECT_FALSE(fs::exists(dir + "/o.hdf5"));
  // An output file in a directory that does not exist: the reason, and no file.
  std::ofstream(dir + "/in.txt") << "a b\n";
  r = run("./bin/embed " + kFixtureArgs + " --input " + dir + "/in.txt --output " + dir + "/nowhere/o.hdf5");
  EXPECT_EQ(r.rc, 1) << r.out;
  contains(r.out, {"embed: " + dir + "/nowhere/o.hdf5: cannot create HDF5 file: the directory " + dir +
                   "/nowhere does not exist"});
}

TEST(ToolErrors, EmptyCorpusNamesItsFiles) {
  const std::string dir = fresh_dir("tool-errors-empty");
  std::ofstream(dir + "/part-1.txt") << "\n";
  std::ofstream(dir + "/part-2.txt") << "  \n";
  contains(error_of([&] { ShardedCorpus c(dir + "/part-*.txt", 1, false); }),
           {dir + "/part-*.txt: the corpus has no sentences (all 2 files are empty or blank: " + dir + "/part-1.txt"});
  contains(error_of([&] { ShardedCorpus c(dir + "/part-1.txt", 1, false); }),
           {dir + "/part-1.txt: the corpus has no sentences (the file is empty or blank)"});
}

// The (1,) variable-length string dataset bin/embed writes.
std::string read_h5_string(const std::string& path, const std::string& name) {
  hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  hid_t ds = H5Dopen2(f, name.c_str(), H5P_DEFAULT);
  hid_t type = H5Tcopy(H5T_C_S1);
  H5Tset_size(type, H5T_VARIABLE);
  H5Tset_cset(type, H5T_CSET_UTF8);
  char* s = nullptr;
  std::string out;
  if (ds >= 0 && H5Dread(ds, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, &s) >= 0 && s) out = s;
  if (s) H5free_memory(s);
  H5Tclose(type);
  if (ds >= 0) H5Dclose(ds);
  if (f >= 0) H5Fclose(f);
  return out;
}

TEST(ToolErrors, CrlfLinesKeepNoCarriageReturn) {
  const std::string dir = fresh_dir("tool-errors-crlf");
  std::ofstream(dir + "/in.txt", std::ios::binary) << "The first sentence .\r\nAnother one\r\n";
  std::vector<Sentence> s = read_sentences(dir + "/in.txt", false);
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[0].back(), ".");
  EXPECT_EQ(s[1], (Sentence{"Another", "one"}));
  if (!fs::exists(kFixture + "/lm_weights.hdf5")) GTEST_SKIP() << "no ../shared/data fixture here";
  ToolRun r = run("./bin/embed " + kFixtureArgs + " --input " + dir + "/in.txt --output " + dir + "/o.hdf5");
  ASSERT_EQ(r.rc, 0) << r.out;
  const nlohmann::json index = nlohmann::json::parse(read_h5_string(dir + "/o.hdf5", "sentence_to_index"));
  EXPECT_EQ(index, (nlohmann::json{{"The first sentence .", "0"}, {"Another one", "1"}}));
}

}  // namespace
}  // namespace sa
