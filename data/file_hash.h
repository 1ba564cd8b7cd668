// A file's content hash (64-bit FNV-1a over its bytes), for caches keyed by what was read.
#pragma once
#include <cstdint>
#include <string>

namespace sa {

uint64_t hash_file(const std::string& path);
// Folds bytes into a running FNV-1a hash (start from kFnvOffset).
constexpr uint64_t kFnvOffset = 1469598103934665603ull;
uint64_t hash_bytes(uint64_t h, const void* data, size_t n);
inline uint64_t hash_string(uint64_t h, const std::string& s) { return hash_bytes(h, s.data(), s.size()); }

}  // namespace sa
