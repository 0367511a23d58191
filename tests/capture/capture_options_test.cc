#include "tracesmith/capture/capture_options.h"

#include <gtest/gtest.h>

namespace tracesmith::capture {
namespace {

TEST(ParseKinds, DefaultAllAndLists) {
  EXPECT_EQ(ParseKinds("").value(), kDefaultGroups);
  EXPECT_EQ(ParseKinds("default").value(), kDefaultGroups);
  EXPECT_EQ(ParseKinds("all").value(), kAllGroups);
  EXPECT_EQ(ParseKinds("kernel,memcpy").value(), uint32_t{kGroupKernel | kGroupMemcpy});
  EXPECT_EQ(ParseKinds("-runtime,+driver").value(),
            (kDefaultGroups & ~kGroupRuntime) | kGroupDriver);
  EXPECT_EQ(ParseKinds("default,-nvtx").value(), kDefaultGroups & ~kGroupNvtx);
  EXPECT_EQ(ParseKinds("none").value(), 0u);
  EXPECT_FALSE(kDefaultGroups & kGroupDriver) << "driver API is opt-in";
}

TEST(ParseKinds, UnknownGroupNamesTheKnownOnes) {
  auto r = ParseKinds("kernel,bogus");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("'bogus'"), std::string::npos);
  EXPECT_NE(r.status().message().find("memcpy"), std::string::npos);
}

TEST(KindsToString, RoundTrips) {
  for (uint32_t g : {kDefaultGroups, kAllGroups, uint32_t{kGroupKernel}, 0u})
    EXPECT_EQ(ParseKinds(KindsToString(g)).value(), g) << KindsToString(g);
}

TEST(CaptureRange, Parses) {
  CaptureOptions o;
  ASSERT_TRUE(ParseCaptureRange("cudaProfilerApi", &o).ok());
  EXPECT_EQ(o.range, CaptureRange::kCudaProfilerApi);
  ASSERT_TRUE(ParseCaptureRange("nvtx:train step", &o).ok());
  EXPECT_EQ(o.range, CaptureRange::kNvtx);
  EXPECT_EQ(o.range_name, "train step");
  EXPECT_FALSE(ParseCaptureRange("nvtx:", &o).ok());
  EXPECT_FALSE(ParseCaptureRange("cuda", &o).ok());
}

TEST(OptionsEnv, RoundTrip) {
  CaptureOptions o;
  o.output = "/tmp/a.sbt";
  o.groups = kGroupKernel | kGroupSync;
  o.buffer_mb = 64;
  o.flush_ms = 250;
  o.duration_ns = 2000000000;
  o.delay_ns = 1000;
  o.range = CaptureRange::kNvtx;
  o.range_name = "step";
  o.quiet = true;
  o.dump_raw_dir = "/tmp/raw";
  o.stacks = stacks::StackMode::kPython;
  o.stack_depth = 40;
  auto back = OptionsFromEnv(OptionsToEnv(o));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->output, o.output);
  EXPECT_EQ(back->groups, o.groups);
  EXPECT_EQ(back->buffer_mb, 64u);
  EXPECT_EQ(back->flush_ms, 250u);
  EXPECT_EQ(back->duration_ns, o.duration_ns);
  EXPECT_EQ(back->delay_ns, o.delay_ns);
  EXPECT_EQ(back->range, CaptureRange::kNvtx);
  EXPECT_EQ(back->range_name, "step");
  EXPECT_TRUE(back->quiet);
  EXPECT_EQ(back->dump_raw_dir, "/tmp/raw");
  EXPECT_EQ(back->stacks, stacks::StackMode::kPython);
  EXPECT_EQ(OptionsToEnv(o)[kEnvStacks], "python");
  EXPECT_EQ(back->stack_depth, 40u);
}

