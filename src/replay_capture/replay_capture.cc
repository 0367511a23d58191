#include "replay_capture.h"

#include "reach_scan.h"
#include "tracesmith/capture/recorder.h"

#include <cuda.h>
#include <cupti.h>

#include <algorithm>
#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "tracesmith/capture/device_query.h"

namespace tracesmith::replay_capture {

// Launch configuration of cuLaunchKernel(_ptsz) and cuLaunchKernelEx(_ptsz).
struct LaunchArgs {
  CUfunction f = nullptr;
  uint32_t grid[3] = {1, 1, 1}, block[3] = {1, 1, 1}, cluster[3] = {0, 0, 0};
  uint32_t shared = 0;
  CUstream stream = nullptr;
  void** params = nullptr;
  void** extra = nullptr;
  const CUlaunchConfig* config = nullptr;  // cuLaunchKernelEx: its attributes
  bool cooperative = false;                // cuLaunchCooperativeKernel
};

// (graph_capture.h)
bool Capturing(CUstream stream) {
  CUstreamCaptureStatus capturing = CU_STREAM_CAPTURE_STATUS_NONE;
  return cuStreamIsCapturing(stream, &capturing) != CUDA_SUCCESS ||
         capturing != CU_STREAM_CAPTURE_STATUS_NONE;
}

namespace {

using BusyScope = ReplayBusyScope;

format::ImageKind KindOf(const uint8_t* p, size_t n) {
  if (n >= 4 && std::memcmp(p,
                            "\x7f"
                            "ELF",
                            4) == 0)
    return format::ImageKind::kCubin;
  if (n >= 4 && p[0] == 0x50 && p[1] == 0xed && p[2] == 0x55 && p[3] == 0xba)
    return format::ImageKind::kFatbin;
  return format::ImageKind::kUnknown;
}

// cuLaunchKernel and cuLaunchCooperativeKernel parameters (same field names;
// only the former has `extra`).
template <typename P>
LaunchArgs PlainLaunch(const P* x) {
  LaunchArgs a;
  a.f = x->f;
  a.grid[0] = x->gridDimX, a.grid[1] = x->gridDimY, a.grid[2] = x->gridDimZ;
  a.block[0] = x->blockDimX, a.block[1] = x->blockDimY, a.block[2] = x->blockDimZ;
  a.shared = x->sharedMemBytes;
  a.stream = x->hStream;
  a.params = x->kernelParams;
  if constexpr (requires { x->extra; }) a.extra = x->extra;
  return a;
}

LaunchArgs ArgsOf(CUpti_CallbackId cbid, const void* p) {
  LaunchArgs a;
  if (cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx ||
      cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz) {
    const auto* x = static_cast<const cuLaunchKernelEx_params*>(p);
    a.f = x->f;
    a.params = x->kernelParams;
    a.extra = x->extra;
    a.config = x->config;
    if (const CUlaunchConfig* c = x->config) {
      a.grid[0] = c->gridDimX, a.grid[1] = c->gridDimY, a.grid[2] = c->gridDimZ;
      a.block[0] = c->blockDimX, a.block[1] = c->blockDimY, a.block[2] = c->blockDimZ;
      a.shared = c->sharedMemBytes;
      a.stream = c->hStream;
      for (unsigned i = 0; i < c->numAttrs && c->attrs; ++i)
        if (c->attrs[i].id == CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION) {
          a.cluster[0] = c->attrs[i].value.clusterDim.x;
          a.cluster[1] = c->attrs[i].value.clusterDim.y;
          a.cluster[2] = c->attrs[i].value.clusterDim.z;
        }
    }
    return a;
  }
  if (cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel ||
      cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz) {
    a = PlainLaunch(static_cast<const cuLaunchCooperativeKernel_params*>(p));
    a.cooperative = true;
    return a;
  }
  return PlainLaunch(static_cast<const cuLaunchKernel_params*>(p));  // _ptsz: same layout
}

// Launch attributes to record: all but the cluster dimension (a field of
// its own) and those holding handles of this process (events) or meant for
// graphs only.
std::vector<format::LaunchAttribute> AttributesOf(const LaunchArgs& a) {
  std::vector<format::LaunchAttribute> out;
  if (a.cooperative) out.push_back({CU_LAUNCH_ATTRIBUTE_COOPERATIVE, {1, 0, 0, 0}});
  const CUlaunchConfig* c = a.config;
  for (unsigned i = 0; c && c->attrs && i < c->numAttrs; ++i) {
    const CUlaunchAttribute& x = c->attrs[i];
    if (x.id == CU_LAUNCH_ATTRIBUTE_IGNORE || x.id == CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION ||
        x.id == CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_EVENT ||
        x.id == CU_LAUNCH_ATTRIBUTE_LAUNCH_COMPLETION_EVENT ||
        x.id == CU_LAUNCH_ATTRIBUTE_DEVICE_UPDATABLE_KERNEL_NODE ||
        out.size() >= format::kMaxLaunchAttributes)
      continue;
    const auto* v = reinterpret_cast<const uint8_t*>(&x.value);
    static_assert(sizeof(x.value) <= format::kMaxLaunchAttributeBytes);
    out.push_back({uint32_t(x.id), std::vector<uint8_t>(v, v + sizeof(x.value))});
  }
  return out;
}

// The parameter buffer and its layout. False when unreadable.
bool ParamsOf(const LaunchArgs& a, format::LaunchRecord* l) {
  return ReadKernelParams(a.f, a.params, a.extra, l);
}

}  // namespace

// The CUDA runtime launches through cuLibrary handles: the "function" of
// cuLaunchKernel is then a CUkernel, which the cuFunc* queries refuse. Its
// CUfunction in the current context answers them.
CUfunction ResolveFunction(CUfunction f) {
  const char* name = nullptr;
  if (cuFuncGetName(&name, f) == CUDA_SUCCESS && name) return f;
  CUfunction g = nullptr;
  if (cuKernelGetFunction(&g, reinterpret_cast<CUkernel>(f)) == CUDA_SUCCESS && g) return g;
  return f;
}

bool ReadKernelParams(CUfunction f, void** params, void** extra, format::LaunchRecord* l) {
  for (size_t k = 0; k < format::kMaxParams; ++k) {
    size_t off = 0, size = 0;
    if (cuFuncGetParamInfo(f, k, &off, &size) != CUDA_SUCCESS) break;
    l->param_info.push_back({uint32_t(off), uint32_t(size)});
  }
  size_t total = 0;
  for (const format::ParamInfo& p : l->param_info)
    total = std::max<size_t>(total, p.offset + p.size);
  if (params) {
    if (total > format::kMaxParamBytes) return false;
    l->params.assign(total, 0);
    for (size_t k = 0; k < l->param_info.size(); ++k) {
      if (!params[k]) return false;
      std::memcpy(l->params.data() + l->param_info[k].offset, params[k], l->param_info[k].size);
    }
    return true;
  }
  // extra = {CU_LAUNCH_PARAM_BUFFER_POINTER, buf, CU_LAUNCH_PARAM_BUFFER_SIZE, &size, END}
  const void* buf = nullptr;
  size_t buf_size = 0;
  for (void** e = extra; e && *e != CU_LAUNCH_PARAM_END; e += 2) {
    if (*e == CU_LAUNCH_PARAM_BUFFER_POINTER) buf = e[1];
    if (*e == CU_LAUNCH_PARAM_BUFFER_SIZE) buf_size = *static_cast<size_t*>(e[1]);
  }
  if (!buf || buf_size > format::kMaxParamBytes) return false;
  l->params.assign(static_cast<const uint8_t*>(buf), static_cast<const uint8_t*>(buf) + buf_size);
  for (const format::ParamInfo& p : l->param_info)
    if (p.offset + p.size > buf_size) l->param_info.clear();  // layout does not fit: pass whole
  return true;
}

ReplayCapturer::ReplayCapturer(capture::ReplayFilter filter, const capture::CaptureOptions& options)
    : filter_(std::move(filter)),
      max_bytes_(uint64_t{options.replay_max_mb} << 20),
      max_launches_(options.replay_max_launches),
      quiet_(options.quiet),
      scope_(options.replay_memory),
      reach_depth_(options.replay_reach_depth) {
  if (filter_.kind == capture::ReplayFilter::Kind::kKernel)
    if (auto p = Pattern::Compile(filter_.regex, /*optimize=*/false); p.ok()) regex_ = *p;
  if (auto r = capture::ParseDeviceRanges(options.replay_ranges); r.ok()) extra_ranges_ = *r;
}

bool ReplayCapturer::IsLaunchCallback(CUpti_CallbackId cbid) {
  return capture::IsKernelLaunchCallback(cbid);
}

void ReplayCapturer::Note(const char* fmt, ...) {
  if (quiet_) return;
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(buf, sizeof(buf), fmt, ap);
  va_end(ap);
  std::fprintf(stderr, "tracesmith: replay capture: %s\n", buf);
}

bool ReplayCapturer::NameMatches(const char* name) const {
  return regex_.Search(name) || regex_.Search(capture::Demangle(name));
}

bool ReplayCapturer::Selected(uint64_t index, CUfunction f) {
  if (filter_.kind != capture::ReplayFilter::Kind::kKernel) return filter_.SelectsIndex(index);
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = regex_cache_.find(f);
    if (it != regex_cache_.end()) return it->second;
  }
  // Not under mu_: resolving a CUkernel may load its module, and the
  // module-loaded callback (OnModuleLoaded) takes mu_.
  const char* name = nullptr;
  const bool match =
      cuFuncGetName(&name, ResolveFunction(f)) == CUDA_SUCCESS && name && NameMatches(name);
  std::lock_guard<std::mutex> lock(mu_);
  regex_cache_.emplace(f, match);
  return match;
}

