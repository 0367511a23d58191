// The PC sampling recorder's lifecycle (src/capture/pc_sampling_recorder.cc)
// without a GPU: its sources linked against a fake CUPTI and driver
// (fake_cupti_pcsampling.h) that, like real CUPTI might, writes into the
// sampling data buffer a context was last configured with at every Enable and
// Disable. Several in-process captures in turn, a failed Disable, a context
// created after the final write, a destroyed context and its handle reused,
// and CUPTI's outputs of one GetData not counted again at the next. Under the
// asan preset a buffer freed while CUPTI still has it is a heap-use-after-free
// (the crash once seen on the GPU with several captures in one process).
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>

#include "capture/fake_cupti_pcsampling.h"
#include "testing/temp_file.h"
#include "tracesmith/capture/gpu_claim.h"
#include "tracesmith/capture/recorder.h"
#include "tracesmith/format/sbt_reader.h"
#include "tracesmith/format/sbt_writer.h"
#include "tracesmith/model/event_names.h"

// ASan's: whether `addr` is poisoned (freed); absent (null) without ASan. The
// test units are not instrumented, the recorder's sources are (asan preset).
extern "C" int __asan_address_is_poisoned(const volatile void* addr) __attribute__((weak));

namespace tracesmith::hardware {

std::unique_ptr<capture::Recorder> MakePcSamplingRecorder(const capture::RecorderContext& context);

namespace {

namespace fake = fake_cupti;

constexpr uint32_t kPid = 4242;
constexpr uint64_t kPastDrain = 25'000'000;  // more than the recorder's 20 ms between drains
// Rows and counted samples of one GetData, and of Disable's flush (one record).
constexpr size_t kDrainRows = fake::kPcsPerGetData * fake::kRowsPerPc;
constexpr uint64_t kDrainSamples = fake::kPcsPerGetData * fake::kCountedSamplesPerPc;
constexpr size_t kFlushRows = fake::kRowsPerPc;
constexpr uint64_t kFlushSamples = fake::kCountedSamplesPerPc;

// A handle the fake knows no other test to use (the recorder's ContextStore
// is the process's).
CUcontext Ctx(uintptr_t v) { return reinterpret_cast<CUcontext>(v); }

int64_t Stat(const model::Trace& t, std::string_view name) {
  for (const model::Stat& s : t.Rows<model::Stat>())
    if (t.strings.Get(s.name_id) == name) return s.value;
  return -1;
}

uint64_t Samples(const model::Trace& t) {
  uint64_t n = 0;
  for (const model::PcSampleEvent& e : t.Rows<model::PcSampleEvent>()) n += e.samples;
  return n;
}

// The process's GPU claims (gpu_claim.h) in a directory of this test run's
// own: other test processes (another build's run of this test) claim the
// fake's GPU too.
void UseOwnLockDir() {
  static const bool set = [] {
    static const testing::TempPath path("_locks");
    static const struct Dir {  // removed with what is in it at exit
      std::string path;
      ~Dir() { std::filesystem::remove_all(path); }
    } dir{path.path()};
    std::filesystem::create_directories(dir.path);
    return setenv("TRACESMITH_LOCK_DIR", dir.path.c_str(), 1) == 0;
  }();
  (void)set;
}

// The fake device's UUID (fake_cupti_pcsampling.cc: cuDeviceGetUuid_v2).
constexpr const char* kFakeGpu = "GPU-a0a1a2a3-a4a5-a6a7-a8a9-aaabacadaeaf";

// One capture: a PC sampling recorder as the engine makes it, writing to a
// temporary trace.
class Capture {
 public:
  explicit Capture(uint32_t groups = capture::CaptureOptions{}.groups) {
    UseOwnLockDir();
    options_.pc_sampling = 15;
    options_.groups = groups;
    capture::RecorderContext context;
    context.pid = kPid;
    context.options = &options_;
    context.subscribed = true;
    recorder_ = MakePcSamplingRecorder(context);
    auto sbt = format::SbtWriter::Open(path_.path());
    EXPECT_TRUE(sbt.ok()) << sbt.status().ToString();
    if (sbt.ok()) sbt_ = std::move(*sbt);
  }
  capture::Recorder& operator*() { return *recorder_; }
  capture::Recorder* operator->() { return recorder_.get(); }

