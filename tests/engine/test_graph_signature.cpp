// When a kept CUDA graph is updated in place and when it is made anew (engine/cuda/graph_signature.h):
// the rule cuda_graphs.cu applies before it calls cudaGraphExecUpdate, on the CPU.
#include <gtest/gtest.h>

#include "engine/cuda/graph_signature.h"

namespace sa::cuda {
namespace {

constexpr int kKernel = 0, kMemset = 2;  // cudaGraphNodeTypeKernel, cudaGraphNodeTypeMemset

GraphNodeSig kernel(uintptr_t func, unsigned cluster_x = 0) {
  GraphNodeSig n;
  n.type = kKernel, n.func = func, n.cluster[0] = cluster_x, n.cluster[1] = n.cluster[2] = cluster_x ? 1 : 0;
  return n;
}

// A chain of three kernels, as a piece of a recorded step records them.
GraphSig chain(uintptr_t a, uintptr_t b, uintptr_t c, unsigned cluster_b = 0) {
  GraphSig s;
  s.nodes = {kernel(a), kernel(b, cluster_b), kernel(c)};
  s.edges = {{0, 1, 0}, {1, 2, 0}};
  return s;
}

TEST(GraphSignature, TheSameKernelsUpdateInPlace) {
  EXPECT_TRUE(updatable_in_place(chain(1, 2, 3), chain(1, 2, 3)));
  EXPECT_TRUE(updatable_in_place(chain(1, 2, 3, 2), chain(1, 2, 3, 2)));
}

// The next step's piece k: cuBLAS chose another kernel for a new shape, with or without another
// cluster shape. The driver would accept an update (same topology) that it does not carry out
// correctly between cluster shapes; the exec is made anew.
TEST(GraphSignature, AnotherKernelOrClusterShapeIsMadeAnew) {
  EXPECT_FALSE(updatable_in_place(chain(1, 2, 3), chain(1, 4, 3)));
  EXPECT_FALSE(updatable_in_place(chain(1, 2, 3, 0), chain(1, 2, 3, 2)));
  EXPECT_FALSE(updatable_in_place(chain(1, 2, 3, 2), chain(1, 2, 3, 4)));
}

// What the driver refuses (cudaErrorGraphExecUpdateFailure, an API error under compute-sanitizer):
// another node count, another node type, other edges. Never asked.
TEST(GraphSignature, AnotherTopologyIsMadeAnewWithoutAskingTheDriver) {
  GraphSig longer = chain(1, 2, 3);
  longer.nodes.push_back(kernel(5));
  longer.edges.push_back({2, 3, 0});
  EXPECT_FALSE(updatable_in_place(chain(1, 2, 3), longer));
  GraphSig memset = chain(1, 2, 3);
  memset.nodes[1].type = kMemset, memset.nodes[1].func = 0;
  EXPECT_FALSE(updatable_in_place(chain(1, 2, 3), memset));
  GraphSig fork = chain(1, 2, 3);
  fork.edges = {{0, 1, 0}, {0, 2, 0}};
  EXPECT_FALSE(updatable_in_place(chain(1, 2, 3), fork));
  GraphSig programmatic = chain(1, 2, 3);
  programmatic.edges[1].kind = 1;
  EXPECT_FALSE(updatable_in_place(chain(1, 2, 3), programmatic));
}

TEST(GraphSignature, AGraphThatCouldNotBeReadIsNeverUpdated) {
  GraphSig unknown = chain(1, 2, 3);
  unknown.known = false;
  EXPECT_FALSE(updatable_in_place(unknown, chain(1, 2, 3)));
  EXPECT_FALSE(updatable_in_place(chain(1, 2, 3), unknown));
}

}  // namespace
}  // namespace sa::cuda
