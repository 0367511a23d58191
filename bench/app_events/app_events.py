#!/usr/bin/env python3
"""Cost per call of tracesmith.counter / instant / range (the program's own
events), while capturing and while not, measured interleaved in one process.

Rounds alternate: capture off, capture on, off, on, ... (a slow moment of a
shared machine falls on both alike); each round times N calls of each form
with time.perf_counter_ns and the loop's own cost (the same loop calling a
no-op C function) subtracted. Reports the median ns per call over the rounds.

  off     no capture running (the library loaded: one load and a branch)
  on      a capture running: the call recorded (timestamp + the thread's ring)

The capture library is $TRACESMITH_INJECT_LIB: the injection library on a GPU
machine (tracesmith.profile() starts the real capture), or, without a GPU,
the test stand-in libtracesmith-app-fake.so (the same app-event code; its
clock is CLOCK_MONOTONIC where the real one reads CUPTI's timestamp).
Usage: PYTHONPATH=build/release/python TRACESMITH_INJECT_LIB=build/release/lib/libtracesmith-app-fake.so \\
         /usr/bin/python3 bench/app_events/app_events.py [--calls 200000] [--rounds 7]
"""

import argparse
import os
import statistics
import tempfile
import time

import tracesmith


def per_call(fn, calls):
    t0 = time.perf_counter_ns()
    fn(calls)
    return (time.perf_counter_ns() - t0) / calls


def loops():
    counter, instant, rng, noop = tracesmith.counter, tracesmith.instant, tracesmith.range, abs

    def base(n):
        for i in range(n):
            noop(i)

    def c(n):
        for i in range(n):
            counter("loss", 0.5)

    def ins(n):
        for i in range(n):
            instant("checkpoint")

    def ins_args(n):
        for i in range(n):
            instant("checkpoint", step=7)

    def r(n):
        for i in range(n):
            with rng("eval"):
                pass

    return base, {"counter": c, "instant": ins, "instant(args)": ins_args, "with range": r}


def sweep_loops():
    """The parts of `with tracesmith.range("eval"): pass` (--sweep): making the
    object alone, the `with` on one object made before the loop (enter + exit:
    two timestamps and a record), the decorator form, and a `with` on a no-op
    C context manager (the interpreter's own cost of the statement)."""
    import contextlib
    rng = tracesmith.range
    made = rng("eval")
    noop_cm = contextlib.nullcontext()  # Python-level, for scale

    @rng("eval")
    def decorated():
        pass

    def make(n):
        for i in range(n):
            rng("eval")

    def with_made(n):
        for i in range(n):
            with made:
                pass

    def deco(n):
        for i in range(n):
            decorated()

    def with_nullcontext(n):
        for i in range(n):
            with noop_cm:
                pass

    return {"range(...) only": make, "with (made once)": with_made, "@range call": deco,
            "with nullcontext": with_nullcontext}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=200000)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--sweep", action="store_true",
                    help="also time the parts of a range (sweep_loops)")
    args = ap.parse_args()
    base, forms = loops()
    if args.sweep:
        forms.update(sweep_loops())
    results = {(f, s): [] for f in forms for s in ("off", "on")}
    with tempfile.TemporaryDirectory() as d:
        for rnd in range(args.rounds):
            for state in ("off", "on"):
                p = None
                if state == "on":
                    p = tracesmith.profile(os.path.join(d, f"r{rnd}.sbt"), overwrite=True,
                                           quiet=True)
                    p.start()
                    assert tracesmith.enabled(), "no capture: set TRACESMITH_INJECT_LIB"
                for name, fn in forms.items():
                    b = per_call(base, args.calls)
                    results[(name, state)].append(per_call(fn, args.calls) - b)
                if p is not None:
                    p.stop()
    print(f"ns per call, median of {args.rounds} interleaved rounds of {args.calls} calls "
          f"(loop cost subtracted; library {os.environ.get('TRACESMITH_INJECT_LIB', '')})")
    print(f"  {'call':<18} {'no capture':>12} {'capturing':>12} {'max off':>9} {'max on':>9}")
    for name in forms:
        off, on = results[(name, 'off')], results[(name, 'on')]
        print(f"  {name:<18} {statistics.median(off):12.0f} {statistics.median(on):12.0f} "
              f"{max(off):9.0f} {max(on):9.0f}")


if __name__ == "__main__":
    main()
