// The --json results of GPU replay (replay_json.h) and of --dry-run
// (FormatEmulationJson), built from hand-made outcomes: the GPU side only
// fills LaunchOutcome values, so every field's JSON is checked here.
#include "tracesmith/replay/replay_json.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "analysis/test_traces.h"
#include "tracesmith/replay/emulator.h"
#include "tracesmith/replay/gpu_replayer.h"

namespace tracesmith::replay {
namespace {

using nlohmann::json;

LaunchOutcome Identical() {
  LaunchOutcome o;
  o.index = 2;
  o.function = "_Z5scaleIfEvPT_S1_i";
  o.vs_capture.bytes_compared = 4096;
  o.iterations = 5;
  o.time_from_cupti = true;
  o.time = {.median_us = 1.5, .min_us = 1.25, .max_us = 2.0};
  o.event_time = {.median_us = 3.0, .min_us = 2.5, .max_us = 4.0};
  o.recorded_ns = 1000;
  o.setup_ms = 12.5;
  o.ranges_total = 3;
  o.l2_flushed = true;
  return o;
}

TEST(ReplayJsonTest, IdenticalLaunch) {
  json j = json::parse(LaunchOutcomeJson(Identical()));
  EXPECT_EQ(j["index"], 2);
  EXPECT_EQ(j["kind"], "launch");
  EXPECT_EQ(j["last_index"], 2);
  EXPECT_EQ(j["kernel"], "_Z5scaleIfEvPT_S1_i");
  EXPECT_EQ(j["attributes"], json::array());
  EXPECT_EQ(j["status"], "identical");
  EXPECT_TRUE(j["error"].is_null());
  const json& out = j["output"];
  EXPECT_EQ(out["bytes_compared"], 4096);
  EXPECT_EQ(out["bytes_differing"], 0);
  EXPECT_TRUE(out["first_diff_address"].is_null());
  EXPECT_EQ(out["float32_words_differing"], 0);
  EXPECT_TRUE(out["max_abs_error"].is_null());
  EXPECT_TRUE(out["max_rel_error"].is_null());
  const json& det = j["determinism"];
  EXPECT_EQ(det["iterations"], 5);
  EXPECT_EQ(det["deterministic"], true);
  EXPECT_EQ(det["replays_differing"], 0);
  EXPECT_TRUE(det["vs_first_replay"].is_null());
  const json& t = j["time"];
  EXPECT_EQ(t["source"], "cupti");
  EXPECT_EQ(t["median_ns"], 1500);
  EXPECT_EQ(t["min_ns"], 1250);
  EXPECT_EQ(t["max_ns"], 2000);
  EXPECT_EQ(t["cuda_events_median_ns"], 3000);
  EXPECT_EQ(t["program_ns"], 1000);
  EXPECT_DOUBLE_EQ(t["replay_over_program"].get<double>(), 1.5);
  EXPECT_EQ(t["setup_ns"], 12500000);
  EXPECT_EQ(t["l2_flushed"], true);
  EXPECT_TRUE(j["warm"].is_null());  // no --warm
  const json& a = j["addresses"];
  EXPECT_EQ(a["ranges"], 3);
  EXPECT_EQ(a["at_captured_address"], 3);
  EXPECT_EQ(a["mapped_away"], 0);
  EXPECT_EQ(a["param_words_rewritten"], 0);
  EXPECT_EQ(a["memory_words_rewritten"], 0);
  EXPECT_TRUE(j["sequence"].is_null());
  // Every documented key, in the documented order.
  std::vector<std::string> keys;
  const auto ordered = nlohmann::ordered_json::parse(LaunchOutcomeJson(Identical()));
  for (auto it = ordered.begin(); it != ordered.end(); ++it) keys.push_back(it.key());
  EXPECT_EQ(keys,
            (std::vector<std::string>{"index", "kind", "last_index", "kernel", "attributes",
                                      "status", "error", "output", "determinism", "time", "warm",
                                      "metrics", "addresses", "memory", "sequence", "graph"}));
  EXPECT_TRUE(j["graph"].is_null());
}

// A graph launch: kind "graph", its node counts; a node replayed alone
// names the node and its ancestors, and the text says how its outputs are
// checked.
TEST(ReplayJsonTest, GraphLaunchAndNode) {
  LaunchOutcome o = Identical();
  o.function = "graph launch (9 nodes: 3 kernels, 1 memset, 1 memcpy, 4 empty)";
  o.graph.is_graph = true;
  o.graph.nodes = 9;
  o.graph.kernels = 3;
  o.graph.memsets = 1;
  o.graph.memcpys = 1;
  o.graph.empty = 4;
  json j = json::parse(LaunchOutcomeJson(o));
  EXPECT_EQ(j["kind"], "graph");
  EXPECT_EQ(j["graph"]["nodes"], 9);
  EXPECT_EQ(j["graph"]["kernels"], 3);
  EXPECT_EQ(j["graph"]["memsets"], 1);
  EXPECT_EQ(j["graph"]["memcpys"], 1);
  EXPECT_EQ(j["graph"]["empty"], 4);
  EXPECT_TRUE(j["graph"]["node"].is_null());
  EXPECT_TRUE(j["graph"]["ancestors"].is_null());
  format::GraphLaunchRecord g;
  g.nodes.resize(3);
  g.nodes[0].kind = format::GraphNodeKind::kKernel;
  g.nodes[0].kernel.function = "_Z4fillPf";
  g.nodes[1].kind = format::GraphNodeKind::kMemset;
  g.nodes[1].dst = 0x1000;
  g.nodes[1].element_size = 4;
  g.nodes[1].width = 256;
  g.nodes[1].dependencies = {0};
  g.nodes[2].kind = format::GraphNodeKind::kMemcpy;
  g.nodes[2].src = 0x1000;
  g.nodes[2].dst = 0x2000;
  g.nodes[2].width = 2048;
  g.nodes[2].dependencies = {0, 1};
  o.graph.node_lines = GraphNodeLines(g);
  std::string text = FormatLaunchOutcome(o);
  EXPECT_NE(text.find("  graph: replayed as one unit"), std::string::npos) << text;
  EXPECT_NE(text.find("\n  node 0: kernel _Z4fillPf\n  node 1: memset 1.00 KiB at 0x1000 (after "
                      "0)\n  node 2: memcpy 2.00 KiB 0x1000 -> 0x2000 (after 0, 1)\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("  graph time, cold L2"), std::string::npos) << text;
  o.graph.node = 3;
  o.graph.ancestors = 2;
  j = json::parse(LaunchOutcomeJson(o));
  EXPECT_EQ(j["graph"]["node"], 3);
  EXPECT_EQ(j["graph"]["ancestors"], 2);
  text = FormatLaunchOutcome(o);
  EXPECT_NE(text.find("  graph node: its outputs are checked through the graph's final memory "
                      "(the other 6 node(s) run after its last replay)"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("  kernel time, cold L2"), std::string::npos) << text;
}

// --warm: the warm times, the verdict and its evidence; the ratio to the
// program only when the warm runs repeated the program's work.
TEST(ReplayJsonTest, WarmTimesAndIdempotence) {
  LaunchOutcome o = Identical();
  o.warm.runs = 5;
  o.warm.time_from_cupti = true;
  o.warm.time = {.median_us = 0.75, .min_us = 0.5, .max_us = 1.0};
  o.warm.event_time = {.median_us = 2.25, .min_us = 2.0, .max_us = 3.0};
  o.warm.check.rerun_vs_outputs.bytes_compared = 4096;
  o.warm.check.replays = 5;
  json w = json::parse(LaunchOutcomeJson(o))["warm"];
  EXPECT_EQ(w["runs"], 5);
  EXPECT_EQ(w["source"], "cupti");
  EXPECT_EQ(w["median_ns"], 750);
  EXPECT_EQ(w["min_ns"], 500);
  EXPECT_EQ(w["max_ns"], 1000);
  EXPECT_EQ(w["cuda_events_median_ns"], 2250);
  EXPECT_DOUBLE_EQ(w["replay_over_program"].get<double>(), 0.75);
  EXPECT_EQ(w["idempotence"], "idempotent");
  EXPECT_EQ(w["rerun_vs_outputs"]["bytes_compared"], 4096);
  EXPECT_EQ(w["rerun_vs_outputs"]["bytes_differing"], 0);
  EXPECT_EQ(w["bytes_beyond_nondeterminism"], 0);
  std::vector<std::string> keys;
  const auto ordered = nlohmann::ordered_json::parse(LaunchOutcomeJson(o))["warm"];
  for (auto it = ordered.begin(); it != ordered.end(); ++it) keys.push_back(it.key());
  EXPECT_EQ(keys,
            (std::vector<std::string>{"runs", "source", "median_ns", "min_ns", "max_ns",
                                      "cuda_events_median_ns", "replay_over_program", "idempotence",
                                      "rerun_vs_outputs", "bytes_beyond_nondeterminism"}));
  // In-place update (deterministic): not idempotent, no ratio.
  o.warm.check.rerun_vs_outputs.bytes_differing = 4096;
  o.warm.check.rerun_vs_outputs.first_diff_address = 0x7f0000000000;
  o.warm.check.bytes_beyond_nondeterminism = 4096;
  w = json::parse(LaunchOutcomeJson(o))["warm"];
  EXPECT_EQ(w["idempotence"], "not_idempotent");
  EXPECT_TRUE(w["replay_over_program"].is_null());
  EXPECT_EQ(w["rerun_vs_outputs"]["first_diff_address"].get<uint64_t>(), 0x7f0000000000u);
  EXPECT_EQ(w["bytes_beyond_nondeterminism"], 4096);
  // One replay: nondeterminism not measured.
  o.warm.check.replays = 1;
  w = json::parse(LaunchOutcomeJson(o))["warm"];
  EXPECT_EQ(w["idempotence"], "unknown");
  EXPECT_TRUE(w["replay_over_program"].is_null());
  // CUDA events only.
  o.warm.time_from_cupti = false;
  EXPECT_EQ(json::parse(LaunchOutcomeJson(o))["warm"]["source"], "cuda_events");
  EXPECT_TRUE(json::parse(LaunchOutcomeJson(o))["warm"]["cuda_events_median_ns"].is_null());
}

TEST(ReplayJsonTest, DifferentLaunchHasAddressAndFloatErrors) {
  LaunchOutcome o = Identical();
  o.iterations = 1;
  o.time_from_cupti = false;  // CUDA events only
  o.time = o.event_time;
  o.recorded_ns = 0;  // not known: no ratio
  o.attributes = "cooperative, priority";
  o.vs_capture.bytes_differing = 6;
  o.vs_capture.first_diff_address = 0x7f0000001006;
  o.vs_capture.float_words_differing = 2;
  o.vs_capture.max_abs_error = 1.0;
  o.vs_capture.max_rel_error = 0.25;
  json j = json::parse(LaunchOutcomeJson(o));
  EXPECT_EQ(j["status"], "different");
  EXPECT_EQ(j["attributes"], json::array({"cooperative", "priority"}));
  EXPECT_EQ(j["output"]["bytes_differing"], 6);
  EXPECT_EQ(j["output"]["first_diff_address"].get<uint64_t>(), 0x7f0000001006u);
  EXPECT_EQ(j["output"]["float32_words_differing"], 2);
  EXPECT_DOUBLE_EQ(j["output"]["max_abs_error"].get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(j["output"]["max_rel_error"].get<double>(), 0.25);
  EXPECT_EQ(j["determinism"]["deterministic"], true);  // one replay: nothing to differ from
  EXPECT_EQ(j["time"]["source"], "cuda_events");
  EXPECT_EQ(j["time"]["median_ns"], 3000);
  EXPECT_TRUE(j["time"]["cuda_events_median_ns"].is_null());
  EXPECT_TRUE(j["time"]["program_ns"].is_null());
  EXPECT_TRUE(j["time"]["replay_over_program"].is_null());
  // Differing bytes but no differing aligned word (e.g. a 2-byte range):
  // no float32 view.
  o.vs_capture.float_words_differing = 0;
  o.vs_capture.max_abs_error = o.vs_capture.max_rel_error = 0;
  j = json::parse(LaunchOutcomeJson(o));
  EXPECT_EQ(j["output"]["first_diff_address"].get<uint64_t>(), 0x7f0000001006u);
  EXPECT_TRUE(j["output"]["max_abs_error"].is_null());
}

TEST(ReplayJsonTest, NondeterministicLaunch) {
  LaunchOutcome o = Identical();
  o.function = "scatter_add";
  o.iterations = 20;
  o.iterations_differing = 19;
  o.vs_first_replay.bytes_compared = 19 * 4096;
  o.vs_first_replay.bytes_differing = 7;
  o.vs_first_replay.first_diff_address = 0x1000;
  o.vs_first_replay.float_words_differing = 3;
  o.vs_first_replay.max_abs_error = 1e-6;
  o.vs_first_replay.max_rel_error = 2e-7;
  json j = json::parse(LaunchOutcomeJson(o));
  EXPECT_EQ(j["status"], "identical");  // replay 1 matched the capture
  const json& det = j["determinism"];
  EXPECT_EQ(det["iterations"], 20);
  EXPECT_EQ(det["deterministic"], false);
  EXPECT_EQ(det["replays_differing"], 19);
  EXPECT_EQ(det["vs_first_replay"]["bytes_differing"], 7);
  EXPECT_EQ(det["vs_first_replay"]["first_diff_address"], 0x1000);
  EXPECT_DOUBLE_EQ(det["vs_first_replay"]["max_abs_error"].get<double>(), 1e-6);
  EXPECT_DOUBLE_EQ(det["vs_first_replay"]["max_rel_error"].get<double>(), 2e-7);
}

TEST(ReplayJsonTest, RelocatedLaunch) {
  LaunchOutcome o = Identical();
  o.ranges_total = 4;
  o.ranges_relocated = 1;
  o.param_words_rewritten = 2;
  o.memory_words_rewritten = 9;
  json a = json::parse(LaunchOutcomeJson(o))["addresses"];
  EXPECT_EQ(a["ranges"], 4);
  EXPECT_EQ(a["at_captured_address"], 3);
  EXPECT_EQ(a["mapped_away"], 1);
  EXPECT_EQ(a["param_words_rewritten"], 2);
  EXPECT_EQ(a["memory_words_rewritten"], 9);
}

// "memory": where the launch's ranges came from (launch_memory.h); null
// for a range replay (checked in RangeReplay).
TEST(ReplayJsonTest, MemoryOriginsOfALaunch) {
  LaunchOutcome o = Identical();
  o.memory.scope = format::MemoryScope::kReachable;
  o.memory.ranges = 6;
  o.memory.bytes = 17u << 20;
  o.memory.from_parameters = 2;
  o.memory.reached = 4;
  o.memory.reached_bytes = 16u << 20;
  o.memory.groups = {{.via = 2,
                      .via_address = 0x7f0000200000,
                      .allocations = 4,
                      .bytes = 16u << 20,
                      .first_offset = 0,
                      .last_offset = 0x18,
                      .depth = 1}};
  o.memory.coverage.ranges_past_depth = 1;
  json j = json::parse(LaunchOutcomeJson(o));
  const json& m = j["memory"];
  EXPECT_EQ(m["scope"], "reachable");
  EXPECT_EQ(m["ranges"], 6);
  EXPECT_EQ(m["from_parameters"], 2);
  EXPECT_EQ(m["reached_through_pointers"], 4);
  EXPECT_EQ(m["reached_bytes"], 16u << 20);
  ASSERT_EQ(m["reached"].size(), 1u);
  EXPECT_EQ(m["reached"][0]["via_range"], 2);
  EXPECT_EQ(m["reached"][0]["via_address"], 0x7f0000200000u);
  EXPECT_EQ(m["reached"][0]["allocations"], 4);
  EXPECT_EQ(m["reached"][0]["last_offset"], 0x18);
  EXPECT_EQ(m["not_recorded"]["past_depth"], 1);
  EXPECT_EQ(m["not_recorded"]["over_budget"], 0);
  // The text report says the same.
  const std::string text = FormatLaunchOutcome(o);
  EXPECT_NE(text.find("  memory: 6 range(s), 17.00 MiB, captured with --replay-memory reachable: "
                      "2 from the parameters, 4 reached through pointers in memory (16.00 MiB)\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("NOT recorded: 1 allocation(s) past --replay-reach-depth"),
            std::string::npos);
  EXPECT_EQ(text.find("  memory: every allocation"), std::string::npos);  // identical: no hint
  o.vs_capture.bytes_differing = 4;
  EXPECT_NE(FormatLaunchOutcome(o).find("  memory: some memory reached through pointers was not "
                                        "recorded"),
            std::string::npos);
}

TEST(ReplayJsonTest, RangeReplay) {
  LaunchOutcome o;
  o.index = 0;
  o.sequence = true;
  o.sequence_counts = {.last_index = 59,
                       .launches = 60,
                       .stream_ops = 24,
                       .copies = 5,
                       .memsets = 0,
                       .syncs = 19,
                       .streams = 3};
  o.function = "range 0..59: 60 launches and 24 stream ops";
  o.iterations = 3;
  o.external_writes = 8;
  o.ranges_not_compared = 2;
  o.vs_capture.bytes_compared = 82u << 20;
  o.time = o.event_time = {.median_us = 130713.2, .min_us = 130000, .max_us = 131000.5};
  o.recorded_ns = 291190;
  json j = json::parse(LaunchOutcomeJson(o));
  EXPECT_EQ(j["kind"], "range");
  EXPECT_EQ(j["index"], 0);
  EXPECT_EQ(j["last_index"], 59);
  EXPECT_EQ(j["status"], "identical");
  EXPECT_EQ(j["time"]["source"], "host_clock");
  EXPECT_EQ(j["time"]["median_ns"], 130713200);
  EXPECT_EQ(j["time"]["max_ns"], 131000500);
  EXPECT_EQ(j["time"]["program_ns"], 291190);
  EXPECT_TRUE(j["time"]["replay_over_program"].is_null());  // restores are inside the span
  EXPECT_TRUE(j["time"]["setup_ns"].is_null());
  EXPECT_TRUE(j["warm"].is_null());  // ranges have no warm time
  EXPECT_TRUE(j["memory"].is_null());
  const json& s = j["sequence"];
  EXPECT_EQ(s["launches"], 60);
  EXPECT_EQ(s["stream_ops"], 24);
  EXPECT_EQ(s["copies"], 5);
  EXPECT_EQ(s["memsets"], 0);
  EXPECT_EQ(s["syncs"], 19);
  EXPECT_EQ(s["streams"], 3);
  EXPECT_EQ(s["external_writes"], 8);
  EXPECT_EQ(s["ranges_not_compared"], 2);
}

TEST(ReplayJsonTest, FailedLaunchReportsOnlyTheError) {
  LaunchOutcome o;
  o.index = 7;
  o.function = "k";
  o.vs_capture.bytes_differing = 3;  // partial: must not show
  o.error = "launch 7 (k): cuLaunchKernelEx: CUDA_ERROR_ILLEGAL_ADDRESS";
  json j = json::parse(LaunchOutcomeJson(o));
  EXPECT_EQ(j["status"], "error");
  EXPECT_EQ(j["error"], o.error);
  for (const char* key :
       {"output", "determinism", "time", "warm", "addresses", "memory", "sequence"})
    EXPECT_TRUE(j[key].is_null()) << key;
}

ReplayRun H200Run() {
  ReplayRun run;
  run.path = "cap.sbt";
  run.device_line =
      "NVIDIA H200 (sm_90), driver 13.0; driver and context start 95.1 ms\n"
      "device memory: 3 range(s), 6.0 MiB, 3 at the captured addresses, 0 mapped away; 1.2 ms";
  run.iterations = 5;
  return run;
}

TEST(ReplayJsonTest, DocumentSummaryAndExitCodes) {
  ReplayRun run = H200Run();
  run.launches.push_back(Identical());
  json d = json::parse(FormatReplayJson(run));
  EXPECT_EQ(d["mode"], "gpu");
  EXPECT_EQ(d["version"], kReplayJsonVersion);
  EXPECT_EQ(d["file"], "cap.sbt");
  EXPECT_EQ(d["device"], "NVIDIA H200 (sm_90), driver 13.0; driver and context start 95.1 ms");
  EXPECT_EQ(d["device_memory"],
            "device memory: 3 range(s), 6.0 MiB, 3 at the captured addresses, 0 mapped away; "
            "1.2 ms");
  EXPECT_EQ(d["options"]["iterations"], 5);
  EXPECT_TRUE(d["options"]["launch"].is_null());
  EXPECT_TRUE(d["options"]["node"].is_null());
  EXPECT_TRUE(d["options"]["range"].is_null());
  EXPECT_EQ(d["options"]["device"], 0);
  EXPECT_EQ(d["options"]["same_addresses_only"], false);
  EXPECT_EQ(d["options"]["warm"], false);
  ASSERT_EQ(d["launches"].size(), 1u);
  EXPECT_EQ(d["launches"][0], json::parse(LaunchOutcomeJson(Identical())));
  EXPECT_EQ(d["summary"]["launches"], 1);
  EXPECT_EQ(d["summary"]["identical"], 1);
  EXPECT_EQ(d["summary"]["different"], 0);
  EXPECT_EQ(d["summary"]["nondeterministic"], 0);
  EXPECT_EQ(d["summary"]["errors"], 0);
  EXPECT_EQ(d["summary"]["exit_code"], kReplayIdentical);
  EXPECT_EQ(d["summary"]["meaning"], "every launch identical to the capture and deterministic");
  EXPECT_TRUE(d["error"].is_null());
  EXPECT_EQ(ReplayExitCode(run), kReplayIdentical);
  // "report" is the text report, exactly as printed without --json.
  EXPECT_EQ(d["report"],
            FormatReplayHeader("cap.sbt", run.device_line) + FormatLaunchOutcome(run.launches[0]));
  EXPECT_EQ(d["report"].get<std::string>().rfind("GPU replay of cap.sbt on NVIDIA H200", 0), 0u);

  LaunchOutcome nondet = Identical();
  nondet.iterations_differing = 1;
  run.launches.push_back(nondet);
  EXPECT_EQ(ReplayExitCode(run), kReplayDiffers);
  LaunchOutcome diff = Identical();
  diff.vs_capture.bytes_differing = 1;
  run.launches.push_back(diff);
  d = json::parse(FormatReplayJson(run));
  EXPECT_EQ(d["summary"]["launches"], 3);
  EXPECT_EQ(d["summary"]["identical"], 2);
  EXPECT_EQ(d["summary"]["different"], 1);
  EXPECT_EQ(d["summary"]["nondeterministic"], 1);
  EXPECT_EQ(d["summary"]["exit_code"], kReplayDiffers);
  EXPECT_EQ(d["summary"]["meaning"], "some output differed from the capture or between replays");
}

TEST(ReplayJsonTest, DocumentOfAFailedRun) {
  ReplayRun run = H200Run();
  run.launch = 7;
  run.same_addresses_only = true;
  run.warm = true;
  LaunchOutcome failed;
  failed.index = 7;
  failed.function = "k";
  failed.error = "launch 7 (k): range [0x7f0000000000, +0x1000) is already taken";
  run.launches.push_back(failed);
  run.error = failed.error;
  json d = json::parse(FormatReplayJson(run));
  EXPECT_EQ(d["options"]["launch"], 7);
  EXPECT_EQ(d["options"]["same_addresses_only"], true);
  EXPECT_EQ(d["options"]["warm"], true);
  EXPECT_EQ(d["launches"][0]["status"], "error");
  EXPECT_EQ(d["summary"]["errors"], 1);
  EXPECT_EQ(d["summary"]["exit_code"], kReplayError);
  EXPECT_EQ(d["error"], failed.error);
  EXPECT_EQ(d["report"], "");  // no launch completed: the text report has nothing either
  EXPECT_EQ(ReplayExitCode(run), kReplayError);

  // Before the device was opened (a damaged file): no device, no launches.
  ReplayRun early;
  early.path = "cap.sbt";
  early.range_first = 0;
  early.range_last = 3;
  early.error = "cap.sbt: not an SBT file";
  d = json::parse(FormatReplayJson(early));
  EXPECT_TRUE(d["device"].is_null());
  EXPECT_TRUE(d["device_memory"].is_null());
  EXPECT_EQ(d["options"]["range"], json::array({0, 3}));
  EXPECT_EQ(d["launches"], json::array());
  EXPECT_EQ(d["summary"]["exit_code"], kReplayError);
}

TEST(ReplayJsonTest, AFailedCudaCallHasItsOwnExitCode) {
  ReplayRun run = H200Run();
  LaunchOutcome failed;
  failed.index = 3;
  failed.function = "k";
  failed.error =
      "launch 3 (k): cuCtxSynchronize() failed: CUDA_ERROR_ILLEGAL_ADDRESS (an illegal memory "
      "access was encountered) at gpu_replayer.cc:300";
  run.launches.push_back(failed);
  run.error = failed.error;
  run.gpu_error = true;
  json d = json::parse(FormatReplayJson(run));
  EXPECT_EQ(ReplayExitCode(run), kReplayGpuError);
  EXPECT_EQ(d["summary"]["exit_code"], kReplayGpuError);
  EXPECT_EQ(d["summary"]["meaning"], "error: a CUDA driver or CUPTI call failed");
  EXPECT_EQ(d["error"], failed.error);
  EXPECT_NE(kReplayGpuError, kReplayError);
  EXPECT_NE(kReplayGpuError, kReplayDiffers);
}

TEST(ReplayJsonTest, InvalidUtf8KernelNameDoesNotThrow) {
  LaunchOutcome o = Identical();
  o.function = "bad\xff\xfe";
  json j;
  ASSERT_NO_THROW(j = json::parse(LaunchOutcomeJson(o)));
  EXPECT_EQ(j["kernel"].get<std::string>().rfind("bad", 0), 0u);
}

// The dry-run document carries the text summary's figures. Trace: k1 s1
// [20,120) launched by A1 [0,10], k2 s1 [120,220) launched by A2 [12,20], a
// stream synchronize [25,225]; scaling k1 by 0.5 predicts 175 of 225 ns
// (emulator_test.cc, ScaleKernelShiftsDependents).
TEST(ReplayJsonTest, DryRunDocument) {
  analysis::testing::TraceBuilder b;
  b.Kernel("k1_gemm", 0, 1, 20, 120, 0, 10);
  b.Kernel("k2_relu", 0, 1, 120, 220, 12, 20);
  b.Sync(model::kSyncStreamSynchronize, 0, 1, 25, 225);
  analysis::CompactTrace trace;
  trace.IngestAll(b.trace());
  trace.Finalize();
  EmulationOptions o;
  o.scale_kernels.push_back({"gemm", 0.5});
  o.schedule_rows = 2;
  auto r = EmulateSchedule(trace, o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  json d = json::parse(FormatEmulationJson("t.sbt", trace, o, *r, 2));
  EXPECT_EQ(d["mode"], "dry-run");
  EXPECT_EQ(d["version"], kReplayJsonVersion);
  EXPECT_EQ(d["file"], "t.sbt");
  EXPECT_EQ(d["what_if"]["scale_kernels"], json::parse(R"([{"pattern":"gemm","factor":0.5}])"));
  EXPECT_EQ(d["what_if"]["remove_sync"], false);
  EXPECT_TRUE(d["what_if"]["streams"].is_null());
  EXPECT_EQ(d["nodes"]["gpu_ops"], 2);
  EXPECT_EQ(d["nodes"]["api_calls"], trace.calls().size());
  EXPECT_EQ(d["nodes"]["sync_records"], 1);
  EXPECT_EQ(d["kernels_scaled"], 1);
  EXPECT_EQ(d["syncs_removed"], 0);
  EXPECT_EQ(d["recorded_ns"], 225);
  EXPECT_EQ(d["predicted_ns"], 175);
  EXPECT_DOUBLE_EQ(d["predicted_vs_recorded_pct"].get<double>(), 100.0 * (175.0 - 225.0) / 225.0);
  ASSERT_EQ(d["streams"].size(), 1u);
  const json& s = d["streams"][0];
  EXPECT_EQ(s["stream"], 1);
  EXPECT_EQ(s["virtual"], false);
  EXPECT_EQ(s["ops"], 2);
  EXPECT_EQ(s["recorded_busy_ns"], 200);
  EXPECT_EQ(s["predicted_busy_ns"], 150);
  ASSERT_EQ(d["schedule"].size(), 2u);
  EXPECT_EQ(d["schedule"][0]["name"], "k1_gemm");
  EXPECT_EQ(d["schedule"][0]["duration_ns"], 50);
  EXPECT_EQ(d["schedule"][1]["name"], "k2_relu");
  EXPECT_EQ(d["schedule"][1]["start_ns"], d["schedule"][0]["start_ns"].get<int64_t>() + 50);
  EXPECT_EQ(d["schedule"][1]["duration_ns"], 100);
  EXPECT_EQ(d["contradicting_edges"], 0);
  EXPECT_EQ(d["broken_cycle_edges"], 0);
}

}  // namespace
}  // namespace tracesmith::replay
