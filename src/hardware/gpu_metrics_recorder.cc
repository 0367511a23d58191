// GPU hardware metrics over time (profile --gpu-metrics, issue #40): CUPTI
// PM sampling on every device the program uses, one sample of each metric
// every --gpu-metrics-interval of GPU time, as GpuMetricSample rows with a
// GpuMetric row naming each metric (model/records.h).
//
// Threads: the program's threads only note a device's first context and its
// last one's end (context callbacks); a decode thread of the recorder does
// every PM sampling call: a device's set-up (pm_sampling.h; the context
// callback waits for it, at most kSetupWaitMs, so the first kernels are
// sampled), its decode every decode period (kDecodePeriodNs), and its end (Stop, last
// decode, Disable) when the capture ends; when the device's last context is
// destroyed first, that end runs on the destroying thread, in the callback,
// once the decode thread is out of CUPTI (Device::busy). Decoded
// samples wait for the writer thread (Write) in a bounded queue: beyond
// kMaxPendingRows rows are dropped and counted. A hardware buffer overflow
// (the decode fell behind) loses samples: counted, said once, and sampling
// restarted.
#include <cuda.h>
#include <cupti.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "pm_sampling.h"
#include "tracesmith/capture/background_thread.h"
#include "tracesmith/capture/recorder.h"

namespace tracesmith::hardware {
namespace {

constexpr uint64_t kDecodePeriodNs = 10'000'000;  // a decode of every device per 10 ms
constexpr size_t kMaxPendingRows = 1u << 21;      // 2 M rows (80 MB) waiting for the writer
constexpr int kSetupWaitMs = 5000;                // a context callback waits this long at most
constexpr int kEndWaitMs = 3000;                  // the end of sampling, waited for at most
constexpr uint64_t kDefaultHardwareBufferBytes = 64ull << 20;

class GpuMetricsRecorder;

// The recorders whose decode thread runs, ended by an exit handler that
// std::atexit registers once the first device's set-up has called
// cuptiProfilerInitialize: after the CUDA runtime's and CUPTI's own handlers,
// so it runs before they tear down (handlers run last-registered first).
// Ended later, from the capture's own exit handler, the decode thread spun for
// ever inside cuptiPmSamplingDecodeData or cuptiPmSamplingStop (H200,
// 2026-11-29: the program never exited, or ended by the 3-s bound).
std::mutex g_live_mu;
std::vector<GpuMetricsRecorder*> g_live;
void EndLiveRecordersAtExit();

struct Device {
  uint32_t index = 0;
  int contexts = 0;  // live contexts on it
  // kEnding: the decode thread ends it; kClosing: the thread of the last
  // context's destruction does (OnContextDestroying), the decode thread
  // leaves it alone.
  enum class State : uint8_t { kWaiting, kOpen, kEnding, kClosing, kDone } state = State::kWaiting;
  bool busy = false;  // the decode thread is in a CUPTI call with it (without mu_)
  // Its first context (from the context callback; null for a capture started
  // after it): current on the decode thread around its CUPTI calls.
  CUcontext ctx = nullptr;
  std::unique_ptr<PmSamplingDevice> session;  // decode thread only
  std::vector<uint32_t> metric_ids;           // per kept metric
  uint64_t last_end_ns = 0;                   // of the last sample decoded
};

class GpuMetricsRecorder final : public capture::Recorder {
 public:
  GpuMetricsRecorder(uint32_t pid, capture::GpuMetricsRequest request, uint64_t interval_ns,
                     uint64_t hw_buffer_bytes, const capture::CaptureTuning& tuning, bool quiet)
      : pid_(pid),
        request_(std::move(request)),
        quiet_(quiet),
        batch_thread_(tuning.batch_threads),
        decode_period_ns_(tuning.gpu_metrics_decode_ms
                              ? uint64_t(tuning.gpu_metrics_decode_ms) * 1'000'000
                              : kDecodePeriodNs) {
    {
      std::lock_guard<std::mutex> lock(g_live_mu);
      g_live.push_back(this);
    }
    settings_.interval_ns = interval_ns;
    settings_.hardware_buffer_bytes = hw_buffer_bytes;
    // Room for four decode periods of samples in the counter data image (a
    // decode that finds it full decodes again). Not more: on the H200 an image
    // takes ~53 KB per sample of the default set, and each decode re-initialises
    // it whole (18 ms for 1,024 samples); images of 10 s of samples killed the
    // program.
    settings_.max_samples =
        tuning.gpu_metrics_image_samples
            ? tuning.gpu_metrics_image_samples
            : uint32_t(std::clamp<uint64_t>(4 * decode_period_ns_ / interval_ns, 64, 4096));
  }
  ~GpuMetricsRecorder() override {
    {
      std::lock_guard<std::mutex> lock(g_live_mu);
      g_live.erase(std::remove(g_live.begin(), g_live.end(), this), g_live.end());
    }
    StopThread();
  }