void ReplayCapturer::OnLaunch(CUpti_CallbackId cbid, const CUpti_CallbackData* info, bool active) {
  if (t_replay_busy || !info) return;
  if (info->callbackSite == CUPTI_API_EXIT) {
    OnExit(info);
    return;
  }
  if (!active) return;
  uint64_t index = launch_counter_.fetch_add(1, std::memory_order_relaxed);
  LaunchArgs a = ArgsOf(cbid, info->functionParams);
  if (!a.f) return;
  BusyScope busy;  // from here on our CUDA calls are not launches to record
  if (!Selected(index, a.f)) return;
  OnEnter(cbid, info, index, a);
}

void ReplayCapturer::OnEnter(CUpti_CallbackId cbid, const CUpti_CallbackData* info, uint64_t index,
                             LaunchArgs a) {
  // First: on a capturing stream (cudaStreamBeginCapture, mode global) a
  // call the driver deems unsafe, such as cuStreamGetFlags, would invalidate
  // the program's capture (seen on the H200: its next cudaEventRecord failed).
  if (StreamCapturing(a.stream, index)) return;
  a.f = ResolveFunction(a.f);
  Pending p;
  p.function = a.f;
  format::LaunchRecord& l = p.launch;
  l.index = index;
  l.correlation_id = info->correlationId;
  const char* name = nullptr;
  if (cuFuncGetName(&name, a.f) == CUDA_SUCCESS && name) l.function = name;
  std::copy(a.grid, a.grid + 3, l.grid);
  std::copy(a.block, a.block + 3, l.block);
  std::copy(a.cluster, a.cluster + 3, l.cluster);
  l.dynamic_shared_bytes = a.shared;
  l.attributes = AttributesOf(a);
  {
    std::lock_guard<std::mutex> lock(mu_);
    l.stream_id = StreamIdLocked(a.stream,
                                 cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz ||
                                     cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz,
                                 index);
  }
  if (l.function.empty() || !ParamsOf(a, &l)) {
    std::lock_guard<std::mutex> lock(mu_);
    if (stats_.skipped_error++ < 5)
      Note("launch %llu not recorded: %s", static_cast<unsigned long long>(index),
           l.function.empty() ? "cuFuncGetName failed" : "its parameters could not be read");
    return;
  }
  AddParamRanges(l.params, &p.ranges);
  const std::string what = capture::Demangle(l.function.c_str());
  RecordBefore(info, index, what, std::move(p));
}