// --pc-sampling's period: 2^N cycles, N in [5, 31]; "" and "auto" are the
// default (15); it travels to the injection library and back; off is 0.
TEST(PcSampling, PeriodParsesAndTravelsThroughTheEnvironment) {
  EXPECT_EQ(ParsePcSamplingPeriod("").value(), kDefaultPcSamplingPeriod);
  EXPECT_EQ(ParsePcSamplingPeriod("auto").value(), 15u);
  EXPECT_EQ(ParsePcSamplingPeriod("17").value(), 17u);
  EXPECT_EQ(ParsePcSamplingPeriod("2^9").value(), 9u);
  EXPECT_EQ(ParsePcSamplingPeriod("5").value(), 5u);
  EXPECT_EQ(ParsePcSamplingPeriod("31").value(), 31u);
  for (const char* bad : {"4", "32", "-1", "x", "2^", "1e3", "150", "15 "}) {
    auto r = ParsePcSamplingPeriod(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(r.status().message().find("from 5 to 31"), std::string::npos) << r.status().message();
  }
  CaptureOptions o;
  EXPECT_EQ(OptionsToEnv(o).count(kEnvPcSampling), 0u);
  EXPECT_EQ(OptionsFromEnv(OptionsToEnv(o))->pc_sampling, 0u);
  o.pc_sampling = 13;
  EXPECT_EQ(OptionsToEnv(o)[kEnvPcSampling], "13");
  EXPECT_EQ(OptionsFromEnv(OptionsToEnv(o))->pc_sampling, 13u);
  EXPECT_FALSE(OptionsFromEnv({{kEnvPcSampling, "40"}}).ok());
}

// --kernel-timeout: a duration of at least 1 s; it turns instruction
// sampling on (what it watches with) and needs the kernel rows; the action
// is report or exit. All of it travels to the injection library and back.
TEST(KernelTimeout, ParsesAndTravelsThroughTheEnvironment) {
  auto o = OptionsFromEnv({{kEnvKernelTimeout, "30s"}});
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_EQ(o->kernel_timeout_ns, 30'000'000'000ull);
  EXPECT_EQ(o->pc_sampling, kDefaultPcSamplingPeriod);
  EXPECT_FALSE(o->kernel_timeout_exit);
  o->pc_sampling = 17;
  o->kernel_timeout_exit = true;
  auto back = OptionsFromEnv(OptionsToEnv(*o));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->kernel_timeout_ns, 30'000'000'000ull);
  EXPECT_EQ(back->pc_sampling, 17u) << "an explicit period is kept";
  EXPECT_TRUE(back->kernel_timeout_exit);
  EXPECT_EQ(OptionsToEnv(CaptureOptions{}).count(kEnvKernelTimeout), 0u);
  for (const char* bad : {"30", "500ms", "soon"}) {
    auto r = OptionsFromEnv({{kEnvKernelTimeout, bad}});
    EXPECT_FALSE(r.ok()) << bad;
  }
  auto short_one = OptionsFromEnv({{kEnvKernelTimeout, "500ms"}});
  EXPECT_NE(short_one.status().message().find("shorter than 1s"), std::string::npos);
  auto action = OptionsFromEnv({{kEnvKernelTimeout, "1s"}, {kEnvOnKernelTimeout, "kill"}});
  ASSERT_FALSE(action.ok());
  EXPECT_NE(action.status().message().find("neither report nor exit"), std::string::npos);
  auto no_kernels = OptionsFromEnv({{kEnvKernelTimeout, "1s"}, {kEnvKinds, "memcpy"}});
  ASSERT_FALSE(no_kernels.ok());
  EXPECT_NE(no_kernels.status().message().find("needs the kernel rows"), std::string::npos);
  for (const auto& [key, value] : std::map<std::string, std::string>{
           {kEnvDuration, "10s"}, {kEnvDelay, "1s"}, {kEnvCaptureRange, "cudaProfilerApi"}}) {
    auto r = OptionsFromEnv({{kEnvKernelTimeout, "1s"}, {key, value}});
    ASSERT_FALSE(r.ok()) << key;
    EXPECT_NE(r.status().message().find("watches the whole run"), std::string::npos) << key;
  }
}

// --sass-counts: a flag that travels to the injection library and back, and
// is refused with instruction sampling (--pc-sampling, --kernel-timeout).
TEST(SassCounts, TravelsThroughTheEnvironmentAndRefusesSampling) {
  CaptureOptions o;
  EXPECT_EQ(OptionsToEnv(o).count(kEnvSassCounts), 0u);
  EXPECT_FALSE(OptionsFromEnv(OptionsToEnv(o))->sass_counts);
  o.sass_counts = true;
  EXPECT_EQ(OptionsToEnv(o)[kEnvSassCounts], "1");
  auto back = OptionsFromEnv(OptionsToEnv(o));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_TRUE(back->sass_counts);
  EXPECT_FALSE(OptionsFromEnv({{kEnvSassCounts, "0"}})->sass_counts);
  auto bad = OptionsFromEnv({{kEnvSassCounts, "yes"}});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("neither 0 nor 1"), std::string::npos);
  for (const auto& [key, value] :
       std::map<std::string, std::string>{{kEnvPcSampling, "15"}, {kEnvKernelTimeout, "30s"}}) {
    auto r = OptionsFromEnv({{kEnvSassCounts, "1"}, {key, value}});
    ASSERT_FALSE(r.ok()) << key;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(r.status().message().find("cannot be combined with --pc-sampling"), std::string::npos)
        << r.status().message();
  }
}

TEST(ReplayFilter, Parses) {
  EXPECT_EQ(ParseReplayFilter("").value().kind, ReplayFilter::Kind::kOff);
  EXPECT_EQ(ParseReplayFilter("all").value().kind, ReplayFilter::Kind::kAll);
  auto k = ParseReplayFilter("kernel:gemm|scale_.*");
  ASSERT_TRUE(k.ok());
  EXPECT_EQ(k->kind, ReplayFilter::Kind::kKernel);
  EXPECT_EQ(k->regex, "gemm|scale_.*");
  auto one = ParseReplayFilter("launch:7").value();
  EXPECT_EQ(one.kind, ReplayFilter::Kind::kLaunchRange);
  EXPECT_EQ(one.first, 7u);
  EXPECT_EQ(one.last, 7u);
  auto range = ParseReplayFilter("launch:3-9").value();
  EXPECT_EQ(range.first, 3u);
  EXPECT_EQ(range.last, 9u);
  EXPECT_FALSE(ParseReplayFilter("launch:9-3").ok());
  EXPECT_FALSE(ParseReplayFilter("launch:x").ok());
  EXPECT_FALSE(ParseReplayFilter("launch:-3").ok());
  EXPECT_FALSE(ParseReplayFilter("kernel:").ok());
  EXPECT_FALSE(ParseReplayFilter("kernel:(").ok());
  EXPECT_FALSE(ParseReplayFilter("everything").ok());
  CaptureOptions o;
  o.replay_capture = ParseReplayFilter("launch:3-9").value();
  o.replay_max_mb = 100;
  o.replay_max_launches = 5;
  auto back = OptionsFromEnv(OptionsToEnv(o)).value();
  EXPECT_EQ(back.replay_capture, o.replay_capture);
  EXPECT_EQ(OptionsToEnv(o)[kEnvReplayCapture], "launch:3-9");
  EXPECT_EQ(back.replay_max_mb, 100u);
  EXPECT_EQ(back.replay_max_launches, 5u);
  EXPECT_FALSE(OptionsFromEnv({{kEnvReplayCapture, "bogus"}}).ok());
  EXPECT_EQ(back.replay_memory, format::MemoryScope::kReachable);  // the default
  EXPECT_EQ(back.replay_reach_depth, 8u);
  o.replay_memory = format::MemoryScope::kAll;
  o.replay_reach_depth = 3;
  o.replay_ranges = "0x7f0000000000:4096,1024:16";
  back = OptionsFromEnv(OptionsToEnv(o)).value();
  EXPECT_EQ(back.replay_memory, format::MemoryScope::kAll);
  EXPECT_EQ(back.replay_reach_depth, 3u);
  EXPECT_EQ(back.replay_ranges, "0x7f0000000000:4096,1024:16");
  EXPECT_FALSE(OptionsFromEnv({{kEnvReplayMemory, "some"}}).ok());
  EXPECT_EQ(OptionsFromEnv({{kEnvReplayMemory, "params"}}).value().replay_memory,
            format::MemoryScope::kParams);
  EXPECT_FALSE(OptionsFromEnv({{kEnvReplayReachDepth, "0"}}).ok());
  EXPECT_FALSE(OptionsFromEnv({{kEnvReplayReachDepth, "65"}}).ok());
}

TEST(ReplayFilter, DeviceRanges) {
  auto r = ParseDeviceRanges("0x7f0000000000:4096,1024:0x10").value();
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].address, 0x7f0000000000u);
  EXPECT_EQ(r[0].size, 4096u);
  EXPECT_EQ(r[1].address, 1024u);
  EXPECT_EQ(r[1].size, 16u);
  for (const char* bad : {"0x10", "0x10:0", "x:1", "1:y", ":5", "0xffffffffffffffff:2"})
    EXPECT_FALSE(ParseDeviceRanges(bad).ok()) << bad;
}