  // The decode thread's end: every device's last decode and Disable, waited
  // for kEndWaitMs at most: on the H200 a CUPTI call of that end (Stop,
  // DecodeData) sometimes never returned (spinning); the thread is then left
  // behind (detached; the process's exit ends it), what it had not decoded
  // is lost and counted, and the trace is still written.
  void StopThread() {
    std::unique_lock<std::mutex> lock(mu_);
    stop_ = true;
    wake_.notify_all();
    if (!thread_.joinable()) return;
    if (!settled_.wait_for(lock, std::chrono::milliseconds(kEndWaitMs),
                           [&] { return thread_ended_; })) {
      ++end_timeouts_;
      std::string where;
      for (const auto& [index, d] : devices_)
        if (d.session && !d.session->EndProgress().empty())
          where += "; device " + std::to_string(index) + ": in " + d.session->EndProgress();
      Say("GPU metrics: sampling did not end within " + std::to_string(kEndWaitMs) +
          " ms (a CUPTI call did not return): the samples not yet decoded are lost" + where);
      lock.unlock();
      thread_.detach();
      return;
    }
    lock.unlock();
    thread_.join();
  }

  const char* name() const override { return "gpumetrics"; }

  void Claim(capture::CallbackClaims& claims) override {
    claims.ContextCreated();
    claims.ContextDestroys();
  }

  void OnContextCreated(CUcontext ctx) override {
    uint32_t dev = 0;
    if (cuptiGetDeviceId(ctx, &dev) == CUPTI_SUCCESS) AddDevice(dev, ctx);
  }

  // The capture's start (an in-process capture started after the program's
  // contexts exist): the devices whose primary context is active.
  void OnCaptureEdge() override {
    // The first edge is the start of an in-process capture (Session), or the
    // end of an injected one (which starts inside cuInit, before any context:
    // its GPUs come from the context callbacks, seen by then).
    if (edge_seen_) return;
    edge_seen_ = true;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!devices_.empty() || stop_) return;
    }
    int n = 0;
    if (cuDeviceGetCount(&n) != CUDA_SUCCESS) return;  // no cuInit yet: at context creation
    for (int i = 0; i < n; ++i) {
      CUdevice dev = 0;
      unsigned int flags = 0;
      int active = 0;
      if (cuDeviceGet(&dev, i) == CUDA_SUCCESS &&
          cuDevicePrimaryCtxGetState(dev, &flags, &active) == CUDA_SUCCESS && active)
        AddDevice(uint32_t(i));
    }
  }

