#include "tracesmith/model/synthetic_job.h"

#include <algorithm>
#include <cmath>
#include <random>

#include "tracesmith/model/stack_builder.h"

namespace tracesmith::model {
namespace {

constexpr uint64_t kLaunchGapNs = 3'000;  // kernel arrival after the previous one ends
constexpr uint64_t kStepGapNs = 10'000;
constexpr uint32_t kComputeStream = 7;
constexpr uint32_t kCommStreams[2] = {13, 17};
constexpr uint32_t kLaunchCbid = 211;       // cudaLaunchKernel's runtime cbid
constexpr uint32_t kSyncCbid = 131;         // cudaStreamSynchronize's runtime cbid
constexpr uint32_t kEventRecordCbid = 135;  // cudaEventRecord's runtime cbid

std::string KernelName(const SyntheticCollective& c) {
  const char* args = "(ncclDevKernelArgsStorage<4096ul>)";
  if (c.generic) return std::string("ncclDevKernel_Generic_4") + args;
  if (c.op == "all_reduce") return std::string("ncclDevKernel_AllReduce_Sum_f32_RING_LL") + args;
  if (c.op == "all_gather") return std::string("ncclDevKernel_AllGather_RING_LL") + args;
  if (c.op == "reduce_scatter")
    return std::string("ncclDevKernel_ReduceScatter_Sum_f32_RING_LL") + args;
  return std::string("ncclDevKernel_Broadcast_RING_LL") + args;
}

// NCCL's own range of a call: "ncclAllReduce", ...
std::string NcclRangeName(const std::string& op) {
  if (op == "all_reduce") return "ncclAllReduce";
  if (op == "all_gather") return "ncclAllGather";
  if (op == "reduce_scatter") return "ncclReduceScatter";
  return "ncclBroadcast";
}

}  // namespace

SyntheticJobOptions MakeSyntheticJobOptions(uint32_t ranks, uint32_t ranks_per_host) {
  SyntheticJobOptions o;
  ranks_per_host = std::max<uint32_t>(ranks_per_host, 1);
  const uint32_t hosts = (ranks + ranks_per_host - 1) / ranks_per_host;
  for (uint32_t h = 0; h < hosts; ++h) {
    // Realtime errors spread over +-0.4 ms: inside the default 1 ms NTP bound.
    const int64_t err = h == 0 ? 0 : int64_t((h * 137) % 9) * 100'000 - 400'000;
    o.hosts.push_back({.name = "node" + std::to_string(h),
                       .realtime_error_ns = err,
                       .boot_ns = 1'000'000'000'000ull + h * 7'777'777'777ull});
  }
  for (uint32_t r = 0; r < ranks; ++r)
    o.ranks.push_back({.host = r / ranks_per_host,
                       .clock_offset_ns = int64_t(r) * 1'234'567 - 3'000'000,
                       .drift_ppm = double(int(r % 7) - 3) * 2.5,
                       .read_window_ns = 600 + (r % 5) * 100});
  o.schedule = {{.op = "all_reduce", .bytes = 8 << 20, .comm = 0},
                {.op = "all_gather", .bytes = 2 << 20, .comm = 0},
                {.op = "reduce_scatter", .bytes = 4 << 20, .comm = 1}};
  return o;
}

SyntheticJob::SyntheticJob(SyntheticJobOptions options) : options_(std::move(options)) {
  const auto& o = options_;
  const size_t n = o.ranks.size();
  std::mt19937_64 rng(o.seed);
  std::uniform_int_distribution<uint64_t> jitter(0, std::max<uint64_t>(o.jitter_ns, 1) - 1);
  std::uniform_int_distribution<uint64_t> tail(0, 499);
  std::vector<uint64_t> t(n);
  for (size_t r = 0; r < n; ++r) t[r] = o.t0_ns + 50'000 + r * 1'000;
  step_begin_.assign(o.steps, std::vector<uint64_t>(n));
  step_compute_end_.assign(o.steps, std::vector<uint64_t>(n));
  parts_.assign(o.steps, std::vector<std::vector<Part>>(o.schedule.size(), std::vector<Part>(n)));
  for (uint32_t s = 0; s < o.steps; ++s) {
    for (size_t r = 0; r < n; ++r) {
      step_begin_[s][r] = t[r];
      t[r] += o.compute_ns + o.ranks[r].delay_per_step_ns + o.ranks[r].host_delay_per_step_ns +
              jitter(rng);
      step_compute_end_[s][r] = t[r];
    }
    for (size_t c = 0; c < o.schedule.size(); ++c) {
      uint64_t last = 0;
      for (size_t r = 0; r < n; ++r) {
        parts_[s][c][r].arrive = t[r] + kLaunchGapNs +
                                 (c == 0 ? o.ranks[r].host_delay_before_collectives_ns
                                         : o.ranks[r].delay_between_collectives_ns);
        last = std::max(last, parts_[s][c][r].arrive);
      }
      const uint64_t transfer =
          o.latency_ns + uint64_t(double(o.schedule[c].bytes) / std::max(o.bytes_per_ns, 1e-9));
      for (size_t r = 0; r < n; ++r) {
        parts_[s][c][r].end = last + transfer + tail(rng);
        t[r] = parts_[s][c][r].end;
      }
    }
    for (size_t r = 0; r < n; ++r) t[r] += kStepGapNs;
  }
  end_ns_ = *std::max_element(t.begin(), t.end()) + 50'000;
}

uint64_t SyntheticJob::CaptureNs(uint32_t rank, uint64_t true_ns) const {
  const SyntheticRank& r = options_.ranks[rank];
  const int64_t d = int64_t(true_ns - options_.t0_ns);
  return uint64_t(int64_t(options_.t0_ns) + r.clock_offset_ns + d +
                  std::llround(double(d) * r.drift_ppm * 1e-6));
}

uint64_t SyntheticJob::TrueJobNs(uint32_t rank, uint64_t capture_ns) const {
  const SyntheticRank& r = options_.ranks[rank];
  // Relative to t0 so the division runs on small numbers (doubles hold 53 bits).
  const int64_t c = int64_t(capture_ns - options_.t0_ns) - r.clock_offset_ns;
  const int64_t d = std::llround(double(c) / (1 + r.drift_ppm * 1e-6));
  const int64_t ref_error = options_.hosts[options_.ranks[0].host].realtime_error_ns;
  return uint64_t(int64_t(options_.t0_ns) + d + ref_error);
}

Trace SyntheticJob::RankTrace(uint32_t rank) const {
  Trace t;
  AppendRankTrace(rank, &t);
  return t;
}

Trace SyntheticJob::LauncherTrace(uint32_t pid) const {
  Trace t = RankTrace(0);
  t.Rows<KernelEvent>().clear();
  t.Rows<ApiEvent>().clear();
  t.Rows<NvtxRangeEvent>().clear();
  for (Process& p : t.Rows<Process>()) p.pid = pid, p.rank = -1;
  for (ClockAnchor& a : t.Rows<ClockAnchor>()) a.pid = pid;
  for (Thread& th : t.Rows<Thread>()) th.pid = pid;
  return t;
}

void SyntheticJob::AppendRankTrace(uint32_t rank, Trace* out) const {
  Trace& t = *out;
  const auto& o = options_;
  const SyntheticRank& me = o.ranks[rank];
  const SyntheticHost& host = o.hosts[me.host];
  const uint32_t pid = Pid(rank), tid = pid;
  std::mt19937_64 rng(o.seed * 1000003 + rank);
  auto cap = [&](uint64_t true_ns) { return CaptureNs(rank, true_ns); };

  Process p;
  p.pid = pid;
  p.name_id = t.strings.Intern("python");
  p.hostname_id = t.strings.Intern(host.name);
  p.rank = int32_t(rank);
  p.start_ns = cap(o.t0_ns);
  p.end_ns = cap(end_ns_);
  t.Rows<Process>().push_back(p);
  uint32_t local = 0;
  for (uint32_t r = 0; r < rank; ++r) local += o.ranks[r].host == me.host;
  t.Rows<Device>().push_back(
      {.device_id = local, .pid = pid, .name_id = t.strings.Intern("Synthetic GPU")});
  t.Rows<Thread>().push_back({.tid = tid, .pid = pid, .name_id = t.strings.Intern("python")});
  if (me.anchors) {
    // Each host clock read lands anywhere inside the read window.
    const double half = double(me.read_window_ns) / 2 * 0.95;
    std::uniform_real_distribution<double> noise(-half, half);
    for (auto [true_ns, phase] : {std::pair{o.t0_ns, kClockStart}, std::pair{end_ns_, kClockEnd}}) {
      ClockAnchor a;
      a.gpu_ns = cap(true_ns);
      a.monotonic_ns = uint64_t(int64_t(true_ns - host.boot_ns) + std::llround(noise(rng)));
      a.realtime_ns =
          uint64_t(int64_t(true_ns) + host.realtime_error_ns + std::llround(noise(rng)));
      a.read_window_ns = me.old_anchors ? 0 : me.read_window_ns;
      a.pid = pid;
      a.phase = phase;
      t.Rows<ClockAnchor>().push_back(a);
    }
  }

  const uint32_t launch = t.strings.Intern("cudaLaunchKernel");
  const uint32_t sync_name = o.sync_each_step ? t.strings.Intern("cudaStreamSynchronize") : 0;
  uint32_t correlation = 1;
  std::vector<uint32_t> compute_names;
  for (uint32_t k = 0; k < std::max<uint32_t>(o.compute_kernels, 1); ++k)
    compute_names.push_back(t.strings.Intern("gemm_kernel_" + std::to_string(k % 6)));
  uint32_t copy_back = 0, event_name = 0;  // interned when used
  auto& kernels = t.Rows<KernelEvent>();
  auto& apis = t.Rows<ApiEvent>();
  auto& ranges = t.Rows<NvtxRangeEvent>();
  const size_t first_range = ranges.size();
  // Call stacks (SyntheticJobOptions::stacks): leaf first, under "main".
  uint32_t site_loader = 0, site_forward = 0, site_collective = 0, site_sync = 0;
  if (o.stacks) {
    StackBuilder sb(&t);
    auto frame = [&](const char* fn, const char* file, uint32_t line) {
      Frame f{};
      f.kind = kFramePython;
      f.function_id = t.strings.Intern(fn);
      f.file_id = t.strings.Intern(file);
      f.line = line;
      return sb.InternFrame(f);
    };
    const uint32_t main_frame = frame("main", "train.py", 90);
    auto stack = [&](uint32_t leaf) {
      const uint32_t frames[] = {leaf, main_frame};
      return sb.InternStack(frames);
    };
    site_loader = stack(frame("train_step", "train.py", 31));
    site_forward = stack(frame("forward", "model.py", 57));
    site_collective = stack(frame("train_step", "train.py", 40));
    site_sync = stack(frame("train_step", "train.py", 42));
  }
  // A kernel on `stream` over true [s, e), launched by a call just before it.
  // With sync_each_step the host runs ahead of the GPU: a step's launches
  // follow each other 3 us apart from its first, at most 2 us before their
  // op; else each launch is 2 us before its op.
  uint64_t next_launch = 0;
  auto launch_at = [&](uint64_t s) {
    const uint64_t at = s - 2'000;
    return o.sync_each_step && next_launch ? std::min(at, next_launch) : at;
  };
  // A runtime API call on the rank's thread.
  auto api = [&](uint64_t s, uint64_t e, uint64_t corr, uint32_t cbid, uint32_t name,
                 uint32_t stack) {
    ApiEvent a{.start_ns = cap(s), .end_ns = cap(e)};
    a.stack_id = stack;
    a.correlation_id = corr;
    a.pid = pid;
    a.tid = tid;
    a.domain = kApiRuntime;
    a.cbid = cbid;
    a.name_id = name;
    apis.push_back(a);
  };
  auto kernel = [&](uint64_t s, uint64_t e, uint32_t stream, uint32_t name, uint32_t stack = 0) {
    const uint64_t at = launch_at(s);
    next_launch = at + 3'000;
    api(at, at + 1'000, correlation, kLaunchCbid, launch, stack);
    KernelEvent k{.start_ns = cap(s), .end_ns = cap(e)};
    k.correlation_id = correlation++;
    k.pid = pid;
    k.device_id = local;
    k.stream_id = stream;
    k.name_id = k.demangled_id = name;
    k.grid_x = k.block_x = 128;
    kernels.push_back(k);
  };
  auto range = [&](uint64_t s, uint64_t e, std::string_view name, uint8_t depth) {
    NvtxRangeEvent n{.start_ns = cap(s), .end_ns = cap(e)};
    n.range_id = ranges.size() - first_range + 1;
    n.pid = pid;
    n.tid = tid;
    n.name_id = t.strings.Intern(name);
    n.depth = depth;
    ranges.push_back(n);
  };
  auto payload = [&](uint64_t at, const std::string& text) {
    NvtxPayloadEvent p{.ts_ns = cap(at)};
    p.pid = pid;
    p.tid = tid;
    p.schema_id = 1;
    p.text_id = t.strings.Intern(text);
    t.Rows<NvtxPayloadEvent>().push_back(p);
  };
  const uint32_t nranks = uint32_t(o.ranks.size());
  if (o.nccl_payloads && o.steps > 0)
    for (uint32_t comm = 0; comm < 2; ++comm)
      payload(step_begin_[0][rank] - 1'000'000 + comm * 1'000,
              "NCCL communicator ID=" + std::to_string(1000 + comm) +
                  "; No. of ranks=" + std::to_string(nranks) + "; Rank=" + std::to_string(rank) +
                  "; CUDA device=" + std::to_string(local));
  for (uint32_t s = 0; s < o.steps; ++s) {
    const uint64_t begin = step_begin_[s][rank], compute_end = step_compute_end_[s][rank];
    const uint64_t step_end = o.schedule.empty() ? compute_end : parts_[s].back()[rank].end;
    range(begin, step_end, "ProfilerStep#" + std::to_string(s), 0);
    next_launch = 0;  // the step's first launch after its host work
    const uint32_t nk = std::max<uint32_t>(o.compute_kernels, 1);
    const uint64_t first = begin + 3'000 + me.host_delay_per_step_ns;
    const uint64_t each = (compute_end - first) / nk;
    for (uint32_t k = 0; k < nk; ++k) {
      const uint64_t ks = first + k * each;
      kernel(ks, ks + each, kComputeStream, compute_names[k], k ? site_forward : site_loader);
    }
    for (size_t c = 0; c < o.schedule.size(); ++c) {
      const SyntheticCollective& sc = o.schedule[c];
      const Part& part = parts_[s][c][rank];
      if (sc.host_only) {  // gloo/MPI: the host call is the collective, no kernel
        // gloo on CUDA tensors first copies the tensor to the host: before
        // the step's first collective the thread waits for its compute
        // inside that call (then, on the straggler, sleeps); it records an
        // event as each collective starts (a call that launches nothing),
        // then waits for its peers in the range.
        if (o.sync_each_step) {
          if (c == 0 && next_launch) {
            api(next_launch,
                part.arrive - kLaunchGapNs - me.host_delay_before_collectives_ns + 1'000,
                correlation++, kSyncCbid, sync_name, site_sync);
            next_launch = 0;
          }
          if (!event_name) event_name = t.strings.Intern("cudaEventRecord");
          api(part.arrive - 800, part.arrive - 500, correlation++, kEventRecordCbid, event_name,
              site_collective);
        }
        range(part.arrive, part.end, "gloo:" + sc.op + " bytes=" + std::to_string(sc.bytes), 1);
        if (sc.launch_after) {
          if (!copy_back) copy_back = t.strings.Intern("copy_back_kernel");
          next_launch = 0;  // the host waited in the collective
          kernel(part.end + 2'000, part.end + 2'500, kComputeStream, copy_back, site_collective);
        }
        continue;
      }
      // The ranges enclose the launch (with sync_each_step, within the 3 us
      // before the next launch).
      const uint64_t at = launch_at(part.arrive);
      const bool ahead = at + 2'000 != part.arrive;
      if (o.nccl_payloads) {
        // NCCL's range and payload: the per-rank size for all-gather and reduce-scatter.
        const bool per_rank = sc.op == "all_gather" || sc.op == "reduce_scatter";
        const uint64_t rs = ahead ? at - 300 : part.arrive - 5'000;
        range(rs, ahead ? at + 1'200 : part.arrive - 800, NcclRangeName(sc.op), 2);
        payload(rs + 100, "NCCL communicator ID=" + std::to_string(1000 + (sc.comm & 1)) +
                              "; Message size [bytes]=" +
                              std::to_string(per_rank ? sc.bytes / nranks : sc.bytes) +
                              "; Reduction operation=Sum");
      } else {
        range(ahead ? at - 500 : part.arrive - 6'000, ahead ? at + 1'500 : part.arrive - 500,
              "grad_sync bytes=" + std::to_string(sc.bytes), 1);
        range(ahead ? at - 300 : part.arrive - 5'000, ahead ? at + 1'200 : part.arrive - 800,
              "nccl:" + sc.op, 2);
      }
      kernel(part.arrive, part.end, kCommStreams[sc.comm & 1], t.strings.Intern(KernelName(sc)),
             site_collective);
    }
    if (o.sync_each_step && !o.schedule.empty() && !o.schedule.back().host_only) {
      const Part& last = parts_[s].back()[rank];
      api(next_launch, last.end + 1'000, correlation++, kSyncCbid, sync_name, site_sync);
    }
  }
}

}  // namespace tracesmith::model
