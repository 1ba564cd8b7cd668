// The readers of outside input as fuzz targets: bytes in, one reader run on them. The libFuzzer
// driver (tests/fuzz/driver/fuzz_main.cpp, `make fuzz`) and the regression test
// (tests/fuzz/test_fuzz_inputs.cpp, in `make test`) call the same targets.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace sa::fuzz {

struct FuzzTarget {
  std::string name;       // the harness: SA_FUZZ_TARGET=NAME, tests/fuzz/{seeds,regressions}/NAME/
  std::string file_name;  // what the bytes are saved as before the reader opens them
  std::function<void(const std::string& path)> read;
};

const std::vector<FuzzTarget>& fuzz_targets();
const FuzzTarget* find_fuzz_target(const std::string& name);

// Saves `bytes` as the target's file in a scratch folder of this process and runs its reader.
// Returns "" when the reader accepted the input and the message when it rejected it with sa::Error
// (the clean rejection); any other exception propagates, and a crash is a crash: both are bugs.
std::string run_fuzz_target(const FuzzTarget& t, const uint8_t* bytes, size_t size);

}  // namespace sa::fuzz
