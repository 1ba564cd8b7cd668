// What an MPI launcher (OpenMPI's mpirun, or a PMI/PMIx-based one such as srun) tells its
// processes through the environment, read without MPI: whether this process was launched as one
// of several ranks.
#pragma once
#include <algorithm>
#include <cstdlib>
#include <string>

namespace sa::dist {

// The world size the launcher announced; 1 when started directly.
inline int launcher_world_size() {
  for (const char* var : {"OMPI_COMM_WORLD_SIZE", "PMIX_SIZE", "PMI_SIZE"})
    if (const char* v = std::getenv(var)) return std::max(1, std::atoi(v));
  return 1;
}

inline int launcher_local_rank() {
  for (const char* var : {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID"})
    if (const char* v = std::getenv(var)) return std::atoi(v);
  return 0;
}

}  // namespace sa::dist
