// GPU instruction sampling (profile --pc-sampling, issue #39): CUPTI's PC
// sampling in continuous mode on every context, for the whole run, with
// kernels left concurrent (no serialization, no start/stop around them).
//
// What docs/pc-sampling.md measured on an H200 decides the sequence:
//  - sampling is enabled and configured in the context-created callback
//    (every cuptiPCSampling* call needs cuptiPCSamplingEnable first), and at
//    an in-process capture's start on the contexts made before it
//    (live_contexts.h; their modules loaded before the start give no source
//    lines or SASS: their load was not seen);
//  - CUPTI's worker threads decode the hardware buffer every kWorkerSleepMs
//    (1 ms: 99.99% of the samples drained while kernels ran, against 97% at
//    CUPTI's default 100 ms) and the writer thread takes the decoded records
//    with cuptiPCSamplingGetData every 20 ms (kDrainMs): never the program's
//    threads, though each GetData call held the program's launches up to 2 ms
//    on the H200 (docs/pc-sampling.md "Cost": the drain knobs' sweep);
//  - at the end (and before a context is destroyed) the rest is drained and
//    cuptiPCSamplingDisable flushes what CUPTI still holds into the buffer
//    given at configuration.
// A record holds the samples of one instruction since the last drain, per
// stall reason: one PcSampleEvent row per (instruction, stall reason) per
// drain window. Continuous mode gives no correlation id (0): the analysis
// joins a window's samples to the function's launches running in it, by
// overlap (analysis/pc_sample_sites.cc).
// Source lines and the cubins saved for the CLI's SASS text: cubin_lines.h.
#include <cupti_pcsampling.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

#include "cubin_lines.h"
#include "kernel_timeout_watch.h"
#include "tracesmith/base/gpu_counters_hint.h"
#include "tracesmith/capture/activity_converter.h"
#include "tracesmith/capture/device_query.h"
#include "tracesmith/capture/gpu_claim.h"
#include "tracesmith/capture/live_contexts.h"
#include "tracesmith/capture/recorder.h"
#include "tracesmith/format/job_file_names.h"
#include "tracesmith/model/event_names.h"

