#!/usr/bin/env python3
"""GPU checks of `profile --gpu-metrics` (CUPTI PM sampling, issue #40; scripts/gpu-check.sh
section `gpumetrics`).

  python3 gpu/gpu_metrics_check.py CLI PROGS OUT

  - list: `profile --gpu-metrics=list` exits 0 and prints the chip's PM sampling metrics;
  - capture: gpu/programs/gpu_metrics (copy, bf16 GEMM, FMA chain, each ~0.4 s of GPU time,
    300 ms idle gaps between) under `profile --gpu-metrics` exits 0, says which metrics each GPU
    samples, and writes samples (read back through `export -f sqlite`: GPU_METRICS,
    TARGET_INFO_GPU_METRICS, CUPTI_ACTIVITY_KIND_KERNEL);
  - clock: the samples span the kernels (sample and kernel timestamps on one clock: the copy
    phase's DRAM burst starts within 2 ms of its first kernel);
  - copy: DRAM throughput (the total metric, else read + write) >= 80% of peak over the copy
    phase, in the series and in `analyze --json` (dram_copy alone);
  - gemm: tensor pipe active >= 50% over the GEMM phase;
  - fma: tensor and FP32 pipe active over the FMA phase within 2 and 5 points of Nsight
    Compute's sm__pipe_tensor_cycles_active / sm__inst_executed_pipe_fma
    (.avg.pct_of_peak_sustained_elapsed) of fma_chain in the same run (GH100 counts ~5% tensor
    pipe cycles for this FP32 FMA chain, 2026-11-29); without ncu: tensor <= 10%, FP32 >= 50%;
  - idle: SM active <= 2% over each idle gap (20 ms in from each edge; in cycles, as GH100's
    sm__cycles_active.avg, 2% of the busiest phase's);
  - unknown name: `--gpu-metrics=no_such__metric.sum` names it and `--gpu-metrics=list`, the
    capture goes on (exit 0, kernels written, no metric rows);
  - cost: the program's loop time (its three busy phases) under `profile` with and without
    --gpu-metrics, the same launch counts in every run (fixed by a first run),
    ROUNDS interleaved rounds (default 5): median and max of the ratio;
    the median adds <= 3%.
One `GPUMETRICS <check>: <figures> -> PASS|FAIL|SKIP` line per expectation, then the summary.
"""
import csv
import io
import json
import os
import re
import shutil
import sqlite3
import statistics
import subprocess
import sys
import time

from checks import Checks

ROUNDS = int(os.environ.get("GPUMETRICS_ROUNDS", "5"))


def run(cmd, out, name, timeout=600, env=None):
    t0 = time.monotonic()
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                       timeout=timeout, env=env)
    wall = time.monotonic() - t0
    with open(os.path.join(out, name + ".out"), "w") as f:
        f.write(" ".join(cmd) + f"\n(exit {p.returncode}, {wall:.1f} s)\n" + p.stdout)
    return p.returncode, p.stdout


NCU_TENSOR = "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed"
NCU_FMA = "sm__inst_executed_pipe_fma.avg.pct_of_peak_sustained_elapsed"


def ncu_fma_chain(progs, out):
    """Nsight Compute's tensor and FMA pipe % of one fma_chain launch: {metric: value}, None when
    ncu is not found, "error" when it failed."""
    ncu = shutil.which("ncu") or next(
        (p for p in ("/usr/local/cuda/bin/ncu",) if os.access(p, os.X_OK)), None)
    if not ncu:
        return None
    code, text = run([ncu, "--metrics", f"{NCU_TENSOR},{NCU_FMA}", "--csv", "--print-units",
                      "base", "--kernel-name", "fma_chain", "--launch-count", "1",
                      os.path.join(progs, "gpu_metrics"), "0.05", "10"], out, "ncu")
    rows = [l for l in text.splitlines() if l.startswith('"')]
    if code != 0 or not rows:
        return "error"
    got = {}
    for row in csv.DictReader(io.StringIO("\n".join(rows))):
        if row.get("Metric Name") in (NCU_TENSOR, NCU_FMA):
            got[row["Metric Name"]] = float(row["Metric Value"].replace(",", ""))
    return got if len(got) == 2 else "error"


