#!/usr/bin/env python3
"""tracesmith.load on a large synthetic trace: wall time and peak RSS next to the CLI.

Generates an N-kernel trace with `tracesmith benchmark scale --keep` (the same
generator as the CLI's scale benchmark; about 2.06 events per kernel), then
runs each measurement as its own process and reports its wall time, CPU time
(user + system) and peak RSS (getrusage of the child), the median of --runs
runs (taken in turns, so that a slow minute of a shared machine falls on every
measurement alike; the CPU time is the steadier figure when other work shares
the machine):
  info          `tracesmith info` (decodes every chunk, streaming: the C++ decode)
  analyze       `tracesmith analyze` (compact trace in memory)
  load-meta     `tracesmith.load(path)` alone (lazy: strings and metadata only)
  load          `tracesmith.load(path)` + the kernel columns (start, end, name ids,
                duration): the kernels are read on first access
  load-kernels  the same with kinds=["kernel"] (read at load, the others not available)
  load-all      `tracesmith.load(path).read()` (every event kind, one pass) + the same
Usage: bench/python_load.py --cli build/release/bin/tracesmith [--kernels 10000000] [--runs 5]
       (PYTHONPATH must reach the package, e.g. build/release/python)
"""

import argparse
import os
import statistics
import subprocess
import sys
import tempfile

LOAD = """
import sys, tracesmith
how = sys.argv[2]
t = tracesmith.load(sys.argv[1], kinds=["kernel"] if how == "kernels" else None)
if how == "all":
    t.read()
if how != "meta":
    k = t.kernels
    cols = (k.start_ns, k.end_ns, k.name_id, k.duration_ns)
    print(len(k), int(cols[3].sum()))
else:
    print(len(t.devices), len(t.processes), len(t.stats))
"""


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--cli", required=True)
    ap.add_argument("--kernels", type=int, default=10_000_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--trace", help="measure this trace instead of generating one")
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="ts-pyload-")
    path = args.trace or os.path.join(tmp, "scale.sbt")
    if not args.trace:
        subprocess.run([args.cli, "benchmark", "scale", "--kernels", str(args.kernels), "--keep",
                        path, "--commands", "info"], check=True, stdout=subprocess.DEVNULL)
    size = os.path.getsize(path)
    print(f"trace: {path}, {size / 1e6:.1f} MB, {args.kernels} kernels, {args.runs} runs each")
    measurements = (("info", [args.cli, "info", path]),
                    ("load-meta", [sys.executable, "-c", LOAD, path, "meta"]),
                    ("load", [sys.executable, "-c", LOAD, path, "lazy"]),
                    ("load-kernels", [sys.executable, "-c", LOAD, path, "kernels"]),
                    ("load-all", [sys.executable, "-c", LOAD, path, "all"]),
                    ("analyze", [args.cli, "analyze", path]))
    runs = {name: [] for name, _ in measurements}
    for _ in range(args.runs):
        for name, cmd in measurements:
            # A fresh interpreter per measurement so that ru_maxrss is this one's.
            wrapper = [sys.executable, "-c",
                       "import resource, subprocess, sys, time; t0 = time.perf_counter(); "
                       "r = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL); "
                       "w = time.perf_counter() - t0; "
                       "u = resource.getrusage(resource.RUSAGE_CHILDREN); "
                       "print(f'{w:.3f} {u.ru_utime + u.ru_stime:.3f} {u.ru_maxrss / 1024:.0f} "
                       "{r.returncode}')", *cmd]
            out = subprocess.run(wrapper, capture_output=True, text=True,
                                 check=True).stdout.split()
            wall, cpu, rss, rc = float(out[0]), float(out[1]), float(out[2]), int(out[3])
            if rc != 0:
                sys.exit(f"{name} failed (exit {rc})")
            runs[name].append((wall, cpu, rss))
    median = {}
    for name, got in runs.items():
        walls, cpus = [g[0] for g in got], [g[1] for g in got]
        median[name] = tuple(statistics.median(g[i] for g in got) for i in range(3))
        print(f"BENCH python_load {name}: wall {median[name][0]:.2f} s (median; "
              f"{min(walls):.2f}-{max(walls):.2f}), CPU {median[name][1]:.2f} s "
              f"({min(cpus):.2f}-{max(cpus):.2f}), peak RSS {median[name][2]:.0f} MB")
    info, analyze = median["info"], median["analyze"]
    for name in ("load-meta", "load", "load-kernels", "load-all"):
        wall, cpu, rss = median[name]
        print(f"BENCH python_load {name}/info wall {wall / info[0]:.2f}x, CPU "
              f"{cpu / info[1]:.2f}x; {name}/analyze wall {wall / analyze[0]:.2f}x, "
              f"RSS {rss / analyze[2]:.2f}x")


if __name__ == "__main__":
    main()
