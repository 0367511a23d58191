#!/usr/bin/env python3
"""Where an option's cost sits on a step (issue #39 "say where the cost sits"): reads the last
round's default.sbt and option.sbt that gpu/inproc_ab.py leaves in a run's folder (each one
capture block: W untimed + S timed steps of the same program) and splits the option's extra
step time into
  - GPU time inside kernels (the kernels ran slower: sampling on the SMs),
  - GPU idle between kernels (the GPU waited for the host: launches came later),
  - the host's launch calls (their duration in the trace's API rows),
per block, so that a cost that shows up only in kernel durations is the hardware's and one in
launch calls and idle gaps is the host's. With PC samples in the option's trace, the launch
calls of 300 us or more are also split by whether they end within 3 ms after a drain (a
sample window's end: the writer's cuptiPCSamplingGetData), which is how the drains' hold on
the program's launches was found (2026-11-30).

  python3 gpu/cost_where.py RUN_DIR [RUN_DIR ...]     (needs tracesmith._core: PYTHONPATH)

Prints one `ABCOST where <run>: ...` line per folder (figures, no verdict).
"""
import os
import statistics
import sys

import numpy as np

DRAIN_KIND = 0x80000001  # model::kOverheadPcSamplingDrain
LAUNCH_NAMES = ("cudaLaunchKernel", "cuLaunchKernel", "cudaLaunchKernelExC", "cuLaunchKernelEx",
                "cudaGraphLaunch", "cuGraphLaunch")


def block_figures(path):
    import tracesmith as ts
    t = ts.load(path)
    k = t.kernels
    start = np.asarray(k.start_ns, dtype=np.int64)
    end = np.asarray(k.end_ns, dtype=np.int64)
    order = np.argsort(start)
    start, end = start[order], end[order]
    dur = end - start
    # The union of kernel intervals (concurrent kernels count once): the GPU's busy time.
    busy, cur_s, cur_e = 0, None, None
    for s, e in zip(start.tolist(), end.tolist()):
        if cur_e is None or s > cur_e:
            if cur_e is not None:
                busy += cur_e - cur_s
            cur_s, cur_e = s, e
        else:
            cur_e = max(cur_e, e)
    if cur_e is not None:
        busy += cur_e - cur_s
    span = int(end.max() - start.min()) if len(start) else 0
    a = t.api
    names = list(a.name)
    adur = np.asarray(a.end_ns, dtype=np.int64) - np.asarray(a.start_ns, dtype=np.int64)
    astart = np.asarray(a.start_ns, dtype=np.int64)
    is_launch = np.array([n in LAUNCH_NAMES for n in names], dtype=bool)
    launch = adur[is_launch]
    # The slowest launch call: which one, and when (from the block's first API call).
    at = ""
    if len(launch):
        i = int(np.argmax(launch))
        at = (f"launch {i + 1} of {len(launch)}, "
              f"{(astart[is_launch][i] - astart.min()) / 1e6:.1f} ms into the block")
    slow = {"n": 0, "ns": 0, "at_drain": 0, "at_drain_ns": 0, "drains": 0, "drain_ns": 0,
            "held": 0, "held_ns": 0}
    # Traces since 2026-11-30 hold each drain (GetData call) as an overhead row of TraceSmith's
    # own kind: the program's launch calls that overlap one, and by how much.
    if "overhead" in t.kinds and len(launch):
        o = t.table("overhead")
        kinds = np.asarray(o.overhead_kind, dtype=np.uint64)
        dm = kinds == DRAIN_KIND
        ds = np.asarray(o.start_ns, dtype=np.int64)[dm]
        de = np.asarray(o.end_ns, dtype=np.int64)[dm]
        order = np.argsort(ds)
        ds, de = ds[order], de[order]
        slow["drains"], slow["drain_ns"] = len(ds), int((de - ds).sum())
        ls, le = astart[is_launch], (astart + adur)[is_launch]
        for s0, e0 in zip(ls.tolist(), le.tolist()):
            j = np.searchsorted(ds, e0)  # drains starting before the call ends
            k = j - 1
            while k >= 0 and de[k] > s0:
                slow["held"] += 1
                slow["held_ns"] += int(min(e0, de[k]) - max(s0, ds[k]))
                k -= 1
    # The launch calls of 300 us or more; with PC samples, those that end within 3 ms of a
    # sample window's end (the drains of traces before the overhead rows).
    windows = (np.unique(np.asarray(t.pc_samples.end_ns, dtype=np.int64))
               if "pcsample" in t.kinds else np.zeros(0, dtype=np.int64))
    lend = (astart + adur)[is_launch]
    for i in np.where(launch >= 300_000)[0]:
        slow["n"] += 1
        slow["ns"] += int(launch[i])
        j = np.searchsorted(windows, lend[i] - 3_000_000)
        if j < len(windows) and windows[j] <= lend[i] + 3_000_000:
            slow["at_drain"] += 1
            slow["at_drain_ns"] += int(launch[i])
    return {"slow": slow, "kernels": len(dur), "kernel_ns": int(dur.sum()), "busy_ns": busy,
            "span_ns": span,
            "idle_ns": span - busy, "launches": len(launch),
            "launch_ns": int(launch.sum()) if len(launch) else 0,
            "launch_med_ns": float(statistics.median(launch)) if len(launch) else 0.0,
            "launch_max_ns": int(launch.max()) if len(launch) else 0,
            "launch_max_at": at,
            "kernel_med_ns": float(statistics.median(dur.tolist())) if len(dur) else 0.0}