def load_sqlite(cli, sbt, out):
    db = os.path.join(out, "metrics.sqlite")
    subprocess.run([cli, "export", "-q", "-f", "sqlite", "-o", db, sbt], check=True, timeout=600)
    con = sqlite3.connect(db)
    names = {}
    for type_id, metric_id, name, cupti in con.execute(
            "SELECT typeId, metricId, metricName, cuptiName FROM TARGET_INFO_GPU_METRICS"):
        names[(type_id, metric_id)] = (name, cupti)
    series = {}
    for ts, end, type_id, metric_id, value in con.execute(
            "SELECT timestamp, end, typeId, metricId, value FROM GPU_METRICS "
            "WHERE typeId & 255 = 0 ORDER BY timestamp"):
        label = names.get((type_id, metric_id), (f"metric {metric_id}", ""))[0]
        series.setdefault(label.split(" [")[0], []).append((ts, end, value))
    kernels = list(con.execute(
        "SELECT k.start, k.end, s.value FROM CUPTI_ACTIVITY_KIND_KERNEL k "
        "JOIN StringIds s ON s.id = k.demangledName WHERE k.deviceId = 0 ORDER BY k.start"))
    return series, kernels


def mean(points, lo, hi):
    """Time-weighted mean of the samples' overlap with [lo, hi); None when none overlaps."""
    total = weight = 0.0
    for s, e, v in points:
        w = min(e, hi) - max(s, lo)
        if w > 0:
            total += v * w
            weight += w
    return total / weight if weight else None


def fmt(v):
    return "none" if v is None else f"{v:.1f}"


def phase_spans(kernels):
    """(copy, gemm, fma) spans: the dram_copy and fma_chain kernels, and the others between."""
    copy = [(s, e) for s, e, n in kernels if n.startswith("dram_copy")]
    fma = [(s, e) for s, e, n in kernels if n.startswith("fma_chain")]
    if not copy or not fma:
        return None
    c = (copy[0][0], copy[-1][1])
    f = (fma[0][0], fma[-1][1])
    gemm = [(s, e) for s, e, n in kernels if c[1] < s and e < f[0]]
    return c, ((gemm[0][0], gemm[-1][1]) if gemm else None), f


def inner(span, fraction=0.05):
    cut = int((span[1] - span[0]) * fraction)
    return span[0] + cut, span[1] - cut


