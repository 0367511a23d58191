#include "tracesmith/model/synthetic.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace tracesmith::model {
namespace {

const char* const kFamilies[] = {"gemm_tn",    "gemm_nn",        "layer_norm_fwd", "layer_norm_bwd",
                                 "gelu_fwd",   "gelu_bwd",       "softmax",        "adamw_step",
                                 "reduce_sum", "elementwise_add"};

}  // namespace

SyntheticTraceGenerator::SyntheticTraceGenerator(const SyntheticOptions& options)
    : options_(options), rng_(options.seed) {
  options_.devices = std::max(1u, options_.devices);
  options_.streams = std::max(options_.devices, options_.streams);
  options_.kernel_names = std::max(1u, options_.kernel_names);
  std::lognormal_distribution<double> dur(std::log(20000.0), 1.2);  // ~20 us median
  for (uint32_t i = 0; i < options_.kernel_names; ++i) {
    std::string family = kFamilies[i % std::size(kFamilies)];
    std::string demangled = "void " + family + "_kernel<" + std::to_string(64 << (i % 3)) + ", " +
                            std::to_string(i) + ">(float*, float const*, int)";
    std::string mangled = "_Z" + std::to_string(family.size() + 7) + family + "_kernelILi" +
                          std::to_string(64 << (i % 3)) + "ELi" + std::to_string(i) + "EEvPfPKfi";
    KernelShape s;
    s.name_id = strings_.Intern(mangled);
    s.demangled_id = strings_.Intern(demangled);
    s.grid = 1u << (4 + rng_() % 10);
    s.block = 64u << (rng_() % 4);
    s.registers = 16 + 8 * static_cast<uint32_t>(rng_() % 12);
    s.shared = (rng_() % 3) * 16384;
    s.mean_ns = std::clamp(dur(rng_), 2000.0, 3.0e6);
    shapes_.push_back(s);
  }
  // A step launches names in a fixed order (as a training loop does).
  for (uint32_t i = 0; i < options_.kernel_names * 3; ++i)
    sequence_.push_back(static_cast<uint32_t>(rng_() % options_.kernel_names));
  for (uint32_t s = 0; s < options_.streams; ++s)
    streams_.push_back(StreamState{s % options_.devices, 7 + s, 0});
  launch_name_ = strings_.Intern("cudaLaunchKernel");
  memcpy_name_ = strings_.Intern("cudaMemcpyAsync");
  sync_name_ = strings_.Intern("cudaStreamSynchronize");
  nvtx_name_ = strings_.Intern("train_step");
  device_name_ = strings_.Intern("Synthetic H100");
  process_name_ = strings_.Intern("synthetic");
}

