// The GPU bundle's `quick` job (tests/gpu/run_on_gpu.sh) runs only the tests whose names match
// its filter: a test that runs on a GPU under another name would never run in the short first
// call of a lease. Reads the test sources; skips where they are absent (the bundle's own tree).
#include <gtest/gtest.h>

#include <filesystem>
#include <algorithm>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;

std::string read_all(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The quick job's patterns: *Cuda*:*Gpu*:*GPU*:*cuda*:*gpu*.
bool in_quick_job(const std::string& name) {
  for (const char* p : {"Cuda", "Gpu", "GPU", "cuda", "gpu"})
    if (name.find(p) != std::string::npos) return true;
  return false;
}

TEST(GpuJobFilter, EveryTestThatRunsOnAGpuIsInTheQuickJob) {
  const fs::path root = "tests", script = root / "gpu" / "run_on_gpu.sh";
  if (!fs::exists(script)) GTEST_SKIP() << "no test sources here (run from the repository root)";
  ASSERT_NE(read_all(script).find("--gtest_filter='*Cuda*:*Gpu*:*GPU*:*cuda*:*gpu*'"), std::string::npos)
      << script << ": the quick job's filter changed; update in_quick_job";
  // A test's body runs on a GPU when it asks for one through these (or names the device).
  const std::regex test_head(R"(\nTEST(?:_F|_P)?\((\w+),\s*(\w+)\))");
  const std::regex gpu_use(R"(cpu_and_gpu\(|Device::cuda\(|cuda_device_count\(\)|expect_cuda_step_matches_cpu\(|"cuda|--device cuda)");
  std::vector<std::string> missing;
  int seen = 0;
  for (const auto& e : fs::recursive_directory_iterator(root)) {
    if (e.path().extension() != ".cpp" || e.path().filename() == "test_gpu_job_filter.cpp") continue;
    const std::string s = "\n" + read_all(e.path());
    std::vector<std::smatch> heads;
    for (auto it = std::sregex_iterator(s.begin(), s.end(), test_head); it != std::sregex_iterator(); ++it)
      heads.push_back(*it);
    for (size_t i = 0; i < heads.size(); ++i) {
      // The body ends at the first line that starts with '}': helpers after it are not the test's.
      const size_t begin = heads[i].position(0), close = s.find("\n}", begin);
      const size_t end = std::min(close == std::string::npos ? s.size() : close, i + 1 < heads.size() ? heads[i + 1].position(0) : s.size());
      const std::string body = s.substr(begin, end - begin);
      const std::string name = heads[i][1].str() + "." + heads[i][2].str();
      if (!std::regex_search(body, gpu_use)) continue;
      ++seen;
      if (!in_quick_job(name)) missing.push_back(e.path().string() + ": " + name);
    }
  }
  EXPECT_GT(seen, 30) << "the scan found too few GPU tests: is the pattern still right?";
  std::string list;
  for (const std::string& m : missing) list += "\n  " + m;
  EXPECT_TRUE(missing.empty()) << "tests that run on a GPU but not in the quick job (name them Cuda/Gpu):" << list;
}

}  // namespace
