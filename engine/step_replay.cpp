// A step captured once and replayed (engine/step_replay.h), and the tensor hooks that feed it.
#include "engine/step_replay.h"

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include <fmt/format.h>

#include "engine/backend.h"
#include "engine/core/capture_hooks.h"
#include "engine/core/device_counters.h"
#include "engine/core/error.h"

namespace sa {
namespace {
std::atomic<StepReplay*> g_capturing{nullptr};
std::mutex g_keep;  // the CPU's LSTM sequences run primitives on threads of their own
thread_local int t_inside = 0;
thread_local int t_lane = -1;
}  // namespace

bool step_replay_enabled() {
  const char* e = std::getenv("SA_STEP_REPLAY");
  return e && std::string(e) == "1";
}

StepReplay::InsidePrimitive::InsidePrimitive() { ++t_inside; }
StepReplay::InsidePrimitive::~InsidePrimitive() { --t_inside; }
bool StepReplay::InsidePrimitive::active() { return t_inside > 0; }

StepReplay::Lane::Lane(int i) : outer_(t_lane) { t_lane = i; }
StepReplay::Lane::~Lane() { t_lane = outer_; }

// Blocks freed while lanes run side by side wait for the region's end: a replay runs the lanes in
// another interleaving, in which another lane could still use a block one lane freed.
void StepReplay::parallel_begin() {
  const std::lock_guard lock(g_keep);
  open_region_ = regions_++;
  pool_->hold_frees();
}
void StepReplay::parallel_end() {
  const std::lock_guard lock(g_keep);
  open_region_ = -1;
  pool_->release_held();
}

size_t StepReplay::pool_bytes() const { return pool_ ? pool_->stats().reserved : 0; }
size_t StepReplay::kept() const { return cap_ ? cap_->nodes() : work_.size(); }
size_t StepReplay::input_count() const { return cap_ ? cap_->inputs() : inputs_.size(); }

Tensor StepReplay::alias(const Tensor& t) {
  if (!t.defined()) return t;
  const TensorImpl& from = *t.impl();
  const StepReplay* r = capturing();
  if (!r || from.storage->pool != r->pool_) return t;
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = std::make_shared<Storage>(from.storage->ptr, from.storage->bytes, from.storage->device);
  impl->offset = from.offset, impl->shape = from.shape, impl->dtype = from.dtype;
  return Tensor(impl);
}

StepReplay* StepReplay::capturing() { return g_capturing.load(std::memory_order_acquire); }
StepReplay* StepReplay::capturing_on(const Device& d) {
  StepReplay* r = capturing();
  return r && r->device_ == d ? r : nullptr;
}

StepReplay::~StepReplay() {
  StepReplay* self = this;
  g_capturing.compare_exchange_strong(self, nullptr);
}

void StepReplay::begin(Generator* dropout, Device dev) {
  SA_CHECK(!capturing(), "step replay: a capture is open already (one at a time)");
  work_.clear(), inputs_.clear(), why_not_.clear();
  cap_.reset();
  closed_ = false, replays_ = 0, regions_ = 0, open_region_ = -1;
  device_ = dev;
  dropout_ = dropout;
  offset_begin_ = dropout ? dropout->offset : 0;
  host_reads_before_ = device_counters().host_reads;
  if (dev.is_cuda()) {
    std::string why;
    cap_ = backend_uncounted(dev).begin_capture(&why);
    if (!cap_) {
      closed_ = true;
      why_not_ = "the device cannot capture the step: " + why;
      return;
    }
    pool_ = cap_->pool();
  } else {
    pool_ = new_host_pool();
    pool_->zero_blocks(!cpu_arithmetic());  // as the host allocator's (allocator.h)
  }
  g_capturing.store(this, std::memory_order_release);
}

void StepReplay::carry(const std::vector<Tensor>& from, const std::vector<Tensor>& to) {
  SA_CHECK(capturing() == this, "step replay: carry() outside the capture");
  SA_CHECK(from.size() == to.size(), "step replay: {} tensors carried into {}", from.size(), to.size());
  for (size_t i = 0; i < from.size(); ++i) {
    Tensor into = to[i];  // the same memory
    if (from[i].raw() != into.raw()) into.copy_from(from[i]);  // kept by the copy hook
  }
}

void StepReplay::end() {
  StepReplay* self = this;
  SA_CHECK(g_capturing.compare_exchange_strong(self, nullptr), "step replay: end() without begin()");
  // A GPU's graph holds the step, which has not run yet: started first, whether it can replay or
  // not (a refusal below lets the capture go, after the run it started).
  if (cap_) {
    std::string failed;
    if (!cap_->end(&failed)) {
      closed_ = true;
      drop();
      fail("SA_STEP_REPLAY=1: {}; the step's work is lost, so the run stops here (run without SA_STEP_REPLAY=1; "
           "training resumes from its last checkpoint)", failed);
    }
  }
  closed_ = true;
  if (cap_) {  // read first: a refusal lets the capture go
    const std::vector<uint64_t> seeds = cap_->dropout_seeds();
    const std::string why = cap_->why_not();
    for (uint64_t seed : seeds) check_dropout_seed(seed);
    if (!why.empty()) refuse(why);
  }
  // (A GPU's capture stops the run at a read: cuda::copy.)
  if (const int64_t reads = device_counters().host_reads - host_reads_before_; !cap_ && reads > 0)
    refuse(fmt::format("the step read device values {} times (a replay runs no host code between its work)", reads));
  if (dropout_) offset_per_step_ = dropout_->offset - offset_begin_;
  if (!why_not_.empty()) return drop();
  // The launched steps' cached blocks go back to the system: replays work in the pool.
  if (!cap_) host_allocator().release_cached();
}

void StepReplay::drop() {
  work_.clear(), inputs_.clear();
  cap_.reset();  // after the run it started: the graph, its slots and what it set aside go
  pool_.reset();  // gone with the last tensor made from it
}

void StepReplay::abandon(const std::string& why) {
  StepReplay* self = this;
  g_capturing.compare_exchange_strong(self, nullptr);
  closed_ = true;
  if (cap_) cap_->abandon();
  refuse(why);
  drop();
}

// Input i as the step uploaded it (the CPU's tensor, or a GPU's pinned slot).
HostBytes StepReplay::captured_input(size_t i) const {
  return cap_ ? cap_->input(i) : HostBytes{inputs_[i].raw(), inputs_[i].nbytes()};
}

std::string StepReplay::size_mismatch(const std::vector<HostBytes>& values) const {
  if (values.size() != input_count())
    return fmt::format("the step made {} tensors from host values, its inputs list {}", input_count(), values.size());
  for (size_t i = 0; i < values.size(); ++i)
    if (const size_t bytes = captured_input(i).bytes; values[i].bytes != bytes)
      return fmt::format("input {} has {} bytes, the step's tensor {}", i, values[i].bytes, bytes);
  return "";
}

std::string StepReplay::check_inputs(const std::vector<HostBytes>& values) const {
  if (std::string why = size_mismatch(values); !why.empty()) return why;
  for (size_t i = 0; i < values.size(); ++i)
    if (values[i].bytes > 0 && std::memcmp(values[i].data, captured_input(i).data, values[i].bytes) != 0)
      return fmt::format("input {} holds other values than the tensor the step made from host values", i);
  return "";
}

bool StepReplay::replay(const std::vector<HostBytes>& values) {
  if (!usable() || !size_mismatch(values).empty()) return false;
  const uint64_t shift = dropout_ ? dropout_->offset - offset_begin_ : 0;
  counters::upload(static_cast<int64_t>(values.size()));
  if (cap_)
    cap_->replay(values, shift);
  else
    run_kept(values, shift);
  if (dropout_) dropout_->offset += offset_per_step_;
  // What a GPU starts: the step's work as one graph.
  counters::launch(static_cast<int64_t>(kept()));
  counters::graph(static_cast<int64_t>(kept()));
  ++replays_;
  return true;
}

void StepReplay::run_kept(const std::vector<HostBytes>& values, uint64_t shift) {
  staged_ = values;  // each copied in by the kept work, where the step made it (capture_hooks::uploaded)
  for (size_t i = 0; i < work_.size();) {
    size_t end = i + 1;
    if (work_[i].region >= 0) {
      while (end < work_.size() && work_[end].region == work_[i].region) ++end;
      run_region(i, end, shift);
    } else {
      work_[i].run(shift);
    }
    i = end;
  }
  staged_.clear();  // the caller's values, gone after the call
}

void StepReplay::keep(std::function<void(uint64_t)> run) {
  const std::lock_guard lock(g_keep);
  keep_locked(std::move(run));
}

void StepReplay::keep_locked(std::function<void(uint64_t)> run) {
  const bool in_region = open_region_ >= 0 && t_lane >= 0;
  work_.push_back({std::move(run), in_region ? open_region_ : -1, in_region ? t_lane : 0});
}

// The lanes of one region side by side, each lane's work in its order, as the captured step ran
// them (a thread a lane, no more threads than the caller allows).
void StepReplay::run_region(size_t first, size_t end, uint64_t shift) {
  int lanes = 0;
  for (size_t i = first; i < end; ++i) lanes = std::max(lanes, work_[i].lane + 1);
#pragma omp parallel for num_threads(std::min(lanes, omp_get_max_threads())) schedule(static, 1)
  for (int lane = 0; lane < lanes; ++lane)
    for (size_t i = first; i < end; ++i)
      if (work_[i].lane == lane) work_[i].run(shift);
}

void StepReplay::refuse(const std::string& why) {
  const std::lock_guard lock(g_keep);
  if (why_not_.empty()) why_not_ = why;
  if (closed_) drop();  // refused after the capture (the trainer's check of its inputs)
}

// An input is copied in where the step made it, not before the step: the pool may have given its
// block to a temporary the step used and freed earlier, which the replay writes again first.
void StepReplay::keep_input(const Tensor& t) {
  const std::lock_guard lock(g_keep);
  const size_t k = inputs_.size();
  inputs_.push_back(t);
  keep_locked([this, k, to = alias(t)](uint64_t) {
    const HostBytes& v = staged_[k];
    if (v.bytes > 0) std::memcpy(to.raw(), v.data, v.bytes);
  });
}

void StepReplay::check_dropout_seed(uint64_t seed) {
  if (!dropout_ || seed != dropout_->seed) refuse("a random mask drawn from a generator the replay does not advance");
}

namespace capture_hooks {
std::shared_ptr<CachingAllocator> pool(const Device& d) {
  const StepReplay* r = StepReplay::capturing_on(d);
  return r ? r->pool() : nullptr;
}
void uploaded(const Tensor& t) {
  if (StepReplay* r = StepReplay::capturing_on(Device::cpu()); r && t_inside == 0) r->keep_input(t);
}
void copied(const Tensor& src, const Tensor& dst) {
  if (StepReplay* r = StepReplay::capturing_on(Device::cpu()); r && t_inside == 0)
    r->keep([src = StepReplay::alias(src), dst = StepReplay::alias(dst)](uint64_t) {
      if (cpu_arithmetic()) std::memcpy(dst.raw(), src.raw(), src.nbytes());
    });
}
}  // namespace capture_hooks

}  // namespace sa
