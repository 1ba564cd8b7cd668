#include "engine/core/allocator.h"

#include <cstdlib>

#include "engine/core/error.h"

namespace sa {

size_t CachingAllocator::round_size(size_t bytes) {
  // Small blocks to 512 B, large ones to 1 MiB: shapes that vary a little still share blocks.
  if (bytes < (1u << 20)) return ((bytes + 511) / 512) * 512;
  return ((bytes + (1u << 20) - 1) >> 20) << 20;
}

CachingAllocator::~CachingAllocator() { release_cached(); }

void* CachingAllocator::allocate(size_t bytes) {
  size_t sz = round_size(bytes == 0 ? 1 : bytes);
  std::lock_guard<std::mutex> lock(mu_);
  void* p = nullptr;
  // Reuse a cached block of the same size, or at most twice as large.
  auto it = free_.lower_bound(sz);
  if (it != free_.end() && it->first <= 2 * sz) {
    sz = it->first;
    p = it->second;
    free_.erase(it);
  } else {
    p = raw_alloc_(sz, device_);
    if (!p && !free_.empty()) {  // out of memory: give the cache back and try once more
      for (auto& [s, q] : free_) {
        raw_free_(q, device_);
        st_.reserved -= s;
      }
      free_.clear();
      p = raw_alloc_(sz, device_);
    }
    SA_CHECK(p, "out of memory allocating {} bytes (in use {}, reserved {})", sz, st_.in_use, st_.reserved);
    st_.reserved += sz;
    st_.raw_allocs++;
  }
  live_[p] = sz;
  st_.in_use += sz;
  if (st_.in_use > st_.peak_in_use) st_.peak_in_use = st_.in_use;
  return p;
}

void CachingAllocator::deallocate(void* p) {
  if (!p) return;
  std::lock_guard<std::mutex> lock(mu_);
  auto it = live_.find(p);
  if (it == live_.end()) return;  // not ours: ignore rather than corrupt the cache
  st_.in_use -= it->second;
  free_.emplace(it->second, p);
  live_.erase(it);
}

void CachingAllocator::release_cached() {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& [s, q] : free_) {
    raw_free_(q, device_);
    st_.reserved -= s;
  }
  free_.clear();
}

AllocatorStats CachingAllocator::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return st_;
}

void CachingAllocator::reset_peak() {
  std::lock_guard<std::mutex> lock(mu_);
  st_.peak_in_use = st_.in_use;
}

static void* host_raw_alloc(size_t bytes, int) { return std::aligned_alloc(64, bytes); }
static void host_raw_free(void* p, int) { std::free(p); }

CachingAllocator& host_allocator() {
  // Leaked on purpose: tensors held in static objects may be freed after main returns.
  static auto* a = new CachingAllocator(host_raw_alloc, host_raw_free, 0);
  return *a;
}

}  // namespace sa
