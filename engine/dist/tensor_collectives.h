// Tensor-level collectives of data-parallel training over dist's ranks: the pieces every rank
// needs to take the same step as one process with the whole batch. With one rank each is the
// local operation (or nothing).
#pragma once
#include <vector>

#include "engine/core/tensor.h"

namespace sa::dist {

// Every rank's rows of `local` ([n_r, ...], any dtype), concatenated along dim 0 in rank order,
// on local's device.
Tensor allgather_rows(const Tensor& local);

// The mean over the rows of all ranks ([1, W] from each rank's [n_r, W]), as ops::mean(x, 0, true)
// of the concatenation would give it (summed in f64).
Tensor mean_rows(const Tensor& local);

// Sums every rank's gradients of `params` and divides by the number of ranks: the gradient of
// the mean of the ranks' losses. Dense gradients travel in one flat buffer per dtype; row-sparse
// ones as their coalesced ids and rows, concatenated in rank order and coalesced again, so every
// rank ends with the same unique rows. GPU ranks sum dense gradients with NCCL when every rank
// can (dist/nccl.h) and each has a GPU of its own; otherwise through host memory and MPI.
void average_gradients(const std::vector<Tensor>& params);

// Whether GPU ranks sum dense gradients with NCCL: every rank can load it and has a GPU of its own
// (two ranks sharing a GPU, or a rank without libnccl, sum through host memory). Decided once, by
// all ranks together: every rank must make the first call.
bool gradients_use_nccl(Device dev);

// The mean of a scalar over the ranks (a logged loss).
double mean_over_ranks(double v);

}  // namespace sa::dist
