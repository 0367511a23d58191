// The engine's callback table (recorder.h) as recorders' claims fill it: the
// one entry a driver callback reads says whether the timed path runs, at
// which cost site, with a stack, and which recorders it calls on it and
// after it. A launch nobody but the engine claimed calls no recorder.
#include <gtest/gtest.h>

#include <memory>

#include "tracesmith/capture/recorder.h"

namespace tracesmith::capture {
namespace {

constexpr CUpti_CallbackId kLaunch = CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel;
constexpr CUpti_CallbackId kSync = CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize;
constexpr CUpti_CallbackId kAlloc = CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2;

// A recorder as recorders.cc would list one: it claims what it is told.
class ClaimingRecorder final : public Recorder {
 public:
  explicit ClaimingRecorder(void (*claim)(CallbackClaims&)) : claim_(claim) {}
  const char* name() const override { return "test"; }
  void Claim(CallbackClaims& claims) override { claim_(claims); }

 private:
  void (*claim_)(CallbackClaims&);
};

auto NewTable() { return std::make_unique<CallbackTable>(); }

TEST(RecorderClaims, NothingClaimedEnablesNothing) {
  auto table = NewTable();
  for (CUpti_CallbackId cbid = 0; cbid < CUPTI_DRIVER_TRACE_CBID_SIZE; ++cbid)
    EXPECT_FALSE(table->driver[cbid].enabled()) << cbid;
  EXPECT_EQ(table->module_loads, 0);
  EXPECT_EQ(table->context_created, 0);
}

TEST(RecorderClaims, EngineWorkClaimCallsNoRecorder) {
  auto table = NewTable();
  table->ClaimWork(kLaunch, CostSite::kLaunch, /*stack=*/true, /*driver_row=*/true);
  const DriverRoute r = table->driver[kLaunch];
  EXPECT_TRUE(r.enabled());
  EXPECT_EQ(r.flags, DriverRoute::kTimed | DriverRoute::kStack | DriverRoute::kDriverRow);
  EXPECT_EQ(CostSite(r.site), CostSite::kLaunch);
  EXPECT_EQ(r.entry | r.exit | r.after_entry | r.after_exit, 0);
  table->ClaimWork(CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoD_v2, CostSite::kCopy, false, true);
  EXPECT_EQ(table->driver[CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoD_v2].flags,
            DriverRoute::kTimed | DriverRoute::kDriverRow);
}

TEST(RecorderClaims, TimedClaimSetsSiteStackAndRecorderBits) {
  auto table = NewTable();
  DriverClaim how;
  how.site = CostSite::kSync;
  how.exit = true;
  CallbackClaims second(table.get(), 2, /*stacks_on=*/true);
  EXPECT_TRUE(second.stacks_on());
  second.Driver(kSync, how);
  DriverRoute r = table->driver[kSync];
  EXPECT_EQ(r.flags, DriverRoute::kTimed | DriverRoute::kStack);
  EXPECT_EQ(CostSite(r.site), CostSite::kSync);
  EXPECT_EQ(r.entry, 1 << 2);
  EXPECT_EQ(r.exit, 1 << 2);
  EXPECT_EQ(r.after_entry | r.after_exit, 0);

  // Stacks off: no stack, the rest as before.
  auto off = NewTable();
  CallbackClaims no_stacks(off.get(), 0, /*stacks_on=*/false);
  no_stacks.Driver(kSync, how);
  EXPECT_EQ(off->driver[kSync].flags, DriverRoute::kTimed);
  EXPECT_EQ(off->driver[kSync].entry, 1);
}

TEST(RecorderClaims, StackOnlyClaimTimesTheEntryWithoutCallingTheRecorder) {
  auto table = NewTable();
  DriverClaim stack_only;
  stack_only.site = CostSite::kAlloc;
  stack_only.entry = false;
  CallbackClaims claims(table.get(), 1, true);
  claims.Driver(kAlloc, stack_only);
  const DriverRoute r = table->driver[kAlloc];
  EXPECT_TRUE(r.enabled());
  EXPECT_EQ(r.flags, DriverRoute::kTimed | DriverRoute::kStack);
  EXPECT_EQ(CostSite(r.site), CostSite::kAlloc);
  EXPECT_EQ(r.entry | r.exit, 0);
}

TEST(RecorderClaims, FirstTimedClaimKeepsTheSiteLaterOnesAddTheirBits) {
  auto table = NewTable();
  DriverClaim launch;
  launch.site = CostSite::kLaunch;
  launch.stack = false;
  launch.exit = true;
  CallbackClaims(table.get(), 0, true).Driver(kLaunch, launch);
  DriverClaim other;
  other.site = CostSite::kOther;
  CallbackClaims(table.get(), 3, true).Driver(kLaunch, other);
  table->ClaimWork(kLaunch, CostSite::kGraph, true, false);
  const DriverRoute r = table->driver[kLaunch];
  EXPECT_EQ(CostSite(r.site), CostSite::kLaunch);
  EXPECT_EQ(r.flags, DriverRoute::kTimed | DriverRoute::kStack);
  EXPECT_EQ(r.entry, 0b1001);
  EXPECT_EQ(r.exit, 0b0001);
}

TEST(RecorderClaims, UntimedClaimRunsAfterTheTimedPath) {
  auto table = NewTable();
  DriverClaim untimed;
  untimed.timed = false;
  untimed.exit = true;
  CallbackClaims(table.get(), 0, true).Driver(kLaunch, untimed);
  DriverRoute r = table->driver[kLaunch];
  EXPECT_TRUE(r.enabled());
  EXPECT_EQ(r.flags, 0);  // no timer, no stack: the replay capture's launches
  EXPECT_EQ(r.after_entry, 1);
  EXPECT_EQ(r.after_exit, 1);
  // The engine's own claim of the same launch: timed, and still after it.
  table->ClaimWork(kLaunch, CostSite::kLaunch, true, true);
  r = table->driver[kLaunch];
  EXPECT_EQ(r.flags, DriverRoute::kTimed | DriverRoute::kStack | DriverRoute::kDriverRow);
  EXPECT_EQ(r.entry | r.exit, 0);
  EXPECT_EQ(r.after_entry, 1);
}

TEST(RecorderClaims, OutOfRangeIdsAreIgnored) {
  auto table = NewTable();
  DriverClaim how;
  CallbackClaims claims(table.get(), 0, true);
  claims.Driver(0, how);
  claims.Driver(CUPTI_DRIVER_TRACE_CBID_SIZE, how);
  table->ClaimWork(CUPTI_DRIVER_TRACE_CBID_SIZE + 5, CostSite::kLaunch, true, true);
  for (CUpti_CallbackId cbid = 0; cbid < CUPTI_DRIVER_TRACE_CBID_SIZE; ++cbid)
    EXPECT_FALSE(table->driver[cbid].enabled()) << cbid;
}

TEST(RecorderClaims, RecordersClaimThroughTheirClaimHook) {
  auto table = NewTable();
  ClaimingRecorder modules([](CallbackClaims& c) { c.ModuleLoads(); });
  ClaimingRecorder contexts([](CallbackClaims& c) {
    c.ContextCreated();
    DriverClaim how;
    how.site = CostSite::kSync;
    c.Driver(kSync, how);
  });
  Recorder* recorders[] = {&modules, &contexts};
  for (int i = 0; i < 2; ++i) {
    CallbackClaims claims(table.get(), i, false);
    recorders[i]->Claim(claims);
  }
  EXPECT_EQ(table->module_loads, 0b01);
  EXPECT_EQ(table->context_created, 0b10);
  EXPECT_EQ(table->driver[kSync].entry, 0b10);
  EXPECT_EQ(table->driver[kSync].exit, 0);
  EXPECT_FALSE(table->driver[kLaunch].enabled());
}

}  // namespace
}  // namespace tracesmith::capture