namespace tracesmith::hardware {
namespace {

constexpr uint32_t kWorkerSleepMs = 1;
constexpr uint32_t kDrainMs = 20;  // one window of rows per 20 ms
// PC records per GetData. CUPTI holds the program's launches during each call:
// with 4096 the compiled Transformer step's launches waited 15.0 ms per 80 steps
// at drains, with 512 1.5 ms (H200, 2026-11-30, gpu/cost_where.py).
constexpr uint32_t kDrainPcs = 512;
constexpr uint32_t kMaxDrainPcs = 65536;  // TRACESMITH_PC_SAMPLING_DRAIN_PCS's cap
constexpr size_t kConfigPcs = 16384;      // what Disable can flush at once
constexpr int kMaxGetDataPerDrain = 512;  // then the next poll goes on

// CUPTI's hardware buffer, per context: 64 MiB at the default period (2^15) and
// twice that per step shorter, up to CUPTI's own 512 MiB. CUPTI allocates it at
// the first launch after enabling: 512 MiB stalled that launch 311 ms on the
// H200, 32 MiB 84 ms (2026-11-30, gpu/cost_where.py), and it is GPU memory the
// program does not get; the worker decodes it every 1 ms, so 64 MiB holds far
// more than one sleep's samples (none lost in gpu/pc_sampling_check.py's run).
uint32_t DefaultHwBufferMb(uint32_t period_log2) {
  const uint32_t shorter = period_log2 < 15 ? 15 - period_log2 : 0;
  return shorter >= 3 ? 512 : 64u << shorter;
}

std::string CuptiError(CUptiResult r) {
  const char* s = nullptr;
  cuptiGetResultString(r, &s);
  return s ? s : ("CUPTI error " + std::to_string(int(r)));
}

CUptiResult CuptiDisable(CUcontext ctx) {
  CUpti_PCSamplingDisableParams p = {};
  p.size = CUpti_PCSamplingDisableParamsSize;
  p.ctx = ctx;
  return cuptiPCSamplingDisable(&p);
}

// The calling thread's id, once per thread.
uint32_t ThisThreadId() {
  thread_local const uint32_t tid = uint32_t(syscall(SYS_gettid));
  return tid;
}

// A CUpti_PCSamplingData with room for `pcs` records of `reasons` stall reasons each.
struct PcBuffer {
  CUpti_PCSamplingData data{};
  std::vector<CUpti_PCSamplingPCData> pcs;
  std::vector<CUpti_PCSamplingStallReason> stalls;
  void Init(size_t n, size_t reasons) {
    pcs.assign(n, CUpti_PCSamplingPCData{});
    stalls.assign(n * std::max<size_t>(reasons, 1), CUpti_PCSamplingStallReason{});
    for (size_t i = 0; i < n; ++i) {
      pcs[i].size = sizeof(CUpti_PCSamplingPCData);
      pcs[i].stallReason = &stalls[i * std::max<size_t>(reasons, 1)];
    }
    Reset();
  }
  // The outputs of the last call cleared; the buffers (and pointers) kept.
  void Reset() {
    const size_t n = pcs.size();
    data = CUpti_PCSamplingData{};
    data.size = sizeof(CUpti_PCSamplingData);
    data.collectNumPcs = n;
    data.pPcData = pcs.data();
  }
};

struct SamplingContext {
  CUcontext ctx = nullptr;
  uint32_t device_id = 0;
  bool live = false;                                 // enabled and not yet disabled
  bool in_use = false;                               // a recorder has it (ContextStore)
  bool destroyed = false;                            // its CUDA context was destroyed
  std::unordered_map<uint32_t, uint32_t> reason_at;  // CUPTI stall index -> reasons_ position
  std::vector<uint32_t> indices;                     // the stall indices configured
  PcBuffer config, drain;
  uint64_t window_start = 0;  // CUPTI time of the last drain (or of the enable)
};

// The SamplingContexts of the process. CUPTI is given a context's
// configuration buffers (the sampling data buffer that Disable flushes into,
// the stall indices) and its documentation never says when it stops using
// them; NVIDIA's continuous-mode sample frees them only at exit. So a capture
// that ends leaves them here, a later capture that samples the same context
// reuses them (the same sizes: PcBuffer::Init does not reallocate), and those
// of a destroyed context are freed when a later capture looks for one (the
// context, and CUPTI's state for it, are gone). A context destroyed while no
// capture sampled it is never seen going: its entry (a few MiB) stays until a
// context with its handle is sampled again, so the store holds at most the
// process's contexts that were ever sampled.
class ContextStore {
 public:
  static ContextStore& Get() {
    static ContextStore* store = new ContextStore;  // never destroyed: CUPTI may outlive statics
    return *store;
  }
  // Its state for `ctx`, now the caller's; null while another recorder has it.
  SamplingContext* Acquire(CUcontext ctx) {
    std::lock_guard<std::mutex> lock(mu_);
    std::erase_if(all_, [](const auto& c) { return c->destroyed && !c->in_use; });
    for (auto& c : all_)
      if (c->ctx == ctx && !c->destroyed) {
        if (c->in_use) return nullptr;
        c->in_use = true;
        return c.get();
      }
    all_.push_back(std::make_unique<SamplingContext>());
    all_.back()->ctx = ctx;
    all_.back()->in_use = true;
    return all_.back().get();
  }
  void Release(SamplingContext* c) {
    std::lock_guard<std::mutex> lock(mu_);
    c->in_use = false;
  }
  void MarkDestroyed(SamplingContext* c) {
    std::lock_guard<std::mutex> lock(mu_);
    c->destroyed = true;
  }