TEST(OptionsEnv, Stacks) {
  EXPECT_EQ(OptionsFromEnv({}).value().stacks, std::nullopt);  // auto
  EXPECT_EQ(OptionsFromEnv({{kEnvStacks, "auto"}}).value().stacks, std::nullopt);
  EXPECT_EQ(OptionsFromEnv({{kEnvStacks, "none"}}).value().stacks, stacks::StackMode::kNone);
  EXPECT_FALSE(OptionsFromEnv({{kEnvStacks, "all"}}).ok());
  EXPECT_FALSE(OptionsFromEnv({{kEnvStackDepth, "0"}}).ok());
  EXPECT_FALSE(OptionsFromEnv({{kEnvStackDepth, "257"}}).ok());
  EXPECT_EQ(ParseStacksOption("mixed").value(), stacks::StackMode::kMixed);
  EXPECT_EQ(ParseStacksOption("full").value(), stacks::StackMode::kFull);
  EXPECT_EQ(OptionsFromEnv({{kEnvStacks, "full"}}).value().stacks, stacks::StackMode::kFull);
  EXPECT_FALSE(ParseStacksOption("Mixed").ok());
  EXPECT_EQ(ParseStacksOption("Mixed").status().message(),
            "--stacks: 'Mixed' is not one of auto, none, native, python, mixed, full");
}

