// The hand-built traces behind the golden tests. Each comment gives the
// numbers worked out by hand; the tests check them (and an oracle that walks
// every nanosecond checks the rest).
#include "test_traces.h"

#include "tracesmith/model/stack_builder.h"

namespace tracesmith::analysis::testing {

using namespace model;

// GPU 0, streams 1 and 2, one host thread. Window [0, 250].
//   A1 [0,10]    -> gemm   s1 [20,120)
//   A2 [12,20]   -> relu   s2 [50,100)
//   A3 [22,30]   -> gemm   s1 [130,200)
//   A4 [150,160] -> memcpy HtoD 1000 B s2 [170,230)
//   (no call)       memset 64 B s2 [240,250)
// Device busy [20,120)+[130,230)+[240,250) = 210 (84%); idle: host_launch
// 20 ([0,20)), launch_latency 10 ([120,130)), nothing_queued 10 ([230,240)).
// Max concurrency 2, average (170+120)/210. Kernel/copy overlap [170,200) = 30.
Trace OverlappingStreamsTrace() {
  TraceBuilder b;
  b.Kernel("gemm", 0, 1, 20, 120, 0, 10);
  b.Kernel("relu", 0, 2, 50, 100, 12, 20);
  b.Kernel("gemm", 0, 1, 130, 200, 22, 30);
  b.Memcpy(kCopyHtoD, 1000, 0, 2, 170, 230, 150, 160);
  b.Memset(64, 0, 2, 240, 250);
  return std::move(b.trace());
}

// Stream 2 waits (cudaStreamWaitEvent) for the producer on stream 1.
//   A1 [0,10]  -> producer s1 [20,300)
//   wait on s2 [30,300)
//   A2 [40,50] -> consumer s2 [310,400)
// Stream 2: idle 30, waiting 270, pending 10, running 90; its gap [0,310)
// is "other_stream". Critical path: A1, launch delay, producer, wait, consumer.
Trace EventWaitTrace() {
  TraceBuilder b;
  b.Kernel("producer", 0, 1, 20, 300, 0, 10);
  b.Sync(kSyncStreamWaitEvent, 0, 2, 30, 300, /*event_id=*/9);
  b.Kernel("consumer", 0, 2, 310, 400, 40, 50);
  return std::move(b.trace());
}

// Two launches of CUDA graph 7 (two kernels each) from cudaGraphLaunch.
//   call [0,10]    -> g_a [20,80), g_b [90,200)      graph launch [20,200]
//   call [100,105] -> g_a [210,260), g_b [265,300)   graph launch [210,300]
// Graph 7: 2 launches, 4 kernels, 255 ns. Launch delay to the first kernel:
// 20 and 110.
Trace GraphLaunchTrace() {
  TraceBuilder b;
  const uint32_t ga = b.Str("g_a"), gb = b.Str("g_b");
  auto kernel = [&](uint32_t name, uint64_t s, uint64_t e, uint32_t corr) {
    KernelEvent k{};
    k.start_ns = s;
    k.end_ns = e;
    k.pid = 100;
    k.device_id = 0;
    k.stream_id = 3;
    k.demangled_id = name;
    k.graph_id = 7;
    k.correlation_id = corr;
    b.trace().Rows<KernelEvent>().push_back(k);
  };
  b.Api("cudaGraphLaunch", 0, 10, 1);
  b.GraphLaunch(7, 0, 3, 20, 200, 1);
  kernel(ga, 20, 80, 1);
  kernel(gb, 90, 200, 1);
  b.Api("cudaGraphLaunch", 100, 105, 2);
  b.GraphLaunch(7, 0, 3, 210, 300, 2);
  kernel(ga, 210, 260, 2);
  kernel(gb, 265, 300, 2);
  return std::move(b.trace());
}

Trace EmptyTrace() { return Trace(); }

// One kernel, no API call: busy 100% of [1000, 1500].
Trace SingleEventTrace() {
  TraceBuilder b;
  b.Kernel("lonely", 0, 7, 1000, 1500);
  return std::move(b.trace());
}

// Two processes with different capture clocks.
//   pid 1: anchor gpu 1000 <-> realtime 1'000'000 (offset +999'000)
//          A [1050,1060] -> p1_kernel GPU 0 [1100,1200)
//          => realtime A [1'000'050, 1'000'060], kernel [1'000'100, 1'000'200)
//   pid 2: anchors gpu 50'000 <-> 1'000'150 and gpu 60'000 <-> 1'010'160
//          (drift: 10'010 realtime ns per 10'000 gpu ns)
//          A [50'990,50'995] -> p2_kernel GPU 1 [51'000,51'100)
//          => realtime A [1'001'140, 1'001'145], kernel [1'001'151, 1'001'251)
// Window [1'000'050, 1'001'251] = 1201 ns.
Trace TwoProcessTrace() {
  TraceBuilder b(1);
  b.Anchor(1000, 1'000'000);
  b.Kernel("p1_kernel", 0, 1, 1100, 1200, 1050, 1060);
  b.Pid(2);
  b.Anchor(50'000, 1'000'150);
  b.Anchor(60'000, 1'010'160, kClockEnd);
  // Correlation ids restart per process in CUPTI; the builder's counter
  // continues, which is also valid.
  b.Kernel("p2_kernel", 1, 1, 51'000, 51'100, 50'990, 50'995);
  return std::move(b.trace());
}

// Kernels launched from two Python call sites, inside NVTX ranges.
//   step (train.py:88): k_a 10 ns, k_b 20 ns, k_a 30 ns
//   eval (train.py:120): k_c 40 ns
//   NVTX "forward" [0,25] holds the first two launches; "eval" [60,70] the last.
Trace CallSiteTrace() {
  TraceBuilder b;
  Trace& t = b.trace();
  StackBuilder sb(&t);
  Frame step{};
  step.kind = kFramePython;
  step.function_id = b.Str("step");
  step.file_id = b.Str("train.py");
  step.line = 88;
  Frame eval = step;
  eval.function_id = b.Str("eval");
  eval.line = 120;
  Frame main_frame = step;
  main_frame.function_id = b.Str("main");
  main_frame.line = 200;
  const uint32_t f_step = sb.InternFrame(step), f_eval = sb.InternFrame(eval),
                 f_main = sb.InternFrame(main_frame);
  const uint32_t s_step[] = {f_step, f_main}, s_eval[] = {f_eval, f_main};
  const uint32_t st_step = sb.InternStack(s_step), st_eval = sb.InternStack(s_eval);
  b.Kernel("k_a", 0, 1, 100, 110, 0, 5, 0, st_step);
  b.Kernel("k_b", 0, 1, 120, 140, 10, 15, 0, st_step);
  b.Kernel("k_a", 0, 1, 150, 180, 30, 35, 0, st_step);
  b.Kernel("k_c", 0, 1, 190, 230, 62, 66, 0, st_eval);
  b.Nvtx("forward", 0, 25);
  b.Nvtx("eval", 60, 70);
  return std::move(b.trace());
}

}  // namespace tracesmith::analysis::testing
