// Caching allocator: blocks freed by tensors go to per-size free lists and are handed out again,
// so a training step that repeats the same shapes stops calling malloc/cudaMalloc after step one.
#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace sa {

struct AllocatorStats {
  size_t in_use = 0;      // bytes held by live tensors
  size_t reserved = 0;    // bytes obtained from the system (in use + cached)
  size_t peak_in_use = 0;
  size_t raw_allocs = 0;  // calls to the underlying malloc/cudaMalloc
};

class CachingAllocator {
 public:
  using RawAlloc = void* (*)(size_t bytes, int device);
  using RawFree = void (*)(void* p, int device);

  // bounded: before a new block is taken from the system, the largest cached blocks go back
  // until the cache holds no more than the peak in use, or 64 MiB (the host's: allocator.cpp).
  CachingAllocator(RawAlloc a, RawFree f, int device, bool bounded = false)
      : raw_alloc_(a), raw_free_(f), device_(device), bounded_(bounded) {}
  // A pool that never gives a block back while it lives (out of memory is an error, release_cached
  // does nothing): a captured step's, whose freed blocks its kept work or graph still names.
  static std::shared_ptr<CachingAllocator> kept_pool(RawAlloc a, RawFree f, int device);
  ~CachingAllocator();
  void* allocate(size_t bytes);
  void deallocate(void* p);
  // Gives every cached block back to the system.
  void release_cached();
  // While held (calls nest), freed blocks are kept aside, not handed out again; the last
  // release_held() returns them to the cache. For work on several device queues: a block freed by
  // the host may still be read by a queue that has not run yet, and only the join orders them.
  void hold_frees();
  void release_held();
  // While on (a device capture open), freed blocks are set aside for good: never handed out again
  // until take_set_aside() gives them to the caller, who returns them (return_blocks) once nothing
  // that names them runs any more. A captured graph may read memory made before its capture and
  // freed during it, as long as it replays.
  using Block = std::pair<size_t, void*>;
  void set_aside_frees(bool on);
  std::vector<Block> take_set_aside();
  void return_blocks(const std::vector<Block>& blocks);
  AllocatorStats stats() const;
  void reset_peak();
  // Host memory only: from now on, blocks of at most kZeroedMax bytes are zeroed at every
  // hand-out. For a run whose kernels write no floats (the CPU without arithmetic, backend.h): the
  // small results the host reads (a loss, a norm) hold no stale bytes of another dtype (a NaN).
  // Larger blocks are left as they are: zeroing the logits of a step would cost more than the step.
  void zero_blocks(bool on);
  static constexpr size_t kZeroedMax = size_t{64} << 10;

 private:
  static size_t round_size(size_t bytes);
  RawAlloc raw_alloc_;
  RawFree raw_free_;
  int device_;
  bool bounded_;
  bool zero_ = false;
  bool keeps_ = false;
  mutable std::mutex mu_;
  std::multimap<size_t, void*> free_;        // size -> block
  std::unordered_map<void*, size_t> live_;   // block -> size
  std::vector<std::pair<size_t, void*>> held_;  // freed while held: size, block
  int holds_ = 0;
  bool aside_on_ = false;
  std::vector<Block> aside_;  // freed while set aside
  AllocatorStats st_;
};

// The host allocator (64-byte aligned blocks).
CachingAllocator& host_allocator();
// A host kept_pool: a step captured on the CPU (engine/step_replay.h).
std::shared_ptr<CachingAllocator> new_host_pool();

}  // namespace sa
