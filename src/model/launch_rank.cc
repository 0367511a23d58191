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
  // A launcher that does not say them (PMIx): another's variables may; a
  // launcher that has its own and left them unset is not filled from others.
  if (r.rank_from == "PMIX_RANK")
    for (const Launcher& l : kLaunchers) {
      if (r.local_rank < 0 && l.local_rank) r.local_rank = Number(get(l.local_rank));
      if (r.world_size < 0 && l.size) r.world_size = Number(get(l.size));
    }
  if (r.world_size >= 0 && r.rank >= r.world_size) r.world_size = -1;  // inconsistent: unknown
  return r;
}

LaunchRank ProcessLaunchRank(const std::function<const char*(const char*)>& get,
                             std::string_view cmdline) {
  LaunchRank r = LaunchRankFromEnv(get);
  if (r.rank < 0 || r.rank_from == "RANK") return r;
  for (std::string_view agent : {"torchrun", "torch.distributed.run", "torch.distributed.launch"})
    for (size_t at = cmdline.find(agent); at != std::string_view::npos;
         at = cmdline.find(agent, at + 1)) {
      // A whole argument, or its last path component (/usr/bin/torchrun).
      const size_t end = at + agent.size();
      const bool starts =
          at == 0 || cmdline[at - 1] == ' ' || cmdline[at - 1] == '\0' || cmdline[at - 1] == '/';
      const bool ends = end == cmdline.size() || cmdline[end] == ' ' || cmdline[end] == '\0';
      if (starts && ends) return LaunchRank{};
    }
  return r;
}

}  // namespace tracesmith::model