bool ReplayCapturer::StreamCapturing(CUstream stream, uint64_t index) {
  if (!Capturing(stream)) return false;
  std::lock_guard<std::mutex> lock(mu_);
  if (stats_.skipped_graph++ == 0)
    Note(
        "launch %llu not recorded: it was captured into a CUDA graph, not run (its stream was "
        "capturing); the graph's launches are recorded instead, later such launches are "
        "counted in the trace's stats",
        static_cast<unsigned long long>(index));
  return true;
}

void ReplayCapturer::AddRange(Range r, std::vector<Range>* ranges) {
  CUdeviceptr base = 0;
  size_t size = 0;
  if (cuMemGetAddressRange(&base, &size, CUdeviceptr(r.address)) == CUDA_SUCCESS && size) {
    r.address = uint64_t(base);
    r.size = uint64_t(size);
  }
  for (const Range& have : *ranges)
    if (have.address == r.address) return;
  ranges->push_back(r);
}

void ReplayCapturer::AddParamRanges(std::span<const uint8_t> params, std::vector<Range>* ranges) {
  // Reachable memory: allocations that aligned parameter words point into.
  for (size_t off = 0; off + 8 <= params.size(); off += 8) {
    uint64_t v;
    std::memcpy(&v, params.data() + off, 8);
    if (v < 4096) continue;
    CUdeviceptr base = 0;
    size_t size = 0;
    if (cuMemGetAddressRange(&base, &size, CUdeviceptr(v)) != CUDA_SUCCESS || size == 0) continue;
    bool known = false;
    for (const Range& r : *ranges) known |= r.address == uint64_t(base);
    if (!known) ranges->push_back({uint64_t(base), uint64_t(size)});
  }
}

