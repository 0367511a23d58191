#include "tracesmith/replay/gpu_replayer.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <span>
#include <vector>

#include "kernel_profiler.h"
#include "kernel_timer.h"
#include "measured_runs.h"
#include "replay_common.h"
#include "tracesmith/base/file_util.h"
#include "tracesmith/cuda/call.h"
#include "tracesmith/replay/address_ranges.h"
#include "tracesmith/replay/launch_memory.h"
#include "tracesmith/replay/relocation.h"
#include "vmm.h"

namespace tracesmith::replay {
namespace gpu {
namespace {

class PrimaryContext {
 public:
  explicit PrimaryContext(CUdevice d) : device_(d) {}
  ~PrimaryContext() {
    if (ctx_) cuDevicePrimaryCtxRelease(device_);
  }
  PrimaryContext(const PrimaryContext&) = delete;
  PrimaryContext& operator=(const PrimaryContext&) = delete;
  PrimaryContext(PrimaryContext&&) = delete;
  PrimaryContext& operator=(PrimaryContext&&) = delete;
  Status Activate() {
    CU_CALL(cuDevicePrimaryCtxRetain(&ctx_, device_));
    CU_CALL(cuCtxSetCurrent(ctx_));
    return OkStatus();
  }

 private:
  CUdevice device_;
  CUcontext ctx_ = nullptr;
};

}  // namespace

KernelParams::KernelParams(const format::LaunchRecord& l)
    : storage_((l.params.size() + 7) / 8 + 1, 0),
      buffer_size_(l.params.size()),
      by_buffer_(l.param_info.empty() && !l.params.empty()) {
  std::memcpy(storage_.data(), l.params.data(), l.params.size());
  auto* base = reinterpret_cast<uint8_t*>(storage_.data());
  for (const format::ParamInfo& p : l.param_info) args_.push_back(base + p.offset);
  extra_[0] = CU_LAUNCH_PARAM_BUFFER_POINTER;
  extra_[1] = base;
  extra_[2] = CU_LAUNCH_PARAM_BUFFER_SIZE;
  extra_[3] = &buffer_size_;
  extra_[4] = CU_LAUNCH_PARAM_END;
}

std::vector<CUlaunchAttribute> LaunchAttributes(const format::LaunchRecord& l) {
  std::vector<CUlaunchAttribute> attrs;
  if (l.cluster[0] > 0) {
    CUlaunchAttribute a = {};
    a.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    a.value.clusterDim.x = l.cluster[0];
    a.value.clusterDim.y = std::max(1u, l.cluster[1]);
    a.value.clusterDim.z = std::max(1u, l.cluster[2]);
    attrs.push_back(a);
  }
  for (const format::LaunchAttribute& r : l.attributes) {  // the program's others, as given
    CUlaunchAttribute a = {};
    a.id = CUlaunchAttributeID(r.id);
    std::memcpy(&a.value, r.value.data(), std::min(r.value.size(), sizeof(a.value)));
    attrs.push_back(a);
  }
  return attrs;
}

Status Launch(const format::LaunchRecord& l, CUfunction f, CUstream stream) {
  KernelParams params(l);
  CUlaunchConfig config = {};
  config.gridDimX = l.grid[0];
  config.gridDimY = l.grid[1];
  config.gridDimZ = l.grid[2];
  config.blockDimX = l.block[0];
  config.blockDimY = l.block[1];
  config.blockDimZ = l.block[2];
  config.sharedMemBytes = l.dynamic_shared_bytes;
  config.hStream = stream;
  std::vector<CUlaunchAttribute> attrs = LaunchAttributes(l);
  config.attrs = attrs.data();
  config.numAttrs = unsigned(attrs.size());
  CU_CALL(cuLaunchKernelEx(&config, f, params.kernel_params(), params.extra()));
  return OkStatus();
}

Status MapRanges(const std::vector<AddressRange>& ranges, CUdevice device, uint64_t granularity,
                 const GpuReplayOptions& o, ReplayMemory* mem) {
  const uint64_t chunk = (kDriverVaChunk + granularity - 1) / granularity * granularity;
  for (const ReservationGroup& g :
       GroupForReservation(CoveringRanges(ranges, granularity), chunk)) {
    auto whole = DeviceReservation::At(g.span.address, g.span.size);
    if (getenv("TRACESMITH_REPLAY_DEBUG"))
      fprintf(stderr, "replay: reserve span [0x%llx, +0x%llx) for %zu range(s): %s\n",
              static_cast<unsigned long long>(g.span.address),
              static_cast<unsigned long long>(g.span.size), g.ranges.size(),
              whole.ok() ? "at the captured address" : whole.status().message().c_str());
    if (whole.ok()) {
      for (const AddressRange& r : g.ranges)
        RETURN_IF_ERROR((*whole)->Back(device, r.address, r.size));
      mem->reservations.push_back(std::move(whole).value());
      continue;
    }
    if (whole.status().code() != StatusCode::kFailedPrecondition) return whole.status();
    for (const AddressRange& r : g.ranges) {
      auto m = DeviceReservation::At(r.address, r.size);
      if (!m.ok()) {
        if (!o.allow_relocation || m.status().code() != StatusCode::kFailedPrecondition)
          return m.status();
        m = DeviceReservation::Anywhere(r.size);
        if (!m.ok()) return m.status();
        mem->relocation.Add(r.address, r.size, (*m)->address());
      }
      RETURN_IF_ERROR((*m)->Back(device, (*m)->address(), r.size));
      mem->reservations.push_back(std::move(m).value());
    }
  }
  return OkStatus();
}

void CountRanges(const std::vector<AddressRange>& ranges, uint64_t granularity,
                 const ReplayMemory& mem, LaunchOutcome* out) {
  for (const AddressRange& r : CoveringRanges(ranges, granularity)) {
    ++out->ranges_total;
    if (mem.relocation.Translate(r.address) != r.address) ++out->ranges_relocated;
  }
}

StatusOr<CUfunction> LoadFunction(const format::ReplayCapture& cap, const format::LaunchRecord& l,
                                  ModuleCache& modules) {
  ASSIGN_OR_RETURN(CUmodule module, modules.Get(cap, l.module_hash));
  CUfunction f = nullptr;
  CUresult fr = cuModuleGetFunction(&f, module, l.function.c_str());
  if (fr == CUDA_ERROR_NOT_FOUND)
    return NotFound(StrFormat("function %s is not in module 0x%016llx", l.function.c_str(),
                              static_cast<unsigned long long>(l.module_hash)));
  CU_CALL(fr);
  if (l.dynamic_shared_bytes > 48 * 1024)  // above 48 KiB needs an opt-in
    CU_CALL(cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                               int(l.dynamic_shared_bytes)));
  return f;
}

StatusOr<Image> ImageOf(const format::ReplayCapture& cap, const format::SnapshotRecord& s,
                        const Relocation& relocation, const char* what, uint64_t* words) {
  Image image;
  ASSIGN_OR_RETURN(image.bytes, cap.BlobData(s.hash, what));
  if (relocation.empty()) return image;
  image.rewritten.assign(image.bytes.begin(), image.bytes.end());
  uint64_t n = relocation.PatchWords(image.rewritten, s.address);
  if (words) *words += n;
  image.bytes = image.rewritten;
  return image;
}

Snapshots SnapshotsOf(const format::ReplayCapture& cap, uint64_t launch_index) {
  Snapshots out;
  for (const format::SnapshotRecord& s : cap.snapshots)
    if (s.launch_index == launch_index)
      (s.phase == format::SnapshotPhase::kBefore ? out.before : out.after).push_back(&s);
  return out;
}

std::vector<AddressRange> RangesOf(const std::vector<const format::SnapshotRecord*>& snapshots) {
  std::vector<AddressRange> ranges;
  for (const format::SnapshotRecord* s : snapshots) ranges.push_back({s->address, s->size});
  return ranges;
}

Status RestoreImages(const format::ReplayCapture& cap,
                     const std::vector<const format::SnapshotRecord*>& before,
                     const Relocation& relocation, uint64_t* words) {
  for (const format::SnapshotRecord* s : before) {
    ASSIGN_OR_RETURN(Image image, ImageOf(cap, *s, relocation, "before snapshot", words));
    CU_CALL(cuMemcpyHtoD(CUdeviceptr(relocation.Translate(s->address)), image.bytes.data(),
                         image.bytes.size()));
  }
  return OkStatus();
}

Status DownloadRange(const format::SnapshotRecord& after, const Relocation& relocation,
                     std::vector<uint8_t>* host) {
  host->resize(after.size);
  CU_CALL(
      cuMemcpyDtoH(host->data(), CUdeviceptr(relocation.Translate(after.address)), host->size()));
  return OkStatus();
}

namespace {

// --warm: after the cold replays, the runs on the memory they left.
Status WarmRuns(const MeasuredWork& work, const ColdOutputs& cold,
                const std::function<Status()>& run, const GpuReplayOptions& o,
                ReplayProgress* progress, LaunchOutcome* out) {
  const std::vector<const format::SnapshotRecord*>& after = work.after;
  KernelTimer& timer = work.timer;
  StreamAndEvents& se = work.se;

  // Warm runs on the memory the last cold replay left. First one re-run,
  // its outputs compared with that memory: idempotence. Then one untimed
  // run, so that the L2 holds what a run leaves (not what the copies back
  // just read), then the timed runs, nothing restored or flushed in between.
  const std::vector<std::vector<uint8_t>>& left = cold.left(o.iterations);
  auto warm_runs = [&]() -> Status {
    RETURN_IF_ERROR(run());
    CU_CALL(cuStreamSynchronize(se.stream()));
    IdempotenceCheck& check = out->warm.check;
    check.replays = o.iterations;
    std::vector<uint8_t> rerun;
    for (size_t k = 0; k < after.size(); ++k) {
      RETURN_IF_ERROR(DownloadOutput(work, k, &rerun));
      check.rerun_vs_outputs.Merge(CompareBytes(left[k], rerun, after[k]->address));
      check.bytes_beyond_nondeterminism += BytesDifferingBeyond(left[k], rerun, cold.varying[k]);
    }
    RETURN_IF_ERROR(run());
    CU_CALL(cuStreamSynchronize(se.stream()));
    (void)timer.LastKernelNs();  // drop the untimed runs' records
    TimedSamples samples;
    for (uint32_t it = 0; it < o.iterations; ++it) {
      RETURN_IF_ERROR(TimedRun(work, &samples));
      ReportRuns(o, progress, o.iterations + it + 1);
    }
    LaunchOutcome::WarmTiming& w = out->warm;
    w.runs = o.iterations;
    samples.Summarize(&w.time, &w.event_time, &w.time_from_cupti);
    return OkStatus();
  };
  // A kernel that is not idempotent may fault on its own outputs (indices
  // it wrote): say that the failing run was a warm one.
  if (Status st = warm_runs(); !st.ok())
    return Status(st.code(), StrFormat("--warm, re-running on the memory its last replay left "
                                       "(inputs not restored): %s",
                                       st.message().c_str()));
  return OkStatus();
}

Status ReplayLaunch(const format::ReplayCapture& cap, const format::LaunchRecord& l,
                    uint64_t granularity, const ReplayMemory& mem, ModuleCache& modules,
                    KernelTimer& timer, L2Flusher& flusher, KernelProfiler* profiler,
                    const GpuReplayOptions& o, ReplayProgress* progress, LaunchOutcome* out) {
  auto setup_t0 = std::chrono::steady_clock::now();
  const Snapshots snapshots = SnapshotsOf(cap, l.index);
  const std::vector<const format::SnapshotRecord*>&before = snapshots.before,
                          &after = snapshots.after;
  CountRanges(RangesOf(before), granularity, mem, out);
  const Relocation& relocation = mem.relocation;
  format::LaunchRecord patched = l;
  out->param_words_rewritten = relocation.PatchWords(patched.params, 0);
  ASSIGN_OR_RETURN(CUfunction f, LoadFunction(cap, l, modules));
  StreamAndEvents se;
  RETURN_IF_ERROR(se.Create());
  out->index = l.index;
  out->function = l.function;
  out->memory = DescribeLaunchMemory(cap, l);
  for (const format::LaunchAttribute& a : l.attributes)
    out->attributes += (out->attributes.empty() ? "" : ", ") + format::LaunchAttributeName(a.id);
  out->recorded_ns = l.recorded_ns;
  out->iterations = o.iterations;
  out->l2_flushed = flusher.active();
  auto run = [&]() { return Launch(patched, f, se.stream()); };
  auto restore = [&](bool first) {
    return RestoreImages(cap, before, relocation, first ? &out->memory_words_rewritten : nullptr);
  };
  MeasuredWork work{cap, relocation, after, se, timer, flusher, restore, run};
  work.track_varying = o.warm;
  ColdOutputs cold;
  RETURN_IF_ERROR(MeasureColdRuns(work, o, setup_t0, progress, out, &cold));
  if (o.warm) RETURN_IF_ERROR(WarmRuns(work, cold, run, o, progress, out));
  if (!profiler) return OkStatus();
  // --metrics, last (the profiled runs leave the outputs as a run does): from
  // restored inputs and a flushed L2 (outside the profiled range), CUPTI's
  // kernel replay restoring the inputs between its passes; the activity
  // records that time kernels are off meanwhile.
  out->profile.requested = true;
  RETURN_IF_ERROR(restore(false));
  RETURN_IF_ERROR(flusher.Enqueue(se.stream()));  // cold, as Nsight Compute's cache control
  CU_CALL(cuCtxSynchronize());
  timer.Pause();
  Status measured = profiler->Measure(run, se.stream(), &out->profile);
  timer.Resume();
  if (!measured.ok()) out->profile.error = measured.message();
  return OkStatus();
}

}  // namespace
}  // namespace gpu

