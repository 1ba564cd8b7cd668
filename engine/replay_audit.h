// What replaying a captured training step would have to change, measured on the CPU. A step
// captured once as a CUDA graph and replayed replays every primitive with the shapes, buffers and
// scalar arguments (seeds, Adam's bias corrections) of the step it was captured from. The audit
// records each step's primitives (the CPU backend's calls, in order per thread) and compares each
// step with the step before, primitive by primitive, so the CPU shows how far a step is from one
// that could be replayed, and which primitives stand in the way (`bin/bench train --replay-audit`).
#pragma once
#include <cstdint>
#include <map>
#include <string>

namespace sa {

struct ReplayAudit {
  int64_t steps = 0;     // steps compared with the step before
  int64_t launches = 0;  // their primitives
  // Each primitive falls in the first class that fits:
  int64_t order = 0;    // at or past the first place the sequence of primitives differs (or no step before)
  int64_t shapes = 0;   // other shapes or dtypes than the step before's (replay needs padding, or a capture per shape)
  int64_t values = 0;   // other scalar arguments (seeds, a learning rate): replay must read them from device memory
  int64_t buffers = 0;  // only other buffers (a pool that allocates in the same order would give the same)
  int64_t same = 0;     // what a replay of the step before would run
  // The primitives in the classes that need a change of code, by primitive.
  std::map<std::string, int64_t> shapes_by, values_by;
};

// A primitive's call, hashed in three parts: its shapes and kinds, its scalar arguments (seeds,
// factors), its buffers.
struct PrimitiveSignature {
  uint64_t shape = 1, value = 1, addr = 1;
};

namespace replay_audit {
// From now on the CPU backend records the primitives run between step_begun and step_ended (all
// threads; the CPU's LSTM sequences run on threads of their own). Process-wide, for measurement.
void start();
void stop();
bool on();
void step_begun();
// The CPU backend's recording layer notes each primitive run between step_begun and step_ended.
void note(const char* prim, const PrimitiveSignature& sig);
// Compares the step with the one before and adds it to the totals.
void step_ended();
// The totals since start or reset; reset keeps the last step, the next one's reference.
ReplayAudit totals();
void reset_totals();
// One line: the primitives a step in each class, with the top primitives of the classes that need
// a change of code.
std::string summary(const ReplayAudit& a);
}  // namespace replay_audit

}  // namespace sa