 private:
  std::mutex mu_;
  std::vector<std::unique_ptr<SamplingContext>> all_;
};

struct Pending {  // a row before its strings are interned (Write)
  model::PcSampleEvent row;
  const char* function = nullptr;  // CUPTI's string, one per function, never freed while capturing
  uint32_t reason = 0;             // position in reasons_
};

class PcSamplingRecorder final : public capture::Recorder {
 public:
  PcSamplingRecorder(uint32_t pid, uint32_t period, bool quiet, std::string output_path,
                     uint64_t kernel_timeout_ns, uint32_t flush_ms, bool end_program,
                     const capture::CaptureTuning& tuning, bool overhead_rows)
      : overhead_rows_(overhead_rows),
        pid_(pid),
        period_(period),
        quiet_(quiet),
        output_path_(std::move(output_path)),
        hw_buffer_bytes_(uint64_t(tuning.pc_sampling_hw_buffer_mb ? tuning.pc_sampling_hw_buffer_mb
                                                                  : DefaultHwBufferMb(period))
                         << 20),
        sleep_ms_(tuning.pc_sampling_sleep_ms ? tuning.pc_sampling_sleep_ms : kWorkerSleepMs),
        drain_ns_(uint64_t(tuning.pc_sampling_drain_ms ? tuning.pc_sampling_drain_ms : kDrainMs) *
                  1'000'000),
        drain_pcs_(tuning.pc_sampling_drain_pcs
                       ? std::min(tuning.pc_sampling_drain_pcs, kMaxDrainPcs)
                       : kDrainPcs),
        lines_(pid) {
    if (kernel_timeout_ns)
      watch_ = std::make_unique<KernelTimeoutWatch>(
          pid, kernel_timeout_ns, 2 * uint64_t(flush_ms) * 1'000'000, end_program);
  }
  // A capture abandoned without its final flush leaves sampling enabled: its
  // contexts may be gone by now, and CUPTI tears sampling down with them; the
  // next capture that samples one disables it first (Enable). The buffers stay
  // in the ContextStore either way.
  ~PcSamplingRecorder() override {
    for (SamplingContext* c : contexts_) ContextStore::Get().Release(c);
  }

  const char* name() const override { return "pcsampling"; }

  void Claim(capture::CallbackClaims& claims) override {
    claims.ContextCreated();
    claims.ContextDestroys();
    claims.ModuleLoads();
    if (watch_) KernelTimeoutWatch::Claim(claims);
  }

  void OnDriverCall(const capture::DriverCallEvent& call) override {
    if (watch_ && call.active) KernelTimeoutWatch::OnLaunchCall(call);
  }

  // The first edge of a capture that has seen no context: an in-process
  // capture's start (an injected capture's contexts all came through
  // OnContextCreated before its first edge, its end: nothing to look for).
  void OnCaptureEdge() override {
    if (edge_seen_) return;
    edge_seen_ = true;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (context_seen_) return;
    }
    capture::ForEachLiveContext([this](CUcontext ctx) { OnContextCreated(ctx); });
  }

  void OnContextCreated(CUcontext ctx) override {
    {
      // Once per context (the callback and the start's look may both see one).
      std::lock_guard<std::mutex> lock(mu_);
      for (const CUcontext seen : seen_)
        if (seen == ctx) return;
      seen_.push_back(ctx);
      context_seen_ = true;
    }
    SamplingContext* c = ContextStore::Get().Acquire(ctx);
    if (!c) return;  // another recorder samples it: one capture runs at a time
    cuptiGetDeviceId(ctx, &c->device_id);
    std::string why = ClaimGpu(c->device_id);
    const bool claimed = why.empty();
    if (claimed) why = Enable(*c);
    std::lock_guard<std::mutex> lock(mu_);
    if (claimed) --enabling_[c->device_id];  // (ReleaseGpuLocked waited for it)
    if (why.empty() && ended_) {             // created while the capture ended: not sampled
      Disable(*c, false);
      why = "the capture ended";
    }
    if (!why.empty()) {
      const uint32_t device = c->device_id;
      if (!c->live) ReleaseGpuLocked(device, c);  // a claim for nothing sampled: let it go
      ContextStore::Get().Release(c);
      if (ended_) return;
      ++enable_failures_;
      if (!quiet_)
        std::fprintf(stderr,
                     "tracesmith: GPU instruction sampling is off on device %u: %s; the capture "
                     "goes on without it%s\n",
                     device, why.c_str(),
                     watch_ ? " (and --kernel-timeout, which watches with it, is off there)" : "");
      return;
    }
    contexts_.push_back(c);
    ++contexts_sampled_;
  }

