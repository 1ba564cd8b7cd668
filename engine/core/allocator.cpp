#include "engine/core/allocator.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <utility>

#include "engine/core/error.h"
#include "engine/core/recording_scope.h"

namespace sa {

size_t CachingAllocator::round_size(size_t bytes) {
  // Small blocks to 512 B, large ones to 1 MiB: shapes that vary a little still share blocks.
  if (bytes < (1u << 20)) return ((bytes + 511) / 512) * 512;
  return ((bytes + (1u << 20) - 1) >> 20) << 20;
}

CachingAllocator::~CachingAllocator() {
  for (const auto& [size, p] : held_) raw_free_(p, device_);
  for (const auto& [size, p] : aside_) raw_free_(p, device_);
  keeps_ = false;  // a pool's blocks go with it
  release_cached();
}

// The host's cache is bounded: with shapes that keep changing (embedding sentences of every
// length) it would keep a block of every size it ever saw, and the process would grow without
// end. Before a new block is taken from the system, the largest cached blocks go back until the
// cache holds no more than the peak in use (what a step that repeats its shapes reuses), or
// 64 MiB. A GPU's cache is not bounded here: it is given back when cudaMalloc fails (below).
static constexpr size_t kCacheFloor = size_t{64} << 20;

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
    if (bounded_)  // the largest cached blocks go back first
      for (const size_t limit = std::max(kCacheFloor, st_.peak_in_use);
           !free_.empty() && st_.reserved - st_.in_use > limit;) {
        const auto largest = std::prev(free_.end());
        raw_free_(largest->second, device_);
        st_.reserved -= largest->first;
        free_.erase(largest);
      }
    p = raw_alloc_(sz, device_);
    // out of memory: give the cache back and try once more (not while recording a graph)
    if (!p && !RecordingScope::active() && !keeps_ && (!free_.empty() || !held_.empty())) {
      // Held blocks too: cudaFree waits for the whole device, so no queue still reads them.
      for (auto& [s, q] : free_) {
        raw_free_(q, device_);
        st_.reserved -= s;
      }
      for (auto& [s, q] : held_) {
        raw_free_(q, device_);
        st_.reserved -= s;
      }
      free_.clear();
      held_.clear();
      p = raw_alloc_(sz, device_);
    }
    SA_CHECK(p, "out of memory allocating {} bytes (in use {}, reserved {})", sz, st_.in_use, st_.reserved);
    st_.reserved += sz;
    st_.raw_allocs++;
  }
  if (zero_ && sz <= kZeroedMax) std::memset(p, 0, sz);
  live_[p] = sz;
  st_.in_use += sz;
  if (st_.in_use > st_.peak_in_use) st_.peak_in_use = st_.in_use;
  return p;
}

void CachingAllocator::zero_blocks(bool on) {
  std::lock_guard<std::mutex> lock(mu_);
  zero_ = on;
}

void CachingAllocator::deallocate(void* p) {
  if (!p) return;
  std::lock_guard<std::mutex> lock(mu_);
  auto it = live_.find(p);
  if (it == live_.end()) return;  // not ours: ignore rather than corrupt the cache
  st_.in_use -= it->second;
  if (aside_on_)
    aside_.emplace_back(it->second, p);
  else if (holds_ > 0)
    held_.emplace_back(it->second, p);
  else
    free_.emplace(it->second, p);
  live_.erase(it);
}

void CachingAllocator::hold_frees() {
  std::lock_guard<std::mutex> lock(mu_);
  ++holds_;
}

void CachingAllocator::release_held() {
  std::lock_guard<std::mutex> lock(mu_);
  SA_CHECK(holds_ > 0, "release_held without hold_frees");
  if (--holds_ > 0) return;
  for (const auto& [size, p] : held_) free_.emplace(size, p);
  held_.clear();
}

void CachingAllocator::set_aside_frees(bool on) {
  std::lock_guard<std::mutex> lock(mu_);
  aside_on_ = on;
}

std::vector<CachingAllocator::Block> CachingAllocator::take_set_aside() {
  std::lock_guard<std::mutex> lock(mu_);
  return std::exchange(aside_, {});
}

void CachingAllocator::return_blocks(const std::vector<Block>& blocks) {
  std::lock_guard<std::mutex> lock(mu_);
  for (const Block& b : blocks) free_.emplace(b);
}

void CachingAllocator::release_cached() {
  std::lock_guard<std::mutex> lock(mu_);
  if (keeps_) return;
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

namespace {
thread_local int t_recording = 0;
}  // namespace

RecordingScope::RecordingScope() { ++t_recording; }
RecordingScope::~RecordingScope() { --t_recording; }
bool RecordingScope::active() { return t_recording > 0; }

static void* host_raw_alloc(size_t bytes, int) { return std::aligned_alloc(64, bytes); }
static void host_raw_free(void* p, int) { std::free(p); }

CachingAllocator& host_allocator() {
  // Leaked on purpose: tensors held in static objects may be freed after main returns.
  static auto* a = new CachingAllocator(host_raw_alloc, host_raw_free, 0, /*bounded=*/true);
  return *a;
}

std::shared_ptr<CachingAllocator> CachingAllocator::kept_pool(RawAlloc a, RawFree f, int device) {
  auto pool = std::make_shared<CachingAllocator>(a, f, device);
  pool->keeps_ = true;
  return pool;
}

std::shared_ptr<CachingAllocator> new_host_pool() { return CachingAllocator::kept_pool(host_raw_alloc, host_raw_free, 0); }

}  // namespace sa