  void OnContextDestroying(CUcontext ctx) override {
    uint32_t dev = 0;
    if (cuptiGetDeviceId(ctx, &dev) != CUPTI_SUCCESS) return;
    std::unique_lock<std::mutex> lock(mu_);
    auto it = devices_.find(dev);
    if (it == devices_.end() || --it->second.contexts > 0) return;
    Device& d = it->second;
    if (d.state != Device::State::kOpen) return;
    // The last decode and the end of sampling here, on this thread, while the
    // context still exists: handed to the decode thread, they raced the
    // context's destruction and the process's exit (on the H200 the program
    // then hung at exit, a thread spinning, or died of SIGSEGV).
    d.state = Device::State::kClosing;
    if (!settled_.wait_for(lock, std::chrono::milliseconds(kSetupWaitMs),
                           [&] { return !d.busy; })) {
      ++close_timeouts_;  // the decode thread is still in CUPTI with it: not closed
      return;
    }
    std::unique_ptr<PmSamplingDevice> session = std::move(d.session);
    lock.unlock();
    PmDecodeResult last = session ? session->Close() : PmDecodeResult{};
    session.reset();
    lock.lock();
    Take(d, last);
    d.state = Device::State::kDone;
  }

  // Sampling ends while CUPTI's activities are still on: once they were off,
  // cuptiPmSamplingStop never returned (H200, CUDA 13.0, 2026-11-29: the
  // decode thread spinning in NVPW_GPU_PeriodicSampler_StopSampling; the same
  // calls outside TraceSmith returned in 1.7 ms: gpu/probes/pm_stop_probe.cu).
  void BeforeCaptureEnd() override { StopThread(); }

  void Write(format::SbtWriter& sbt, bool final) override {
    if (final) StopThread();
    std::vector<model::GpuMetricSample> rows;
    std::vector<std::pair<std::string, std::string>> notes;
    std::vector<capture::ChosenGpuMetric> new_metrics;
    {
      std::lock_guard<std::mutex> lock(mu_);
      rows.swap(pending_);
      notes.swap(notes_);
      new_metrics.assign(metrics_.begin() + long(metrics_written_), metrics_.end());
      metrics_written_ = metrics_.size();
    }
    for (size_t i = 0; i < new_metrics.size(); ++i) {
      const capture::ChosenGpuMetric& m = new_metrics[i];
      model::GpuMetric g;
      g.metric_id = uint32_t(metrics_written_ - new_metrics.size() + i + 1);
      g.pid = pid_;
      g.name_id = sbt.InternString(m.name);
      g.label_id = m.label == m.name ? 0 : sbt.InternString(m.label);
      g.unit_id = m.unit.empty() ? 0 : sbt.InternString(m.unit);
      sbt.Append(g);
    }
    for (const auto& [key, value] : notes) {
      model::MetadataEntry e;
      e.key_id = sbt.InternString(key);
      e.value_id = sbt.InternString(value);
      e.pid = pid_;
      sbt.Append(e);
    }
    for (const model::GpuMetricSample& r : rows) sbt.Append(r);
    rows_written_ += rows.size();
  }

