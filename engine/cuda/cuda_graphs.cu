// Chains of launches recorded as one CUDA graph (Backend::run_as_graph). The LSTM's step loop is
// four launches a step, each small and dependent on the last: started one by one, the GPU idles
// between them and the host pays for each. Recorded, the chain is one launch.
//
// Each run records the chain anew (the host code runs as before, but queues nothing) and updates
// the graph made for the key in place with the new pointers and values, so a run never replays
// stale arguments; only a key's second run, or a chain whose kernels changed, instantiates.
//
// A whole training step is recorded the same way (open_step, SA_CUDA_GRAPHS=step), in pieces: a
// recording cannot hold a read, an upload or a wait, so at each (HostMeeting) the piece recorded
// so far is started as a graph of its own and recording goes on after. Unlike a chain, a step
// cannot be rerun: a piece whose recording fails is lost, and the error says so.
#include <algorithm>
#include <cstdio>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/core/recording_scope.h"
#include "engine/cuda/cuda_backend.cuh"

namespace sa {

namespace {

// Ends the recording on `s` whatever happened, and hands back what it holds (null if nothing).
// Clears any error the recording left, so the rerun's first launch does not report it.
cudaGraph_t end_recording(cudaStream_t s) {
  cudaGraph_t g = nullptr;
  if (cudaStreamEndCapture(s, &g) != cudaSuccess && g) {
    cudaGraphDestroy(g);
    g = nullptr;
  }
  cudaGetLastError();
  return g;
}

bool recording_invalidated(cudaStream_t s) {
  cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;
  const cudaError_t e = cudaStreamIsCapturing(s, &st);
  cudaGetLastError();
  return e != cudaSuccess || st == cudaStreamCaptureStatusInvalidated;
}

// Why cudaStreamBeginCapture returned `e`. A kernel that faulted (an illegal instruction or
// address, a trap) leaves an error that every later call returns, cudaStreamBeginCapture too: that
// is no refusal to record, and the run cannot go on (the next checked call stops it). Said as what
// it is, so the message does not send the reader to the recording.
std::string refusal(cudaError_t e) {
  switch (e) {
    case cudaErrorIllegalAddress:
    case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorLaunchFailure:
    case cudaErrorHardwareStackError:
    case cudaErrorAssert:
    case cudaErrorLaunchTimeout:
    case cudaErrorECCUncorrectable:
      return std::string("a kernel queued earlier failed: ") + cudaGetErrorString(e) +
             "; not a refusal to record (CUDA_LAUNCH_BLOCKING=1 names the kernel)";
    default:
      return std::string("the driver refused to record: ") + cudaGetErrorString(e);
  }
}

// What `g` holds, for cuda::updatable_in_place: its nodes in order (kernels with their functions
// and cluster shapes) and its edges. A query that fails leaves the signature unknown (the exec is
// then made anew each time, never updated).
cuda::GraphSig signature_of(cudaGraph_t g) {
  cuda::GraphSig sig;
  auto unknown = [&] {
    cudaGetLastError();
    sig.known = false;
    return sig;
  };
  size_t n = 0;
  if (cudaGraphGetNodes(g, nullptr, &n) != cudaSuccess) return unknown();
  std::vector<cudaGraphNode_t> nodes(n);
  if (n > 0 && cudaGraphGetNodes(g, nodes.data(), &n) != cudaSuccess) return unknown();
  std::unordered_map<cudaGraphNode_t, uint32_t> place;
  for (size_t i = 0; i < n; ++i) {
    place[nodes[i]] = static_cast<uint32_t>(i);
    cuda::GraphNodeSig node;
    cudaGraphNodeType type;
    if (cudaGraphNodeGetType(nodes[i], &type) != cudaSuccess) return unknown();
    node.type = static_cast<int>(type);
    if (type == cudaGraphNodeTypeKernel) {
      cudaKernelNodeParams p{};
      if (cudaGraphKernelNodeGetParams(nodes[i], &p) == cudaSuccess)
        node.func = reinterpret_cast<uintptr_t>(p.func);
      else
        cudaGetLastError();  // a library's kernel the runtime cannot name: compared by its cluster shape
      cudaLaunchAttributeValue v{};
      if (cudaGraphKernelNodeGetAttribute(nodes[i], cudaLaunchAttributeClusterDimension, &v) != cudaSuccess)
        return unknown();
      node.cluster[0] = v.clusterDim.x, node.cluster[1] = v.clusterDim.y, node.cluster[2] = v.clusterDim.z;
    }
    sig.nodes.push_back(node);
  }
  size_t m = 0;
#if CUDART_VERSION >= 12030
#if CUDART_VERSION >= 13000
#define SA_GRAPH_GET_EDGES cudaGraphGetEdges
#else
#define SA_GRAPH_GET_EDGES cudaGraphGetEdges_v2
#endif
  if (SA_GRAPH_GET_EDGES(g, nullptr, nullptr, nullptr, &m) != cudaSuccess) return unknown();
  std::vector<cudaGraphNode_t> from(m), to(m);
  std::vector<cudaGraphEdgeData> data(m);
  if (m > 0 && SA_GRAPH_GET_EDGES(g, from.data(), to.data(), data.data(), &m) != cudaSuccess) return unknown();
#undef SA_GRAPH_GET_EDGES
  auto kind = [&](size_t e) { return data[e].type | data[e].from_port << 8 | data[e].to_port << 16; };
#else
  if (cudaGraphGetEdges(g, nullptr, nullptr, &m) != cudaSuccess) return unknown();
  std::vector<cudaGraphNode_t> from(m), to(m);
  if (m > 0 && cudaGraphGetEdges(g, from.data(), to.data(), &m) != cudaSuccess) return unknown();
  auto kind = [](size_t) { return 0; };
#endif
  for (size_t e = 0; e < m; ++e) sig.edges.push_back({place[from[e]], place[to[e]], kind(e)});
  std::sort(sig.edges.begin(), sig.edges.end());
  return sig;
}

// The step the calling thread records (open_step to close_step).
struct StepRecording {
  CudaBackend* be = nullptr;  // null: none
  uint64_t key = 0;
  int piece = 0;              // the next piece's place in the step
  int meetings = 0;           // HostMeetings alive
  bool capturing = false;     // a piece is being recorded
};
thread_local StepRecording t_step;

// The graph slot of a step's piece: its place in a step of its kind.
uint64_t piece_key(uint64_t step, int piece) {
  return step ^ (0x9e3779b97f4a7c15ull * static_cast<uint64_t>(piece + 1));
}

// The step ends on this thread (given up, or closed).
void step_done() {
  t_step = StepRecording();
  counters::step_ended();
}

}  // namespace

void CudaBackend::graphs_off(const std::string& why) {
  if (!graphs_failed_.exchange(true))
    std::fprintf(stderr, "sensealign: SA_CUDA_GRAPHS=1, but a chain could not be recorded as a graph (%s); "
                 "launching kernel by kernel from now on\n", why.c_str());
}

bool CudaBackend::recording_step() const { return t_step.be == this; }

bool CudaBackend::run_as_graph(uint64_t key, const std::function<void()>& body) {
  if (t_step.be == this) {  // part of the step's piece
    body();
    return true;
  }
  if (capture_) {  // part of a step captured for replay: answered as the CPU's model answers
    body();
    return cuda_graphs_enabled();
  }
  if (!cuda_graphs_enabled() || graphs_failed_) {
    body();
    return false;
  }
  if (n_threads_ > 1) {  // another thread's launches on the shared stream would land in the recording
    if (!threads_said_.exchange(true))
      std::fprintf(stderr, "sensealign: SA_CUDA_GRAPHS=1, but %d host threads use cuda:%d; launching kernel by "
                   "kernel\n", n_threads_.load(), device_);
    body();
    return false;
  }
  const cudaStream_t s = stream();
  bool first = false;
  {
    std::lock_guard<std::mutex> lock(graphs_mu_);
    graph_slot(key, s, &first);
  }
  if (first) {  // a key's first run is launched: a shape seen once is not worth making a graph
    body();
    return false;
  }
  // A failed recording queued nothing: its counts are taken back and the chain is launched.
  const DeviceCounters at_start = thread_device_counters();
  auto launch_instead = [&] {
    counters::take_back(thread_device_counters() - at_start);
    body();
    return false;
  };
  if (const cudaError_t e = cudaStreamBeginCapture(s, cudaStreamCaptureModeRelaxed); e != cudaSuccess) {
    cudaGetLastError();
    graphs_off(refusal(e));
    body();
    return false;
  }
  try {
    RecordingScope recording;  // out of memory fails at once; the rerun gives the cache back
    body();
  } catch (...) {
    // A primitive the recording forbids (a read, a synchronous copy) invalidates it: graphs go
    // off. Any other error (out of memory, a failed check) is the chain's own, and its rerun
    // raises it again, with its own message; one the rerun does not raise came from recording,
    // and would come back at every run: graphs go off then too.
    const bool invalidated = recording_invalidated(s);
    if (cudaGraph_t g = end_recording(s)) cudaGraphDestroy(g);
    if (invalidated) graphs_off("a primitive of the chain cannot be recorded");
    launch_instead();
    graphs_off("the chain failed only while being recorded");  // says nothing if already off
    return false;
  }
  cudaGraph_t g = end_recording(s);
  if (!g) {
    graphs_off("the recording was invalidated");
    return launch_instead();
  }
  std::string why;
  if (!start_recording(key, s, g, &why)) {
    graphs_off(why);
    return launch_instead();
  }
  return true;
}

CudaBackend::Graph& CudaBackend::graph_slot(uint64_t key, cudaStream_t s, bool* fresh) {
  auto [it, made] = graphs_.try_emplace({key, s});
  it->second.used = ++graph_clock_;
  if (fresh) *fresh = made;
  if (graphs_.size() > kGraphs) {  // the least recently used goes (never `it`: it was used last)
    auto oldest = graphs_.begin();
    for (auto j = graphs_.begin(); j != graphs_.end(); ++j)
      if (j->second.used < oldest->second.used) oldest = j;
    if (oldest->second.exec) cudaGraphExecDestroy(oldest->second.exec);  // one still running is freed when it ends
    cudaGetLastError();
    graphs_.erase(oldest);
  }
  return it->second;
}

bool CudaBackend::start_recording(uint64_t key, cudaStream_t s, cudaGraph_t g, std::string* why) {
  // Made, updated and started under the lock: no other update between the update and the launch.
  std::lock_guard<std::mutex> lock(graphs_mu_);
  Graph& slot = graph_slot(key, s, nullptr);
  auto fail = [&](const char* what, cudaError_t e) {
    *why = std::string(what) + ": " + cudaGetErrorString(e);
    if (slot.exec) cudaGraphExecDestroy(slot.exec);
    graphs_.erase({key, s});
    cudaGraphDestroy(g);
    cudaGetLastError();
    return false;
  };
  // Updated in place only from a recording of the same nodes (kernels of the same functions and
  // cluster shapes): another recording is made anew without asking the driver, whose refusal is an
  // API error under compute-sanitizer and whose acceptance between cluster shapes is not to be trusted.
  cuda::GraphSig sig = signature_of(g);
  if (slot.exec && !cuda::updatable_in_place(slot.sig, sig)) {
    cudaGraphExecDestroy(slot.exec);  // one still running is freed when it ends
    cudaGetLastError();
    slot.exec = nullptr;
  }
  if (slot.exec) {
    cudaGraphExecUpdateResultInfo info{};
    // Refused for a constraint the signature does not see: made anew below.
    if (cudaGraphExecUpdate(slot.exec, g, &info) != cudaSuccess) {
      cudaGetLastError();
      cudaGraphExecDestroy(slot.exec);
      cudaGetLastError();
      slot.exec = nullptr;
    }
  }
  if (!slot.exec) {  // into a local: a failed instantiation leaves the slot empty
    cudaGraphExec_t made = nullptr;
    if (const cudaError_t e = cudaGraphInstantiate(&made, g, 0); e != cudaSuccess) return fail("instantiating", e);
    slot.exec = made;
  }
  slot.sig = std::move(sig);
  if (const cudaError_t e = cudaGraphLaunch(slot.exec, s); e != cudaSuccess) return fail("launching", e);  // nothing was queued
  cudaGraphDestroy(g);
  cudaGetLastError();
  return true;
}

void CudaBackend::steps_off(const std::string& why) {
  if (!steps_failed_.exchange(true))
    std::fprintf(stderr, "sensealign: SA_CUDA_GRAPHS=step, but a step could not be recorded (%s); steps are "
                 "launched kernel by kernel from now on\n", why.c_str());
}

// Recorded on the backend's own stream, from the calling thread; the lanes' work joins the
// recording through their fork and join events. Not recorded: a kind's first step (it makes the
// handles, streams and cached blocks later steps take; a recording must not), and steps while
// several host threads use the device (their launches would land in it).
void CudaBackend::open_step(uint64_t key) {
  if (t_step.be || capture_ || graphs_failed_ || steps_failed_ || in_lane() || forked_lanes_ > 0) return;
  if (n_threads_ > 1) {
    if (!threads_said_.exchange(true))
      std::fprintf(stderr, "sensealign: SA_CUDA_GRAPHS=step, but %d host threads use cuda:%d; launching kernel by "
                   "kernel\n", n_threads_.load(), device_);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(graphs_mu_);
    if (steps_seen_.insert(key).second) return;
  }
  if (const cudaError_t e = cudaStreamBeginCapture(stream_, cudaStreamCaptureModeRelaxed); e != cudaSuccess) {
    cudaGetLastError();
    steps_off(refusal(e));  // the step runs launched, on a stream that records nothing
    return;
  }
  t_step.be = this, t_step.key = key, t_step.capturing = true;
  counters::step_begun(false);
}

void CudaBackend::end_piece() {
  StepRecording& r = t_step;
  if (forked_lanes_ > 0) {  // their work is not joined yet: no recording can end here
    if (cudaGraph_t g = end_recording(stream_)) cudaGraphDestroy(g);
    step_done();
    steps_off("the host met the device while side streams were forked");
    fail_message("SA_CUDA_GRAPHS=step: the host met the device (a read, an upload, or cudaFree after running "
                 "out of memory) while work ran on side streams (SA_LSTM_STREAMS=1), where a recorded step "
                 "cannot pause; the step's work is lost, so the run stops here (run without one of the two; "
                 "training resumes from its last checkpoint)");
  }
  cudaGraph_t g = nullptr;
  const cudaError_t e = cudaStreamEndCapture(stream_, &g);
  r.capturing = false;
  std::string why;
  if (e != cudaSuccess || !g) {
    why = std::string("the recording was invalidated: ") + cudaGetErrorString(e);
    if (g) cudaGraphDestroy(g);
    cudaGetLastError();
  } else {
    size_t nodes = 1;
    if (cudaGraphGetNodes(g, nullptr, &nodes) != cudaSuccess) cudaGetLastError(), nodes = 1;
    if (nodes == 0) {  // nothing queued since the last meeting
      cudaGraphDestroy(g);
      counters::step_piece(false);
      return;
    }
    if (start_recording(piece_key(r.key, r.piece), stream_, g, &why)) {
      ++r.piece;
      counters::step_piece(true);
      return;
    }
  }
  step_done();
  steps_off(why);
  fail_message("SA_CUDA_GRAPHS=step: a piece of a recorded step could not be started (" + why +
               "); its work is lost, so the run stops here (run without SA_CUDA_GRAPHS=step; training "
               "resumes from its last checkpoint)");
}

void CudaBackend::resume_piece() {
  // From ~HostMeeting: never throws. A sticky error is named here and raised by the next checked call.
  if (const cudaError_t e = cudaStreamBeginCapture(stream_, cudaStreamCaptureModeRelaxed); e != cudaSuccess) {
    cudaGetLastError();
    step_done();  // nothing is lost: the rest of the step is launched kernel by kernel
    steps_off(refusal(e));
    return;
  }
  t_step.capturing = true;
}

void CudaBackend::close_step(bool completed) {
  if (t_step.be != this) return;  // not recorded, or given up
  struct Done {
    ~Done() { step_done(); }
  } done;
  if (completed) {
    if (t_step.capturing) end_piece();  // the last piece
    return;
  }
  // An error ends the step: the piece being recorded is dropped (the error says what failed).
  if (t_step.capturing) {
    const bool invalidated = recording_invalidated(stream_);
    if (cudaGraph_t g = end_recording(stream_)) cudaGraphDestroy(g);
    if (invalidated) steps_off("a call in the step cannot be recorded");
  }
}

namespace cuda {

HostMeeting::HostMeeting() {
  StepRecording& r = t_step;
  if (!r.be) return;
  if (r.meetings == 0 && r.capturing) r.be->end_piece();  // may throw: then nothing is paused
  ++r.meetings;
  paused_ = true;
}

HostMeeting::~HostMeeting() {
  StepRecording& r = t_step;
  if (!paused_ || !r.be) return;  // the step ended meanwhile
  if (--r.meetings == 0 && !r.capturing) r.be->resume_piece();
}

}  // namespace cuda

}  // namespace sa
