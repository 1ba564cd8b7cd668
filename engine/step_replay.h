// A training step captured once and replayed (docs/design.md §6.7). On a GPU the step's work is
// captured on the backend's stream as one CUDA graph (engine/device_capture.h), its inputs copied
// from pinned slots a replay refills. The CPU models that graph: while a step is captured, its host
// tensors come from a pool of its own, and every primitive the CPU backend runs, every host copy
// between tensors and every tensor made from host values (the step's inputs) is kept with the
// memory it touched. Blocks the step frees go back to the pool and are reused inside the step, as
// launched; the pool hands out nothing after the capture, so the kept work's memory stays the
// step's, as a CUDA graph's private pool keeps it. A replay copies the next step's inputs into the
// captured ones and runs the kept work again, without the step's host path (ops, checks, the tape,
// allocations). Per-step values: dropout's random offsets advance as the step's own draws would.
// A replay holds only what the capture held, so a step that reads device values, or whose inputs
// change shape, runs launched.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "engine/core/allocator.h"
#include "engine/core/tensor.h"
#include "engine/device_capture.h"
#include "engine/ops/ops.h"

namespace sa {

// SA_STEP_REPLAY=1 (read at each call): trainers capture a step and replay it.
bool step_replay_enabled();

class StepReplay {
 public:
  StepReplay() = default;
  StepReplay(const StepReplay&) = delete;
  StepReplay& operator=(const StepReplay&) = delete;
  ~StepReplay();

  // Opens the capture of the work that follows on `dev` (one at a time in a process). Dropout masks
  // drawn from `dropout` replay at the offsets the step's own draws would take. A device that
  // cannot capture leaves the capture closed and unusable (why_not says why); the step runs as
  // launched.
  void begin(Generator* dropout, Device dev = Device::cpu());
  // After the step's work: copies each `from` into its `to` (the state a step carries to the next)
  // at the end of every replay, in order.
  void carry(const std::vector<Tensor>& from, const std::vector<Tensor>& to);
  // Closes the capture. usable() says whether it can replay, why_not() why not (and a capture
  // that cannot replay lets its work and memory go). On a GPU this starts the captured step (its
  // own run); one that cannot be started throws, the step's work being lost.
  void end();
  // Closes a capture whose step failed: it cannot replay.
  void abandon(const std::string& why);
  bool usable() const { return why_not_.empty() && closed_; }
  const std::string& why_not() const { return why_not_; }
  // Whether `values` are the captured inputs' bytes, one for each (the trainer's list of its
  // inputs against what the step uploaded); else a reason.
  std::string check_inputs(const std::vector<HostBytes>& values) const;
  // Runs the step again with `values` as its inputs; false (nothing run) when they do not fit the
  // captured inputs' sizes.
  bool replay(const std::vector<HostBytes>& values);
  size_t kept() const;         // the work a replay runs (primitives and copies; a graph's nodes)
  size_t input_count() const;  // the tensors the step made from host values
  size_t pool_bytes() const;                     // the pool's memory (the step's, and what outlived it)
  int64_t replays() const { return replays_; }

  // The capture open now (or null), and the same only when it captures `d`'s work (the CPU
  // backend's recording layer and the tensor hooks keep work for a CPU capture only).
  static StepReplay* capturing();
  static StepReplay* capturing_on(const Device& d);
  Device device() const { return device_; }
  const std::shared_ptr<CachingAllocator>& pool() const { return pool_; }
  // What kept work names: the same memory, shape and dtype, not kept alive when it is the capture
  // pool's (which keeps it); memory from elsewhere (made before the capture) is held.
  static Tensor alias(const Tensor& t);
  // Keeps work to run on replay; `offset_shift` is what dropout offsets have moved since capture.
  void keep(std::function<void(uint64_t offset_shift)> run);
  // Marks the capture unusable (the first reason is kept).
  void refuse(const std::string& why);
  void keep_input(const Tensor& t);
  // Whether a dropout mask drawn with `seed` can replay (drawn from the captured generator).
  void check_dropout_seed(uint64_t seed);
  // Work run side by side while captured (the CPU's LSTM sequences, one per thread) replays side by
  // side: between parallel_begin and parallel_end, what a thread keeps under Lane(i) is lane i's,
  // and a replay runs the lanes on threads again, each in its order.
  void parallel_begin();
  void parallel_end();
  struct Lane {
    explicit Lane(int i);
    ~Lane();
    Lane(const Lane&) = delete;
    Lane& operator=(const Lane&) = delete;

   private:
    int outer_;
  };
  // Marks the calling thread as inside a primitive: the work the primitive starts itself (scratch
  // fills, uploads, copies) is its own, which its replay redoes, so none of it is kept apart.
  struct InsidePrimitive {
    InsidePrimitive();
    ~InsidePrimitive();
    static bool active();
    InsidePrimitive(const InsidePrimitive&) = delete;
    InsidePrimitive& operator=(const InsidePrimitive&) = delete;
  };

 private:
  struct Work {
    std::function<void(uint64_t)> run;
    int region = -1, lane = 0;  // region >= 0: kept by lane `lane` of a parallel region
  };
  void run_kept(const std::vector<HostBytes>& values, uint64_t shift);  // the CPU's replay
  void run_region(size_t first, size_t end, uint64_t shift);
  void drop();  // a capture that cannot replay: its work and memory go
  std::string size_mismatch(const std::vector<HostBytes>& values) const;  // "" when each input fits
  HostBytes captured_input(size_t i) const;
  void keep_locked(std::function<void(uint64_t)> run);
  std::vector<Work> work_;
  Device device_ = Device::cpu();
  std::unique_ptr<DeviceCapture> cap_;  // a GPU's: the step as one graph (work_ stays empty)
  std::shared_ptr<CachingAllocator> pool_;
  std::vector<HostBytes> staged_;  // a replay's inputs, copied in where the step made them
  int regions_ = 0, open_region_ = -1;
  std::vector<Tensor> inputs_;  // the CPU's (a GPU's capture keeps its own)
  Generator* dropout_ = nullptr;
  uint64_t offset_begin_ = 0, offset_per_step_ = 0;
  int64_t host_reads_before_ = 0, replays_ = 0;
  bool closed_ = false;
  std::string why_not_;
};

}  // namespace sa