bool SyntheticTraceGenerator::Next(Trace* batch, uint64_t max_kernels) {
  if (emitted_ >= options_.kernels) return false;
  const uint32_t pid = options_.pid;
  const uint32_t tid = pid + 1;
  if (first_batch_) {
    first_batch_ = false;
    for (uint32_t d = 0; d < options_.devices; ++d) {
      Device dev{};
      dev.device_id = d;
      dev.pid = pid;
      dev.name_id = device_name_;
      dev.sm_count = 132;
      dev.cc_major = 9;
      dev.memory_bytes = 80ull << 30;
      batch->Rows<Device>().push_back(dev);
    }
    batch->Rows<Process>().push_back(
        Process{.pid = pid, .name_id = process_name_, .start_ns = host_ns_});
    batch->Rows<Thread>().push_back(Thread{.tid = tid, .pid = pid});
    batch->Rows<ClockAnchor>().push_back(ClockAnchor{.gpu_ns = host_ns_,
                                                     .realtime_ns = host_ns_,
                                                     .monotonic_ns = host_ns_,
                                                     .pid = pid,
                                                     .phase = kClockStart});
  }
  // Distributions chosen to resemble eager PyTorch on an H100: launch calls
  // take ~3 us with 1% slow outliers, Python spends ~4 us between launches,
  // the same kernel's duration varies by ~2%, back-to-back kernels on a busy
  // stream start ~1.2 us apart, an idle stream starts work ~4 us after the call.
  std::normal_distribution<double> jitter(1.0, 0.02), api_norm(3000, 150), lat_norm(4000, 300),
      gap_norm(1200, 150);
  std::lognormal_distribution<double> host_gap(std::log(4000.0), 0.3);
  auto clamp_ns = [](double v, double lo) { return static_cast<uint64_t>(std::max(lo, v)); };
  auto api_ns = [&](std::mt19937_64& r) {
    uint64_t d = clamp_ns(api_norm(r), 1500);
    return (r() % 100 == 0) ? d * 5 : d;
  };
  auto gap_ns = [&](std::mt19937_64& r) { return clamp_ns(host_gap(r), 500); };
  auto latency_ns = [&](std::mt19937_64& r) { return clamp_ns(lat_norm(r), 1000); };
  auto busy_gap_ns = [&](std::mt19937_64& r) { return clamp_ns(gap_norm(r), 300); };
  const uint64_t end = std::min(options_.kernels, emitted_ + max_kernels);
  for (; emitted_ < end; ++emitted_) {
    // As in a real program, a given op of the step is always issued to the
    // same stream (the streams still interleave and overlap).
    const size_t pos = emitted_ % sequence_.size();
    const KernelShape& k = shapes_[sequence_[pos]];
    StreamState& st = streams_[(pos * 2654435761u >> 7) % streams_.size()];
    // Host: the launch call.
    ApiEvent api{};
    api.start_ns = host_ns_;
    api.end_ns = host_ns_ + api_ns(rng_);
    api.correlation_id = correlation_++;
    api.pid = pid;
    api.tid = tid;
    api.domain = kApiRuntime;
    api.cbid = 211;  // CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000
    api.name_id = launch_name_;
    batch->Rows<ApiEvent>().push_back(api);
    // Device: queued behind earlier work on its stream.
    KernelEvent e{};
    e.start_ns = std::max(api.end_ns + latency_ns(rng_), st.busy_until + busy_gap_ns(rng_));
    e.end_ns = e.start_ns + static_cast<uint64_t>(std::max(500.0, k.mean_ns * jitter(rng_)));
    e.correlation_id = api.correlation_id;
    e.pid = pid;
    e.device_id = st.device;
    e.context_id = 1 + st.device;
    e.stream_id = st.stream;
    e.name_id = k.name_id;
    e.demangled_id = k.demangled_id;
    e.grid_x = k.grid;
    e.grid_y = e.grid_z = 1;
    e.block_x = k.block;
    e.block_y = e.block_z = 1;
    e.cluster_x = e.cluster_y = e.cluster_z = 1;
    e.registers_per_thread = k.registers;
    e.dynamic_shared_bytes = k.shared;
    batch->Rows<KernelEvent>().push_back(e);
    st.busy_until = e.end_ns;
    host_ns_ = api.end_ns + gap_ns(rng_);

    if (options_.memcpy_every && emitted_ % options_.memcpy_every == options_.memcpy_every - 1) {
      ApiEvent capi = api;
      capi.start_ns = host_ns_;
      capi.end_ns = host_ns_ + api_ns(rng_);
      capi.correlation_id = correlation_++;
      capi.cbid = 41;  // cudaMemcpyAsync_v3020
      capi.name_id = memcpy_name_;
      batch->Rows<ApiEvent>().push_back(capi);
      MemcpyEvent m{};
      m.bytes = 4096ull << (rng_() % 12);
      m.start_ns = std::max(capi.end_ns + latency_ns(rng_), st.busy_until + busy_gap_ns(rng_));
      m.end_ns = m.start_ns + 1000 + m.bytes / 20;  // ~20 GB/s
      m.correlation_id = capi.correlation_id;
      m.pid = pid;
      m.device_id = m.src_device_id = m.dst_device_id = st.device;
      m.context_id = 1 + st.device;
      m.stream_id = st.stream;
      m.copy_kind = (rng_() % 2) ? kCopyHtoD : kCopyDtoH;
      m.src_kind = m.copy_kind == kCopyHtoD ? kMemPinned : kMemDevice;
      m.dst_kind = m.copy_kind == kCopyHtoD ? kMemDevice : kMemPinned;
      m.is_async = 1;
      batch->Rows<MemcpyEvent>().push_back(m);
      st.busy_until = m.end_ns;
      host_ns_ = capi.end_ns + gap_ns(rng_);
    }
    if (options_.sync_every && emitted_ % options_.sync_every == options_.sync_every - 1) {
      SyncEvent s{};
      s.start_ns = host_ns_;
      s.end_ns = std::max(host_ns_ + 1000, st.busy_until + 500);
      s.correlation_id = correlation_++;
      s.pid = pid;
      s.device_id = st.device;
      s.context_id = 1 + st.device;
      s.stream_id = st.stream;
      s.sync_type = kSyncStreamSynchronize;
      batch->Rows<SyncEvent>().push_back(s);
      ApiEvent sapi = api;
      sapi.start_ns = s.start_ns;
      sapi.end_ns = s.end_ns + 300;
      sapi.correlation_id = s.correlation_id;
      sapi.cbid = 131;  // cudaStreamSynchronize_v3020
      sapi.name_id = sync_name_;
      batch->Rows<ApiEvent>().push_back(sapi);
      host_ns_ = sapi.end_ns + gap_ns(rng_);
    }
    if (options_.alloc_every && emitted_ % options_.alloc_every == options_.alloc_every - 1) {
      MemoryEvent a{};
      a.ts_ns = host_ns_;
      a.bytes = 512ull << (rng_() % 18);  // 512 B .. 64 MiB
      a.address = next_address_;
      next_address_ += (a.bytes + 0xfff) & ~uint64_t{0xfff};
      a.correlation_id = correlation_++;
      a.pid = pid;
      a.device_id = st.device;
      a.context_id = 1 + st.device;
      a.op = kMemoryAlloc;
      a.memory_kind = kMemDevice;
      const size_t cap = std::max<uint32_t>(1, options_.live_allocs);
      if (live_.size() < cap) {
        live_.push_back(a.address);
      } else {  // free the oldest first
        MemoryEvent f = a;
        f.ts_ns = host_ns_ + 100;
        f.bytes = 0;
        f.address = live_[live_next_];
        f.correlation_id = correlation_++;
        f.op = kMemoryFree;
        live_[live_next_] = a.address;
        live_next_ = (live_next_ + 1) % cap;
        batch->Rows<MemoryEvent>().push_back(a);
        a = f;
      }
      batch->Rows<MemoryEvent>().push_back(a);
      host_ns_ += 300;
    }
    if (options_.nvtx_every) {
      if (emitted_ % options_.nvtx_every == 0) nvtx_start_ = api.start_ns;
      if (emitted_ % options_.nvtx_every == options_.nvtx_every - 1)
        batch->Rows<NvtxRangeEvent>().push_back(NvtxRangeEvent{.start_ns = nvtx_start_,
                                                               .end_ns = host_ns_,
                                                               .pid = pid,
                                                               .tid = tid,
                                                               .name_id = nvtx_name_});
    }
  }
  return true;
}

Trace MakeSyntheticTrace(const SyntheticOptions& options) {
  SyntheticTraceGenerator gen(options);
  Trace t;
  while (gen.Next(&t)) {
  }
  for (uint32_t i = 1; i < gen.strings().size(); ++i) t.strings.Set(i, gen.strings().Get(i));
  return t;
}

}  // namespace tracesmith::model