// Every spelling of the closed-set options is parsed once into its enum and
// written back to the same text: the environment round trip the injection
// library and the Python package (string arguments) go through.
TEST(OptionsEnv, EnumsRoundTripThroughTheEnvironment) {
  for (const char* text : {"auto", "none", "native", "python", "mixed", "full"}) {
    auto mode = ParseStacksOption(text);
    ASSERT_TRUE(mode.ok()) << text;
    CaptureOptions o;
    o.stacks = *mode;
    auto env = OptionsToEnv(o);
    EXPECT_EQ(env[kEnvStacks], text);
    EXPECT_EQ(OptionsFromEnv(env).value().stacks, *mode) << text;
  }
  for (const char* text : {"all", "kernel:gemm|scale_.*", "launch:7", "launch:3-9"}) {
    CaptureOptions o;
    o.replay_capture = ParseReplayFilter(text).value();
    auto env = OptionsToEnv(o);
    EXPECT_EQ(env[kEnvReplayCapture], text);
    EXPECT_EQ(OptionsFromEnv(env).value().replay_capture, o.replay_capture) << text;
  }
  EXPECT_EQ(ReplayFilterText(ParseReplayFilter("launch:4-4").value()), "launch:4");
  CaptureOptions off;
  EXPECT_EQ(off.replay_capture.kind, ReplayFilter::Kind::kOff);
  EXPECT_EQ(OptionsToEnv(off).count(kEnvReplayCapture), 0u);
  EXPECT_EQ(ReplayFilterText(off.replay_capture), "");
}

TEST(OptionsEnv, RejectsBadNumbers) {
  EXPECT_FALSE(OptionsFromEnv({{kEnvBufferMb, "lots"}}).ok());
  EXPECT_FALSE(OptionsFromEnv({{kEnvBufferMb, "1"}}).ok());  // below one buffer
  EXPECT_FALSE(OptionsFromEnv({{kEnvFlushMs, "0"}}).ok());
  EXPECT_LE(OptionsFromEnv({}).value().flush_ms, 1000u) << "SIGKILL loses at most 1 s by default";
}

TEST(OptionsEnv, TuningKnobsAsTheEngineReadThem) {
  const CaptureTuning defaults = OptionsFromEnv({}).value().tuning;
  EXPECT_EQ(defaults, CaptureTuning{});
  EXPECT_TRUE(defaults.subscribe && defaults.system_thread_ids && defaults.meminfo_at_context &&
              defaults.api_filter);
  EXPECT_FALSE(defaults.stack_rewalk || defaults.stack_copy_probe);
  EXPECT_EQ(defaults.device_buffer_mb, 0u);

  const CaptureTuning t = OptionsFromEnv({{kEnvSubscribe, "0"},
                                          {kEnvDeviceBufferMb, "64"},
                                          {kEnvTidType, "process"},
                                          {kEnvMeminfoAtContext, "0"},
                                          {kEnvApiFilter, "0"},
                                          {kEnvStackRewalk, "1"},
                                          {kEnvStackCopyProbe, "1"}})
                              .value()
                              .tuning;
  EXPECT_FALSE(t.subscribe);
  EXPECT_EQ(t.device_buffer_mb, 64u);
  EXPECT_FALSE(t.system_thread_ids);
  EXPECT_FALSE(t.meminfo_at_context);
  EXPECT_FALSE(t.api_filter);
  EXPECT_TRUE(t.stack_rewalk);
  EXPECT_TRUE(t.stack_copy_probe);

  // Exactly these values switch; anything else is the default, never an error.
  const CaptureTuning other = OptionsFromEnv({{kEnvSubscribe, "no"},
                                              {kEnvDeviceBufferMb, "-3"},
                                              {kEnvTidType, "system"},
                                              {kEnvStackRewalk, "yes"}})
                                  .value()
                                  .tuning;
  EXPECT_EQ(other, CaptureTuning{});
  EXPECT_EQ(TuningFromEnv({{kEnvDeviceBufferMb, "12MB"}}).device_buffer_mb, 12u);  // atoi
}

