#!/usr/bin/env python3
"""GPU check of `tracesmith profile --pc-sampling` (issue #39; scripts/gpu-check.sh `pcsampling`).

  python3 gpu/pc_sampling_check.py CLI PROGS OUT      (PYTHONPATH: the package with _core)

Runs gpu/programs/pc_sampling_target (three kernels of known behaviour on two streams, built
with -lineinfo) under the default capture and under --pc-sampling, interleaved (ROUNDS each),
and checks the sampled trace, read with the Python package:
  - samples were taken and none lost: pc_sampling.samples > 0 and all of them (but those of
    non-user kernels) in the rows, once each, dropped_samples = 0,
    hardware_buffer_full = 0, and every PC sample row's instruction has a PcLine row;
  - pcs_hot: >= 90% of its samples on the loop's source line (the target prints it);
  - pcs_mem's top stall reason is a memory one, pcs_fma's a dependency/math one;
  - each kernel's share of the samples is within 10% (relative) of its share of GPU time,
    taken as its time alone (the target's solo_us) x its launches;
  - kernels stayed concurrent: most pcs_mem launches overlap a pcs_fma launch on the other
    stream, and every kernel was recorded (1 + ROUNDS x ITERS... as the target launched);
  - launching code (`analyze --json`, gpu_samples.functions[].sites): 100% of pcs_mem's and
    pcs_fma's samples joined to their own launch function; pcs_hot's samples from the
    narrow/wide phases split between launch_narrow and launch_wide as their SM time
    (active SMs x durations) within 10% relative, not as their GPU time;
  - SASS: every sampled instruction has its text (`pcsass` rows, nvdisasm run by `profile` on
    the cubins the capture kept; the .cubins directory removed after), and the instruction
    with most of pcs_mem's lg_throttle samples (a full load queue) is a global load (LDG);
  - flame graph (`export -f folded`): pcs_hot's GPU frames put >= 90% of its time on the hot
    line;
  - cost: the target's loop time with sampling <= 1.10 x without (medians);
  - views: `kernel --launch N` of a pcs_hot launch (its joined samples, >= 90% on the hot
    line); SQLite's TRACESMITH_PC_SAMPLES holds every sample of the rows, three functions in
    TRACESMITH_PC_FUNCTIONS, Perfetto's kernel slices annotated; `diff` of the two sampled runs
    names pcs_hot and its file.
One `PCSAMPLING <check>: ... -> PASS|FAIL|SKIP` line per expectation, then the summary line.
"""
import json
import os
import re
import statistics
import subprocess
import sys

from checks import Checks

ROUNDS, TARGET_ROUNDS, TARGET_ITERS = 2, 3, 600
MEMORY_STALLS = {"long_scoreboard", "lg_throttle", "tex_throttle", "mio_throttle", "drain",
                 "imc_miss", "membar", "short_scoreboard"}
COMPUTE_STALLS = {"wait", "math_pipe_throttle", "selected", "not_selected", "dispatch_stall"}
PREFIX = "smsp__pcsamp_warps_issue_stalled_"
SOLO = {}  # each kernel's time per launch alone (the target's solo_us), from the last run
# PCS_PERIOD=N: sample at 2^N cycles instead of the default period.
PCS_ARGS = (["--pc-sampling-period", os.environ["PCS_PERIOD"]] if os.environ.get("PCS_PERIOD")
            else ["--pc-sampling"])
SITES = {}  # the two-site phase: narrow / wide blocks, launches, SMs (the target prints them)


def short(stall):
    return stall[len(PREFIX):] if stall.startswith(PREFIX) else stall


def profile(cli, progs, out, name, extra):
    path = os.path.join(out, name + ".sbt")
    cmd = [cli, "profile", "-q", "-f", *extra, "-o", path, "--",
           os.path.join(progs, "pc_sampling_target"), str(TARGET_ROUNDS), str(TARGET_ITERS)]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    text = p.stdout + p.stderr
    with open(os.path.join(out, name + ".out"), "w") as f:
        f.write(" ".join(cmd) + "\n" + text)
    solo = re.search(r"solo_us pcs_mem ([0-9.]+) pcs_fma ([0-9.]+) pcs_hot ([0-9.]+)", text)
    if solo:
        SOLO.update(zip(("pcs_mem", "pcs_fma", "pcs_hot"), map(float, solo.groups())))
    sites = re.search(r"sites narrow (\d+) wide (\d+) blocks, (\d+) launches each, sms (\d+)", text)
    if sites:
        SITES.update(zip(("narrow", "wide", "launches", "sms"), map(int, sites.groups())))
    loop = re.search(r"loop_ms ([0-9.]+)", text)
    hot = re.search(r"hot line (\S+):(\d+)", text)
    return p.returncode, path, float(loop.group(1)) if loop else None, hot, text