bool ReplayCapturer::RecordBefore(const CUpti_CallbackData* info, uint64_t index,
                                  const std::string& what, Pending p) {
  // --replay-ranges: the allocation holding each start, else the range as given.
  for (const capture::DeviceRange& x : extra_ranges_) {
    Range r{x.address, x.size};
    r.origin.source = format::RangeSource::kRequested;
    AddRange(r, &p.ranges);
  }
  if (scope_ == format::MemoryScope::kAll) {
    std::lock_guard<std::mutex> lock(mu_);
    format::SnapshotOrigin live;
    live.source = format::RangeSource::kLive;
    for (const auto& [base, size] : live_) {
      bool known = false;
      for (const Range& have : p.ranges) known |= have.address == base;
      if (!known) p.ranges.push_back({base, size, live});
    }
  }
  uint64_t bytes = 0, reach_budget = 0;
  for (const Range& r : p.ranges) bytes += 2 * r.size;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stats_.launches_captured + stats_.graph_launches_captured + pending_.size() >=
            max_launches_ ||
        reserved_bytes_ + bytes > max_bytes_) {
      ++stats_.skipped_limit;
      ops_on_.store(false, std::memory_order_relaxed);
      if (!limit_noted_) {
        limit_noted_ = true;
        Note(
            "limit reached at launch %llu (%s): %llu launches recorded, %.1f MiB of memory "
            "images; raise --replay-max-launches / --replay-max-mb to record more",
            static_cast<unsigned long long>(index), what.c_str(),
            static_cast<unsigned long long>(stats_.launches_captured +
                                            stats_.graph_launches_captured),
            double(reserved_bytes_) / (1 << 20));
      }
      return false;
    }
    reserved_bytes_ += bytes;
    // Reached allocations need a before and an after image each.
    reach_budget = (max_bytes_ - reserved_bytes_) / 2;
    ops_on_.store(true, std::memory_order_relaxed);
  }
  std::vector<Range> ranges = p.ranges;
  {
    // Pending before its images are queued: Drain keeps images of pending
    // launches and drops those of launches that are neither pending nor done.
    std::lock_guard<std::mutex> lock(mu_);
    pending_[info->correlationId] = std::move(p);
  }
  MeasureReferenceCopy();
  std::vector<Snapshot> taken;
  format::MemoryCoverage coverage;
  coverage.scope = scope_;
  const size_t roots = ranges.size();
  bool ok = cuCtxSynchronize() == CUDA_SUCCESS &&
            CopyRanges(ranges, index, format::SnapshotPhase::kBefore, &taken);
  if (ok && scope_ == format::MemoryScope::kReachable)
    ok = AddReachable(index, reach_budget, &ranges, &taken, &coverage);
  uint64_t reached = 0;
  for (size_t k = roots; k < ranges.size(); ++k) reached += ranges[k].size;
  std::lock_guard<std::mutex> lock(mu_);
  if (!ok) {
    pending_.erase(info->correlationId);
    if (stats_.skipped_error++ < 5)
      Note("launch %llu not recorded: synchronizing or copying its memory failed",
           static_cast<unsigned long long>(index));
    reserved_bytes_ -= bytes;
    return false;
  }
  reserved_bytes_ += 2 * reached;
  stats_.reached_ranges += ranges.size() - roots;
  stats_.reached_bytes += reached;
  if (!coverage.complete()) ++stats_.reach_incomplete;
  Pending& mine = pending_[info->correlationId];
  mine.ranges = ranges;
  mine.launch.snapshot_ranges = uint32_t(ranges.size());
  mine.launch.coverage = coverage;
  mine.graph.snapshot_ranges = uint32_t(ranges.size());
  mine.graph.coverage = coverage;
  for (Snapshot& sn : taken) snapshots_out_.push_back(std::move(sn));
  return true;
}