  void OnContextDestroying(CUcontext ctx) override {
    std::lock_guard<std::mutex> lock(mu_);
    std::erase_if(contexts_, [&](SamplingContext* c) {
      if (c->ctx != ctx) return false;
      if (c->live) {
        DrainLocked(*c);
        Disable(*c, true);
      }
      // Off whatever Disable said: the context, and CUPTI's state for it, are
      // going; a later context with the same handle is a new one. Freed when a
      // later context is looked for (ContextStore::Acquire).
      c->live = false;
      ReleaseGpuLocked(c->device_id, c);
      ContextStore::Get().MarkDestroyed(c);
      ContextStore::Get().Release(c);
      return true;
    });
    // A context created after this one may get its handle (a program that
    // creates and destroys contexts in a loop): a new context, sampled too.
    // (seen_ kept it, and the new one went unsampled.)
    std::erase(seen_, ctx);
  }

  void OnModuleLoaded(CUcontext, const CUpti_ModuleResourceData& m) override { lines_.Keep(m); }

  void Collect() override {
    if (watch_) watch_->Collect();  // launches before the samples that follow them
    uint64_t now = 0;
    cuptiGetTimestamp(&now);
    bool drained = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (SamplingContext* c : contexts_)
        if (c->live && now - c->window_start >= drain_ns_) DrainLocked(*c), drained = true;
    }
    if (watch_ && drained) CheckTimeouts(now);
  }

  void BeforeActivityBuffers(capture::ActivityConverter& converter) override {
    if (watch_ && !observing_) watch_->Observe(converter), observing_ = true;
  }

  int EndProgramStatus() const override { return watch_ ? watch_->EndProgramStatus() : 0; }