def capture_checks(c, cli, progs, out):
    sbt = os.path.join(out, "metrics.sbt")
    code, text = run([cli, "profile", "-f", "--gpu-metrics", "-o", sbt, "--",
                      os.path.join(progs, "gpu_metrics"), "0.4", "300"], out, "capture")
    said = re.search(r"GPU metrics on device 0[^:]*, every \d+ us: (.*)", text)
    print("GPUMETRICS sampled:", said.group(1) if said else "(no line)")
    for line in text.splitlines():
        if line.startswith("GPUMETRICS_PHASE") or "GPU metrics" in line or "data loss" in line:
            print("   ", line.strip())
    c.check("capture", code == 0 and said is not None, f"exit {code}")
    series, kernels = load_sqlite(cli, sbt, out)
    n = sum(len(v) for v in series.values())
    c.check("samples written", n > 0, f"{n} samples of {len(series)} metrics: "
            f"{', '.join(sorted(series))}")
    spans = phase_spans(kernels)
    if spans is None:
        raise RuntimeError("no dram_copy / fma_chain kernels in the trace")
    copy, gemm, fma = spans
    first = min(p[0] for v in series.values() for p in v)
    last = max(p[1] for v in series.values() for p in v)
    sm = series.get("SM active", [])
    dram = series.get("DRAM throughput")
    if dram is None and "DRAM read throughput" in series and "DRAM write throughput" in series:
        rd, wr = series["DRAM read throughput"], series["DRAM write throughput"]
        dram = [(a[0], a[1], a[2] + b[2]) for a, b in zip(rd, wr)]
    # The DRAM burst's start: the first sample over half the copy phase's level.
    level = mean(dram or [], *inner(copy))
    burst = next((s for s, e, v in (dram or []) if v > (level or 0) / 2 and
                  e > copy[0] - 50_000_000), None)
    lag_ms = None if burst is None else (burst - copy[0]) / 1e6
    c.check("clock", first <= kernels[0][0] and last >= kernels[-1][1] and lag_ms is not None
            and abs(lag_ms) <= 2,
            f"samples {first / 1e6:.1f}..{last / 1e6:.1f} ms, kernels {kernels[0][0] / 1e6:.1f}.."
            f"{kernels[-1][1] / 1e6:.1f} ms; DRAM burst {fmt(lag_ms)} ms after the first copy")
    c.check("copy DRAM", level is not None and level >= 80,
            f"DRAM throughput {fmt(level)}% of peak over the copy "
            f"phase ({(copy[1] - copy[0]) / 1e6:.0f} ms)")
    tensor = series.get("Tensor pipe active", [])
    t_gemm = mean(tensor, *inner(gemm)) if gemm else None
    c.check("gemm tensor", t_gemm is not None and t_gemm >= 50,
            f"tensor pipe active {fmt(t_gemm)}% over the GEMM phase")
    t_fma = mean(tensor, *inner(fma))
    fp32 = mean(series.get("FP32 pipe active", []), *inner(fma))
    ref = ncu_fma_chain(progs, out)
    said = f"tensor pipe active {fmt(t_fma)}%, FP32 pipe {fmt(fp32)}% over the FMA phase"
    if isinstance(ref, dict):
        rt, rf = ref[NCU_TENSOR], ref[NCU_FMA]
        c.check("fma pipes", t_fma is not None and fp32 is not None and abs(t_fma - rt) <= 2 and
                abs(fp32 - rf) <= 5, f"{said}; ncu on fma_chain: tensor {rt:.1f}%, FMA {rf:.1f}%")
    else:
        c.check("fma pipes", t_fma is not None and fp32 is not None and t_fma <= 10 and fp32 >= 50,
                f"{said}; ncu {'not found' if ref is None else 'failed'}: tensor <= 10%, "
                "FP32 >= 50%")
    gaps = [(copy[1], gemm[0] if gemm else fma[0]), ((gemm or copy)[1], fma[0])]
    idle = [mean(sm, g[0] + 20_000_000, g[1] - 20_000_000) for g in gaps]
    # GH100's SM active is TPC.TriageCompute.sm__cycles_active.avg: cycles per sample, not %;
    # then idle is <= 2% of the cycles of the busiest phase.
    busy = max((v for v in (mean(sm, *inner(p)) for p in (copy, gemm, fma) if p)
                if v is not None), default=None)
    if busy is not None and busy > 100:
        idle = [None if v is None else 100 * v / busy for v in idle]
    c.check("idle SM", all(v is not None and v <= 2 for v in idle),
            "SM active " + ", ".join(f"{fmt(v)}%" for v in idle) + " over the idle gaps" +
            (f" (of the busiest phase's {busy:.0f} cycles per sample)"
             if busy is not None and busy > 100 else ""))
    r = subprocess.run([cli, "analyze", "--json", "--whole", sbt], capture_output=True, text=True,
                       timeout=600)
    with open(os.path.join(out, "analyze.json"), "w") as f:
        f.write(r.stdout + r.stderr)
    g = json.loads(r.stdout).get("gpu_metrics", {}) if r.returncode == 0 else {}
    k = next((k for k in g.get("kernels", []) if k["name"].startswith("dram_copy")), None)
    labels = {m["name"]: m["label"] for m in g.get("metrics", [])}
    alone = {labels.get(n, n): v for n, v in (k or {}).get("alone", {}).items()}
    d = alone.get("DRAM throughput")
    if d is None and alone.get("DRAM read throughput") is not None:
        d = alone["DRAM read throughput"] + (alone.get("DRAM write throughput") or 0)
    c.check("analyze copy DRAM", d is not None and d >= 80,
            f"dram_copy alone: DRAM throughput {fmt(d)}% (analyze --json)")
    code_p = subprocess.run([cli, "export", "-q", "-f", "perfetto", "-o",
                             os.path.join(out, "metrics.pftrace"), sbt]).returncode
    c.check("perfetto export", code_p == 0, f"exit {code_p}")