bool ReplayCapturer::AddReachable(uint64_t index, uint64_t budget, std::vector<Range>* ranges,
                                  std::vector<Snapshot>* taken, format::MemoryCoverage* coverage) {
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<MemRange> known;
  {
    std::lock_guard<std::mutex> lock(mu_);
    known.reserve(live_.size());
    for (const auto& [base, size] : live_) known.push_back({base, size});
  }
  ReachLimits limits;
  limits.max_depth = reach_depth_;
  limits.max_bytes = budget;
  // Allocations made before the capture started (or by a path the table
  // does not see) are found by asking the driver.
  auto probe = [](uint64_t address) -> std::optional<MemRange> {
    CUdeviceptr base = 0;
    size_t size = 0;
    if (cuMemGetAddressRange(&base, &size, CUdeviceptr(address)) != CUDA_SUCCESS || size == 0)
      return std::nullopt;
    return MemRange{uint64_t(base), uint64_t(size)};
  };
  ReachScanner scanner(std::move(known), probe, limits);
  for (const Range& r : *ranges) scanner.AddRoot({r.address, r.size});
  std::vector<uint32_t> depth(ranges->size(), 0);
  bool ok = true;
  // Breadth first: `taken` grows while it is scanned.
  for (size_t k = 0; ok && k < taken->size(); ++k) {
    const Snapshot& at = (*taken)[k];
    std::span<const uint8_t> image(at.bytes.data(), at.bytes.size());
    std::vector<ReachedAllocation> found =
        scanner.Scan({at.address, uint64_t(at.bytes.size())}, image, depth[k]);
    std::vector<Range> add;
    for (const ReachedAllocation& h : found) {
      Range r{h.range.address, h.range.size, {}};
      r.origin.source = format::RangeSource::kPointer;
      r.origin.via = h.via;
      r.origin.first_offset = h.first_offset;
      r.origin.last_offset = h.last_offset;
      r.origin.pointers = h.pointers;
      r.origin.depth = h.depth;
      add.push_back(r);
      depth.push_back(h.depth);
    }
    ok = CopyRanges(add, index, format::SnapshotPhase::kBefore, taken);
    ranges->insert(ranges->end(), add.begin(), add.end());
  }
  const ReachSummary& sum = scanner.summary();
  coverage->ranges_over_budget = sum.ranges_over_budget;
  coverage->bytes_over_budget = sum.bytes_over_budget;
  coverage->ranges_past_depth = sum.ranges_past_depth;
  coverage->words_unresolved = sum.words_unresolved;
  const uint64_t ns = uint64_t(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0)
          .count());
  std::lock_guard<std::mutex> lock(mu_);
  stats_.reach_scan_ns += ns;
  if (!coverage->complete() && stats_.reach_incomplete < 5)
    Note(
        "launch %llu: memory reached through pointers not all recorded: %u allocation(s) "
        "(%.1f MiB) over the --replay-max-mb budget, %u past --replay-reach-depth %u, %llu "
        "address-like word(s) not looked up; its replay may differ",
        static_cast<unsigned long long>(index), coverage->ranges_over_budget,
        double(coverage->bytes_over_budget) / (1 << 20), coverage->ranges_past_depth, reach_depth_,
        static_cast<unsigned long long>(coverage->words_unresolved));
  return ok;
}

