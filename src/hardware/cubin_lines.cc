#include "cubin_lines.h"

#include <sys/stat.h>

#include <cerrno>

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "tracesmith/format/job_file_names.h"

namespace tracesmith::hardware {

void CubinLines::Keep(const CUpti_ModuleResourceData& m) {
  if (!m.pCubin || !m.cubinSize) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (bytes_ + m.cubinSize > kCubinBudget) {
    ++not_kept_;
    return;
  }
  bytes_ += m.cubinSize;
  const char* p = static_cast<const char*>(m.pCubin);
  new_.emplace_back(p, p + m.cubinSize);
}

void CubinLines::TakeKept() {
  std::vector<std::vector<char>> kept;
  {
    std::lock_guard<std::mutex> lock(mu_);
    kept.swap(new_);
  }
  uint64_t unused = 0;
  for (std::vector<char>& bytes : kept) {
    CUpti_GetCubinCrcParams cp = {};
    cp.size = CUpti_GetCubinCrcParamsSize;
    cp.cubin = bytes.data();
    cp.cubinSize = bytes.size();
    if (cuptiGetCubinCrc(&cp) == CUPTI_SUCCESS && !cubins_.count(cp.cubinCrc))
      cubins_.emplace(cp.cubinCrc, std::move(bytes));
    else
      unused += bytes.size();
  }
  std::lock_guard<std::mutex> lock(mu_);
  bytes_ -= unused;
}

const std::vector<char>* CubinLines::Find(uint64_t crc) const {
  if (auto it = cubins_.find(crc); it != cubins_.end()) return &it->second;
  if (auto it = aliases_.find(crc); it != aliases_.end()) return Find(it->second);
  if (crc >> 32) return nullptr;
  for (const auto& [full, bytes] : cubins_)
    if ((full & 0xffffffffu) == crc) return &bytes;
  return nullptr;
}

bool CubinLines::Lookup(uint64_t crc, const char* function, uint32_t pc, std::string* path,
                        uint32_t* line) {
  if (!function) return false;
  CUpti_GetSassToSourceCorrelationParams p = {};
  p.size = CUpti_GetSassToSourceCorrelationParamsSize;
  p.functionName = function;
  p.pcOffset = pc;
  auto correlate = [&](const std::vector<char>& cubin) {
    p.cubin = cubin.data();
    p.cubinSize = cubin.size();
    return cuptiGetSassToSourceCorrelation(&p) == CUPTI_SUCCESS;
  };
  const std::vector<char>* cubin = Find(crc);
  if (cubin && !correlate(*cubin)) return false;
  if (!cubin) {
    // A CRC no kept cubin has (another CRC than cuptiGetCubinCrc's): the cubin that knows
    // the function, remembered under it (and saved under it at the end).
    auto found = std::find_if(cubins_.begin(), cubins_.end(),
                              [&](const auto& kept) { return correlate(kept.second); });
    if (found == cubins_.end()) return false;
    aliases_[crc] = found->first;
  }
  *path = p.fileName ? p.fileName : "";
  if (p.dirName && *p.dirName && !path->empty() && (*path)[0] != '/')
    *path = std::string(p.dirName) + "/" + *path;
  *line = p.lineNumber;
  std::free(p.fileName);
  std::free(p.dirName);
  return !path->empty();
}

void CubinLines::WriteLine(format::SbtWriter& sbt, uint64_t crc, uint32_t function_id,
                           const char* function, uint32_t pc) {
  if (!lines_done_[crc].insert(uint64_t(function_id) << 32 | pc).second) return;
  model::PcLine line;
  line.pid = pid_;
  line.cubin_crc = crc;
  line.function_id = function_id;
  line.pc_offset = pc;
  std::string path;
  if (Lookup(crc, function, pc, &path, &line.line)) line.file_id = sbt.InternString(path);
  if (!line.file_id) ++lines_unresolved_;
  sbt.Append(line);
}

void CubinLines::SaveReported(const std::string& output_path) {
  if (output_path.empty() || lines_done_.empty()) return;
  const std::string dir = format::CubinDirOf(output_path);
  if (mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
    not_saved_ += lines_done_.size();
    return;
  }
  for (const auto& [crc, pcs] : lines_done_) {
    const std::vector<char>* cubin = Find(crc);
    if (!cubin) continue;
    // Under the CRC the rows carry, which the CLI looks the file up by.
    const std::string path = dir + "/" + format::CubinFileName(crc);
    std::FILE* f = std::fopen(path.c_str(), "wb");
    const bool written = f && std::fwrite(cubin->data(), 1, cubin->size(), f) == cubin->size();
    const bool closed = f && std::fclose(f) == 0;
    if (written && closed)
      ++saved_;
    else
      ++not_saved_;
  }
}

void CubinLines::WriteStats(capture::StatSink& stats, const std::string& prefix) {
  uint64_t not_kept = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    not_kept = not_kept_;
  }
  stats.Add((prefix + ".lines_unresolved").c_str(), lines_unresolved_);
  stats.Add((prefix + ".cubins_not_kept").c_str(), not_kept, model::kStatWarning);
  stats.Add((prefix + ".cubins_saved").c_str(), saved_);
  stats.Add((prefix + ".cubins_not_saved").c_str(), not_saved_, model::kStatWarning);
}

}  // namespace tracesmith::hardware
