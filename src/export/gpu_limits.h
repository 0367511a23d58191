// Per-SM limits by compute capability (CUDA C Programming Guide, "Technical
// Specifications per Compute Capability"), for the occupancy estimate and
// the per-SM fields of Kineto's deviceProperties, which the trace's Device
// rows do not carry.
#pragma once

#include <algorithm>
#include <cstdint>

#include "tracesmith/model/records.h"

namespace tracesmith::exporter {

struct SmLimits {
  uint32_t max_threads = 2048;
  uint32_t max_blocks = 32;
  uint32_t registers = 65536;
  uint32_t shared_bytes = 228 << 10;
  // Largest opt-in shared memory per block (cudaDevAttrMaxSharedMemoryPerBlockOptin):
  // the per-SM amount less the 1 KiB the system reserves per block.
  uint32_t shared_per_block_optin = 227 << 10;
};

inline SmLimits SmLimitsFor(uint32_t cc_major, uint32_t cc_minor) {
  uint32_t cc = cc_major * 10 + cc_minor;
  if (cc >= 90) return {2048, 32, 65536, 228 << 10, 227 << 10};
  if (cc == 89) return {1536, 24, 65536, 100 << 10, 99 << 10};
  if (cc == 87) return {2048, 16, 65536, 164 << 10, 163 << 10};
  if (cc >= 86) return {1536, 16, 65536, 100 << 10, 99 << 10};
  if (cc >= 80) return {2048, 32, 65536, 164 << 10, 163 << 10};
  if (cc == 75) return {1024, 16, 65536, 64 << 10, 64 << 10};
  if (cc >= 70) return {2048, 32, 65536, 96 << 10, 96 << 10};
  return {2048, 32, 65536, 64 << 10, 48 << 10};
}

struct OccupancyEstimate {
  double blocks_per_sm = 0;
  double warps_per_sm = 0;
  int occupancy_pct = 0;  // Kineto's "est. achieved occupancy %"
};

// Like Kineto: resident blocks per SM limited by threads, registers (per
// warp, 256-register granularity), shared memory and the block limit; the
// estimate is min(blocks per SM, resident blocks) x warps per block over
// the SM's warp capacity.
inline OccupancyEstimate EstimateOccupancy(const model::KernelEvent& k, uint32_t sm_count,
                                           uint32_t cc_major, uint32_t cc_minor) {
  OccupancyEstimate est;
  if (sm_count == 0) return est;
  uint64_t blocks = uint64_t{k.grid_x} * std::max(1u, k.grid_y) * std::max(1u, k.grid_z);
  uint64_t threads = uint64_t{k.block_x} * std::max(1u, k.block_y) * std::max(1u, k.block_z);
  uint64_t warps_per_block = (threads + 31) / 32;
  est.blocks_per_sm = static_cast<double>(blocks) / sm_count;
  est.warps_per_sm = est.blocks_per_sm * static_cast<double>(warps_per_block);
  if (warps_per_block == 0 || cc_major == 0) return est;
  SmLimits lim = SmLimitsFor(cc_major, cc_minor);
  uint64_t resident = std::min<uint64_t>(lim.max_blocks, lim.max_threads / (warps_per_block * 32));
  uint64_t regs_per_warp = ((uint64_t{k.registers_per_thread} * 32 + 255) / 256) * 256;
  if (regs_per_warp > 0)
    resident = std::min(resident, lim.registers / (regs_per_warp * warps_per_block));
  uint64_t shared = uint64_t{k.static_shared_bytes} + k.dynamic_shared_bytes;
  if (shared > 0) resident = std::min<uint64_t>(resident, lim.shared_bytes / shared);
  double active_blocks = std::min(est.blocks_per_sm, static_cast<double>(resident));
  double occ = active_blocks * static_cast<double>(warps_per_block) / (lim.max_threads / 32.0);
  est.occupancy_pct = static_cast<int>(0.5 + std::min(1.0, occ) * 100.0);
  return est;
}

}  // namespace tracesmith::exporter
