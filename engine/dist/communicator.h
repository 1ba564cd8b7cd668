// The processes of one data-parallel run: MPI's world when the binary was started by mpirun (or
// another MPI launcher), one process otherwise. Collectives work on host memory and every rank
// must call them in the same order. Builds without MPI (`make MPI=0`) always have one process;
// started by a launcher with several ranks, they stop with a message instead of training N
// copies. The MPI headers stay in mpi_communicator.cpp.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace sa::dist {

int rank();  // 0 .. size() - 1
int size();
// The rank among the processes of this machine (for choosing a GPU).
int local_rank();
// Whether this build can run several ranks (it was built with MPI).
bool available();

// In-place sums over all ranks.
void allreduce_sum(double* data, int64_t n);
void allreduce_sum(float* data, int64_t n);
// Every rank's `bytes` bytes, concatenated in rank order; `counts` (if given) gets each rank's size.
std::vector<char> allgather(const void* data, int64_t bytes, std::vector<int64_t>* counts = nullptr);
// Rank `root`'s value of s, on every rank.
void broadcast(std::string& s, int root = 0);
void barrier();
// Ends every rank of the job with `code` (an error on one rank must not leave the others waiting
// in a collective); a single process just exits.
[[noreturn]] void abort_all(int code);

// Gathers vectors of trivially copyable T in rank order.
template <typename T>
std::vector<T> allgather(const std::vector<T>& v) {
  std::vector<char> all = allgather(v.data(), static_cast<int64_t>(v.size() * sizeof(T)));
  std::vector<T> out(all.size() / sizeof(T));
  if (!all.empty()) __builtin_memcpy(out.data(), all.data(), all.size());
  return out;
}

}  // namespace sa::dist
