// libFuzzer's entry points over the fuzz targets: SA_FUZZ_TARGET names the one this process
// fuzzes (`make fuzz` runs each in turn; tests/fuzz/run.sh).
#include <cstdio>
#include <cstdlib>
#include <string>

#include "tests/fuzz/fuzz_targets.h"

namespace {
const sa::fuzz::FuzzTarget* target = nullptr;
}

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  const char* name = std::getenv("SA_FUZZ_TARGET");
  target = name ? sa::fuzz::find_fuzz_target(name) : nullptr;
  if (!target) {
    std::string names;
    for (const auto& t : sa::fuzz::fuzz_targets()) names += " " + t.name;
    std::fprintf(stderr, "SA_FUZZ_TARGET must name one of:%s\n", names.c_str());
    std::exit(2);
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  sa::fuzz::run_fuzz_target(*target, data, size);
  return 0;
}
