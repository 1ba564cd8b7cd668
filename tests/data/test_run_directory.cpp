// The one check every tool opens a model directory through (data/run_files.h): the kind of
// directory, and errors that name it and what it lacks.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "data/run_files.h"
#include "tests/test_util.h"

namespace sa {
namespace {

namespace fs = std::filesystem;

TEST(RunDirectory, TellsTheKindAndNamesWhatIsMissing) {
  const std::string base = ::testing::TempDir() + "/run-directory";
  fs::remove_all(base);
  fs::create_directories(base + "/elmo");
  fs::create_directories(base + "/bert");
  // Nothing there yet.
  EXPECT_TRUE(testing::contains(testing::error_of([&] { open_run_directory(base + "/elmo"); }),
                                "/elmo: not a run directory with a checkpoint (expected options.json and weights.hdf5"));
  EXPECT_TRUE(testing::contains(testing::error_of([&] { open_run_directory(base + "/nowhere"); }), "/nowhere: not a run"));
  // An ELMo run's files; a bad options.json names itself.
  std::ofstream(base + "/elmo/weights.hdf5") << "";
  std::ofstream(base + "/elmo/options.json") << "{\"lstm\": {\"dim\": 4}, ";
  EXPECT_TRUE(testing::contains(testing::error_of([&] { open_run_directory(base + "/elmo"); }),
                                "/elmo/options.json: invalid JSON"));
  std::ofstream(base + "/elmo/options.json") << R"({"lstm": {"dim": 4}, "sensealign": {"lowercase": true}})";
  const RunDirectory e = open_run_directory(base + "/elmo");
  EXPECT_EQ(e.kind, RunDirectory::Kind::Elmo);
  EXPECT_EQ(e.options["lstm"]["dim"], 4);
  EXPECT_EQ(e.ours().value("lowercase", false), true);
  // A BERT directory is told by its config.json.
  std::ofstream(base + "/bert/config.json") << R"({"model_type": "bert", "hidden_size": 8})";
  const RunDirectory b = open_run_directory(base + "/bert");
  EXPECT_EQ(b.kind, RunDirectory::Kind::Bert);
  EXPECT_EQ(b.options["hidden_size"], 8);
  EXPECT_TRUE(b.ours().empty());
}

}  // namespace
}  // namespace sa