void ReplayCapturer::OnExit(const CUpti_CallbackData* info) {
  // The entry stays in pending_ until the launch record is queued, so that
  // Drain keeps its images meanwhile.
  std::vector<Range> ranges;
  CUfunction function = nullptr;
  uint64_t index = 0;
  std::string name;
  bool is_graph = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = pending_.find(info->correlationId);
    if (it == pending_.end()) return;
    is_graph = it->second.is_graph;
    ranges = it->second.ranges;
    function = it->second.function;
    index = it->second.launch.index;
    name = it->second.launch.function;
  }
  BusyScope busy;
  const CUresult* rc = static_cast<const CUresult*>(info->functionReturnValue);
  bool ok = (!rc || *rc == CUDA_SUCCESS) && cuCtxSynchronize() == CUDA_SUCCESS &&
            CopyRanges(ranges, index, format::SnapshotPhase::kAfter);
  if (is_graph) {
    FinishGraph(info, ok);
    return;
  }
  // Lazy loading loads the module during the launch: look it up now.
  uint64_t module = ok ? ModuleHashOf(function, name) : 0;
  std::lock_guard<std::mutex> lock(mu_);
  auto it = pending_.find(info->correlationId);
  format::LaunchRecord launch = std::move(it->second.launch);
  pending_.erase(it);
  if (!ok || module == 0) {
    ++stats_.skipped_error;  // its queued images are dropped by Drain
    Note("launch %llu %s not recorded: %s", static_cast<unsigned long long>(index),
         capture::Demangle(name.c_str()).substr(0, 100).c_str(),
         ok ? "its module image was not seen (loaded before the capture started?)"
            : "a CUDA call failed while copying its memory");
    return;
  }
  launch.module_hash = module;
  ++stats_.launches_captured;
  uint64_t bytes = 0;
  size_t reached = 0;
  for (const Range& r : ranges) {
    bytes += r.size;
    reached += r.origin.source == format::RangeSource::kPointer;
  }
  Note("launch %llu %s: %zu allocation(s)%s, %.1f MiB", static_cast<unsigned long long>(index),
       capture::Demangle(name.c_str()).substr(0, 100).c_str(), ranges.size(),
       reached ? StrFormat(" (%zu reached through pointers in memory)", reached).c_str() : "",
       double(bytes) / (1 << 20));
  launches_out_.push_back(std::move(launch));
}