  // The writer's poll past the drain interval.
  void Drain() {
    fake::AdvanceClock(kPastDrain);
    recorder_->Collect();
  }
  void WriteFinal() { recorder_->Write(*sbt_, /*final=*/true); }
  // The end of a capture: the final flush (unless done), the stats, the
  // recorder destroyed; the trace read back.
  model::Trace End(bool final_written = false) {
    if (!final_written) WriteFinal();
    capture::StatSink stats(sbt_.get(), kPid);
    recorder_->WriteStats(stats);
    recorder_.reset();
    EXPECT_TRUE(sbt_->Close().ok());
    auto trace = format::ReadTraceFile(path_.path());
    EXPECT_TRUE(trace.ok()) << trace.status().ToString();
    return trace.ok() ? std::move(*trace) : model::Trace{};
  }

 private:
  capture::CaptureOptions options_;
  testing::TempPath path_;
  std::unique_ptr<format::SbtWriter> sbt_;
  std::unique_ptr<capture::Recorder> recorder_;
};

// A capture of `ctx` with one drain: its rows and samples.
void ExpectOneDrainAndFlush(const model::Trace& t) {
  EXPECT_EQ(t.Rows<model::PcSampleEvent>().size(), 2 * kDrainRows + kFlushRows);
  EXPECT_EQ(Samples(t), 2 * kDrainSamples + kFlushSamples);
  EXPECT_EQ(Stat(t, "pc_sampling.contexts"), 1);
  EXPECT_EQ(Stat(t, "pc_sampling.samples"),
            int64_t((2 * fake::kPcsPerGetData + 1) * fake::kTotalSamplesPerPc));
  EXPECT_EQ(Stat(t, "pc_sampling.enable_failures"), 0);
  EXPECT_EQ(Stat(t, "pc_sampling.disable_failures"), 0);
  for (const model::PcSampleEvent& e : t.Rows<model::PcSampleEvent>()) {
    EXPECT_EQ(t.strings.Get(e.function_id), fake::kFunction);
    EXPECT_EQ(e.pid, kPid);
  }
}

// (i) The crash seen on the GPU: two in-process captures in turn on one
// context. The second's Enable makes CUPTI write into the buffer the first
// configured, which must still be there.
TEST(PcSamplingLifecycle, CapturesInTurnOnOneContextKeepItsBuffers) {
  const CUcontext ctx = Ctx(0x1001);
  Capture first;
  first->OnContextCreated(ctx);
  ASSERT_TRUE(fake::State(ctx).enabled);
  first.Drain();
  const model::Trace a = first.End();
  EXPECT_FALSE(fake::State(ctx).enabled);
  ExpectOneDrainAndFlush(a);

  Capture second;
  second->OnContextCreated(ctx);
  const fake::ContextState s = fake::State(ctx);
  EXPECT_TRUE(s.enabled);
  EXPECT_EQ(s.enables, 2);
  EXPECT_EQ(s.writes_into_old_buffer, 1);  // the first capture's buffer, written into
  second.Drain();
  const model::Trace b = second.End();
  EXPECT_FALSE(fake::State(ctx).enabled);
  ExpectOneDrainAndFlush(b);
}

// (ii) A Disable that fails leaves sampling on in CUPTI, with the buffer: it
// is counted, and the next capture enables the context over it safely.
TEST(PcSamplingLifecycle, FailedDisableIsCountedAndItsBufferKept) {
  const CUcontext ctx = Ctx(0x2001);
  Capture first;
  first->OnContextCreated(ctx);
  fake::FailNextDisable(ctx, CUPTI_ERROR_UNKNOWN);
  const model::Trace a = first.End();
  EXPECT_TRUE(fake::State(ctx).enabled);  // CUPTI's sampling still on
  EXPECT_EQ(Stat(a, "pc_sampling.disable_failures"), 1);
  EXPECT_EQ(a.Rows<model::PcSampleEvent>().size(), kDrainRows);  // no flush

  Capture second;  // disables it first (the fake refuses to enable it twice), then enables
  second->OnContextCreated(ctx);
  EXPECT_EQ(fake::State(ctx).writes_into_old_buffer, 1);
  EXPECT_TRUE(fake::State(ctx).enabled);
  second.Drain();
  const model::Trace b = second.End();
  EXPECT_FALSE(fake::State(ctx).enabled);
  ExpectOneDrainAndFlush(b);
}

// (iii) A context created after the final write (another thread, while the
// capture ends) is not left sampling, and that is no failure.
TEST(PcSamplingLifecycle, ContextCreatedAfterTheFinalWriteIsNotSampled) {
  const CUcontext early = Ctx(0x3001), late = Ctx(0x3002);
  Capture capture;
  capture->OnContextCreated(early);
  capture.WriteFinal();
  ::testing::internal::CaptureStderr();
  capture->OnContextCreated(late);
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
  EXPECT_FALSE(fake::State(late).enabled);
  const model::Trace t = capture.End(/*final_written=*/true);
  EXPECT_EQ(Stat(t, "pc_sampling.enable_failures"), 0);
  EXPECT_EQ(Stat(t, "pc_sampling.disable_failures"), 0);
  EXPECT_EQ(Stat(t, "pc_sampling.contexts"), 1);
  EXPECT_EQ(t.Rows<model::PcSampleEvent>().size(), kDrainRows + kFlushRows);
}

// (iv) A context destroyed during a capture: drained and disabled before it
// goes; its buffers are freed when the next capture starts (not before), and a
// new context with the same handle is enabled afresh.
TEST(PcSamplingLifecycle, DestroyedContextFreedAtTheNextCapture) {
  const CUcontext ctx = Ctx(0x4001);
  Capture first;
  first->OnContextCreated(ctx);
  first.Drain();
  const CUpti_PCSamplingData* old_buffer = fake::State(ctx).config;
  ASSERT_NE(old_buffer, nullptr);
  first->OnContextDestroying(ctx);
  EXPECT_FALSE(fake::State(ctx).enabled);
  fake::DestroyContext(ctx);
  const model::Trace a = first.End();
  ExpectOneDrainAndFlush(a);  // the destruction's drain and flush
  if (__asan_address_is_poisoned) {
    EXPECT_FALSE(__asan_address_is_poisoned(old_buffer));
  }

  Capture second;
  second->OnContextCreated(ctx);  // a new context, the same handle
  const fake::ContextState s = fake::State(ctx);
  EXPECT_TRUE(s.enabled);
  EXPECT_EQ(s.enables, 1);
  EXPECT_EQ(s.writes_into_old_buffer, 0);
  if (__asan_address_is_poisoned) {
    EXPECT_TRUE(__asan_address_is_poisoned(old_buffer));
  }
  second.Drain();
  ExpectOneDrainAndFlush(second.End());
}

// A context destroyed and another made with the same handle in one capture
// (a loop of cuCtxCreate/cuCtxDestroy): the second is sampled too.
TEST(PcSamplingLifecycle, HandleReusedWithinOneCaptureIsSampledAgain) {
  const CUcontext ctx = Ctx(0x4101);
  Capture capture;
  capture->OnContextCreated(ctx);
  capture->OnContextDestroying(ctx);
  fake::DestroyContext(ctx);
  capture->OnContextCreated(ctx);
  EXPECT_TRUE(fake::State(ctx).enabled);
  const model::Trace t = capture.End();
  EXPECT_EQ(t.Rows<model::PcSampleEvent>().size(), 2 * (kDrainRows + kFlushRows));
  EXPECT_EQ(Stat(t, "pc_sampling.contexts"), 2);
}

// A capture abandoned without its final write leaves sampling on; the next
// capture disables it first and reuses the buffers CUPTI still has.
TEST(PcSamplingLifecycle, AbandonedCaptureLeavesItsBuffersToTheNext) {
  const CUcontext ctx = Ctx(0x4201);
  {
    Capture abandoned;
    abandoned->OnContextCreated(ctx);
    abandoned.Drain();
  }  // no final write, no End
  EXPECT_TRUE(fake::State(ctx).enabled);

  Capture next;
  next->OnContextCreated(ctx);
  const fake::ContextState s = fake::State(ctx);
  EXPECT_TRUE(s.enabled);
  EXPECT_EQ(s.disables, 1);
  EXPECT_EQ(s.enables, 2);
  next.Drain();
  const model::Trace t = next.End();
  EXPECT_EQ(Stat(t, "pc_sampling.disable_failures"), 0);
  EXPECT_EQ(t.Rows<model::PcSampleEvent>().size(), 2 * kDrainRows + kFlushRows);
}

// An in-process capture's start finds the contexts made before it
// (live_contexts.h: the current one here).
TEST(PcSamplingLifecycle, CaptureStartSamplesTheCurrentContext) {
  const CUcontext ctx = Ctx(0x4301);
  fake::SetCurrentContext(ctx);
  Capture capture;
  capture->OnCaptureEdge();
  fake::SetCurrentContext(nullptr);
  EXPECT_TRUE(fake::State(ctx).enabled);
  capture->OnContextCreated(ctx);  // the callback too: once
  EXPECT_EQ(fake::State(ctx).enables, 1);
  const model::Trace t = capture.End();
  EXPECT_EQ(t.Rows<model::PcSampleEvent>().size(), kDrainRows + kFlushRows);
}

// (v) GetData reports the hardware buffer full once (as CUPTI's error, and as
// the flag beside records): counted once, not again at the calls after it,
// which leave the flag as it was (CUPTI's outputs are reset before each call).
TEST(PcSamplingLifecycle, HardwareBufferFullCountedOnce) {
  for (const bool as_error : {true, false}) {
    SCOPED_TRACE(as_error ? "CUPTI_ERROR_OUT_OF_MEMORY" : "success with the flag");
    const CUcontext ctx = Ctx(as_error ? 0x5001 : 0x5002);
    Capture capture;
    capture->OnContextCreated(ctx);
    fake::HardwareBufferFullAtNextGetData(ctx, as_error);
    capture.Drain();
    capture.Drain();
    capture.Drain();
    const model::Trace t = capture.End();
    EXPECT_EQ(fake::State(ctx).get_data_calls, 4);
    EXPECT_EQ(Stat(t, "pc_sampling.hardware_buffer_full"), 1);
    EXPECT_EQ(Stat(t, "pc_sampling.get_data_errors"), 0);
    const size_t drains_with_rows = as_error ? 3 : 4;
    EXPECT_EQ(t.Rows<model::PcSampleEvent>().size(), drains_with_rows * kDrainRows + kFlushRows);
  }
}

// Every GetData call is an overhead row of TraceSmith's own kind (the
// program's launches wait for CUPTI while one runs): on the calling thread,
// with its device and a start no later than its end.
TEST(PcSamplingLifecycle, EachGetDataIsAnOverheadRow) {
  const CUcontext ctx = Ctx(0x6001);
  Capture capture;
  capture->OnContextCreated(ctx);
  capture.Drain();
  capture.Drain();
  const model::Trace t = capture.End();
  const int calls = fake::State(ctx).get_data_calls;
  ASSERT_GE(calls, 3);  // two drains and the final one
  const auto& rows = t.Rows<model::OverheadEvent>();
  ASSERT_EQ(rows.size(), size_t(calls));
  for (const model::OverheadEvent& o : rows) {
    EXPECT_EQ(o.overhead_kind, model::kOverheadPcSamplingDrain);
    EXPECT_EQ(o.pid, kPid);
    EXPECT_NE(o.tid, 0u);
    EXPECT_LE(o.start_ns, o.end_ns);
    EXPECT_EQ(model::EventName(t, o), "Overhead: PC sampling drain");
  }
}

// A context destroyed while CUPTI refuses its Disable: off for the recorder
// anyway (the context is gone), so no drain or Disable asks CUPTI about it
// again, and it is not the recorder's any more.
TEST(PcSamplingLifecycle, DestroyedContextIsOffEvenWhenDisableFails) {
  const CUcontext ctx = Ctx(0x7001);
  Capture capture;
  capture->OnContextCreated(ctx);
  fake::FailNextDisable(ctx, CUPTI_ERROR_UNKNOWN);
  capture->OnContextDestroying(ctx);
  const fake::ContextState at_destroy = fake::State(ctx);
  capture.Drain();
  const model::Trace t = capture.End();
  const fake::ContextState after = fake::State(ctx);
  EXPECT_EQ(after.get_data_calls, at_destroy.get_data_calls);
  EXPECT_EQ(after.disables, at_destroy.disables);
  EXPECT_EQ(Stat(t, "pc_sampling.disable_failures"), 1);
  EXPECT_EQ(Stat(t, "pc_sampling.get_data_errors"), 0);
  EXPECT_EQ(Stat(t, "pc_sampling.contexts"), 1);
}

// A capture abandoned with sampling on, then its context destroyed unseen and
// the handle given to a new context: the next capture's Enable turns the old
// state off first, and CUPTI refusing that Disable (the new context was never
// sampled) is no failure.
TEST(PcSamplingLifecycle, StaleStateOfAReusedHandleIsNoFailure) {
  const CUcontext ctx = Ctx(0x7101);
  {
    Capture abandoned;
    abandoned->OnContextCreated(ctx);
  }
  fake::DestroyContext(ctx);  // unseen by any recorder; the fake forgets it
  Capture next;
  next->OnContextCreated(ctx);
  const model::Trace t = next.End();
  EXPECT_EQ(Stat(t, "pc_sampling.disable_failures"), 0);
  EXPECT_EQ(Stat(t, "pc_sampling.enable_failures"), 0);
  EXPECT_EQ(Stat(t, "pc_sampling.contexts"), 1);
}

// Without the overhead group (-x overhead) the drains are not written as rows.
TEST(PcSamplingLifecycle, NoDrainRowsWithoutTheOverheadGroup) {
  const CUcontext ctx = Ctx(0x7201);
  Capture capture(capture::CaptureOptions{}.groups & ~capture::kGroupOverhead);
  capture->OnContextCreated(ctx);
  capture.Drain();
  const model::Trace t = capture.End();
  EXPECT_GE(fake::State(ctx).get_data_calls, 2);
  EXPECT_TRUE(t.Rows<model::OverheadEvent>().empty());
  ExpectOneDrainAndFlush(t);  // the samples all there
}

// Another process samples the GPU (its claim held here by a GpuClaim of
// our own): the context is left unsampled, counted and said; the claim taken
// once the other lets go, and held until the capture ends.
TEST(PcSamplingLifecycle, GpuSampledByAnotherProcessIsLeftAlone) {
  const CUcontext ctx = Ctx(0x7301);
  UseOwnLockDir();
  auto other = capture::GpuClaim::Take("pc-sampling", kFakeGpu, nullptr);
  ASSERT_NE(other, nullptr);
  {
    Capture capture;
    capture->OnContextCreated(ctx);
    EXPECT_FALSE(fake::State(ctx).enabled);
    EXPECT_EQ(fake::State(ctx).enables, 0);
    const model::Trace t = capture.End();
    EXPECT_EQ(Stat(t, "pc_sampling.gpus_held_elsewhere"), 1);
    EXPECT_EQ(Stat(t, "pc_sampling.enable_failures"), 1);
    EXPECT_EQ(Stat(t, "pc_sampling.contexts"), 0);
    EXPECT_TRUE(t.Rows<model::PcSampleEvent>().empty());
  }
  other.reset();
  const CUcontext ctx2 = Ctx(0x7302);
  Capture capture;
  capture->OnContextCreated(ctx2);
  EXPECT_TRUE(fake::State(ctx2).enabled);
  EXPECT_EQ(capture::GpuClaim::Take("pc-sampling", kFakeGpu, nullptr), nullptr);  // the capture's
  capture.Drain();
  const model::Trace t = capture.End();
  EXPECT_EQ(Stat(t, "pc_sampling.gpus_held_elsewhere"), 0);
  ExpectOneDrainAndFlush(t);
  EXPECT_NE(capture::GpuClaim::Take("pc-sampling", kFakeGpu, nullptr),
            nullptr);  // released at its end
}

// The engine keeps its recorders after a capture stops (until the next
// starts): the claim goes with the final write, not with the recorder.
TEST(PcSamplingLifecycle, ClaimReleasedAtTheFinalWrite) {
  const CUcontext ctx = Ctx(0x7401);
  Capture capture;
  capture->OnContextCreated(ctx);
  EXPECT_TRUE(fake::State(ctx).enabled);
  EXPECT_EQ(capture::GpuClaim::Take("pc-sampling", kFakeGpu, nullptr), nullptr);
  capture.WriteFinal();
  EXPECT_FALSE(fake::State(ctx).enabled);
  EXPECT_NE(capture::GpuClaim::Take("pc-sampling", kFakeGpu, nullptr),
            nullptr);  // another process's
  capture.End(/*final_written=*/true);
}

// A context created after the final write takes no claim.
TEST(PcSamplingLifecycle, ContextAfterTheEndTakesNoClaim) {
  Capture capture;
  capture.WriteFinal();
  capture->OnContextCreated(Ctx(0x7402));
  EXPECT_NE(capture::GpuClaim::Take("pc-sampling", kFakeGpu, nullptr), nullptr);
  const model::Trace t = capture.End(/*final_written=*/true);
  EXPECT_EQ(Stat(t, "pc_sampling.gpus_held_elsewhere"), 0);
}

// The GPU's last sampled context destroyed: the claim goes with it; two
// refused contexts of one GPU count one GPU held elsewhere.
TEST(PcSamplingLifecycle, ClaimFollowsTheGpusContexts) {
  {
    Capture capture;
    capture->OnContextCreated(Ctx(0x7501));
    capture->OnContextCreated(Ctx(0x7502));
    capture->OnContextDestroying(Ctx(0x7501));
    EXPECT_EQ(capture::GpuClaim::Take("pc-sampling", kFakeGpu, nullptr), nullptr);  // 0x7502's
    capture->OnContextDestroying(Ctx(0x7502));
    EXPECT_NE(capture::GpuClaim::Take("pc-sampling", kFakeGpu, nullptr), nullptr);
    capture.End();
  }
  auto other = capture::GpuClaim::Take("pc-sampling", kFakeGpu, nullptr);
  ASSERT_NE(other, nullptr);
  Capture capture;
  capture->OnContextCreated(Ctx(0x7503));
  capture->OnContextCreated(Ctx(0x7504));
  const model::Trace t = capture.End();
  EXPECT_EQ(Stat(t, "pc_sampling.gpus_held_elsewhere"), 1);
  EXPECT_EQ(Stat(t, "pc_sampling.enable_failures"), 2);
}

// Enable refused (counters closed): the claim taken for it is given back, so
// another process may sample the GPU.
TEST(PcSamplingLifecycle, ClaimGivenBackWhenEnableFails) {
  const CUcontext ctx = Ctx(0x7601);
  fake::FailNextEnable(ctx, CUPTI_ERROR_INSUFFICIENT_PRIVILEGES);
  Capture capture;
  capture->OnContextCreated(ctx);
  EXPECT_FALSE(fake::State(ctx).enabled);
  EXPECT_NE(capture::GpuClaim::Take("pc-sampling", kFakeGpu, nullptr), nullptr);
  const model::Trace t = capture.End();
  EXPECT_EQ(Stat(t, "pc_sampling.enable_failures"), 1);
  EXPECT_EQ(Stat(t, "pc_sampling.gpus_held_elsewhere"), 0);
}

}  // namespace
}  // namespace tracesmith::hardware
