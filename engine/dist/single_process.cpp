// dist/communicator.h for builds without MPI (MPI=0): always one process. Started by a launcher
// as one of several ranks, it stops rather than train the same model N times side by side.
#include <cstdlib>
#include <cstring>

#include "engine/core/error.h"
#include "engine/dist/communicator.h"
#include "engine/dist/launcher_env.h"

namespace sa::dist {

int size() {
  static const int n = launcher_world_size();
  SA_CHECK(n == 1, "started as one of {} MPI ranks, but this binary was built without MPI (install libopenmpi-dev "
           "and rebuild with make MPI=1)", n);
  return 1;
}
int rank() { return size() - 1; }
int local_rank() { return launcher_local_rank(); }
bool available() { return false; }

void allreduce_sum(double*, int64_t) { size(); }
void allreduce_sum(float*, int64_t) { size(); }

std::vector<char> allgather(const void* data, int64_t bytes, std::vector<int64_t>* counts) {
  size();
  std::vector<char> out(static_cast<size_t>(bytes));
  if (bytes > 0) std::memcpy(out.data(), data, static_cast<size_t>(bytes));
  if (counts) *counts = {bytes};
  return out;
}

void broadcast(std::string&, int) { size(); }
void barrier() { size(); }
void abort_all(int code) { std::exit(code); }

}  // namespace sa::dist