bool ReplayCapturer::CopyRanges(const std::vector<Range>& ranges, uint64_t index,
                                format::SnapshotPhase phase, std::vector<Snapshot>* into) {
  for (const Range& r : ranges) {
    auto t0 = std::chrono::steady_clock::now();
    Snapshot s{index, phase, r.address, TakeBuffer(r.size), {}};
    if (phase == format::SnapshotPhase::kBefore) s.origin = r.origin;
    if (cuMemcpyDtoH(s.bytes.data(), CUdeviceptr(r.address), r.size) != CUDA_SUCCESS) return false;
    uint64_t ns = uint64_t(
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0)
            .count());
    std::lock_guard<std::mutex> lock(mu_);
    stats_.image_bytes += r.size;
    stats_.copy_ns += ns;
    (into ? *into : snapshots_out_).push_back(std::move(s));
  }
  return true;
}

void ReplayCapturer::MeasureReferenceCopy() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (reference_measured_) return;
    reference_measured_ = true;
  }
  constexpr size_t kBytes = 64u << 20;
  CUdeviceptr d = 0;
  if (cuMemAlloc(&d, kBytes) != CUDA_SUCCESS) return;
  std::vector<uint8_t> host(kBytes);
  cuMemsetD8(d, 0x5a, kBytes);
  cuCtxSynchronize();
  auto t0 = std::chrono::steady_clock::now();
  CUresult rc = cuMemcpyDtoH(host.data(), d, kBytes);
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  cuMemFree(d);
  if (rc != CUDA_SUCCESS || s <= 0) return;
  std::lock_guard<std::mutex> lock(mu_);
  stats_.reference_dtoh_gbps = double(kBytes) / s / 1e9;
}

void ReplayCapturer::OnModuleLoaded(const void* image, size_t size) {
  if (!image || size == 0) return;
  auto m = std::make_unique<Module>();
  const auto* p = static_cast<const uint8_t*>(image);
  m->image.assign(p, p + size);
  m->hash = format::ContentHash(m->image);
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& have : modules_)
    if (have->hash == m->hash) return;
  modules_.push_back(std::move(m));
}

uint64_t ReplayCapturer::ModuleHashOf(CUfunction f, const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = module_of_.find(f);
  if (it != module_of_.end()) return it->second;
  // The module whose image holds the function's symbol name.
  for (const auto& m : modules_) {
    std::string_view image(reinterpret_cast<const char*>(m->image.data()), m->image.size());
    size_t at = image.find(name);
    // A whole symbol: NUL-terminated in the string table.
    while (at != std::string_view::npos &&
           !(at + name.size() < image.size() && image[at + name.size()] == '\0' &&
             (at == 0 || image[at - 1] == '\0' || image[at - 1] == '.')))
      at = image.find(name, at + 1);
    if (at != std::string_view::npos) {
      module_of_.emplace(f, m->hash);
      return m->hash;
    }
  }
  return 0;
}

