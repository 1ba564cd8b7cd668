// What an instantiated CUDA graph was made from, and whether it may be updated in place with a
// new recording (cudaGraphExecUpdate, engine/cuda/cuda_graphs.cu). Plain C++ (the node types and
// functions as integers), so the rule is tested on the CPU.
//
// An update is tried only between recordings of the same nodes: the same types in the same order,
// kernels of the same functions and cluster shapes, and the same edges. Anything else is made
// anew without asking the driver: an update it refuses shows as an API error under
// compute-sanitizer (cudaErrorGraphExecUpdateFailure, then again from cudaGetLastError), and one it
// accepts between kernels of different cluster shapes (Hopper's cuBLAS kernels use thread-block
// clusters) is not carried out correctly. A step's pieces are kept by their place in the step, so
// in a step whose GEMM shapes change (SaELMo's negatives), piece k is often other kernels,
// cuBLAS's among them, than it was a step before.
#pragma once
#include <cstdint>
#include <tuple>
#include <vector>

namespace sa::cuda {

struct GraphNodeSig {
  int type = 0;                      // cudaGraphNodeType
  uintptr_t func = 0;                // a kernel node's function (0: the runtime could not name it)
  unsigned cluster[3] = {0, 0, 0};   // a kernel node's cluster shape (0s: launched without one)
  bool operator==(const GraphNodeSig& o) const {
    return type == o.type && func == o.func && cluster[0] == o.cluster[0] && cluster[1] == o.cluster[1] &&
           cluster[2] == o.cluster[2];
  }
};

struct GraphEdgeSig {
  uint32_t from = 0, to = 0;  // the nodes' places in the graph's node list
  int kind = 0;               // the edge's type and ports (a programmatic edge differs from a full one)
  bool operator==(const GraphEdgeSig& o) const { return from == o.from && to == o.to && kind == o.kind; }
  bool operator<(const GraphEdgeSig& o) const { return std::tie(from, to, kind) < std::tie(o.from, o.to, o.kind); }
};

struct GraphSig {
  std::vector<GraphNodeSig> nodes;
  std::vector<GraphEdgeSig> edges;  // sorted
  bool known = true;                // false: a query failed; such a graph is never updated in place
};

// Whether an exec made from a recording with signature `made` may take `next` by an update.
inline bool updatable_in_place(const GraphSig& made, const GraphSig& next) {
  return made.known && next.known && made.nodes == next.nodes && made.edges == next.edges;
}

}  // namespace sa::cuda