def list_check(c, cli, out):
    code, text = run([cli, "profile", "--gpu-metrics=list"], out, "list")
    lines = [l for l in text.splitlines() if l.startswith("  ")]
    head = next((l for l in text.splitlines() if "PM sampling base metrics" in l), "")
    c.check("list", code == 0 and len(lines) > 10, f"exit {code}, {len(lines)} metrics; {head}")


def unknown_check(c, cli, progs, out):
    sbt = os.path.join(out, "unknown.sbt")
    code, text = run([cli, "profile", "-f", "--gpu-metrics=no_such__metric.sum", "-o", sbt, "--",
                      os.path.join(progs, "gpu_metrics"), "0.05", "20"], out, "unknown")
    info = subprocess.run([cli, "info", sbt], capture_output=True, text=True).stdout
    named = "no_such__metric.sum" in text and "--gpu-metrics=list" in text
    rows = re.search(r"^\s+gpumetric\s+(\d+)", info, re.M)
    kernels = re.search(r"^\s+kernel\s+(\d+)", info, re.M)
    c.check("unknown name", code == 0 and named and rows is None and kernels is not None,
            f"exit {code}, message names it and --gpu-metrics=list: {named}, kernel rows: "
            f"{kernels.group(1) if kernels else 0}, metric rows: {rows.group(1) if rows else 0}")


def cost_check(c, cli, progs, out):
    # The phases run for about a time, so their launch counts vary run to run: a first
    # (uncounted) run fixes the counts, then every round does the same work
    # (GPU_METRICS_LAUNCHES) and the loop times compare.
    prog = [os.path.join(progs, "gpu_metrics"), "0.4", "50"]
    code, text = run([cli, "profile", "-q", "-f", "-o", os.path.join(out, "cost_cal.sbt"),
                      "--", *prog], out, "cost_calibrate")
    counts = re.findall(r"GPUMETRICS_PHASE (\w+) ms=[0-9.]+ launches=(\d+)", text)
    if code != 0 or len(counts) != 3:
        c.fail("cost", f"calibration run: exit {code}, phases {counts}")
        return
    env = dict(os.environ, GPU_METRICS_LAUNCHES=",".join(n for _, n in counts))
    loops = {"plain": [], "metrics": []}
    for i in range(ROUNDS):
        for mode in ("plain", "metrics"):  # interleaved
            extra = ["--gpu-metrics"] if mode == "metrics" else []
            code, text = run([cli, "profile", "-q", "-f", *extra, "-o",
                              os.path.join(out, f"cost_{mode}.sbt"), "--", *prog], out,
                             f"cost_{mode}_{i}", env=env)
            m = re.search(r"GPUMETRICS_LOOP ms=([0-9.]+)", text)
            if code == 0 and m:
                loops[mode].append(float(m.group(1)))
    if len(loops["plain"]) < ROUNDS or len(loops["metrics"]) < ROUNDS:
        c.fail("cost", f"runs failed: {loops}")
        return
    ratios = [m / p for m, p in zip(loops["metrics"], loops["plain"])]
    med = statistics.median(ratios)
    c.check("cost", med <= 1.03,
            f"loop of {env['GPU_METRICS_LAUNCHES']} launches (copy,gemm,fma) "
            f"{statistics.median(loops['plain']):.1f} ms without, "
            f"{statistics.median(loops['metrics']):.1f} ms with --gpu-metrics; ratio median "
            f"{med:.3f}, max {max(ratios):.3f} ({ROUNDS} interleaved rounds)")


def main():
    cli, progs, out = sys.argv[1:4]
    os.makedirs(out, exist_ok=True)
    c = Checks("GPUMETRICS")
    c.guarded(["list"], lambda: list_check(c, cli, out))
    c.guarded(["capture", "samples written", "clock", "copy DRAM", "gemm tensor", "fma pipes",
               "idle SM", "analyze copy DRAM", "perfetto export"],
              lambda: capture_checks(c, cli, progs, out))
    c.guarded(["unknown name"], lambda: unknown_check(c, cli, progs, out))
    c.guarded(["cost"], lambda: cost_check(c, cli, progs, out))
    sys.exit(c.summary())


if __name__ == "__main__":
    main()