  void WriteStats(capture::StatSink& stats) override {
    std::lock_guard<std::mutex> lock(mu_);
    stats.Add("gpu_metrics.interval_ns", settings_.interval_ns);
    stats.Add("gpu_metrics.devices", devices_open_);
    stats.Add("gpu_metrics.metrics", metrics_.size());
    stats.Add("gpu_metrics.samples", samples_);
    stats.Add("gpu_metrics.rows", rows_written_);
    stats.Add("gpu_metrics.hardware_buffer_overflows", overflows_, model::kStatDataLoss);
    stats.Add("gpu_metrics.rows_dropped", rows_dropped_, model::kStatDataLoss);
    stats.Add("gpu_metrics.samples_unreadable", bad_samples_, model::kStatWarning);
    // Samples further apart than the interval are samples the GPU did not
    // keep: at 100 us with the default set on the H200, 24 gaps (1.05 s of a
    // 3.7-s run) with no overflow reported by CUPTI (2026-11-29).
    stats.Add("gpu_metrics.sample_gaps", gaps_, model::kStatDataLoss);
    stats.Add("gpu_metrics.sample_gap_ns", gap_ns_);
    stats.Add("gpu_metrics.decode_errors", decode_errors_, model::kStatWarning);
    stats.Add("gpu_metrics.enable_failures", enable_failures_, model::kStatWarning);
    stats.Add("gpu_metrics.setup_wait_timeouts", setup_wait_timeouts_, model::kStatWarning);
    stats.Add("gpu_metrics.close_wait_timeouts", close_timeouts_, model::kStatWarning);
    stats.Add("gpu_metrics.end_timeouts", end_timeouts_, model::kStatDataLoss);
    stats.Add("gpu_metrics.decodes", decodes_);
    stats.Add("gpu_metrics.decode_max_us", decode_max_ns_ / 1000);
    // Where the decode thread's time went: copying the hardware buffer out,
    // and evaluating the samples' values (per sample: evaluate_us / samples).
    stats.Add("gpu_metrics.decode_raw_us", raw_ns_ / 1000);
    stats.Add("gpu_metrics.decode_calls", decode_calls_);
    stats.Add("gpu_metrics.evaluate_us", evaluate_ns_ / 1000);
    stats.Add("gpu_metrics.image_init_us", init_ns_ / 1000);
    stats.Add("gpu_metrics.decode_period_us", decode_period_ns_ / 1000);
    stats.Add("gpu_metrics.max_samples_per_image", settings_.max_samples);
    stats.Add("gpu_metrics.counter_data_bytes", counter_data_bytes_);
  }

 private:
  // A device's first context: its set-up on the decode thread, waited for
  // (so that the first kernels are sampled).
  void AddDevice(uint32_t dev, CUcontext ctx = nullptr) {
    std::unique_lock<std::mutex> lock(mu_);
    if (stop_) return;  // the capture has ended
    Device& d = devices_[dev];
    d.index = dev;
    if (ctx && !d.ctx) d.ctx = ctx;
    if (d.contexts++ > 0 || d.state != Device::State::kWaiting) return;
    if (!thread_.joinable()) thread_ = std::thread([this] { DecodeLoop(); });
    wake_.notify_all();
    if (!settled_.wait_for(lock, std::chrono::milliseconds(kSetupWaitMs),
                           [&] { return d.state != Device::State::kWaiting || stop_; }))
      ++setup_wait_timeouts_;
  }

  void Say(const std::string& line) {
    if (!quiet_) std::fprintf(stderr, "tracesmith: %s\n", line.c_str());
  }

  // Decode thread: set-ups, decodes and ends, until the capture ends.
  void DecodeLoop() {
    capture::RunAsBackgroundThread(batch_thread_);
    std::unique_lock<std::mutex> lock(mu_);
    while (true) {
      for (auto& [index, d] : devices_) {
        if (d.state == Device::State::kWaiting && !stop_) Open(lock, d);
        if (d.state == Device::State::kEnding) Close(lock, d);
      }
      settled_.notify_all();
      if (stop_) break;
      for (auto& [index, d] : devices_)
        if (d.state == Device::State::kOpen) DecodeDevice(lock, d);
      wake_.wait_for(lock, std::chrono::nanoseconds(decode_period_ns_));
    }
    for (auto& [index, d] : devices_)
      if (d.state == Device::State::kOpen || d.state == Device::State::kEnding) Close(lock, d);
    thread_ended_ = true;
    settled_.notify_all();
  }

