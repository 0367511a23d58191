#!/usr/bin/env python3
"""tracesmith.load on a large synthetic trace: wall time and peak RSS next to the CLI.

Generates an N-kernel trace with `tracesmith benchmark scale --keep` (the same
generator as the CLI's scale benchmark; about 2.06 events per kernel), then
runs each measurement as its own process and reports its wall time and peak
RSS (getrusage of the child):
  info      `tracesmith info` (decodes every chunk, streaming: the C++ decode)
  analyze   `tracesmith analyze` (compact trace in memory)
  load      `tracesmith.load(path)` + the kernel columns (start, end, name ids)
  load-kernels   the same with kinds=["kernel"] (only kernel rows loaded)
Usage: bench/python_load.py --cli build/release/bin/tracesmith [--kernels 10000000]
       (PYTHONPATH must reach the package, e.g. build/release/python)
"""

import argparse
import os
import subprocess
import sys
import tempfile

LOAD = """
import sys, tracesmith
t = tracesmith.load(sys.argv[1], kinds=sys.argv[2].split(",") if len(sys.argv) > 2 else None)
k = t.kernels
cols = (k.start_ns, k.end_ns, k.name_id, k.duration_ns)
print(len(k), int(cols[3].sum()))
"""


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--cli", required=True)
    ap.add_argument("--kernels", type=int, default=10_000_000)
    ap.add_argument("--trace", help="measure this trace instead of generating one")
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="ts-pyload-")
    path = args.trace or os.path.join(tmp, "scale.sbt")
    if not args.trace:
        subprocess.run([args.cli, "benchmark", "scale", "--kernels", str(args.kernels), "--keep",
                        path, "--commands", "info"], check=True, stdout=subprocess.DEVNULL)
    size = os.path.getsize(path)
    print(f"trace: {path}, {size / 1e6:.1f} MB, {args.kernels} kernels")
    rows = []
    for name, cmd in (("info", [args.cli, "info", path]),
                      ("load", [sys.executable, "-c", LOAD, path]),
                      ("load-kernels", [sys.executable, "-c", LOAD, path, "kernel"]),
                      ("analyze", [args.cli, "analyze", path])):
        # A fresh interpreter per measurement so that ru_maxrss is this one's.
        wrapper = [sys.executable, "-c",
                   "import resource, subprocess, sys, time; t0 = time.perf_counter(); "
                   "r = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL); "
                   "w = time.perf_counter() - t0; "
                   "m = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024; "
                   "print(f'{w:.2f} {m:.0f} {r.returncode}')", *cmd]
        out = subprocess.run(wrapper, capture_output=True, text=True, check=True).stdout.split()
        wall, rss, rc = float(out[0]), float(out[1]), int(out[2])
        if rc != 0:
            sys.exit(f"{name} failed (exit {rc})")
        rows.append((name, wall, rss))
        print(f"BENCH python_load {name}: wall {wall:.2f} s, peak RSS {rss:.0f} MB")
    info = dict((n, (w, m)) for n, w, m in rows)
    for name in ("load", "load-kernels"):
        print(f"BENCH python_load {name}/info wall {info[name][0] / info['info'][0]:.2f}x, "
              f"{name}/analyze wall {info[name][0] / info['analyze'][0]:.2f}x, "
              f"RSS {info[name][1] / info['analyze'][1]:.2f}x")


if __name__ == "__main__":
    main()