  void Write(format::SbtWriter& sbt, bool final) override {
    std::vector<Pending> rows;
    std::vector<model::OverheadEvent> drains;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (final) {
        ended_ = true;
        for (SamplingContext* c : contexts_)
          if (c->live) {
            DrainLocked(*c);
            Disable(*c, true);
          }
        // Other processes may sample these GPUs now (the engine keeps the
        // recorder until the next capture), each once none of ours is on.
        for (auto it = device_keys_.begin(); it != device_keys_.end();)
          it = ReleaseGpuLocked(it->first, nullptr) ? device_keys_.begin() : std::next(it);
      }
      rows.swap(pending_);
      drains.swap(drain_rows_);
      for (Pending& p : rows) {  // reasons_ grows under mu_ (a new context's)
        uint32_t& id = reason_ids_[p.reason];
        if (!id) id = sbt.InternString(reasons_[p.reason]);
        p.row.stall_id = id;
      }
    }
    lines_.TakeKept();
    if (watch_) watch_->Write(sbt);
    for (const model::OverheadEvent& o : drains) sbt.Append(o);
    for (Pending& p : rows) {
      p.row.function_id = FunctionId(sbt, p.function);
      lines_.WriteLine(sbt, p.row.cubin_crc, p.row.function_id, p.function, p.row.pc_offset);
      sbt.Append(p.row);
      ++rows_;
    }
    if (final) lines_.SaveReported(output_path_);
  }

  void WriteStats(capture::StatSink& stats) override {
    std::lock_guard<std::mutex> lock(mu_);
    stats.Add("pc_sampling.period_log2", period_);
    stats.Add("pc_sampling.hardware_buffer_mb", hw_buffer_bytes_ >> 20);
    stats.Add("pc_sampling.contexts", contexts_sampled_);
    stats.Add("pc_sampling.samples", samples_);
    stats.Add("pc_sampling.dropped_samples", dropped_, model::kStatDataLoss);
    stats.Add("pc_sampling.hardware_buffer_full", hardware_full_, model::kStatDataLoss);
    stats.Add("pc_sampling.non_user_samples", non_user_);
    stats.Add("pc_sampling.rows", rows_);
    stats.Add("pc_sampling.drains", drains_);
    stats.Add("pc_sampling.drain_max_us", drain_max_ns_ / 1000);
    stats.Add("pc_sampling.drain_total_us", drain_total_ns_ / 1000);
    stats.Add("pc_sampling.drain_ms", drain_ns_ / 1'000'000);
    stats.Add("pc_sampling.drain_pcs", drain_pcs_);
    stats.Add("pc_sampling.get_data_errors", get_data_errors_, model::kStatWarning);
    stats.Add("pc_sampling.enable_failures", enable_failures_, model::kStatWarning);
    stats.Add("pc_sampling.gpus_held_elsewhere", held_elsewhere_.size(), model::kStatWarning);
    stats.Add("pc_sampling.disable_failures", disable_failures_.load(), model::kStatWarning);
    lines_.WriteStats(stats, "pc_sampling");
    if (watch_) watch_->WriteStats(stats);
  }

 private:
  // This process's claim of the device for PC sampling (gpu_claim.h: CUPTI
  // crashed in processes that sampled a GPU another one sampled); "" or why not.
  std::string ClaimGpu(uint32_t device_id) {
    std::string key = "device" + std::to_string(device_id);
    CUdevice dev = 0;
    CUuuid uuid = {};
    if (cuDeviceGet(&dev, int(device_id)) == CUDA_SUCCESS &&
        cuDeviceGetUuid(&uuid, dev) == CUDA_SUCCESS)
      key = capture::FormatGpuUuid(reinterpret_cast<const unsigned char*>(uuid.bytes));
    std::lock_guard<std::mutex> lock(mu_);
    if (ended_) return "the capture ended";
    if (claims_.count(key)) {
      ++enabling_[device_id];
      return "";
    }
    std::string why;
    auto claim = capture::GpuClaim::Take("pc-sampling", key, &why);
    if (!claim) {
      held_elsewhere_.insert(key);
      return why + ": CUPTI serves PC sampling to one process per GPU at a time";
    }
    claims_.emplace(key, std::move(claim));
    device_keys_[device_id] = key;
    ++enabling_[device_id];
    return "";
  }

  // Gives back the claim of `device` when no context of it but `except` is
  // sampled (caller holds mu_); whether it did.
  bool ReleaseGpuLocked(uint32_t device, const SamplingContext* except) {
    auto key = device_keys_.find(device);
    if (key == device_keys_.end()) return false;
    // A context of it between its claim and the end of its Enable (mu_ not
    // held there): not in contexts_ yet, and about to sample.
    if (auto e = enabling_.find(device); e != enabling_.end() && e->second > 0) return false;
    for (const SamplingContext* c : contexts_)
      if (c != except && c->device_id == device && c->live) return false;
    claims_.erase(key->second);
    device_keys_.erase(key);
    return true;
  }

  // Enable, stall reasons, one configuration call; "" or why not.
  std::string Enable(SamplingContext& c) {
    if (c.live) {           // an abandoned capture left it on (or a failed Disable): off first
      CuptiDisable(c.ctx);  // fails where the handle is a new context's: not a failure
      c.live = false;
    }
    CUpti_PCSamplingEnableParams ep = {};
    ep.size = CUpti_PCSamplingEnableParamsSize;
    ep.ctx = c.ctx;
    if (CUptiResult r = cuptiPCSamplingEnable(&ep); r != CUPTI_SUCCESS) {
      std::string why = CuptiError(r);
      if (r == CUPTI_ERROR_INSUFFICIENT_PRIVILEGES)
        why += std::string(" (") + kCountersRestrictedHint + ")";
      return "cuptiPCSamplingEnable: " + why;
    }
    c.live = true;
    size_t n = 0;
    CUpti_PCSamplingGetNumStallReasonsParams np = {};
    np.size = CUpti_PCSamplingGetNumStallReasonsParamsSize;
    np.ctx = c.ctx;
    np.numStallReasons = &n;
    if (CUptiResult r = cuptiPCSamplingGetNumStallReasons(&np); r != CUPTI_SUCCESS || n == 0)
      return Fail(c, "cuptiPCSamplingGetNumStallReasons: " + CuptiError(r));
    std::vector<std::vector<char>> store(n, std::vector<char>(CUPTI_STALL_REASON_STRING_SIZE, 0));
    std::vector<char*> names(n);
    for (size_t i = 0; i < n; ++i) names[i] = store[i].data();
    c.indices.assign(n, 0);
    CUpti_PCSamplingGetStallReasonsParams sp = {};
    sp.size = CUpti_PCSamplingGetStallReasonsParamsSize;
    sp.ctx = c.ctx;
    sp.numStallReasons = n;
    sp.stallReasonIndex = c.indices.data();
    sp.stallReasons = names.data();
    if (CUptiResult r = cuptiPCSamplingGetStallReasons(&sp); r != CUPTI_SUCCESS)
      return Fail(c, "cuptiPCSamplingGetStallReasons: " + CuptiError(r));
    {
      std::lock_guard<std::mutex> lock(mu_);
      c.reason_at.clear();  // a previous capture's positions (reused context)
      for (size_t i = 0; i < n; ++i)
        // Each sample once: not CUPTI's "_not_issued" sub-counts nor its other counters
        // (kept, they counted 32.0 M samples in rows for 23.4 M taken on the H200).
        if (model::IsCountedStall(names[i])) c.reason_at[c.indices[i]] = ReasonPosition(names[i]);
    }
    c.config.Init(kConfigPcs, n);
    c.drain.Init(drain_pcs_, n);
    std::vector<CUpti_PCSamplingConfigurationInfo> v(7);
    for (auto& a : v) std::memset(&a, 0, sizeof a);
    v[0].attributeType = CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_COLLECTION_MODE;
    v[0].attributeData.collectionModeData.collectionMode =
        CUPTI_PC_SAMPLING_COLLECTION_MODE_CONTINUOUS;
    v[1].attributeType = CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_STALL_REASON;
    v[1].attributeData.stallReasonData.stallReasonCount = n;
    v[1].attributeData.stallReasonData.pStallReasonIndex = c.indices.data();
    v[2].attributeType = CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SAMPLING_DATA_BUFFER;
    v[2].attributeData.samplingDataBufferData.samplingDataBuffer = &c.config.data;
    v[3].attributeType = CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SAMPLING_PERIOD;
    v[3].attributeData.samplingPeriodData.samplingPeriod = period_;
    v[4].attributeType =
        CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_WORKER_THREAD_PERIODIC_SLEEP_SPAN;
    v[4].attributeData.workerThreadPeriodicSleepSpanData.workerThreadPeriodicSleepSpan = sleep_ms_;
    v[5].attributeType = CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_OUTPUT_DATA_FORMAT;
    v[5].attributeData.outputDataFormatData.outputDataFormat =
        CUPTI_PC_SAMPLING_OUTPUT_DATA_FORMAT_PARSED;
    v[6].attributeType = CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_HARDWARE_BUFFER_SIZE;
    v[6].attributeData.hardwareBufferSizeData.hardwareBufferSize = hw_buffer_bytes_;
    CUpti_PCSamplingConfigurationInfoParams cp = {};
    cp.size = CUpti_PCSamplingConfigurationInfoParamsSize;
    cp.ctx = c.ctx;
    cp.numAttributes = v.size();
    cp.pPCSamplingConfigurationInfo = v.data();
    if (CUptiResult r = cuptiPCSamplingSetConfigurationAttribute(&cp); r != CUPTI_SUCCESS)
      return Fail(c, "cuptiPCSamplingSetConfigurationAttribute: " + CuptiError(r));
    cuptiGetTimestamp(&c.window_start);
    return "";
  }

  std::string Fail(SamplingContext& c, std::string why) {
    Disable(c, false);
    return why;
  }

  // `take` (caller holds mu_): the records Disable flushes become rows.
  void Disable(SamplingContext& c, bool take) {
    if (!c.live) return;
    if (CuptiDisable(c.ctx) != CUPTI_SUCCESS) {
      // Still on as far as we know: its buffers stay in the ContextStore (CUPTI
      // may still use them) and the next Enable of the context tries again.
      ++disable_failures_;
      return;
    }
    c.live = false;
    if (!take) return;
    uint64_t now = 0;
    cuptiGetTimestamp(&now);
    Take(c, c.config.data, now);  // what Disable flushed into the configuration buffer
  }

  // GetData until CUPTI has nothing more (caller holds mu_).
  void DrainLocked(SamplingContext& c) {
    for (int i = 0; i < kMaxGetDataPerDrain; ++i) {
      c.drain.Reset();  // CUPTI's outputs, or Take would count a previous call's again
      CUpti_PCSamplingGetDataParams gp = {};
      gp.size = CUpti_PCSamplingGetDataParamsSize;
      gp.ctx = c.ctx;
      gp.pcSamplingData = &c.drain.data;
      uint64_t t0 = 0, t1 = 0;
      cuptiGetTimestamp(&t0);
      CUptiResult r = cuptiPCSamplingGetData(&gp);
      cuptiGetTimestamp(&t1);
      drain_max_ns_ = std::max(drain_max_ns_, t1 - t0);
      drain_total_ns_ += t1 - t0;
      // Each call a row of its own: CUPTI holds the program's launches meanwhile.
      model::OverheadEvent o;
      o.start_ns = t0;
      o.end_ns = t1;
      o.pid = pid_;
      o.tid = ThisThreadId();
      o.device_id = c.device_id;
      o.overhead_kind = model::kOverheadPcSamplingDrain;
      if (overhead_rows_) drain_rows_.push_back(o);
      ++drains_;
      if (r != CUPTI_SUCCESS) {
        if (r == CUPTI_ERROR_OUT_OF_MEMORY || c.drain.data.hardwareBufferFull)
          ++hardware_full_;
        else
          ++get_data_errors_;
        c.window_start = t1;
        return;
      }
      Take(c, c.drain.data, t1);
      if (c.drain.data.remainingNumPcs == 0) return;
      std::this_thread::yield();  // a launch waiting on CUPTI goes first
    }
  }

  // One buffer's records into pending rows of the window [window_start, now].
  void Take(SamplingContext& c, CUpti_PCSamplingData& d, uint64_t now) {
    samples_ += d.totalSamples;
    dropped_ += d.droppedSamples;
    non_user_ += d.nonUsrKernelsTotalSamples;
    if (d.hardwareBufferFull) ++hardware_full_;
    const size_t n = std::min(d.totalNumPcs, d.collectNumPcs);
    for (size_t i = 0; i < n; ++i) {
      const CUpti_PCSamplingPCData& pc = d.pPcData[i];
      for (size_t j = 0; j < pc.stallReasonCount; ++j) {
        const CUpti_PCSamplingStallReason& s = pc.stallReason[j];
        auto at = c.reason_at.find(s.pcSamplingStallReasonIndex);
        if (s.samples == 0 || at == c.reason_at.end()) continue;
        Pending p;
        p.row.start_ns = c.window_start;
        p.row.end_ns = std::max(now, c.window_start);
        p.row.samples = s.samples;
        p.row.pc_offset = uint32_t(pc.pcOffset);
        p.row.correlation_id = pc.correlationId;
        p.row.pid = pid_;
        p.row.device_id = c.device_id;
        p.row.cubin_crc = pc.cubinCrc;
        p.function = pc.functionName;
        p.reason = at->second;
        pending_.push_back(p);
        if (watch_)
          watch_->OnSamples(pc.functionName, c.device_id, p.row.start_ns, p.row.end_ns,
                            {pc.cubinCrc, p.row.pc_offset, p.reason, s.samples});
      }
    }
    d.totalNumPcs = d.remainingNumPcs = 0;
    c.window_start = now;
  }

  uint32_t ReasonPosition(const char* name) {
    for (size_t i = 0; i < reasons_.size(); ++i)
      if (reasons_[i] == name) return uint32_t(i);
    reasons_.push_back(name);
    reason_ids_.push_back(0);
    return uint32_t(reasons_.size() - 1);
  }

  uint32_t FunctionId(format::SbtWriter& sbt, const char* f) {
    auto [it, fresh] = function_ids_.emplace(f, 0);
    if (fresh) it->second = sbt.InternString(f ? f : "(unknown function)");
    return it->second;
  }

  // --kernel-timeout: after a drain, with the lines and stall names it prints
  // (writer thread).
  void CheckTimeouts(uint64_t now) {
    lines_.TakeKept();
    watch_->Check(
        now,
        [this](uint64_t crc, const char* function, uint32_t pc) {
          std::string path;
          uint32_t line = 0;
          if (!lines_.Lookup(crc, function, pc, &path, &line)) return std::string();
          return path + ":" + std::to_string(line);
        },
        [this](uint32_t reason) {
          std::lock_guard<std::mutex> lock(mu_);
          return reason < reasons_.size() ? std::string(model::ShortStallName(reasons_[reason]))
                                          : std::string("?");
        });
  }

  const bool overhead_rows_;  // the overhead group is captured (not -x overhead): drain rows
  const uint32_t pid_, period_;
  const bool quiet_;
  const std::string output_path_;
  const uint64_t hw_buffer_bytes_;  // TRACESMITH_PC_SAMPLING_HW_BUFFER_MB or DefaultHwBufferMb
  const uint32_t sleep_ms_;         // CUPTI's worker thread
  const uint64_t drain_ns_;         // a GetData round (a row window) this often
  const uint32_t drain_pcs_;        // PC records per GetData call
  std::mutex mu_;                   // contexts_, pending_, the counters (callbacks and the writer)
  std::vector<model::OverheadEvent> drain_rows_;  // the GetData calls since the last Write
  std::vector<SamplingContext*> contexts_;        // the ContextStore's, released at destruction
  bool ended_ = false;                            // the final Write ran
  std::vector<CUcontext> seen_;  // the live contexts OnContextCreated was given (mu_)
  bool context_seen_ = false;    // OnContextCreated was called (mu_)
  bool edge_seen_ = false;       // OnCaptureEdge: the first edge was seen
  std::vector<Pending> pending_;
  std::vector<std::string> reasons_;  // stall reason names, shared by every context
  std::vector<uint32_t> reason_ids_;  // their string ids (0: not interned yet)
  CubinLines lines_;                  // source lines, cubins kept and saved
  std::unordered_map<const char*, uint32_t> function_ids_;  // writer thread
  uint64_t samples_ = 0, dropped_ = 0, non_user_ = 0, hardware_full_ = 0;
  uint64_t rows_ = 0, drains_ = 0, drain_max_ns_ = 0, drain_total_ns_ = 0, get_data_errors_ = 0;
  uint64_t enable_failures_ = 0, contexts_sampled_ = 0;
  // This capture's claims of GPUs (gpu_claim.h), by UUID; each device's UUID;
  // the GPUs another process held.
  std::map<std::string, std::unique_ptr<capture::GpuClaim>> claims_;
  std::map<uint32_t, std::string> device_keys_;
  std::map<uint32_t, int> enabling_;  // by device: contexts between ClaimGpu and their Enable's end
  std::set<std::string> held_elsewhere_;
  std::atomic<uint64_t> disable_failures_{0};  // Disable runs with and without mu_
  std::unique_ptr<KernelTimeoutWatch> watch_;  // --kernel-timeout
  bool observing_ = false;
};

}  // namespace

std::unique_ptr<capture::Recorder> MakePcSamplingRecorder(const capture::RecorderContext& context) {
  if (!context.options || context.options->pc_sampling == 0 || !context.subscribed) return nullptr;
  return std::make_unique<PcSamplingRecorder>(
      context.pid, context.options->pc_sampling, context.options->quiet, context.output_path,
      context.options->kernel_timeout_ns, context.options->flush_ms,
      context.options->kernel_timeout_exit, context.options->tuning,
      (context.options->groups & capture::kGroupOverhead) != 0);
}

}  // namespace tracesmith::hardware
