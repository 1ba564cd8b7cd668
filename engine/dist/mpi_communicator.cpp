// dist/communicator.h over MPI. MPI is started on the first collective or query, only when a
// launcher started this process (a plain ./bin/train never touches MPI), and finalized at exit.
// The C API only: no MPI C++ bindings.
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "engine/core/error.h"
#include "engine/dist/communicator.h"
#include "engine/dist/launcher_env.h"

namespace sa::dist {

namespace {

struct World {
  bool mpi = false;
  int rank = 0, size = 1;
  World() {
    if (launcher_world_size() <= 1) return;
    int provided = 0;
    // Only the main thread calls MPI; OpenMP threads run between the calls.
    MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    // An error in one rank must end the job, not leave the others waiting in a collective.
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
    mpi = true;
    std::atexit([] {
      int finalized = 0;
      MPI_Finalized(&finalized);
      if (!finalized) MPI_Finalize();
    });
  }
};

World& world() {
  static World w;
  return w;
}

int checked_count(int64_t n, const char* what) {
  SA_CHECK(n >= 0 && n <= INT_MAX, "dist::{}: {} elements exceed one MPI message (at most {})", what, n, INT_MAX);
  return static_cast<int>(n);
}

template <typename T>
void allreduce(T* data, int64_t n, MPI_Datatype type) {
  if (!world().mpi || n == 0) return;
  // In pieces, so that counts above INT_MAX work.
  for (int64_t at = 0; at < n; at += INT_MAX / 2) {
    const int k = static_cast<int>(std::min<int64_t>(INT_MAX / 2, n - at));
    MPI_Allreduce(MPI_IN_PLACE, data + at, k, type, MPI_SUM, MPI_COMM_WORLD);
  }
}

}  // namespace

int rank() { return world().rank; }
int size() { return world().size; }
int local_rank() { return launcher_local_rank(); }
bool available() { return true; }

void allreduce_sum(double* data, int64_t n) { allreduce(data, n, MPI_DOUBLE); }
void allreduce_sum(float* data, int64_t n) { allreduce(data, n, MPI_FLOAT); }

std::vector<char> allgather(const void* data, int64_t bytes, std::vector<int64_t>* counts) {
  World& w = world();
  std::vector<int64_t> n(static_cast<size_t>(w.size), bytes);
  if (w.mpi) MPI_Allgather(&bytes, 1, MPI_INT64_T, n.data(), 1, MPI_INT64_T, MPI_COMM_WORLD);
  std::vector<int> cnt(n.size()), displ(n.size());
  int64_t total = 0;
  for (size_t r = 0; r < n.size(); ++r) {
    cnt[r] = checked_count(n[r], "allgather");
    displ[r] = checked_count(total, "allgather");
    total += n[r];
  }
  std::vector<char> out(static_cast<size_t>(total));
  if (w.mpi)
    MPI_Allgatherv(data, checked_count(bytes, "allgather"), MPI_BYTE, out.data(), cnt.data(), displ.data(), MPI_BYTE,
                   MPI_COMM_WORLD);
  else if (bytes > 0)
    std::memcpy(out.data(), data, static_cast<size_t>(bytes));
  if (counts) *counts = n;
  return out;
}

void broadcast(std::string& s, int root) {
  if (!world().mpi) return;
  int64_t n = static_cast<int64_t>(s.size());
  MPI_Bcast(&n, 1, MPI_INT64_T, root, MPI_COMM_WORLD);
  s.resize(static_cast<size_t>(n));
  MPI_Bcast(s.data(), checked_count(n, "broadcast"), MPI_CHAR, root, MPI_COMM_WORLD);
}

void barrier() {
  if (world().mpi) MPI_Barrier(MPI_COMM_WORLD);
}

void abort_all(int code) {
  std::fflush(nullptr);
  if (world().mpi && world().size > 1) MPI_Abort(MPI_COMM_WORLD, code);
  std::exit(code);
}

}  // namespace sa::dist
