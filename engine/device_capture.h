// A training step's device work captured as one graph and started again with one launch: the GPU
// half of a step replay (engine/step_replay.h; the CPU keeps its primitives as closures instead).
// The backend hands one out (Backend::begin_capture); the replay drives it.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace sa {

class CachingAllocator;

// Host values for one captured input, in its dtype.
struct HostBytes {
  const void* data = nullptr;
  size_t bytes = 0;
};
template <typename T>
HostBytes bytes_of(const std::vector<T>& v) {
  return {v.data(), v.size() * sizeof(T)};
}

class DeviceCapture {
 public:
  virtual ~DeviceCapture() = default;
  // The pool the step's device tensors come from while captured; it never gives a block back, so
  // the graph's memory stays the step's.
  virtual std::shared_ptr<CachingAllocator> pool() = 0;
  // An upload inside the capture (a tensor made from host values): the bytes go to a pinned slot
  // of the input's own, which the graph copies from at this place and a replay refills.
  virtual void upload(void* dst, const void* src, size_t bytes) = 0;
  // The step read device values on the host, which a graph cannot hold: the step's work is lost,
  // and this throws.
  virtual void refuse_read() = 0;
  // Why the graph cannot replay, though it ran the step ("" when it can): work in the step that a
  // replay cannot repeat (a step's own random key or constants).
  virtual std::string why_not() const = 0;
  // The seeds of the dropout masks the step drew (a replay moves their offsets, one generator's).
  virtual std::vector<uint64_t> dropout_seeds() const = 0;
  // Ends the capture and starts the step it holds once (the captured step's own run). False, with
  // the reason, when the capture failed: then the step's work was never started.
  virtual bool end(std::string* why) = 0;
  // Ends a capture whose step failed; nothing is started.
  virtual void abandon() = 0;
  // Input i's bytes as the step uploaded them.
  virtual HostBytes input(size_t i) const = 0;
  virtual size_t inputs() const = 0;
  // Starts the step again: each value into its input's slot (after the last replay's copies read
  // them), random offsets moved by `offset_shift`, and the graph launched.
  virtual void replay(const std::vector<HostBytes>& values, uint64_t offset_shift) = 0;
  virtual size_t nodes() const = 0;  // the graph's nodes (kernels and copies)
};

}  // namespace sa