  // CUPTI calls run without the lock (the callbacks wait on it).
  void Open(std::unique_lock<std::mutex>& lock, Device& d) {
    const uint32_t index = d.index;
    MakeCurrent(d);
    lock.unlock();
    auto session = std::make_unique<PmSamplingDevice>(index);
    Status st = session->Open(request_, settings_);
    // After Open's cuptiProfilerInitialize, so that the handler runs before
    // the one CUPTI registers there (handlers run last-registered first).
    static std::once_flag registered;
    std::call_once(registered, [] { std::atexit(EndLiveRecordersAtExit); });
    std::vector<std::string> lines = capture::DescribeGpuMetricChoice(session->choice());
    lock.lock();
    std::string described;
    for (const std::string& l : lines) described += (described.empty() ? "" : "; ") + l;
    const std::string where = "device " + std::to_string(index) +
                              (session->chip().empty() ? "" : " (" + session->chip() + ")");
    if (!st.ok()) {
      ++enable_failures_;
      d.state = Device::State::kDone;
      notes_.emplace_back("gpu_metrics.device" + std::to_string(index), "off: " + st.message());
      Say("GPU metrics are off on " + where + ": " + st.message() +
          "; the capture goes on without them");
      return;
    }
    for (const capture::ChosenGpuMetric& m : session->choice().kept)
      d.metric_ids.push_back(MetricId(m));
    d.session = std::move(session);
    d.state = Device::State::kOpen;
    ++devices_open_;
    counter_data_bytes_ = std::max<uint64_t>(counter_data_bytes_, d.session->counter_data_bytes());
    notes_.emplace_back("gpu_metrics.device" + std::to_string(index), described);
    Say("GPU metrics on " + where + ", every " + std::to_string(settings_.interval_ns / 1000) +
        " us: " + described);
  }

  // The device's context current on the decode thread (CUPTI's PM sampling
  // calls are per device; a context current is what NVIDIA's sample has).
  static void MakeCurrent(const Device& d) {
    if (d.ctx) cuCtxSetCurrent(d.ctx);
  }

  void Close(std::unique_lock<std::mutex>& lock, Device& d) {
    MakeCurrent(d);
    PmSamplingDevice* s = d.session.get();
    d.busy = true;
    lock.unlock();
    PmDecodeResult last = s ? s->Close() : PmDecodeResult{};
    lock.lock();
    d.busy = false;
    settled_.notify_all();
    Take(d, last);
    d.state = Device::State::kDone;
  }

