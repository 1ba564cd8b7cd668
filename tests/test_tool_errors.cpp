// The tools on bad input and unwritable outputs: a message that names the path and the reason,
// exit code 1 (not an abort), and no output left behind; header/row mismatches in anchor files;
// count options; CRLF input.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "tests/test_util.h"

namespace sa {
namespace {

namespace fs = std::filesystem;

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

}  // namespace
}  // namespace sa
