/* Cost per call of include/tracesmith/app/app.h from C (the program's own
 * events): TRACESMITH_COUNTER, ts_app_instant and a range (begin + end),
 * with no capture running and with one, in interleaved rounds; the median
 * ns per call over the rounds. The capture library is
 * $TRACESMITH_INJECT_LIB (the header loads it), started and stopped through
 * its tracesmith_session_* C API, writing to a temporary file.
 *   build/release/bin/app_events_bench [calls] [rounds]    (bench/app_events/app_events.py:
 *   the same from Python) */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "tracesmith/app/app.h"

typedef int (*StartFn)(const char*, char*, size_t);
typedef int (*StopFn)(char*, size_t, char*, size_t);

static double NowNs(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static int Cmp(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}

enum { kForms = 3, kMaxRounds = 64 };

int main(int argc, char** argv) {
  const long calls = argc > 1 ? atol(argv[1]) : 1000000;
  int rounds = argc > 2 ? atoi(argv[2]) : 7;
  if (rounds > kMaxRounds) rounds = kMaxRounds;
  const char* lib = getenv("TRACESMITH_INJECT_LIB");
  void* h = lib ? dlopen(lib, RTLD_NOW | RTLD_LOCAL) : NULL;
  StartFn start = h ? (StartFn)dlsym(h, "tracesmith_session_start") : NULL;
  StopFn stop = h ? (StopFn)dlsym(h, "tracesmith_session_stop") : NULL;
  if (!start || !stop || !ts_app_api()) {
    fprintf(stderr, "set TRACESMITH_INJECT_LIB to a TraceSmith capture library\n");
    return 2;
  }
  static double ns[2][kForms][kMaxRounds];
  const uint32_t loss = ts_app_intern("loss"), eval = ts_app_intern("eval");
  for (int r = 0; r < rounds; ++r)
    for (int on = 0; on < 2; ++on) {
      char err[256];
      if (on && start("TRACESMITH_OUTPUT=/tmp/app_events_bench.sbt\nTRACESMITH_FORCE=1\n"
                      "TRACESMITH_QUIET=1\n",
                      err, sizeof err) != 0) {
        fprintf(stderr, "start: %s\n", err);
        return 1;
      }
      double t0 = NowNs();
      for (long i = 0; i < calls; ++i) TRACESMITH_COUNTER("loss", (double)i);
      double t1 = NowNs();
      for (long i = 0; i < calls; ++i) ts_app_instant(loss, 0);
      double t2 = NowNs();
      for (long i = 0; i < calls; ++i) ts_app_range_end(eval, 0, ts_app_range_begin());
      double t3 = NowNs();
      ns[on][0][r] = (t1 - t0) / calls;
      ns[on][1][r] = (t2 - t1) / calls;
      ns[on][2][r] = (t3 - t2) / calls;
      if (on && stop(NULL, 0, err, sizeof err) != 0) fprintf(stderr, "stop: %s\n", err);
    }
  static const char* kNames[kForms] = {"TRACESMITH_COUNTER", "ts_app_instant", "range"};
  printf("ns per call, median of %d interleaved rounds of %ld calls (library %s)\n", rounds, calls,
         lib);
  printf("  %-20s %12s %12s\n", "call", "no capture", "capturing");
  for (int f = 0; f < kForms; ++f) {
    qsort(ns[0][f], rounds, sizeof(double), Cmp);
    qsort(ns[1][f], rounds, sizeof(double), Cmp);
    printf("  %-20s %12.1f %12.1f\n", kNames[f], ns[0][f][rounds / 2], ns[1][f][rounds / 2]);
  }
  remove("/tmp/app_events_bench.sbt");
  return 0;
}