def main():
    for run in sys.argv[1:]:
        name = os.path.basename(os.path.normpath(run))
        try:
            d = block_figures(os.path.join(run, "default.sbt"))
            o = block_figures(os.path.join(run, "option.sbt"))
        except Exception as e:  # noqa: BLE001 - a figure line, not a verdict
            print(f"ABCOST where {name}: not read: {e}")
            continue

        def per(x, key):
            return x[key] / max(x["kernels"], 1) / 1e3  # us per kernel

        print(f"ABCOST where {name}: per kernel, default -> option: GPU time in kernels "
              f"{per(d, 'kernel_ns'):.2f} -> {per(o, 'kernel_ns'):.2f} us "
              f"(x{o['kernel_ns'] / max(d['kernel_ns'], 1):.3f} over the block; median kernel "
              f"{d['kernel_med_ns'] / 1e3:.2f} -> {o['kernel_med_ns'] / 1e3:.2f} us); "
              f"GPU idle between kernels {per(d, 'idle_ns'):.2f} -> {per(o, 'idle_ns'):.2f} us; "
              f"span {d['span_ns'] / 1e6:.1f} -> {o['span_ns'] / 1e6:.1f} ms; launch calls "
              f"{d['launches']} -> {o['launches']}, median {d['launch_med_ns'] / 1e3:.2f} -> "
              f"{o['launch_med_ns'] / 1e3:.2f} us, sum {d['launch_ns'] / 1e6:.2f} -> "
              f"{o['launch_ns'] / 1e6:.2f} ms, max {d['launch_max_ns'] / 1e3:.1f} -> "
              f"{o['launch_max_ns'] / 1e3:.1f} us (option's: {o['launch_max_at']}) "
              f"({d['kernels']} / {o['kernels']} kernels)" +
              (f"; option's launch calls of 300 us or more: {o['slow']['n']}, "
               f"{o['slow']['ns'] / 1e6:.1f} ms, of which {o['slow']['at_drain']} "
               f"({o['slow']['at_drain_ns'] / 1e6:.1f} ms) end within 3 ms of a drain"
               if o["slow"]["n"] else "") +
              (f"; drains (overhead rows) {o['slow']['drains']}, "
               f"{o['slow']['drain_ns'] / 1e6:.1f} ms; "
               f"launch calls overlapping one {o['slow']['held']}, by "
               f"{o['slow']['held_ns'] / 1e6:.1f} ms" if o["slow"]["drains"] else ""), flush=True)


if __name__ == "__main__":
    main()
