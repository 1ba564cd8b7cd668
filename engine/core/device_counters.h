// How often the host waits for a device's results, feeds it data, and starts a compute primitive:
// the costs that keep a GPU step from running ahead of the host. Counted on every backend; on the
// CPU they count the places where a GPU run would do the same (every read of values by the host,
// every tensor made from host values, every backend primitive), so a CPU test can hold a step to
// a budget that the GPU run then meets. `bin/bench train` prints them per step.
#pragma once
#include <cstdint>

namespace sa {

struct DeviceCounters {
  int64_t host_reads = 0;  // values read back by the host (Tensor::values/item, device-to-host copies)
  int64_t uploads = 0;     // tensors filled from host memory (Tensor::from, host-to-device copies)
  int64_t launches = 0;    // backend primitives started (each one kernel or library call on a GPU, or more)
  int64_t kernels = 0;     // our CUDA kernels launched (none on the CPU; cuBLAS and cuDNN calls not counted)
  int64_t lanes = 0;       // side streams forked for independent work (Backend::fork_lanes; none on the CPU)
  // Host time spent blocked on a GPU (reads, synchronizations, a pinned upload slot still in use,
  // synchronous copies): a step's wall time less this is the host's own work, so a step whose
  // host work is far below its wall time is bound by the device, not by launches. None on the CPU.
  int64_t wait_ns = 0;
  // Runs of work a GPU records as one CUDA graph (run_as_graph in engine/backend.h): `graphs` of
  // them held `in_graphs` of the launches above, which the GPU started as one launch each run. On
  // the CPU they count what a GPU would record with the same setting (SA_CUDA_GRAPHS).
  // `graph_breaks` counts runs that read from or uploaded to the device: no graph can hold them,
  // so they count as launched one by one.
  int64_t graphs = 0, in_graphs = 0, graph_breaks = 0;

  // What the GPU starts: each graph once, each launch outside a graph once.
  int64_t gpu_launches() const { return launches - in_graphs + graphs; }
  DeviceCounters operator-(const DeviceCounters& o) const {
    return {host_reads - o.host_reads, uploads - o.uploads,   launches - o.launches,
            kernels - o.kernels,       lanes - o.lanes,       wait_ns - o.wait_ns,
            graphs - o.graphs,         in_graphs - o.in_graphs, graph_breaks - o.graph_breaks};
  }
};

// The counts since the process started (all threads).
DeviceCounters device_counters();
// The calling thread's part of them (the CPU runs the LSTM's sequences on threads of their own).
DeviceCounters thread_device_counters();

namespace counters {
void host_read(int64_t n = 1);
void upload(int64_t n = 1);
void launch(int64_t n = 1);
void kernel(int64_t n = 1);
void lanes(int64_t n);
void waited_ns(int64_t ns);
void graph(int64_t launches_inside);
void graph_break();
// Takes counts back: a recording that failed queued nothing, and its rerun counts again.
void take_back(const DeviceCounters& k);
// A step recorded as CUDA graphs (StepGraphs, engine/backend.h; one at a time in a process):
// each run of launches between two meetings with the host is one graph (a piece). A GPU counts
// the pieces it starts (step_piece); with `count_here` (the CPU) every read and upload ends a
// piece, where a GPU's recording would have to, so the CPU counts what a GPU starts in a steady
// step (its launches on every thread: the CPU runs the LSTM's sequences on threads of their own).
void step_begun(bool count_here);
// Ends the piece recorded since the last: one graph of its launches, if `started` (a GPU started
// it) and there were any.
void step_piece(bool started = true);
void step_ended();
bool in_step();  // between step_begun and step_ended
}  // namespace counters

}  // namespace sa
