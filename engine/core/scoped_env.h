// An environment variable set (or, with nullptr, removed) for a scope; its previous value, or its
// absence, is put back at the end. For the switches read at each call (SA_ATTENTION,
// SA_LSTM_STREAMS) that tests and benchmarks compare both ways.
#pragma once
#include <cstdlib>
#include <string>

namespace sa {

class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    const char* before = std::getenv(name);
    had_ = before != nullptr;
    if (had_) saved_ = before;
    set(value);
  }
  ~ScopedEnv() { set(had_ ? saved_.c_str() : nullptr); }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;
  void set(const char* value) { value ? ::setenv(name_.c_str(), value, 1) : ::unsetenv(name_.c_str()); }

 private:
  std::string name_, saved_;
  bool had_ = false;
};

}  // namespace sa
