// GPU tests of the rows the capture makes from driver API callbacks rather
// than from CUPTI activity kinds that slow down every CUDA call:
// synchronizations (gpu/programs/sync_kinds.cu) and the driver API rows of
// kernels, memsets and copies a program submits through the driver API
// itself (gpu/programs/driver_launch.cu). Run by scripts/gpu-check.sh;
// "skipped (no GPU)" elsewhere.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "capture/gpu_profile.h"
#include "capture/trace_checks.h"

namespace tracesmith::capture {
namespace {

using testing::ApisNamed;
using testing::KernelsNamed;
using testing::Str;

// What a sync row says, with ids made comparable across runs: the stream as
// "a", "b" (the program's two streams, known from their kernels) or "other",
// and the runtime call it belongs to (by correlation id).
using SyncKey = std::tuple<int, std::string, std::string, bool>;  // type, stream, api, has event

std::vector<SyncKey> SyncKeys(const ProfileRun& r) {
  const model::Trace& t = r.trace;
  auto kernels = KernelsNamed(t, "bump");
  EXPECT_EQ(kernels.size(), 2u);
  uint32_t a = kernels.size() > 0 ? kernels[0].stream_id : 0;
  uint32_t b = kernels.size() > 1 ? kernels[1].stream_id : 0;
  if (kernels.size() == 2 && kernels[0].start_ns > kernels[1].start_ns) std::swap(a, b);
  std::map<uint32_t, const model::ApiEvent*> api;
  for (const auto& e : t.Rows<model::ApiEvent>()) api[e.correlation_id] = &e;
  std::vector<SyncKey> keys;
  for (const auto& s : t.Rows<model::SyncEvent>()) {
    auto it = api.find(s.correlation_id);
    std::string call = it == api.end() ? "(none)" : std::string(Str(t, it->second->name_id));
    std::string stream = s.stream_id == a   ? "a"
                         : s.stream_id == b ? "b"
                         : s.stream_id      ? "other"
                                            : "-";
    keys.emplace_back(s.sync_type, stream, call, s.event_id != 0);
  }
  std::sort(keys.begin(), keys.end());
  return keys;
}

TEST(GpuSync, CallbackRowsMatchTheProgram) {
  REQUIRE_GPU();
  ProfileRun r = Profile("sync_kinds", Program("sync_kinds"));
  ASSERT_EQ(r.exit_code(), 0) << r.output;
  const model::Trace& t = r.trace;
  std::map<uint32_t, const model::ApiEvent*> api;
  for (const auto& e : t.Rows<model::ApiEvent>()) api[e.correlation_id] = &e;
  std::map<int, int> by_type;
  uint32_t event_id = 0;
  int nested = 0, same_stack = 0, with_stack = 0;
  for (const auto& s : t.Rows<model::SyncEvent>()) {
    ++by_type[s.sync_type];
    auto it = api.find(s.correlation_id);
    ASSERT_NE(it, api.end()) << "sync row without its runtime API row, correlation "
                             << s.correlation_id;
    const model::ApiEvent& a = *it->second;
    EXPECT_EQ(s.tid, a.tid);
    EXPECT_LE(s.start_ns, s.end_ns);
    nested += a.start_ns <= s.start_ns && s.end_ns <= a.end_ns;
    with_stack += s.stack_id != 0;
    same_stack += s.stack_id != 0 && s.stack_id == a.stack_id;
    if (s.sync_type == model::kSyncEventSynchronize || s.sync_type == model::kSyncStreamWaitEvent) {
      EXPECT_NE(s.event_id, 0u);
      if (!event_id) event_id = s.event_id;
      EXPECT_EQ(s.event_id, event_id) << "one event, one id";
    }
  }
  EXPECT_EQ(by_type[model::kSyncStreamSynchronize], 5);
  EXPECT_EQ(by_type[model::kSyncEventSynchronize], 2);
  EXPECT_EQ(by_type[model::kSyncStreamWaitEvent], 4);
  EXPECT_EQ(by_type[model::kSyncContextSynchronize], 1);
  size_t n = t.Rows<model::SyncEvent>().size();
  EXPECT_EQ(n, 12u);
  EXPECT_EQ(nested, int(n)) << "each sync lies inside its runtime call";
  EXPECT_EQ(with_stack, int(n));
  EXPECT_EQ(same_stack, int(n)) << "the runtime API row carries the same stack";
  std::vector<SyncKey> keys = SyncKeys(r);
  int on_a = 0, on_b = 0, other = 0;
  for (const auto& k : keys) {
    on_a += std::get<1>(k) == "a";
    on_b += std::get<1>(k) == "b";
    other += std::get<1>(k) == "other";
  }
  EXPECT_EQ(on_a, 3);
  EXPECT_EQ(on_b, 4);
  EXPECT_EQ(other, 2) << "the per-thread default stream";
  std::printf(
      "GPU-CHECK sync rows: %zu (stream %d, event %d, wait %d, context %d), nested %d, "
      "stacks %d\n",
      n, by_type[model::kSyncStreamSynchronize], by_type[model::kSyncEventSynchronize],
      by_type[model::kSyncStreamWaitEvent], by_type[model::kSyncContextSynchronize], nested,
      same_stack);
}

TEST(GpuSync, SameRowsAsCuptiSynchronizationActivity) {
  REQUIRE_GPU();
  ProfileRun cb = Profile("sync_kinds_cb", Program("sync_kinds"), "--stacks none");
  ProfileRun act = Profile("sync_kinds_act", Program("sync_kinds"),
                           "--stacks none --kinds default,-sync,+sync-activity");
  ASSERT_EQ(cb.exit_code(), 0) << cb.output;
  ASSERT_EQ(act.exit_code(), 0) << act.output;
  std::vector<SyncKey> a = SyncKeys(cb), b = SyncKeys(act);
  EXPECT_EQ(a, b);
  auto meta = [](const ProfileRun& r) {
    for (const auto& m : r.trace.Rows<model::MetadataEntry>())
      if (Str(r.trace, m.key_id) == "capture.kinds") return std::string(Str(r.trace, m.value_id));
    return std::string();
  };
  EXPECT_EQ(meta(act).find("sync-activity") != std::string::npos, true) << meta(act);
  std::printf("GPU-CHECK sync rows callback vs CUPTI activity: %zu vs %zu, identical=%d\n",
              a.size(), b.size(), a == b);
}

TEST(GpuDriverLaunch, DriverApiLaunchesGetApiRowsRuntimeOnesDoNot) {
  REQUIRE_GPU();
  ProfileRun r = Profile("driver_launch", Program("driver_launch"));
  ASSERT_EQ(r.exit_code(), 0) << r.output;
  const model::Trace& t = r.trace;
  std::map<std::string, int> driver_rows;
  std::map<uint32_t, const model::ApiEvent*> api;
  for (const auto& e : t.Rows<model::ApiEvent>()) {
    api[e.correlation_id] = &e;
    if (e.domain == model::kApiDriver) ++driver_rows[std::string(Str(t, e.name_id))];
  }
  EXPECT_EQ(driver_rows["cuLaunchKernel"], 7);
  EXPECT_EQ(driver_rows["cuLaunchKernelEx"], 3);
  EXPECT_EQ(driver_rows["cuMemsetD32Async"], 2);
  EXPECT_EQ(driver_rows["cuMemcpyDtoHAsync"], 1);
  int total = 0;
  for (const auto& [name, n] : driver_rows) total += n;
  EXPECT_EQ(total, 13) << "only the program's own driver calls";
  auto driver_kernels = KernelsNamed(t, "driver_kernel");
  auto runtime_kernels = KernelsNamed(t, "runtime_kernel");
  ASSERT_EQ(driver_kernels.size(), 10u);
  ASSERT_EQ(runtime_kernels.size(), 5u);
  int joined = 0, stacks = 0;
  for (const auto& k : driver_kernels) {
    auto it = api.find(k.correlation_id);
    joined += it != api.end() && it->second->domain == model::kApiDriver;
    stacks += k.stack_id != 0 && it != api.end() && it->second->stack_id == k.stack_id;
  }
  EXPECT_EQ(joined, 10);
  EXPECT_EQ(stacks, 10);
  for (const auto& k : runtime_kernels) {
    auto it = api.find(k.correlation_id);
    ASSERT_NE(it, api.end());
    EXPECT_EQ(Str(t, it->second->name_id), "cudaLaunchKernel");
  }
  std::printf(
      "GPU-CHECK driver launch rows: cuLaunchKernel=%d cuLaunchKernelEx=%d memset=%d "
      "memcpy=%d total=%d, driver kernels joined=%d with stacks=%d\n",
      driver_rows["cuLaunchKernel"], driver_rows["cuLaunchKernelEx"],
      driver_rows["cuMemsetD32Async"], driver_rows["cuMemcpyDtoHAsync"], total, joined, stacks);
}

}  // namespace
}  // namespace tracesmith::capture
