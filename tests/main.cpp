// Test entry point: GoogleTest, plus one closing line in the plain "N passed, N failed,
// N skipped" form that CI reads whatever the runner.
#include <gtest/gtest.h>

#include <cstdio>

namespace {

class ClosingLine : public ::testing::EmptyTestEventListener {
  void OnTestProgramEnd(const ::testing::UnitTest& u) override {
    std::printf("%d passed, %d failed, %d skipped\n", u.successful_test_count(), u.failed_test_count(),
                u.skipped_test_count());
  }
};

}  // namespace

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  ::testing::UnitTest::GetInstance()->listeners().Append(new ClosingLine);
  return RUN_ALL_TESTS();
}