void ReplayCapturer::Drain(format::SbtWriter* writer) {
  std::vector<format::LaunchRecord> launches;
  std::vector<format::GraphLaunchRecord> graphs;
  std::vector<Snapshot> snapshots;
  std::vector<Module*> modules;
  std::vector<QueuedOp> ops;
  {
    std::lock_guard<std::mutex> lock(mu_);
    ops.swap(ops_out_);
    // Snapshots of a launch still running stay queued until its record is.
    launches.swap(launches_out_);
    graphs.swap(graphs_out_);
    std::vector<Snapshot> keep;
    for (Snapshot& s : snapshots_out_) {
      bool done = false;
      for (const auto& l : launches) done |= l.index == s.launch_index;
      for (const auto& g : graphs) done |= g.index == s.launch_index;
      (done ? snapshots : keep).push_back(std::move(s));
    }
    snapshots_out_.swap(keep);
    // Drop images of launches that failed (no pending entry, no record).
    std::erase_if(snapshots_out_, [&](const Snapshot& s) {
      for (const auto& [corr, p] : pending_)
        if (p.launch.index == s.launch_index) return false;
      return true;
    });
    auto want_module = [&](uint64_t hash) {
      for (const auto& m : modules_)
        if (m->hash == hash && !m->written) {
          m->written = true;
          modules.push_back(m.get());
        }
    };
    for (const auto& l : launches) want_module(l.module_hash);
    for (const auto& g : graphs)
      for (const auto& n : g.nodes)
        if (n.kind == format::GraphNodeKind::kKernel) want_module(n.kernel.module_hash);
  }
  if (launches.empty() && graphs.empty() && ops.empty()) return;
  if (!payload_) payload_ = std::make_unique<format::ReplayPayloadWriter>(writer);
  if (!info_written_) {
    info_written_ = true;
    format::CaptureInfo ci;
    ci.tool = "tracesmith profile --replay-capture";
    auto dev = capture::QueryDevices(/*init=*/false);
    if (dev.ok() && !dev->devices.empty()) {
      ci.device_name = dev->devices[0].name;
      ci.cc_major = dev->devices[0].cc_major;
      ci.cc_minor = dev->devices[0].cc_minor;
      ci.driver_version = uint32_t(dev->driver_version);
    }
    (void)payload_->WriteCaptureInfo(ci);
  }
  for (Module* m : modules) {
    auto hash = payload_->AddModule(m->image, KindOf(m->image.data(), m->image.size()),
                                    "module loaded by the program");
    (void)hash;
  }
  for (const Snapshot& s : snapshots)
    (void)payload_->AddSnapshot(s.launch_index, s.phase, s.address, s.bytes, s.origin);
  for (const auto& l : launches) (void)payload_->AddLaunch(l);
  for (const auto& g : graphs) (void)payload_->AddGraphLaunch(g);
  for (const QueuedOp& q : ops) (void)payload_->AddStreamOp(q.op, q.data);
  RecycleBuffers(snapshots);
}

ReplayCapturer::Buffer ReplayCapturer::TakeBuffer(uint64_t size) {
  Buffer out;
  {
    std::lock_guard<std::mutex> lock(mu_);
    size_t best = free_buffers_.size();
    for (size_t i = 0; i < free_buffers_.size(); ++i)
      if (free_buffers_[i].capacity() >= size &&
          (best == free_buffers_.size() ||
           free_buffers_[i].capacity() < free_buffers_[best].capacity()))
        best = i;
    if (best < free_buffers_.size()) {
      out = std::move(free_buffers_[best]);
      free_buffers_[best] = std::move(free_buffers_.back());
      free_buffers_.pop_back();
      free_bytes_ -= out.capacity();
    }
  }
  out.resize(size);  // within capacity: no allocation; no fill (ImageAllocator)
  return out;
}

void ReplayCapturer::RecycleBuffers(std::vector<Snapshot>& written) {
  std::lock_guard<std::mutex> lock(mu_);
  for (Snapshot& s : written) {
    if (free_bytes_ + s.bytes.capacity() > kMaxFreeBufferBytes) continue;
    free_bytes_ += s.bytes.capacity();
    free_buffers_.push_back(std::move(s.bytes));
  }
}

ReplayCaptureStats ReplayCapturer::stats() {
  std::lock_guard<std::mutex> lock(mu_);
  ReplayCaptureStats s = stats_;
  s.launches_seen = launch_counter_.load();
  return s;
}

}  // namespace tracesmith::replay_capture
