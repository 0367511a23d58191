#include "tracesmith/export/rank_directory.h"

#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <map>
#include <set>

#include "tracesmith/base/atomic_file.h"
#include "tracesmith/format/sbt_reader.h"
#include "tracesmith/model/process_rank.h"

namespace tracesmith::exporter {
namespace {

struct Found {
  size_t input = 0;
  uint32_t pid = 0;
  std::optional<int32_t> rank;
  DistributedInfo info;
  uint64_t gpu_work = 0;  // kernel, copy and memset rows
};

bool IsGpuWork(model::TableKind kind) {
  return kind == model::TableKind::kKernel || kind == model::TableKind::kMemcpy ||
         kind == model::TableKind::kMemset;
}

// The processes of one input, what its metadata says about each and how
// many GPU-work rows each has (only those event chunks are decoded).
// `all_work`: the input's GPU-work rows, whoever they belong to (a file with
// no pid in it is one process: the caller makes its entry).
Status Survey(const std::string& path, size_t input, std::vector<Found>* out, uint64_t* all_work) {
  ASSIGN_OR_RETURN(auto reader, format::SbtReader::Open(path));
  std::map<uint32_t, uint64_t> work;  // pid -> GPU-work rows
  Status st = reader->Stream(
      [&](const model::Trace& batch, model::TableKind kind) {
        model::ForEachRecordType([&]<typename T>() {
          if constexpr (model::RecordTraits<T>::kIsEvent) {
            if (model::RecordTraits<T>::kKind != kind || !IsGpuWork(kind)) return;
            if constexpr (requires(T t) { t.pid; })
              for (const T& row : batch.Rows<T>()) ++work[row.pid], ++*all_work;
          }
        });
        return OkStatus();
      },
      [&](const model::Trace& meta) {
        std::map<uint32_t, Found> by_pid;
        for (const model::Process& p : meta.Rows<model::Process>()) {
          Found& f = by_pid[p.pid];
          f.input = input;
          f.pid = p.pid;
          f.rank = model::KnownRank(p);
        }
        if (by_pid.empty())  // no Process row (an old or cut file): its other rows say
          model::ForEachRecordType([&]<typename T>() {
            if constexpr (!model::RecordTraits<T>::kIsEvent && requires(T t) { t.pid; })
              for (const T& row : meta.Rows<T>())
                if (row.pid != 0) by_pid[row.pid] = Found{input, row.pid, {}, {}};
          });
        for (const model::MetadataEntry& m : meta.Rows<model::MetadataEntry>()) {
          auto it = by_pid.find(m.pid);
          if (it == by_pid.end()) continue;
          const std::string_view key = meta.strings.Get(m.key_id),
                                 value = meta.strings.Get(m.value_id);
          if (key == kWorldSizeKey) {
            uint32_t n = 0;
            if (std::from_chars(value.data(), value.data() + value.size(), n).ec == std::errc())
              it->second.info.world_size = n;
          } else if (key == kBackendKey) {
            it->second.info.backend = value;
          }
        }
        for (auto& [pid, f] : by_pid) {
          if (auto w = work.find(pid); w != work.end()) f.gpu_work = w->second;
          out->push_back(std::move(f));
        }
        return OkStatus();
      },
      [](model::TableKind kind) { return IsGpuWork(kind); });
  if (!st.ok()) return Status(st.code(), path + ": " + st.message());
  return OkStatus();
}

Status MakeDirectory(const std::string& dir) {
  struct stat sb;
  if (::stat(dir.c_str(), &sb) == 0) {
    if (S_ISDIR(sb.st_mode)) return OkStatus();
    return InvalidArgument(dir +
                           ": not a directory (the per-rank export writes rank-<N>.json "
                           "files into a directory)");
  }
  if (::mkdir(dir.c_str(), 0755) != 0)
    return IoError(StrFormat("cannot create directory %s: %s", dir.c_str(), std::strerror(errno)));
  return OkStatus();
}

}  // namespace

StatusOr<RankDirectoryResult> ExportKinetoRankDirectory(std::span<const std::string> inputs,
                                                        const std::string& dir_in,
                                                        const ExportOptions& options,
                                                        bool overwrite) {
  if (inputs.empty()) return InvalidArgument("no trace to export");
  std::string dir = dir_in;
  while (dir.size() > 1 && dir.ends_with('/')) dir.pop_back();
  std::vector<Found> found;
  std::vector<size_t> per_input(inputs.size(), 0);
  for (size_t i = 0; i < inputs.size(); ++i) {
    const size_t before = found.size();
    uint64_t work = 0;
    RETURN_IF_ERROR(Survey(inputs[i], i, &found, &work));
    per_input[i] = found.size() - before;
    if (per_input[i] == 0)  // nothing says who it is: the file is one process
      found.push_back(Found{i, 0, {}, {}, work});
  }
  RankDirectoryResult result;
  // A process with no rank and no GPU work beside ones that have GPU work is
  // a launcher (torchrun's agent initialises CUDA to count devices): left
  // out, as analyze's cross-rank report does; HTA would read it as a rank.
  if (found.size() > 1 &&
      std::any_of(found.begin(), found.end(), [](const Found& f) { return f.gpu_work > 0; })) {
    std::erase_if(found, [&](const Found& f) {
      if (f.rank || f.gpu_work > 0) return false;
      result.notes.push_back(StrFormat(
          "%s%s left out: no rank and no GPU work (a launcher?), as analyze leaves it out",
          f.pid ? StrFormat("pid %u of ", f.pid).c_str() : "", inputs[f.input].c_str()));
      return true;
    });
  }
  // Ranks: as recorded, unique; then the lowest free ones, in input order.
  std::map<int32_t, size_t> taken;
  for (size_t k = 0; k < found.size(); ++k) {
    if (!found[k].rank) continue;
    auto [it, inserted] = taken.emplace(*found[k].rank, k);
    if (!inserted) {
      const Found& other = found[it->second];
      return InvalidArgument(StrFormat(
          "rank %d is both pid %u of %s and pid %u of %s: a rank directory holds one trace per "
          "rank (traces of two jobs?); export them apart",
          *found[k].rank, other.pid, inputs[other.input].c_str(), found[k].pid,
          inputs[found[k].input].c_str()));
    }
  }
  const std::string ext = options.gzip ? ".json.gz" : ".json";
  int32_t next = 0;
  for (Found& f : found) {
    RankFile file;
    file.input = inputs[f.input];
    file.pid = f.pid;
    if (f.rank) {
      file.rank = *f.rank;
    } else {
      while (taken.contains(next)) ++next;
      file.rank = next;
      file.rank_assigned = true;
      taken.emplace(next, 0);
      result.notes.push_back(
          StrFormat("%s%s has no rank (no launcher set a rank variable when it was captured): "
                    "written as rank-%d%s",
                    f.pid ? StrFormat("pid %u of ", f.pid).c_str() : "", file.input.c_str(),
                    file.rank, ext.c_str()));
    }
    f.info.rank = file.rank;
    file.path = dir + "/rank-" + std::to_string(file.rank) + ext;
    result.files.push_back(std::move(file));
  }
  // Every name is checked before the first is written.
  RETURN_IF_ERROR(MakeDirectory(dir));
  for (const RankFile& f : result.files)
    RETURN_IF_ERROR(CheckOutputFile(f.path, inputs, overwrite));
  // HTA reads every trace file in the directory: others would pass for ranks.
  std::set<std::string> ours;
  for (const RankFile& f : result.files) ours.insert(f.path.substr(dir.size() + 1));
  if (DIR* d = opendir(dir.c_str())) {
    std::vector<std::string> others;
    while (dirent* e = readdir(d)) {
      const std::string name = e->d_name;
      if ((name.ends_with(".json") || name.ends_with(".gz")) && !ours.contains(name))
        others.push_back(name);
    }
    closedir(d);
    std::sort(others.begin(), others.end());
    for (const std::string& name : others)
      result.notes.push_back(
          StrFormat("%s/%s is not from this export, and HTA reads it as a rank "
                    "too: remove it or export into an empty directory",
                    dir.c_str(), name.c_str()));
  }
  result.damage.resize(inputs.size());
  std::vector<bool> reported(inputs.size(), false);
  for (size_t k = 0; k < result.files.size(); ++k) {
    RankFile& file = result.files[k];
    const Found& f = found[k];
    ExportOptions o = options;
    // A file of one process is exported whole (rows without a pid included).
    o.only_pid = per_input[f.input] > 1 ? std::optional<uint32_t>(f.pid) : std::nullopt;
    o.distributed = f.info;
    format::ReadReport report;
    ASSIGN_OR_RETURN(ExportStats stats,
                     ExportSbtFile(inputs[f.input], ExportFormat::kJson, file.path, o, &report));
    if (!reported[f.input]) result.damage[f.input] = report, reported[f.input] = true;
    file.events = stats.events;
    file.bytes = stats.bytes;
  }
  std::sort(result.files.begin(), result.files.end(),
            [](const RankFile& a, const RankFile& b) { return a.rank < b.rank; });
  return result;
}

}  // namespace tracesmith::exporter
