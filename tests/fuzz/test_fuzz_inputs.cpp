// The fuzz targets' seeds and every input a fuzzer once broke a reader with (kept under
// tests/fuzz/regressions/NAME), run through their readers as `make fuzz` runs them: each is
// accepted, or rejected with an sa::Error that names the file; no other exception, no crash.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "tests/fuzz/fuzz_targets.h"
#include "tests/test_util.h"

namespace fs = std::filesystem;
using sa::testing::contains;

namespace {

std::vector<fs::path> inputs(const std::string& kind, const std::string& target) {
  std::vector<fs::path> out;
  const fs::path dir = fs::path("tests/fuzz") / kind / target;
  if (fs::is_directory(dir))
    for (const auto& e : fs::directory_iterator(dir))
      if (e.is_regular_file()) out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

std::string bytes_of(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

void expect_read_or_rejected(const sa::fuzz::FuzzTarget& t, const fs::path& input) {
  const std::string bytes = bytes_of(input);
  std::string message;
  EXPECT_NO_THROW(message = sa::fuzz::run_fuzz_target(t, reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()))
      << input;
  // A config's --set values are named as such ("--set KEY=VALUE: ..."), not by the file.
  if (!message.empty()) {
    EXPECT_TRUE(contains(message, t.file_name) || contains(message, "--set"))
        << input << ": the error does not name the file: " << message;
  }
}

}  // namespace

TEST(FuzzInputs, EveryTargetHasSeedsAndEachIsReadOrRejectedCleanly) {
  for (const auto& t : sa::fuzz::fuzz_targets()) {
    const auto seeds = inputs("seeds", t.name);
    EXPECT_FALSE(seeds.empty()) << "no seed for fuzz target " << t.name;
    for (const fs::path& p : seeds) expect_read_or_rejected(t, p);
  }
}

TEST(FuzzInputs, KeptFindingsAreReadOrRejectedCleanly) {
  int kept = 0;
  for (const auto& t : sa::fuzz::fuzz_targets())
    for (const fs::path& p : inputs("regressions", t.name)) {
      expect_read_or_rejected(t, p);
      ++kept;
    }
  std::printf("[ fuzz ] %d kept findings read again\n", kept);
}

TEST(FuzzInputs, EveryKeptFolderNamesATarget) {
  for (const char* kind : {"seeds", "regressions"}) {
    if (!fs::is_directory(fs::path("tests/fuzz") / kind)) continue;
    for (const auto& e : fs::directory_iterator(fs::path("tests/fuzz") / kind))
      EXPECT_NE(sa::fuzz::find_fuzz_target(e.path().filename().string()), nullptr) << e.path();
  }
}