Status ReplayOnGpu(const format::ReplayCapture& cap, const GpuReplayOptions& o,
                   const std::function<void(const LaunchOutcome&)>& on_launch,
                   std::string* device_line) {
  using namespace gpu;
  auto driver_t0 = std::chrono::steady_clock::now();
  CU_CALL(cuInit(0));
  int count = 0;
  CU_CALL(cuDeviceGetCount(&count));
  if (o.device < 0 || o.device >= count)
    return InvalidArgument(
        StrFormat("CUDA device %d does not exist (%d devices)", o.device, count));
  CUdevice device;
  CU_CALL(cuDeviceGet(&device, o.device));
  char name[256] = {};
  CU_CALL(cuDeviceGetName(name, sizeof(name), device));
  int major = 0, minor = 0, vmm = 0, driver = 0;
  CU_CALL(cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device));
  CU_CALL(cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device));
  CU_CALL(
      cuDeviceGetAttribute(&vmm, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, device));
  CU_CALL(cuDriverGetVersion(&driver));
  if (device_line)
    *device_line = StrFormat("%s (sm_%d%d), driver %d.%d", name, major, minor, driver / 1000,
                             driver % 1000 / 10);
  if (cap.has_info &&
      (uint32_t(major) != cap.info.cc_major || uint32_t(minor) != cap.info.cc_minor))
    return FailedPrecondition(StrFormat(
        "the capture was recorded on %s (sm_%u%u) but this GPU is %s (sm_%d%d): captured module "
        "images are compiled for the capture's architecture; replay on an sm_%u%u GPU",
        cap.info.device_name.c_str(), cap.info.cc_major, cap.info.cc_minor, name, major, minor,
        cap.info.cc_major, cap.info.cc_minor));
  if (!vmm)
    return FailedPrecondition(std::string(name) +
                              " does not support virtual memory management (cuMemAddressReserve), "
                              "which same-address replay needs");
  PrimaryContext ctx(device);
  RETURN_IF_ERROR(ctx.Activate());
  if (device_line)
    *device_line += StrFormat(
        "; driver and context start %.1f ms",
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - driver_t0)
            .count());
  ASSIGN_OR_RETURN(uint64_t granularity, AllocationGranularity(device));
  // Same-VA memory first, before anything else allocates: every range the
  // selected launches read or write.
  auto selected = [&](uint64_t launch) {
    if (o.range_first >= 0)
      return launch >= uint64_t(o.range_first) && launch <= uint64_t(o.range_last);
    return o.launch < 0 || launch == uint64_t(o.launch);
  };
  std::vector<AddressRange> ranges;
  for (const format::SnapshotRecord& s : cap.snapshots)
    if (s.phase == format::SnapshotPhase::kBefore && selected(s.launch_index))
      ranges.push_back({s.address, s.size});
  if (o.range_first >= 0)
    for (const AddressRange& r :
         StreamOpRanges(cap, uint64_t(o.range_first), uint64_t(o.range_last)))
      ranges.push_back(r);
  ReplayMemory mem;
  auto map_t0 = std::chrono::steady_clock::now();
  size_t free_bytes = 0, total_bytes = 0;
  (void)cuMemGetInfo(&free_bytes, &total_bytes);  // for the message below only
  if (Status mapped = MapRanges(ranges, device, granularity, o, &mem); !mapped.ok()) {
    if (mapped.message().find("CUDA_ERROR_OUT_OF_MEMORY") == std::string::npos) return mapped;
    uint64_t needed = 0;
    const auto covering = CoveringRanges(ranges, granularity);
    for (const AddressRange& r : covering) needed += r.size;
    return Status(mapped.code(),
                  OutOfDeviceMemoryText(o.launch, o.range_first, o.range_last,
                                        cap.launches.size() + cap.graphs.size(), covering.size(),
                                        needed, free_bytes, total_bytes) +
                      " (" + mapped.message() + ")");
  }
  if (device_line) {
    uint64_t bytes = 0;
    const auto covering = CoveringRanges(ranges, granularity);
    for (const AddressRange& r : covering) bytes += r.size;
    *device_line += StrFormat(
        "\ndevice memory: %zu range(s), %s, %zu at the captured addresses, %zu mapped away; "
        "%.1f ms",
        covering.size(), HumanBytes(bytes).c_str(), covering.size() - mem.relocation.ranges_moved(),
        mem.relocation.ranges_moved(),
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - map_t0)
            .count());
  }
  L2Flusher flusher;
  RETURN_IF_ERROR(flusher.Create(device));
  ModuleCache modules;
  KernelTimer timer;
  (void)timer.Start();  // without CUPTI, times come from CUDA events
  // --metrics: the range profiler on this context, set up once; when it
  // cannot be, each launch says why (LaunchOutcome::profile).
  std::unique_ptr<KernelProfiler> profiler;
  std::string profiler_error;
  if (!o.metrics.empty()) {
    CUcontext current = nullptr;
    CU_CALL(cuCtxGetCurrent(&current));
    profiler = std::make_unique<KernelProfiler>();
    if (Status st = profiler->Open(current, o.device, o.metrics); !st.ok()) {
      if (st.code() == StatusCode::kInvalidArgument) return st;  // no name known: a usage error
      profiler_error = st.message();
      profiler.reset();
    }
  }
  auto profile_off = [&](LaunchOutcome& outcome, const std::string& why) {
    if (o.metrics.empty()) return;
    outcome.profile.requested = true;
    outcome.profile.error = why;
  };
  ReplayProgress progress;
  progress.replays_total = o.iterations * (o.warm && o.range_first < 0 ? 2 : 1);
  // A launch or range that fails is reported too (LaunchOutcome::error),
  // so that --json can name it, before its error is returned.
  auto report_failure = [&](LaunchOutcome& outcome, Status st) {
    // A fault on memory the capture did not record: say what it left out
    // (not for --warm re-runs, which read what earlier runs left).
    if (st.message().find("CUDA_ERROR_ILLEGAL_ADDRESS") != std::string::npos &&
        st.message().find("--warm, ") == std::string::npos)
      if (std::string hint = MissingMemoryHint(outcome.memory); !hint.empty())
        st = Status(st.code(), StrFormat("%s\n  an illegal address: the kernel may have read "
                                         "memory outside the %u range(s) the capture recorded; ",
                                         st.message().c_str(), outcome.memory.ranges) +
                                   hint);
    outcome.error = st.message();
    on_launch(outcome);
    return st;
  };
  if (o.range_first >= 0)
    for (const format::GraphLaunchRecord& g : cap.graphs)
      if (g.index >= uint64_t(o.range_first) && g.index <= uint64_t(o.range_last))
        return InvalidArgument(StrFormat(
            "launch %llu is a graph launch: range replay does not replay graph launches; replay "
            "it with --launch %llu",
            static_cast<unsigned long long>(g.index), static_cast<unsigned long long>(g.index)));
  if (o.node >= 0 && !cap.FindGraph(uint64_t(o.launch)))
    return InvalidArgument(
        StrFormat("--node: launch %lld is not a graph launch", static_cast<long long>(o.launch)));
  if (o.range_first >= 0) {
    const std::string name =
        StrFormat("range %llu..%llu", static_cast<unsigned long long>(o.range_first),
                  static_cast<unsigned long long>(o.range_last));
    progress.launches_total = 1;
    progress.index = uint64_t(o.range_first);
    progress.kernel = name.c_str();
    progress.range = true;
    ReportRuns(o, &progress, 0);
    LaunchOutcome outcome;
    Status st = ReplaySequence(cap, uint64_t(o.range_first), uint64_t(o.range_last), granularity,
                               mem, modules, flusher, o, &progress, &outcome);
    if (!st.ok()) {
      LaunchOutcome failed;
      failed.index = uint64_t(o.range_first);
      failed.sequence = true;
      failed.sequence_counts.last_index = uint64_t(o.range_last);
      failed.function = name;
      failed.iterations = o.iterations;
      return report_failure(failed, st);
    }
    on_launch(outcome);
    return OkStatus();
  }
  bool found = o.launch < 0;
  progress.launches_total = o.launch < 0 ? cap.launches.size() + cap.graphs.size() : 1;
  // Launches and graph launches in index order.
  size_t next_graph = 0;
  auto replay_graphs_before = [&](uint64_t limit) -> Status {
    for (; next_graph < cap.graphs.size() && cap.graphs[next_graph].index < limit; ++next_graph) {
      const format::GraphLaunchRecord& g = cap.graphs[next_graph];
      if (o.launch >= 0 && g.index != uint64_t(o.launch)) continue;
      found = true;
      LaunchOutcome outcome;
      DescribeGraph(g, o.node, &outcome);
      const std::string label =
          o.node >= 0 ? outcome.function
                      : StrFormat("graph launch %llu (%zu nodes)",
                                  static_cast<unsigned long long>(g.index), g.nodes.size());
      progress.index = g.index;
      progress.kernel = label.c_str();
      ReportRuns(o, &progress, 0);
      Status st = ReplayGraphLaunch(cap, g, granularity, mem, modules, timer, flusher, o, &progress,
                                    &outcome);
      if (!st.ok()) {
        LaunchOutcome failed;
        DescribeGraph(g, o.node, &failed);
        failed.iterations = o.iterations;
        failed.memory = DescribeLaunchMemory(cap, GraphMemoryStub(g));
        return report_failure(failed, Status(st.code(), StrFormat("%s: %s", failed.function.c_str(),
                                                                  st.message().c_str())));
      }
      profile_off(outcome,
                  "graph launches are not measured: --metrics measures single kernel launches");
      on_launch(outcome);
      ++progress.launches_done;
    }
    return OkStatus();
  };
  for (const format::LaunchRecord& l : cap.launches) {
    RETURN_IF_ERROR(replay_graphs_before(l.index));
    if (o.launch >= 0 && l.index != uint64_t(o.launch)) continue;
    found = true;
    progress.index = l.index;
    progress.kernel = l.function.c_str();
    ReportRuns(o, &progress, 0);
    LaunchOutcome outcome;
    Status st = ReplayLaunch(cap, l, granularity, mem, modules, timer, flusher, profiler.get(), o,
                             &progress, &outcome);
    if (st.ok() && !profiler) profile_off(outcome, profiler_error);
    if (!st.ok()) {
      LaunchOutcome failed;
      failed.index = l.index;
      failed.function = l.function;
      failed.iterations = o.iterations;
      failed.memory = DescribeLaunchMemory(cap, l);  // what the capture recorded, for the error
      return report_failure(
          failed, Status(st.code(),
                         StrFormat("launch %llu (%s): %s", static_cast<unsigned long long>(l.index),
                                   l.function.c_str(), st.message().c_str())));
    }
    on_launch(outcome);
    ++progress.launches_done;
  }
  RETURN_IF_ERROR(replay_graphs_before(UINT64_MAX));
  if (!found)
    return NotFound(StrFormat("the capture has no launch %lld (%zu launches, %zu graph launches)",
                              static_cast<long long>(o.launch), cap.launches.size(),
                              cap.graphs.size()));
  return OkStatus();
}

}  // namespace tracesmith::replay
