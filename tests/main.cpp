// Test entry point: GoogleTest, plus one closing line in the plain "N passed, N failed,
// N skipped" form that CI reads whatever the runner. With SA_COUNTS_FILE set, the three numbers
// go to that file as well, for tests/run_all.sh to add the Python suite's to.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>

namespace {

class ClosingLine : public ::testing::EmptyTestEventListener {
  void OnTestProgramEnd(const ::testing::UnitTest& u) override {
    std::printf("%d passed, %d failed, %d skipped\n", u.successful_test_count(), u.failed_test_count(),
                u.skipped_test_count());
    if (const char* path = std::getenv("SA_COUNTS_FILE"))
      if (FILE* f = std::fopen(path, "w")) {
        std::fprintf(f, "%d %d %d\n", u.successful_test_count(), u.failed_test_count(), u.skipped_test_count());
        std::fclose(f);
      }
  }
};

}  // namespace

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  ::testing::UnitTest::GetInstance()->listeners().Append(new ClosingLine);
  return RUN_ALL_TESTS();
}
