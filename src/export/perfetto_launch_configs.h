// Kernel launch configurations for the Perfetto exporter (perfetto_exporter.cc):
// kernels repeat a handful, so each slice carries the id of its
// configuration and the text ("grid [..] block [..] registers R shared S+D B")
// is interned once per sequence.
#pragma once

#include <array>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace tracesmith::exporter {

// A kernel's grid, block, cluster, registers and shared memory.
struct LaunchConfig {
  uint32_t v[12];
  bool operator==(const LaunchConfig& o) const { return std::memcmp(v, o.v, sizeof v) == 0; }
};
struct LaunchConfigHash {
  size_t operator()(const LaunchConfig& c) const {
    uint64_t w[6];
    std::memcpy(w, c.v, sizeof w);
    uint64_t h = 0;
    for (uint64_t x : w) h = (h ^ x) * 0x9e3779b97f4a7c15ull;
    return h ^ (h >> 29);
  }
};

// Launch configurations numbered from 1 in order of first use.
class LaunchConfigIds {
 public:
  // A kernel name nearly always launches with one configuration: the last
  // one seen per name (flat array by string id) is checked before hashing.
  uint32_t IdFor(uint32_t name, const LaunchConfig& c) {
    if (name < kMaxNameSlots) {
      if (name >= config_by_name_.size()) config_by_name_.resize(name + 1);
      uint32_t& id = config_by_name_[name];
      if (id == 0 || !(configs_list_[id - 1] == c)) id = ConfigId(c);
      return id;
    }
    return ConfigId(c);
  }

 private:
  uint32_t ConfigId(const LaunchConfig& c) {
    size_t h = LaunchConfigHash{}(c);
    auto& slot = config_cache_[h & 63];
    if (slot.second != 0 && configs_list_[slot.second - 1] == c) return slot.second;
    auto [it, inserted] = configs_.try_emplace(c, static_cast<uint32_t>(configs_list_.size() + 1));
    if (inserted) configs_list_.push_back(c);
    slot = {h, it->second};
    return it->second;
  }

  std::unordered_map<LaunchConfig, uint32_t, LaunchConfigHash> configs_;
  std::vector<LaunchConfig> configs_list_;
  std::array<std::pair<size_t, uint32_t>, 64> config_cache_{};
  static constexpr uint32_t kMaxNameSlots = 1u << 22;  // string ids beyond: hash only
  std::vector<uint32_t> config_by_name_;
};

// The annotation's text.
inline std::string LaunchText(const LaunchConfig& c) {
  char buf[200];
  int n = std::snprintf(buf, sizeof buf,
                        "grid [%u, %u, %u] block [%u, %u, %u] registers %u shared %u+%u B", c.v[0],
                        c.v[1], c.v[2], c.v[3], c.v[4], c.v[5], c.v[9], c.v[10], c.v[11]);
  std::string s(buf, static_cast<size_t>(n));
  if (c.v[6] > 1 || c.v[7] > 1 || c.v[8] > 1)
    s += " cluster [" + std::to_string(c.v[6]) + ", " + std::to_string(c.v[7]) + ", " +
         std::to_string(c.v[8]) + "]";
  return s;
}

}  // namespace tracesmith::exporter
