#!/usr/bin/env python3
"""GPU check of issue #43 (run by scripts/gpu-check.sh `inproc`): an in-process capture names
its call sites as `tracesmith profile` does.

  python3 gpu/inproc_names_check.py MODE ...
MODE:
  inproc OUT_DIR   warm-up steps, then the same N training steps (bf16 Linear layers, forward
                   on this thread, backward on torch's autograd thread) captured twice in this
                   process: `with tracesmith.profile(OUT/inproc.sbt, stacks="mixed")` (native
                   frames named when it stops) and with symbolize=False (OUT/raw.sbt)
  cli OUT_DIR      the same steps between torch.cuda.profiler.start()/stop(), for
                   `tracesmith profile --capture-range=cudaProfilerApi -o OUT/cli.sbt` to record
  check CLI OUT_DIR
                   analyze's call-site tables of cli.sbt and inproc.sbt: the same call sites
                   (every one over 2% of GPU time in either, its share within 5 points in the
                   other), autograd nodes named in both, no bare `module+0x...` call site over
                   1% of GPU time in inproc.sbt; raw.sbt: analyze names the fix once, and after
                   `tracesmith symbolize` it reads as inproc.sbt
Each step synchronizes, so the captured kernels are exactly those of the N steps. Needs
PYTHONPATH to reach python/ and TRACESMITH_INJECT_LIB (or the package's _bin).

Every mode prints one `INPROC <check>: ... -> PASS|FAIL|SKIP (reason)` line per expectation
and ends with the summary line "N passed, M failed, K skipped" (gpu/checks.py); exit status
1 when a check failed or the mode was skipped where it was expected to run (torch imports
but has no CUDA on a machine with a GPU). Without torch, every mode SKIPs.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import time

from checks import Checks, torch_skip_reason

try:
    import torch
except Exception:  # noqa: BLE001 (main() says SKIP)
    torch = None

N = 10
MODES = ("inproc", "cli", "check")
# A call site that is a native frame without a name: "libtorch_cuda.so+0x3a127c1" (also after
# "autograd backward: ").
BARE = re.compile(r"(^|: )[^ ]+\+0x[0-9a-f]+$")
SAME_SITES_MIN_SHARE = 2.0  # percent of GPU time: call sites compared
SAME_SITES_POINTS = 5.0  # their shares may differ by this many points
BARE_MAX_SHARE = 1.0  # percent: the most GPU time a bare call site may hold
HINT = "unnamed native frames"
CHECKS = {
    "inproc": ["inproc traces", "inproc stop time"],
    "cli": ["cli steps"],
    "check": ["names", "no bare call site", "autograd nodes", "same call sites", "hint once",
              "hint fixed by symbolize"],
}


def build():
    torch.manual_seed(0)
    layers = []
    for _ in range(3):
        layers += [torch.nn.Linear(1024, 4096), torch.nn.GELU(), torch.nn.Linear(4096, 1024)]
    model = torch.nn.Sequential(*layers).cuda().to(torch.bfloat16)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    x = torch.randn(256, 1024, device="cuda", dtype=torch.bfloat16)

    def step():
        opt.zero_grad(set_to_none=True)
        model(x).float().pow(2).mean().backward()
        opt.step()
        torch.cuda.synchronize()

    return step


def inproc(c, out, step):
    import tracesmith
    named, raw = os.path.join(out, "inproc.sbt"), os.path.join(out, "raw.sbt")
    with tracesmith.profile(named, stacks="mixed", overwrite=True, quiet=False):
        for _ in range(N):
            step()
        t0 = time.monotonic()
    stop_s = time.monotonic() - t0  # the capture's stop: last flush, then the naming
    with tracesmith.profile(raw, stacks="mixed", overwrite=True, symbolize=False):
        for _ in range(N):
            step()
    sizes = {p: os.path.getsize(p) if os.path.exists(p) else 0 for p in (named, raw)}
    c.check("inproc traces", all(sizes.values()),
            f"{N} steps into {named} ({sizes[named]} bytes) and, symbolize=False, "
            f"{raw} ({sizes[raw]} bytes)")
    c.check("inproc stop time", stop_s < 150,
            f"leaving `with tracesmith.profile()` (stop and naming) took {stop_s:.1f} s "
            f"(time limit 120 s)")


def cli_steps(c, step):
    torch.cuda.profiler.start()
    for _ in range(N):
        step()
    torch.cuda.profiler.stop()
    c.check("cli steps", True, f"{N} steps between cudaProfilerStart/Stop")


def analyze(cli, path, text=False):
    cmd = [cli, "analyze", path] + ([] if text else ["--json"])
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: exit {r.returncode}: {r.stderr.strip()[:300]}")
    return r.stdout if text else json.loads(r.stdout)


def sites(report):
    return {s["name"]: s["share_pct"] for s in report.get("call_sites", [])}


def fmt(items):
    return "; ".join(f"{n} {s:.1f}%" for n, s in items) or "none"


def check(c, cli, out):
    paths = {k: os.path.join(out, k + ".sbt") for k in ("cli", "inproc", "raw")}
    missing = [p for p in paths.values() if not os.path.exists(p)]
    if missing:
        raise RuntimeError(f"traces missing: {', '.join(missing)} (the run modes failed?)")
    a_cli, a_in = sites(analyze(cli, paths["cli"])), sites(analyze(cli, paths["inproc"]))
    top = sorted(a_in.items(), key=lambda kv: -kv[1])[:6]
    c.check("names", a_in and a_cli,
            f"inproc.sbt: {len(a_in)} call sites, top: {fmt(top)}; cli.sbt: {len(a_cli)}")
    bare = [(n, s) for n, s in a_in.items() if BARE.search(n) and s > BARE_MAX_SHARE]
    bare_cli = [(n, s) for n, s in a_cli.items() if BARE.search(n) and s > BARE_MAX_SHARE]
    c.check("no bare call site", not bare and not bare_cli,
            f"bare module+offset call sites over {BARE_MAX_SHARE}% of GPU time: inproc.sbt "
            f"{fmt(bare)}; cli.sbt {fmt(bare_cli)}")
    ag_in = sum(s for n, s in a_in.items() if n.startswith("autograd backward: "))
    ag_cli = sum(s for n, s in a_cli.items() if n.startswith("autograd backward: "))
    c.check("autograd nodes", ag_in > 20 and abs(ag_in - ag_cli) <= SAME_SITES_POINTS,
            f"GPU time under `autograd backward: <node>` call sites: inproc.sbt {ag_in:.1f}%, "
            f"cli.sbt {ag_cli:.1f}% (backward on the autograd thread: over 20%, within "
            f"{SAME_SITES_POINTS:.0f} points)")
    names = {n for n, s in list(a_in.items()) + list(a_cli.items())
             if s >= SAME_SITES_MIN_SHARE}
    off = [(n, a_in.get(n, 0.0), a_cli.get(n, 0.0)) for n in sorted(names)
           if abs(a_in.get(n, 0.0) - a_cli.get(n, 0.0)) > SAME_SITES_POINTS]
    c.check("same call sites", names and not off,
            f"{len(names)} call sites over {SAME_SITES_MIN_SHARE:.0f}% in either; shares more "
            f"than {SAME_SITES_POINTS:.0f} points apart (inproc vs cli): "
            + ("; ".join(f"{n}: {a:.1f}% vs {b:.1f}%" for n, a, b in off) or "none"))
    text = analyze(cli, paths["raw"], text=True)
    hints = [line.strip() for line in text.splitlines() if HINT in line]
    c.check("hint once", len(hints) == 1 and f"tracesmith symbolize {paths['raw']}" in hints[0],
            f"analyze raw.sbt (symbolize=False): {len(hints)} hint lines: "
            + (hints[0] if hints else "none"))
    fixed = os.path.join(out, "raw_symbolized.sbt")
    shutil.copyfile(paths["raw"], fixed)
    r = subprocess.run([cli, "symbolize", fixed], capture_output=True, text=True)
    text = analyze(cli, fixed, text=True) if r.returncode == 0 else ""
    a_fixed = sites(analyze(cli, fixed)) if r.returncode == 0 else {}
    off = [n for n in names if abs(a_fixed.get(n, 0.0) - a_in.get(n, 0.0)) > SAME_SITES_POINTS]
    c.check("hint fixed by symbolize", r.returncode == 0 and HINT not in text and not off,
            f"tracesmith symbolize raw.sbt: exit {r.returncode} ({r.stdout.strip()[:120]}); "
            f"then {'a' if HINT in text else 'no'} hint, call sites apart from inproc.sbt's: "
            f"{', '.join(off) or 'none'}")


def main(argv):
    if not argv or argv[0] not in MODES or len(argv) < (3 if argv[0] == "check" else 2):
        print(__doc__)
        return 2
    mode = argv[0]
    c = Checks("INPROC")
    names = CHECKS[mode]
    # (check reads the traces the torch modes wrote, without torch itself)
    skip = torch_skip_reason() if mode == "check" or torch is not None else \
        ("torch does not import", False)
    if skip:
        c.skip_all(names, skip[0], skip[1])
        return c.summary()
    c.guarded(names, lambda: run_mode(c, mode, argv))
    return c.summary()


def run_mode(c, mode, argv):
    if mode == "check":
        check(c, argv[1], argv[2])
        return
    step = build()
    for _ in range(3):  # warm-up: allocator, cuBLAS handles, lazy module loads
        step()
    if mode == "inproc":
        inproc(c, argv[1], step)
    else:
        cli_steps(c, step)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
