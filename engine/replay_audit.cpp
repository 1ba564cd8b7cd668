// The replay audit (engine/replay_audit.h): each step's primitives, noted by the CPU backend's
// recording layer (engine/cpu/recording_backend.cpp), against the step before's.
#include "engine/replay_audit.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "engine/core/error.h"

namespace sa {
namespace {

struct Record {
  const char* prim;
  PrimitiveSignature sig;
};
using Tapes = std::vector<std::pair<std::thread::id, std::vector<Record>>>;

struct Audit {
  std::atomic<bool> on{false}, recording{false};
  std::atomic<uint64_t> generation{1};
  std::mutex mu;
  Tapes current, previous;
  bool have_previous = false;
  ReplayAudit totals;
} g_audit;

template <typename T>  // Tapes or const Tapes
auto tape_of(T& tapes, std::thread::id id) {
  return std::find_if(tapes.begin(), tapes.end(), [id](const auto& t) { return t.first == id; });
}

thread_local std::vector<Record>* t_tape = nullptr;
thread_local uint64_t t_generation = 0;

std::vector<Record>& tape_of_this_thread() {
  const uint64_t gen = g_audit.generation.load();
  if (t_generation != gen) {
    std::lock_guard lock(g_audit.mu);
    const auto id = std::this_thread::get_id();
    auto it = tape_of(g_audit.current, id);
    if (it == g_audit.current.end()) {
      g_audit.current.reserve(64);  // no reallocation under a thread's cached pointer (threads per step: a few)
      SA_CHECK(g_audit.current.size() < 64, "replay audit: more than 64 threads ran primitives in one step");
      it = g_audit.current.emplace(g_audit.current.end(), id, std::vector<Record>{});
    }
    t_tape = &it->second, t_generation = gen;
  }
  return *t_tape;
}

// Adds the step `now` to `a`, each thread's primitives against the same thread's the step before.
void compare(const Tapes& before, const Tapes& now, ReplayAudit& a) {
  ++a.steps;
  for (const auto& [id, tape] : now) {
    a.launches += static_cast<int64_t>(tape.size());
    const auto it = tape_of(before, id);
    const std::vector<Record> none;
    const std::vector<Record>& old = it == before.end() ? none : it->second;
    size_t i = 0;
    for (; i < tape.size() && i < old.size(); ++i) {
      const Record &r = tape[i], &o = old[i];
      if (std::strcmp(r.prim, o.prim) != 0) break;
      if (r.sig.shape != o.sig.shape)
        ++a.shapes, ++a.shapes_by[r.prim];
      else if (r.sig.value != o.sig.value)
        ++a.values, ++a.values_by[r.prim];
      else if (r.sig.addr != o.sig.addr)
        ++a.buffers;
      else
        ++a.same;
    }
    a.order += static_cast<int64_t>(tape.size() - i);
  }
}

std::string top(const std::map<std::string, int64_t>& by, int64_t steps) {
  std::vector<std::pair<int64_t, std::string>> v;
  for (const auto& [name, n] : by) v.push_back({-n, name});
  std::sort(v.begin(), v.end());
  std::string s;
  for (size_t i = 0; i < v.size() && i < 4; ++i)
    s += fmt::format("{}{} {:.1f}", i ? ", " : "", v[i].second, static_cast<double>(-v[i].first) / steps);
  return s.empty() ? "" : " (" + s + ")";
}

}  // namespace

namespace replay_audit {

void start() {
  std::lock_guard lock(g_audit.mu);
  g_audit.totals = {}, g_audit.have_previous = false, g_audit.current.clear(), g_audit.previous.clear();
  g_audit.generation.fetch_add(1);
  g_audit.on = true;
}
void stop() {
  g_audit.on = false;
  g_audit.recording = false;
}
bool on() { return g_audit.on.load(std::memory_order_relaxed); }

void note(const char* prim, const PrimitiveSignature& sig) {
  if (!g_audit.recording.load(std::memory_order_relaxed)) return;
  tape_of_this_thread().push_back({prim, sig});
}

void step_begun() {
  if (!on()) return;
  std::lock_guard lock(g_audit.mu);
  g_audit.current.clear();
  g_audit.generation.fetch_add(1);
  g_audit.recording = true;
}

void step_ended() {
  if (!on()) return;
  g_audit.recording = false;
  std::lock_guard lock(g_audit.mu);
  if (g_audit.have_previous) compare(g_audit.previous, g_audit.current, g_audit.totals);
  g_audit.previous = std::move(g_audit.current);
  g_audit.current.clear();
  g_audit.generation.fetch_add(1);
  g_audit.have_previous = true;
}

ReplayAudit totals() {
  std::lock_guard lock(g_audit.mu);
  return g_audit.totals;
}
void reset_totals() {
  std::lock_guard lock(g_audit.mu);
  g_audit.totals = {};
}

std::string summary(const ReplayAudit& a) {
  if (a.steps == 0) return "replay audit: no step had a step before it";
  if (a.launches == 0) return "replay audit: the steps ran no primitive of their own (replayed steps)";
  const double n = static_cast<double>(a.steps);
  return fmt::format(
      "replay audit, each of {} steps against the step before: {:.1f} primitives a step; {:.1f} as before, "
      "{:.1f} on other buffers only, {:.1f} with other scalar arguments{}, {:.1f} of other shapes{}, {:.1f} at or past "
      "a change in the sequence of primitives",
      a.steps, a.launches / n, a.same / n, a.buffers / n, a.values / n, top(a.values_by, a.steps), a.shapes / n,
      top(a.shapes_by, a.steps), a.order / n);
}

}  // namespace replay_audit
}  // namespace sa
