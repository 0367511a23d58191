#include "tracesmith/model/launch_rank.h"

#include <charconv>
#include <cstring>

namespace tracesmith::model {
namespace {

// A non-negative decimal int, else -1 (unset, empty, signs, trailing text).
int Number(const char* text) {
  if (!text || !*text) return -1;
  int v = -1;
  const char* end = text + std::strlen(text);
  auto [p, ec] = std::from_chars(text, end, v);
  return ec == std::errc() && p == end && v >= 0 ? v : -1;
}

struct Launcher {
  const char* rank;
  const char* local_rank;  // nullptr: the launcher has none
  const char* size;
};

constexpr Launcher kLaunchers[] = {
    {"RANK", "LOCAL_RANK", "WORLD_SIZE"},
    {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_SIZE"},
    {"PMIX_RANK", nullptr, nullptr},
    {"PMI_RANK", "MPI_LOCALRANKID", "PMI_SIZE"},
    {"SLURM_PROCID", "SLURM_LOCALID", "SLURM_NTASKS"},
};

}  // namespace

LaunchRank LaunchRankFromEnv(const std::function<const char*(const char*)>& get) {
  LaunchRank r;
  for (const Launcher& l : kLaunchers) {
    const int rank = Number(get(l.rank));
    if (rank < 0) continue;
    r.rank = rank;
    r.rank_from = l.rank;
    if (l.local_rank) r.local_rank = Number(get(l.local_rank));
    if (l.size) r.world_size = Number(get(l.size));
    break;
  }
  // A launcher that does not say them (PMIx): another's variables may.
  for (const Launcher& l : kLaunchers) {
    if (r.rank < 0) break;
    if (r.local_rank < 0 && l.local_rank) r.local_rank = Number(get(l.local_rank));
    if (r.world_size < 0 && l.size) r.world_size = Number(get(l.size));
  }
  if (r.world_size >= 0 && r.rank >= r.world_size) r.world_size = -1;  // inconsistent: unknown
  return r;
}

}  // namespace tracesmith::model
