// LaunchRank: a process's place in a distributed job, from what its launcher
// put in its environment, and the metadata keys a capture writes it under.
//
// Launchers and their variables (the first launcher whose rank variable is
// set and numeric wins, in this order):
//   torchrun / torch.distributed: RANK, LOCAL_RANK, WORLD_SIZE
//   Open MPI (mpirun):            OMPI_COMM_WORLD_RANK, OMPI_COMM_WORLD_LOCAL_RANK,
//                                 OMPI_COMM_WORLD_SIZE
//   PMIx (Open MPI 5, Slurm):     PMIX_RANK (size and local rank from the others)
//   MPICH / Intel MPI (PMI):      PMI_RANK, MPI_LOCALRANKID, PMI_SIZE
//   Slurm (srun):                 SLURM_PROCID, SLURM_LOCALID, SLURM_NTASKS
// torchrun first: under srun or mpirun it sets RANK per worker while the
// launcher's variables name the node's task.
#pragma once

#include <functional>
#include <string>

namespace tracesmith::model {

struct LaunchRank {
  int rank = -1;          // -1: not in a job (or no launcher we know)
  int local_rank = -1;    // on its node; -1: unknown
  int world_size = -1;    // processes in the job; -1: unknown
  std::string rank_from;  // the variable the rank came from, e.g. "OMPI_COMM_WORLD_RANK"
};

// `get` reads one environment variable (nullptr when unset), e.g. ::getenv.
LaunchRank LaunchRankFromEnv(const std::function<const char*(const char*)>& get);

// Metadata keys (MetadataEntry, per process) a capture writes when known.
inline constexpr char kWorldSizeKey[] = "distributed.world_size";
inline constexpr char kLocalRankKey[] = "distributed.local_rank";
inline constexpr char kRankFromKey[] = "distributed.rank_from";
inline constexpr char kBackendKey[] = "distributed.backend";

}  // namespace tracesmith::model