  void DecodeDevice(std::unique_lock<std::mutex>& lock, Device& d) {
    MakeCurrent(d);
    PmSamplingDevice* s = d.session.get();
    d.busy = true;
    lock.unlock();
    const auto t0 = std::chrono::steady_clock::now();
    PmDecodeResult r = s->Decode();
    const uint64_t took = uint64_t(
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0)
            .count());
    Status restarted = OkStatus();
    if (r.overflow) restarted = s->Restart();
    lock.lock();
    d.busy = false;
    settled_.notify_all();
    ++decodes_;
    decode_max_ns_ = std::max(decode_max_ns_, took);
    Take(d, r);
    if (r.overflow && overflows_ == 1)
      Say("GPU metrics: device " + std::to_string(d.index) +
          "'s sample buffer overflowed (the decode fell behind): samples were lost; a longer "
          "--gpu-metrics-interval or fewer metrics avoid it");
    if (!restarted.ok()) {
      Say("GPU metrics: sampling could not restart on device " + std::to_string(d.index) +
          " after the overflow: " + restarted.message());
      if (d.state == Device::State::kOpen) d.state = Device::State::kEnding;
    }
  }

  // A decode's samples into pending rows (caller holds mu_).
  void Take(Device& d, const PmDecodeResult& r) {
    overflows_ += r.overflow;
    bad_samples_ += r.bad_samples;
    raw_ns_ += r.raw_ns;
    evaluate_ns_ += r.evaluate_ns;
    init_ns_ += r.init_ns;
    decode_calls_ += r.calls;
    if (!r.error.empty() && decode_errors_++ == 0)
      Say("GPU metrics: decoding device " + std::to_string(d.index) + "'s samples: " + r.error);
    for (const PmSample& s : r.samples) {
      ++samples_;
      if (d.last_end_ns && s.start_ns > d.last_end_ns + settings_.interval_ns / 2) {
        ++gaps_;
        gap_ns_ += s.start_ns - d.last_end_ns;
      }
      d.last_end_ns = std::max(d.last_end_ns, s.end_ns);
      for (size_t m = 0; m < s.values.size() && m < d.metric_ids.size(); ++m) {
        if (pending_.size() >= kMaxPendingRows) {
          ++rows_dropped_;
          continue;
        }
        model::GpuMetricSample row;
        row.start_ns = s.start_ns;
        row.end_ns = s.end_ns;
        row.value = s.values[m];
        row.pid = pid_;
        row.device_id = d.index;
        row.metric_id = d.metric_ids[m];
        pending_.push_back(row);
      }
    }
  }

  // One id per (name, label, unit) in the process (caller holds mu_).
  uint32_t MetricId(const capture::ChosenGpuMetric& m) {
    for (size_t i = 0; i < metrics_.size(); ++i)
      if (metrics_[i] == m) return uint32_t(i + 1);
    metrics_.push_back(m);
    return uint32_t(metrics_.size());
  }

  const uint32_t pid_;
  const capture::GpuMetricsRequest request_;
  const bool quiet_;
  const bool batch_thread_;  // the decode thread under SCHED_BATCH (background_thread.h)
  const uint64_t decode_period_ns_;
  PmSamplingSettings settings_;
  std::mutex mu_;  // everything below (callbacks, decode thread, writer)
  std::condition_variable wake_, settled_;
  std::thread thread_;
  bool stop_ = false;
  bool thread_ended_ = false;  // DecodeLoop returned (StopThread waits for it, bounded)
  bool edge_seen_ = false;     // OnCaptureEdge: the start was seen
  std::map<uint32_t, Device> devices_;
  std::vector<capture::ChosenGpuMetric> metrics_;  // by id - 1
  size_t metrics_written_ = 0;
  std::vector<model::GpuMetricSample> pending_;
  std::vector<std::pair<std::string, std::string>> notes_;  // metadata rows to write
  uint64_t samples_ = 0, rows_written_ = 0, rows_dropped_ = 0, overflows_ = 0, bad_samples_ = 0;
  uint64_t gaps_ = 0, gap_ns_ = 0, decode_errors_ = 0, enable_failures_ = 0;
  uint64_t setup_wait_timeouts_ = 0, devices_open_ = 0, decodes_ = 0, decode_max_ns_ = 0;
  uint64_t raw_ns_ = 0, evaluate_ns_ = 0, init_ns_ = 0, decode_calls_ = 0, close_timeouts_ = 0,
           end_timeouts_ = 0;
  uint64_t counter_data_bytes_ = 0;  // the largest device's counter data image
};

void EndLiveRecordersAtExit() {
  // Under the lock: a recorder is not destroyed while it is stopped here.
  std::lock_guard<std::mutex> lock(g_live_mu);
  for (GpuMetricsRecorder* r : g_live) r->StopThread();
}

}  // namespace

std::unique_ptr<capture::Recorder> MakeGpuMetricsRecorder(const capture::RecorderContext& context) {
  if (!context.options || !context.subscribed) return nullptr;
  const capture::CaptureOptions& o = *context.options;
  if (o.gpu_metrics.kind != capture::GpuMetricsRequest::Kind::kDefault &&
      o.gpu_metrics.kind != capture::GpuMetricsRequest::Kind::kNames)
    return nullptr;
  const uint64_t hw = o.tuning.gpu_metrics_hw_buffer_mb
                          ? uint64_t(o.tuning.gpu_metrics_hw_buffer_mb) << 20
                          : kDefaultHardwareBufferBytes;
  return std::make_unique<GpuMetricsRecorder>(context.pid, o.gpu_metrics, o.gpu_metrics_interval_ns,
                                              hw, o.tuning, o.quiet);
}

}  // namespace tracesmith::hardware
