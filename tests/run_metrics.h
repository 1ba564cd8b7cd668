// Reading a training run's metrics.jsonl in tests (its own header: the JSON library is heavy, and
// most tests need none of it).
#pragma once
#include <cstdint>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "data/run_files.h"

namespace sa::testing {

// Each step's value of a metric ("loss", "heldout_perplexity") in a run's metrics.jsonl.
inline std::map<int64_t, double> metric(const std::string& run, const char* key) {
  std::map<int64_t, double> m;
  std::ifstream f(run_files::metrics(run));
  for (std::string line; std::getline(f, line);) {
    auto j = nlohmann::json::parse(line);
    if (j.contains(key)) m[j["step"].get<int64_t>()] = j[key].get<double>();
  }
  return m;
}

}  // namespace sa::testing
