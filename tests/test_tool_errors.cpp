// The tools on bad input and unwritable outputs: a message that names the path and the reason,
// exit code 1 (not an abort), and no output left behind; header/row mismatches in anchor files;
// count options; CRLF input.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "eval/anchors.h"
#include "tests/test_util.h"

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

struct ToolRun {
  std::string out;  // stdout and stderr
  int rc = -1;
};

ToolRun run(const std::string& cmd) {
  ToolRun r;
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  if (!p) return r;
  char buf[512];
  while (std::fgets(buf, sizeof buf, p)) r.out += buf;
  const int status = pclose(p);
  r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

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

}  // namespace
}  // namespace sa