TEST(OptionsEnv, PcSamplingDrainKnobs) {
  // The cost sweep's knobs (docs/pc-sampling.md "Cost"): read from the
  // process's environment too, 0 (the recorder's default) unless positive.
  const CaptureTuning t = TuningFromEnv({{kEnvPcSamplingDrainMs, "100"},
                                         {kEnvPcSamplingDrainPcs, "512"},
                                         {kEnvPcSamplingHwBufferMb, "32"},
                                         {kEnvPcSamplingSleepMs, "10"}});
  EXPECT_EQ(t.pc_sampling_drain_ms, 100u);
  EXPECT_EQ(t.pc_sampling_drain_pcs, 512u);
  EXPECT_EQ(t.pc_sampling_hw_buffer_mb, 32u);
  EXPECT_EQ(t.pc_sampling_sleep_ms, 10u);
  const CaptureTuning bad =
      TuningFromEnv({{kEnvPcSamplingDrainMs, "0"}, {kEnvPcSamplingDrainPcs, "-4"}});
  EXPECT_EQ(bad, CaptureTuning{});
  setenv(kEnvPcSamplingDrainMs, "50", 1);
  const uint32_t from_process = TuningFromProcessEnv().pc_sampling_drain_ms;
  unsetenv(kEnvPcSamplingDrainMs);
  EXPECT_EQ(from_process, 50u);
}

TEST(OptionsEnv, TuningKnobsStayTheUsersEnvironment) {
  // The CLI clears OptionEnvNames and sets OptionsToEnv: neither may touch a
  // knob the user set for the program.
  CaptureOptions o;
  o.tuning.subscribe = false;
  o.tuning.stack_rewalk = true;
  const auto env = OptionsToEnv(o);
  for (const char* knob : {kEnvSubscribe, kEnvDeviceBufferMb, kEnvTidType, kEnvMeminfoAtContext,
                           kEnvApiFilter, kEnvStackRewalk, kEnvStackCopyProbe}) {
    EXPECT_EQ(env.count(knob), 0u) << knob;
    for (const std::string& name : OptionEnvNames()) EXPECT_NE(name, knob);
  }
}

TEST(PerProcessOutputPath, PidAndRank) {
  EXPECT_EQ(PerProcessOutputPath("run.sbt", 42, -1), "run.pid42.sbt");
  EXPECT_EQ(PerProcessOutputPath("dir.v1/run.sbt", 42, 3), "dir.v1/run.rank3.sbt");
  EXPECT_EQ(PerProcessOutputPath("dir.v1/run", 7, -1), "dir.v1/run.pid7");
}

// Which launches a filter selects without looking at the kernel's name (the
// same answer for a kernel launch and a graph launch).
TEST(ReplayFilterSelects, ByIndexForEveryKindButKernel) {
  auto range = ParseReplayFilter("launch:3-5");
  ASSERT_TRUE(range.ok());
  EXPECT_FALSE(range->SelectsIndex(2));
  EXPECT_TRUE(range->SelectsIndex(3));
  EXPECT_TRUE(range->SelectsIndex(5));
  EXPECT_FALSE(range->SelectsIndex(6));
  auto one = ParseReplayFilter("launch:7");
  ASSERT_TRUE(one.ok());
  EXPECT_TRUE(one->SelectsIndex(7));
  EXPECT_FALSE(one->SelectsIndex(6));
  auto all = ParseReplayFilter("all");
  ASSERT_TRUE(all.ok());
  EXPECT_TRUE(all->SelectsIndex(0));
  EXPECT_TRUE(all->SelectsIndex(UINT64_MAX));
  auto off = ParseReplayFilter("");
  ASSERT_TRUE(off.ok());
  EXPECT_FALSE(off->SelectsIndex(0));
  auto kernel = ParseReplayFilter("kernel:gemm");
  ASSERT_TRUE(kernel.ok());
  EXPECT_FALSE(kernel->SelectsIndex(0));  // decided by the name, not here
}

}  // namespace
}  // namespace tracesmith::capture