def main():
    cli, progs, out = sys.argv[1:4]
    os.makedirs(out, exist_ok=True)
    c = Checks("PCSAMPLING")
    base, pcs, hot, runs_ok, last = [], [], None, True, None
    for r in range(ROUNDS):
        for name, extra, times in (("base", [], base), ("pcs", PCS_ARGS, pcs)):
            code, path, loop, h, text = profile(cli, progs, out, f"{name}{r}", extra)
            if code != 0 or loop is None:
                runs_ok = False
                print(text[-2000:])
            else:
                times.append(loop)
            if name == "pcs":
                last, hot = path, h or hot
    names = ["runs", "samples", "lines", "hot line", "stall mem", "stall fma", "shares",
             "concurrency", "kernel rows", "cost", "sites", "sites by time", "sass", "flame",
             "launch page", "exports", "diff"]
    if not c.check("runs", runs_ok and hot,
                   f"{ROUNDS} x default capture, {ROUNDS} x {' '.join(PCS_ARGS)}"):
        c.skip_all(names[1:], "a run failed")
        sys.exit(c.summary())
    c.guarded(names[1:10], lambda: checks(c, last, hot, base, pcs))
    c.guarded(names[10:12], lambda: site_checks(c, cli, out, last))
    c.guarded(names[12:14], lambda: sass_checks(c, cli, out, last, hot))
    c.guarded(names[14:], lambda: view_checks(c, cli, out, last, hot))
    sys.exit(c.summary())


def sass_checks(c, cli, out, path, hot):
    """SASS text of the sampled instructions and the flame graph's GPU frames."""
    import tracesmith
    t = tracesmith.load(path)
    L, X, S = t.pc_lines, t.pc_sass, t.pc_samples
    text = {(f, int(o), int(k)): x for f, o, k, x in zip(X.function, X.pc_offset, X.cubin_crc,
                                                          X.text)}
    sampled = {(f, int(o), int(k)) for f, o, k in zip(L.function, L.pc_offset, L.cubin_crc)}
    missing = len(sampled - set(text))
    lg = {}
    for f, o, k, n, st in zip(S.function, S.pc_offset, S.cubin_crc, S.samples, S.stall):
        if "pcs_mem" in f and short(st) == "lg_throttle":
            lg[(f, int(o), int(k))] = lg.get((f, int(o), int(k)), 0) + int(n)
    top = max(lg, key=lg.get) if lg else None
    top_text = text.get(top, "-") if top else "-"
    c.check("sass", sampled and missing == 0 and top_text.startswith("LDG")
            and not os.path.exists(path + ".cubins"),
            f"{len(sampled) - missing} of {len(sampled)} sampled instructions with SASS text; "
            f"pcs_mem's top lg_throttle instruction +0x{top[1] if top else 0:x}: {top_text}; "
            f"{path}.cubins {'left' if os.path.exists(path + '.cubins') else 'removed'}")
    folded = os.path.join(out, "pcs.folded")
    p = subprocess.run([cli, "export", "-f", "folded", "-o", folded, path], capture_output=True,
                       text=True, timeout=300)
    hot_file, hot_line = os.path.basename(hot.group(1)), hot.group(2)
    total = on_line = 0
    for line in open(folded):
        frames, w = line.rsplit(" ", 1)
        parts = frames.split(";")
        # GPU frames are the last two (line; instruction) under the kernel.
        if parts[-1].startswith("pcs_hot"):  # a launch without samples: no GPU frames
            total += int(w)
        elif len(parts) >= 3 and parts[-3].startswith("pcs_hot"):
            total += int(w)
            on_line += int(w) * (parts[-2] == f"{hot_file}:{hot_line}")
    c.check("flame", p.returncode == 0 and total and on_line >= 0.9 * total,
            f"{100.0 * on_line / max(total, 1):.1f}% of pcs_hot's {total} ns in the folded stacks "
            f"under {hot_file}:{hot_line} (need >= 90%)")


