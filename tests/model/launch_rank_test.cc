// LaunchRank: ranks from torchrun, Open MPI, PMIx, PMI (MPICH / Intel MPI) and
// Slurm environments (issue #41 item 4).
#include "tracesmith/model/launch_rank.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

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
