#include "measured_runs.h"

namespace tracesmith::replay::gpu {

Status TimedRun(const MeasuredWork& w, TimedSamples* samples) {
  StreamAndEvents& se = w.se;
  RETURN_IF_ERROR(se.Close());
  struct OpenOnExit {  // an error below must not leave the stream waiting
    StreamAndEvents& se;
    ~OpenOnExit() { se.Open(); }
  } open_on_exit{se};
  CU_CALL(cuEventRecord(se.start(), se.stream()));
  RETURN_IF_ERROR(w.run());
  CU_CALL(cuEventRecord(se.stop(), se.stream()));
  se.Open();
  CU_CALL(cuEventSynchronize(se.stop()));
  float ms = 0;
  CU_CALL(cuEventElapsedTime(&ms, se.start(), se.stop()));
  samples->event_us.push_back(double(ms) * 1000.0);
  if (uint64_t ns = w.timer.LastKernelNs(); ns && w.kernel_time)
    samples->cupti_us.push_back(double(ns) / 1000.0);
  return OkStatus();
}

Status DownloadOutput(const MeasuredWork& w, size_t k, std::vector<uint8_t>* host) {
  return DownloadRange(*w.after[k], w.relocation, host);
}

Status CompareWithCapture(const MeasuredWork& w, size_t k, const std::vector<uint8_t>& host,
                          LaunchOutcome* out) {
  // Pointers the work left or wrote are rewritten like the inputs.
  ASSIGN_OR_RETURN(Image want,
                   ImageOf(w.cap, *w.after[k], w.relocation, "after snapshot", nullptr));
  out->vs_capture.Merge(CompareBytes(want.bytes, host, w.after[k]->address));
  return OkStatus();
}

Status MeasureColdRuns(const MeasuredWork& w, const GpuReplayOptions& o,
                       std::chrono::steady_clock::time_point setup_start, ReplayProgress* progress,
                       LaunchOutcome* out, ColdOutputs* outputs) {
  RETURN_IF_ERROR(w.start_state(true));
  CU_CALL(cuCtxSynchronize());
  out->setup_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - setup_start)
          .count();
  // Warm-up: an idle GPU runs at low clocks for the first milliseconds, and
  // the first launch of a module pays for loading it. ~20 ms of runs, each
  // on the restored state (work may not survive its own outputs).
  auto t0 = std::chrono::steady_clock::now();
  for (int n = 0; n < 1000 && std::chrono::steady_clock::now() - t0 < std::chrono::milliseconds(20);
       ++n) {
    RETURN_IF_ERROR(w.start_state(false));
    CU_CALL(cuCtxSynchronize());  // restores may run on the legacy stream
    RETURN_IF_ERROR(w.run());
    CU_CALL(cuStreamSynchronize(w.se.stream()));
  }
  (void)w.timer.LastKernelNs();  // drop the untimed runs' records
  // Cold runs: the state restored, then the L2 flushed (queued ahead of the
  // timed span on the same stream).
  const size_t ranges = w.after.size();
  outputs->first.assign(ranges, {});
  outputs->last.assign(ranges, {});
  outputs->varying.assign(w.track_varying ? ranges : 0, {});
  TimedSamples samples;
  for (uint32_t it = 0; it < o.iterations; ++it) {
    RETURN_IF_ERROR(w.start_state(false));
    CU_CALL(cuCtxSynchronize());
    RETURN_IF_ERROR(w.flusher.Enqueue(w.se.stream()));
    RETURN_IF_ERROR(TimedRun(w, &samples));
    RunVsFirst vs_first;
    for (size_t k = 0; k < ranges; ++k) {
      std::vector<uint8_t>& host = it == 0 ? outputs->first[k] : outputs->last[k];
      RETURN_IF_ERROR(DownloadOutput(w, k, &host));
      if (it == 0) {
        if (w.compare_with_capture) RETURN_IF_ERROR(CompareWithCapture(w, k, host, out));
        continue;
      }
      CompareResult c = CompareBytes(outputs->first[k], host, w.after[k]->address);
      vs_first.Add(c);
      if (w.track_varying && !c.identical())
        AddVaryingBits(outputs->first[k], host, &outputs->varying[k]);
    }
    vs_first.Close(out);
    ReportRuns(o, progress, it + 1);
  }
  samples.Summarize(&out->time, &out->event_time, &out->time_from_cupti);
  return OkStatus();
}

}  // namespace tracesmith::replay::gpu