def view_checks(c, cli, out, path, hot):
    """The views of the samples on this capture: one launch's page, the Perfetto and SQLite
    summaries, and `diff` of the two sampled runs."""
    import sqlite3
    import tracesmith
    t = tracesmith.load(path)
    K = t.kernels
    names = [str(d) or str(n) for d, n in zip(K.demangled, K.name)]
    hot_launches = [int(K.correlation_id[i]) for i, n in enumerate(names) if n.startswith("pcs_hot")]
    corr = hot_launches[len(hot_launches) // 2]  # one in the timed loop
    p = subprocess.run([cli, "kernel", path, "--launch", str(corr), "--json"], capture_output=True,
                       text=True, timeout=300)
    page = json.loads(p.stdout) if p.returncode == 0 else {}
    launch = page.get("launch", {})
    hot_file, hot_line = os.path.basename(hot.group(1)), int(hot.group(2))
    on_line = sum(x["share_pct"] for x in page.get("lines", [])
                  if os.path.basename(x["file"]) == hot_file and x["line"] == hot_line)
    c.check("launch page", p.returncode == 0 and page.get("name", "").startswith("pcs_hot")
            and launch.get("correlation_id") == corr and launch.get("samples", 0) > 0
            and on_line >= 90,
            f"kernel --launch {corr}: {page.get('name', p.stderr.strip()[:80])[:30]}, "
            f"{launch.get('samples', 0)} samples joined from {launch.get('windows', 0)} windows "
            f"({launch.get('shared_windows', 0)} shared), {on_line:.1f}% on {hot_file}:{hot_line} "
            "(need pcs_hot, samples, >= 90% on the hot line)")
    db, pf = os.path.join(out, "pcs.sqlite"), os.path.join(out, "pcs.pftrace")
    e1 = subprocess.run([cli, "export", "-f", "sqlite", "-o", db, path], capture_output=True,
                        timeout=300).returncode
    e2 = subprocess.run([cli, "export", "-f", "perfetto", "-o", pf, path], capture_output=True,
                        timeout=300).returncode
    con = sqlite3.connect(db)
    in_db = con.execute("SELECT SUM(samples) FROM TRACESMITH_PC_SAMPLES").fetchone()[0] or 0
    fns = [r[0] for r in con.execute(
        "SELECT s.value FROM TRACESMITH_PC_FUNCTIONS f JOIN StringIds s ON s.id = f.nameId")]
    con.close()
    in_rows = int(t.pc_samples.samples.sum())
    annotated = b"top stall (all launches)" in open(pf, "rb").read()
    for f in (db, pf):
        os.remove(f)
    c.check("exports", e1 == 0 and e2 == 0 and in_db == in_rows and len(fns) == 3 and annotated,
            f"SQLite: {in_db} samples in TRACESMITH_PC_SAMPLES, the trace's rows {in_rows}; "
            f"functions {sorted(x[:12] for x in fns)}; Perfetto kernel slices annotated {annotated} "
            "(need equal, 3, annotated)")
    other = path.replace("pcs1.sbt", "pcs0.sbt")
    p = subprocess.run([cli, "diff", other, path], capture_output=True, text=True, timeout=300)
    with open(os.path.join(out, "diff.txt"), "w") as f:
        f.write(p.stdout + p.stderr)
    c.check("diff", p.returncode == 0 and "pcs_hot" in p.stdout and hot_file in p.stdout,
            f"diff pcs0 pcs1: exit {p.returncode}, pcs_hot and {hot_file} named "
            f"{'pcs_hot' in p.stdout and hot_file in p.stdout}")


def site_checks(c, cli, out, path):
    """The join of samples to the launching code, as `analyze --json` reports it."""
    p = subprocess.run([cli, "analyze", "--json", path], capture_output=True, text=True,
                       timeout=300)
    with open(os.path.join(out, "analyze.json"), "w") as f:
        f.write(p.stdout)
    fns = json.loads(p.stdout)["gpu_samples"]["functions"]
    def fn(k):
        return next(f for f in fns if k in f["name"])
    def site_share(f, site):
        return sum(x["share_pct"] for x in f["sites"] if site in x["site"])
    mem, fma, hot = fn("pcs_mem"), fn("pcs_fma"), fn("pcs_hot")
    pm, pf = site_share(mem, "launch_mem"), site_share(fma, "launch_fma")
    c.check("sites", pm >= 99.95 and pf >= 99.95,
            f"pcs_mem {pm:.2f}% from launch_mem, pcs_fma {pf:.2f}% from launch_fma (need 100%); "
            f"pcs_hot sites " + ", ".join(f"{x['site'][:40]} {x['share_pct']:.1f}% "
                                          f"({x['launches']} launches)" for x in hot["sites"]))
    narrow = next(x for x in hot["sites"] if "launch_narrow" in x["site"])
    wide = next(x for x in hot["sites"] if "launch_wide" in x["site"])
    sms = SITES["sms"]
    sm_n = min(SITES["narrow"], sms) * narrow["kernel_ns"]
    sm_w = min(SITES["wide"], sms) * wide["kernel_ns"]
    want = sm_n / (sm_n + sm_w)
    got = narrow["samples"] / max(narrow["samples"] + wide["samples"], 1)
    by_gpu = narrow["kernel_ns"] / max(narrow["kernel_ns"] + wide["kernel_ns"], 1)
    c.check("sites by time", abs(got - want) <= 0.10 * want
            and narrow["launches"] == wide["launches"] == SITES["launches"],
            f"launch_narrow {100 * got:.1f}% of the two phases' samples, SM time says "
            f"{100 * want:.1f}% (GPU time would say {100 * by_gpu:.1f}%); launches "
            f"{narrow['launches']}/{wide['launches']}; joined by time {hot['samples_joined_by_time']}"
            f" of {hot['samples']} (need within 10% relative of SM time)")


def checks(c, path, hot, base, pcs):
    import numpy as np
    import tracesmith
    t = tracesmith.load(path)
    stats = dict(zip(t.stat_rows.name, t.stat_rows.value))
    s = t.pc_samples
    total = int(np.sum(s.samples))
    taken = stats.get("pc_sampling.samples", 0) - stats.get("pc_sampling.non_user_samples", 0)
    c.check("samples", taken > 0 and total == taken
            and stats.get("pc_sampling.dropped_samples", 0) == 0
            and stats.get("pc_sampling.hardware_buffer_full", 0) == 0,
            f"{total} samples in {len(s.samples)} rows (must equal those taken); stats samples "
            f"{stats.get('pc_sampling.samples')}, dropped {stats.get('pc_sampling.dropped_samples')}, "
            f"hardware buffer full {stats.get('pc_sampling.hardware_buffer_full')}, drains "
            f"{stats.get('pc_sampling.drains')}, max drain {stats.get('pc_sampling.drain_max_us')} us")
    lines = {}
    L = t.pc_lines
    for fn, off, crc, f, ln in zip(L.function, L.pc_offset, L.cubin_crc, L.file, L.line):
        lines[(fn, int(off), int(crc))] = (f, int(ln))
    keys = list(zip(s.function, (int(o) for o in s.pc_offset), (int(x) for x in s.cubin_crc)))
    missing = sum(1 for k in set(keys) if k not in lines)
    c.check("lines", missing == 0 and len(lines) > 0,
            f"{len(lines)} instructions with a line row, {missing} sampled without one")
    by_fn, by_stall, on_hot = {}, {}, {}
    hot_file, hot_line = os.path.basename(hot.group(1)), int(hot.group(2))
    # The two-site phases come last (the target's last 2 x launches of pcs_hot, 100 ms after
    # the rest): the shares below are of the samples before them.
    K = t.kernels
    hot_starts = sorted(int(a) for n, a in zip(K.name, K.start_ns) if "pcs_hot" in n)
    phases_begin = hot_starts[-2 * SITES.get("launches", 0)] if SITES else 1 << 63
    for (fn, off, crc), n, st, end in zip(keys, s.samples, s.stall, s.end_ns):
        k = next((x for x in ("pcs_mem", "pcs_fma", "pcs_hot") if x in fn), "other")
        if int(end) > phases_begin:
            k = "phases"
        by_fn[k] = by_fn.get(k, 0) + int(n)
        by_stall.setdefault(k, {})
        by_stall[k][short(st)] = by_stall[k].get(short(st), 0) + int(n)
        f, ln = lines.get((fn, off, crc), ("", 0))
        if k == "pcs_hot" and os.path.basename(f) == hot_file and ln == hot_line:
            on_hot["n"] = on_hot.get("n", 0) + int(n)
    h = by_fn.get("pcs_hot", 0)
    c.check("hot line", h and on_hot.get("n", 0) >= 0.9 * h,
            f"{100.0 * on_hot.get('n', 0) / max(h, 1):.1f}% of pcs_hot's {h} samples on "
            f"{hot_file}:{hot_line} (need >= 90%)")
    def top(k):
        d = by_stall.get(k, {})
        return max(d, key=d.get) if d else "-", d
    tm, dm = top("pcs_mem")
    tf, df = top("pcs_fma")
    c.check("stall mem", tm in MEMORY_STALLS,
            f"pcs_mem top stall {tm} ({100.0 * dm.get(tm, 0) / max(sum(dm.values()), 1):.1f}%)")
    c.check("stall fma", tf in COMPUTE_STALLS,
            f"pcs_fma top stall {tf} ({100.0 * df.get(tf, 0) / max(sum(df.values()), 1):.1f}%)")
    gpu = {}
    for name, a, b in zip(K.name, K.start_ns, K.end_ns):
        k = next((x for x in ("pcs_mem", "pcs_fma", "pcs_hot") if x in name), None)
        if k and int(a) < phases_begin:
            gpu[k] = gpu.get(k, 0) + int(b) - int(a)
    # The reference is each kernel's GPU time alone x its launches: samples count the SM time
    # its warps hold; inside the concurrent loop a kernel's duration also covers time it waits
    # for SMs the other stream's kernel holds, so duration shares are shown, not required.
    counts = {k: sum(1 for n, a in zip(K.name, K.start_ns) if k in n and int(a) < phases_begin)
              for k in ("pcs_mem", "pcs_fma", "pcs_hot")}
    solo = {k: SOLO.get(k, 0) * counts[k] for k in counts}
    gsum, osum, ssum = sum(gpu.values()), sum(solo.values()), sum(by_fn.get(k, 0) for k in gpu)
    parts, ok = [], bool(osum and ssum)
    for k in ("pcs_mem", "pcs_fma", "pcs_hot"):
        o = solo[k] / max(osum, 1e-9)
        sh = by_fn.get(k, 0) / max(ssum, 1)
        ok = ok and abs(sh - o) <= 0.10 * o
        parts.append(f"{k} samples {100 * sh:.1f}% / alone {100 * o:.1f}% (durations in the "
                     f"loop {100 * gpu.get(k, 0) / max(gsum, 1):.1f}%)")
    c.check("shares", ok, "; ".join(parts) + " (need within 10% relative of alone)")
    mem = sorted((int(a), int(b)) for n, a, b in zip(K.name, K.start_ns, K.end_ns) if "pcs_mem" in n)
    fma = sorted((int(a), int(b)) for n, a, b in zip(K.name, K.start_ns, K.end_ns) if "pcs_fma" in n)
    overlap, j = 0, 0
    for a, b in mem:
        while j < len(fma) and fma[j][1] <= a:
            j += 1
        overlap += j < len(fma) and fma[j][0] < b
    c.check("concurrency", mem and overlap >= 0.5 * len(mem),
            f"{overlap} of {len(mem)} pcs_mem launches overlap a pcs_fma launch")
    want = 5 + TARGET_ROUNDS * TARGET_ITERS + 20  # warm-up, rounds, alone
    c.check("kernel rows", all(v == want for v in counts.values())
            and len(hot_starts) == want + 2 * SITES.get("launches", -1),
            f"{counts} (each launched {want} times), then pcs_hot {len(hot_starts) - want} "
            f"times in the two-site phases")
    mb, mp = statistics.median(base), statistics.median(pcs)
    c.check("cost", mp <= 1.10 * mb,
            f"loop {mp:.1f} ms with --pc-sampling vs {mb:.1f} ms without ({mp / mb:.3f}x; rounds "
            f"{base} / {pcs}; need <= 1.10x)")


if __name__ == "__main__":
    main()
