// LaunchRank: ranks from torchrun, Open MPI, PMIx, PMI (MPICH / Intel MPI) and
// Slurm environments (issue #41 item 4).
#include "tracesmith/model/launch_rank.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <string_view>

namespace tracesmith::model {
namespace {

LaunchRank From(const std::map<std::string, std::string>& env) {
  return LaunchRankFromEnv([&](const char* key) -> const char* {
    auto it = env.find(key);
    return it == env.end() ? nullptr : it->second.c_str();
  });
}

TEST(LaunchRank, NoLauncher) {
  LaunchRank r = From({{"HOME", "/root"}});
  EXPECT_EQ(r.rank, -1);
  EXPECT_EQ(r.local_rank, -1);
  EXPECT_EQ(r.world_size, -1);
  EXPECT_EQ(r.rank_from, "");
}

void ExpectRank(const LaunchRank& r, int rank, int local_rank, int world_size,
                const std::string& from) {
  EXPECT_EQ(r.rank, rank) << from;
  EXPECT_EQ(r.local_rank, local_rank) << from;
  EXPECT_EQ(r.world_size, world_size) << from;
  EXPECT_EQ(r.rank_from, from);
}

TEST(LaunchRank, EachLauncher) {
  ExpectRank(From({{"RANK", "3"}, {"LOCAL_RANK", "1"}, {"WORLD_SIZE", "4"}}), 3, 1, 4, "RANK");
  ExpectRank(From({{"OMPI_COMM_WORLD_RANK", "5"},
                   {"OMPI_COMM_WORLD_LOCAL_RANK", "1"},
                   {"OMPI_COMM_WORLD_SIZE", "8"}}),
             5, 1, 8, "OMPI_COMM_WORLD_RANK");
  ExpectRank(From({{"PMI_RANK", "2"}, {"MPI_LOCALRANKID", "0"}, {"PMI_SIZE", "3"}}), 2, 0, 3,
             "PMI_RANK");
  ExpectRank(From({{"SLURM_PROCID", "7"}, {"SLURM_LOCALID", "3"}, {"SLURM_NTASKS", "16"}}), 7, 3,
             16, "SLURM_PROCID");
  // PMIx names the rank only: Slurm's variables give the rest.
  ExpectRank(From({{"PMIX_RANK", "4"}, {"SLURM_LOCALID", "0"}, {"SLURM_NTASKS", "8"}}), 4, 0, 8,
             "PMIX_RANK");
}

// torchrun under srun: RANK is the worker's, SLURM_PROCID the node task's.
TEST(LaunchRank, TorchrunInsideSlurmWins) {
  LaunchRank r = From({{"SLURM_PROCID", "1"},
                       {"SLURM_NTASKS", "2"},
                       {"RANK", "9"},
                       {"LOCAL_RANK", "1"},
                       {"WORLD_SIZE", "16"}});
  EXPECT_EQ(r.rank, 9);
  EXPECT_EQ(r.world_size, 16);
  EXPECT_EQ(r.rank_from, "RANK");
}

// torchrun's RANK without WORLD_SIZE under srun: Slurm's task count is not
// the job's world size.
TEST(LaunchRank, OnlyPmixBorrowsAnotherLaunchersVariables) {
  ExpectRank(From({{"RANK", "3"}, {"SLURM_NTASKS", "2"}, {"SLURM_LOCALID", "0"}}), 3, -1, -1,
             "RANK");
}

// torchrun's agent under srun or mpirun: the launcher's variables name its
// node task, not a rank (its workers have RANK); review of 2026-11-29.
TEST(LaunchRank, TorchrunsAgentTakesNoRankFromTheLauncher) {
  static constexpr char kNulArgs[] = "python3\0-m\0torch.distributed.run\0t.py";
  auto get = [](const char* key) -> const char* {
    return std::string_view(key) == "SLURM_PROCID" ? "0" : nullptr;
  };
  EXPECT_EQ(ProcessLaunchRank(get, "/usr/bin/python3 /usr/local/bin/torchrun --nproc 2 t.py").rank,
            -1);
  EXPECT_EQ(ProcessLaunchRank(get, std::string_view(kNulArgs, sizeof(kNulArgs) - 1)).rank, -1);
  EXPECT_EQ(ProcessLaunchRank(get, "python3 train.py").rank, 0);  // a worker srun started
  EXPECT_EQ(ProcessLaunchRank(get, "python3 torchrun_notes.py").rank, 0);
  auto worker = [](const char* key) -> const char* {
    return std::string_view(key) == "RANK" ? "1" : nullptr;
  };
  EXPECT_EQ(ProcessLaunchRank(worker, "torchrun t.py").rank, 1);  // RANK is RANK
}

TEST(LaunchRank, BadValuesAreUnknown) {
  EXPECT_EQ(From({{"RANK", ""}}).rank, -1);
  EXPECT_EQ(From({{"RANK", "-1"}}).rank, -1);
  EXPECT_EQ(From({{"RANK", "2x"}}).rank, -1);
  EXPECT_EQ(From({{"RANK", "99999999999999999999"}}).rank, -1);
  // A bad RANK falls through to the next launcher.
  EXPECT_EQ(From({{"RANK", "x"}, {"OMPI_COMM_WORLD_RANK", "1"}}).rank, 1);
  // A rank outside the world: the size is not trusted.
  LaunchRank r = From({{"RANK", "4"}, {"WORLD_SIZE", "4"}});
  EXPECT_EQ(r.rank, 4);
  EXPECT_EQ(r.world_size, -1);
}

}  // namespace
}  // namespace tracesmith::model
