#!/usr/bin/env python3
"""GPU instruction sampling against its peers (issue #39, "Cost"; scripts/gpu-check.sh `pcpeers`).

  python3 gpu/pc_peers.py TRACESMITH_CLI OUT_DIR [--steps 30] [--rounds 5] [--budget 540]

The bf16 Transformer training step (bench/workloads/torch_transformer_train.py --steps N: 5
warm-up steps, then 5 timed blocks; it prints `steps=N step_ms=<median of the blocks>`), each
configuration a separate process, its process wall time (perf_counter around it) and printed
step_ms recorded:
  base   the workload alone;
  ts     `tracesmith profile -f -q -o OUT/ts.sbt -- python3 -u WORKLOAD` (the default capture);
  tspc   the same with --pc-sampling (the default period), OUT/tspc.sbt; `info` gives its
         pc_sampling.* stats, `analyze --json` its samples per kernel (gpu_samples.functions)
         and each kernel's share of GPU time (kernels[].share_pct);
these three interleaved (order rotated each round) for R rounds; then once each:
  ncu    `ncu --section SourceCounters --target-processes all --launch-skip W --launch-count K`
         on --ncu-steps steps (W: the warm-up's kernels, K: one step's, from analyze's
         steps.kernels_per_step): its time per profiled kernel = (its wall - base's wall) /
         kernels profiled; the full run under ncu is an EXTRAPOLATION (printed as such);
  proton Triton's Proton in PC-sampling mode on --proton-steps (10) steps, in process (OUT/proton_run.py, written here: it
         tries proton.start(name, backend="cupti", mode="pcsampling"), then mode=
         proton.mode.PCSampling(), then backend="cupti_pcsampling"; prints PROTON_API and
         triton's version; a failed first run is retried once with TRITON_CUPTI_LIB_PATH set).
A run past its timeout is killed (its process group) and its figures read as lower bounds.
--budget (seconds, the whole script; a device call has 600): no round after the third starts when
it would leave under 200 s for ncu and Proton, and their timeouts are clipped to what is left.
Verdicts (`PCPEERS <check>: <figures> -> PASS|FAIL|SKIP`, then the summary line):
  - rounds: every round's base / ts / tspc run exited 0 and printed step_ms;
  - pc cost: median over rounds of tspc step_ms / ts step_ms <= 1.10 (each round's ratio and
    the max shown);
  - samples: every kernel with >= 1% of GPU time has >= 1,000 samples;
  - ncu: ran (SKIP when ncu is not there or it timed out: then a lower bound);
  - proton: ran (SKIP when triton.profiler does not import, or it timed out).
Lines `PCPEERS | ...` are the table (no verdict). Every run's raw figures: OUT/pc_peers.json,
rewritten after each run. PCPEERS_PYTHON (default python3) and NCU (default: ncu on PATH, else
/usr/local/cuda/bin/ncu) name the interpreter and Nsight Compute.
"""
import argparse
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import time

from checks import Checks

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WORKLOAD = os.path.join(ROOT, "bench", "workloads", "torch_transformer_train.py")
WARMUP_STEPS = 5  # bench/workloads/step_harness.py run(warmup=5)
STEP_RE = re.compile(r"steps=(\d+) step_ms=([0-9.]+) cpu_ms=([0-9.]+)")
T0 = time.perf_counter()
RESULTS = {"runs": []}

PROTON_RUN = r'''"""Written by gpu/pc_peers.py: the workload in process under Triton's Proton, PC sampling.
python3 proton_run.py WORKLOAD STEPS PROFILE_NAME [WORKLOAD_ARGS...]"""
import importlib
import os
import runpy
import sys
import time
import traceback

workload, steps, name = sys.argv[1], sys.argv[2], sys.argv[3]
try:
    import triton
    import triton.profiler as proton
except Exception as e:  # noqa: BLE001
    print(f"PROTON_IMPORT_ERROR {type(e).__name__}: {e}", flush=True)
    sys.exit(3)
print(f"PROTON_TRITON {getattr(triton, '__version__', '?')} "
      f"TRITON_CUPTI_LIB_PATH={os.environ.get('TRITON_CUPTI_LIB_PATH', '')}", flush=True)
mode = getattr(proton, "mode", None)
if mode is None:
    try:
        mode = importlib.import_module("triton.profiler.mode")
    except Exception:  # noqa: BLE001
        mode = None
attempts = [('start(name, backend="cupti", mode="pcsampling")',
             lambda: proton.start(name, backend="cupti", mode="pcsampling"))]
if mode is not None and hasattr(mode, "PCSampling"):
    attempts.append(('start(name, backend="cupti", mode=proton.mode.PCSampling())',
                     lambda: proton.start(name, backend="cupti", mode=mode.PCSampling())))
attempts.append(('start(name, backend="cupti_pcsampling")',
                 lambda: proton.start(name, backend="cupti_pcsampling")))
used = None
for label, start in attempts:
    try:
        start()
        used = label
        break
    except Exception as e:  # noqa: BLE001
        print(f"PROTON_API_FAILED {label}: {type(e).__name__}: {e}", flush=True)
        traceback.print_exc(limit=4)
if used is None:
    print("PROTON_NO_API", flush=True)
    sys.exit(4)
print(f"PROTON_API {used}", flush=True)
sys.path.insert(0, os.path.dirname(os.path.abspath(workload)))
sys.argv = [workload, "--steps", steps] + sys.argv[4:]
t = time.perf_counter()
runpy.run_path(workload, run_name="__main__")
print(f"PROTON_RUN_S {time.perf_counter() - t:.3f}", flush=True)
t = time.perf_counter()
proton.finalize()
print(f"PROTON_FINALIZE_S {time.perf_counter() - t:.3f}", flush=True)
'''


def log(msg):
    print(f"[pc_peers {time.perf_counter() - T0:6.1f}s] {msg}", flush=True)


def left(budget):
    return budget - (time.perf_counter() - T0)


def save(out):
    path = os.path.join(out, "pc_peers.json")
    with open(path + ".tmp", "w") as f:
        json.dump(RESULTS, f, indent=1)
    os.replace(path + ".tmp", path)


def run(out, name, cmd, timeout, env=None, steps=None, **extra):
    """Runs cmd in its own process group, its output into OUT/NAME.log; on timeout kills the
    group. Returns (and records in RESULTS["runs"]) its figures."""
    path = os.path.join(out, name + ".log")
    t = time.perf_counter()
    timed_out = False
    with open(path, "w") as f:
        f.write(" ".join(cmd) + "\n")
        f.flush()
        try:
            p = subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT, cwd=ROOT, env=env,
                                 start_new_session=True)
        except OSError as e:
            f.write(f"cannot start: {e}\n")
            rc = 127
        else:
            try:
                rc = p.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                timed_out = True
                try:
                    os.killpg(p.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                rc = p.wait()
    wall = time.perf_counter() - t
    with open(path, errors="replace") as f:
        text = f.read()
    m = STEP_RE.findall(text)
    r = {"name": name, "cmd": cmd, "rc": rc, "wall_s": round(wall, 3), "timed_out": timed_out,
         "timeout_s": timeout, "steps": int(m[-1][0]) if m else steps,
         "step_ms": float(m[-1][1]) if m else None, "cpu_ms": float(m[-1][2]) if m else None,
         "log": path, **extra}
    RESULTS["runs"].append(r)
    save(out)
    log(f"{name}: exit {rc}{' (TIMED OUT)' if timed_out else ''}, wall {wall:.1f} s, "
        f"step_ms {r['step_ms']}")
    return r, text


def tail(text, n=20):
    return "\n".join(text.rstrip("\n").splitlines()[-n:])


def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def fmt(x, spec=".2f", none="-"):
    return none if x is None else format(x, spec)


def info_stats(cli, path):
    """{stat: value} of `tracesmith info`'s pc_sampling.* lines, over every process of the
    trace (a torch.compile run has compile workers with stats of their own, all zero): counts
    summed, the period and maxima the largest."""
    p = subprocess.run([cli, "info", path], capture_output=True, text=True, timeout=300)
    stats = {}
    for k, v in re.findall(r"(?m)^\s+(pc_sampling\.\S+)\s+(-?\d+)", p.stdout):
        v = int(v)
        if k.endswith("period_log2") or "_max" in k:
            stats[k] = max(stats.get(k, v), v)
        else:
            stats[k] = stats.get(k, 0) + v
    return p.returncode, stats, p.stdout + p.stderr


def analyze_json(cli, path, out):
    p = subprocess.run([cli, "analyze", "--json", path], capture_output=True, text=True,
                       timeout=300)
    with open(os.path.join(out, "tspc_analyze.json"), "w") as f:
        f.write(p.stdout)
    try:
        return json.loads(p.stdout[p.stdout.index("{"):]) if p.returncode == 0 else None
    except ValueError:
        return None


def kernel_samples(doc):
    """[(name, share of GPU time %, samples)] of the kernels with >= 1% of GPU time, most GPU
    time first: kernels[] (every kernel, share_pct of the window's kernel time) joined by name
    to gpu_samples.functions[] (samples over the whole trace); a kernel without samples has 0."""
    fns = (doc.get("gpu_samples") or {}).get("functions") or []
    by_name = {}
    for f in fns:
        by_name[f.get("name")] = by_name.get(f.get("name"), 0) + int(f.get("samples", 0))
    if doc.get("kernels"):
        heavy = [(k["name"], float(k.get("share_pct", 0))) for k in doc["kernels"]]
    else:  # the sampled functions' own GPU shares
        heavy = [(f["name"], float(f.get("gpu_share_pct", 0))) for f in fns]
    heavy = [(n, s, by_name.get(n, 0)) for n, s in heavy if s >= 1.0]
    return sorted(heavy, key=lambda x: -x[1])


def find_ncu():
    if os.environ.get("NCU"):
        return os.environ["NCU"]
    return shutil.which("ncu") or next(
        (p for p in ("/usr/local/cuda/bin/ncu",) if os.access(p, os.X_OK)), None)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("cli")
    ap.add_argument("out")
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--workload", default=WORKLOAD)
    ap.add_argument("--compile", action="store_true",
                    help="the workload's model under torch.compile (Inductor): its --compile")
    ap.add_argument("--run-timeout", type=float, default=180, help="each base/ts/tspc run")
    ap.add_argument("--budget", type=float, default=540,
                    help="seconds for the whole script: rounds after the third stop to keep 200 s "
                         "for ncu and Proton, whose timeouts are clipped to what is left")
    ap.add_argument("--ncu-steps", type=int, default=5)
    ap.add_argument("--ncu-launch-count", type=int, default=0,
                    help="kernels ncu profiles (default: one step's, from analyze; else 300)")
    ap.add_argument("--ncu-timeout", type=float, default=240)
    ap.add_argument("--proton-steps", type=int, default=10,
                    help="steps under Proton (slow: it serializes kernels); 0: --steps")
    ap.add_argument("--proton-timeout", type=float, default=300)
    ap.add_argument("--skip", default="", help="comma list of ncu,proton not to run")
    a = ap.parse_args()
    out = os.path.abspath(a.out)
    os.makedirs(out, exist_ok=True)
    py = os.environ.get("PCPEERS_PYTHON", "python3")
    cli = a.cli
    skip = set(filter(None, a.skip.split(",")))
    c = Checks("PCPEERS")
    N = a.steps
    work = [py, "-u", a.workload, "--steps", str(N)] + (["--compile"] if a.compile else [])
    RESULTS.update(steps=N, rounds=a.rounds, workload=a.workload, cli=cli,
                   date=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
    configs = {
        "base": work,
        "ts": [cli, "profile", "-f", "-q", "-o", os.path.join(out, "ts.sbt"), "--", *work],
        "tspc": [cli, "profile", "-f", "-q", "--pc-sampling", "-o", os.path.join(out, "tspc.sbt"),
                 "--", *work],
    }
    order = list(configs)
    rounds = []  # [{config: run}]
    stats_per_round = []
    rounds_ok = True
    reserve = 0 if {"ncu", "proton"} <= skip else 200  # seconds kept for ncu and Proton
    round_s = 0.0
    for r in range(a.rounds):
        if r >= 3 and left(a.budget) - round_s < reserve:
            log(f"rounds stopped after {r} of {a.rounds}: {left(a.budget):.0f} s left of --budget "
                f"{a.budget:.0f}, a round takes {round_s:.0f} s, {reserve} s kept for ncu and Proton")
            break
        t_round = time.perf_counter()
        this = {}
        for name in order[r % 3:] + order[:r % 3]:  # rotated: no configuration always first
            log(f"round {r + 1}/{a.rounds}: {name}")
            run_r, text = run(out, f"{name}{r}", configs[name], a.run_timeout, steps=N,
                              config=name, round=r)
            this[name] = run_r
            if run_r["rc"] != 0 or run_r["step_ms"] is None:
                rounds_ok = False
                print(tail(text))
            if name == "tspc" and run_r["rc"] == 0:
                code, st, itext = info_stats(cli, os.path.join(out, "tspc.sbt"))
                run_r["pc_stats"] = st
                stats_per_round.append(st)
                save(out)
                log(f"tspc{r} info: {st or tail(itext, 5)}")
        rounds.append(this)
        round_s = time.perf_counter() - t_round

    c.check("rounds", rounds_ok and rounds,
            f"{len(rounds)} rounds x base / ts / tspc, {N} steps each: every run exited 0 with "
            f"step_ms" if rounds_ok else "a run failed or printed no step_ms (its log: OUT/*.log)")

    def ratios(num, den):
        return [x[num]["step_ms"] / x[den]["step_ms"] for x in rounds
                if num in x and den in x and x[num]["step_ms"] and x[den]["step_ms"]]

    pc_ts = ratios("tspc", "ts")
    cost = med(pc_ts)
    c.check("pc cost", cost is not None and cost <= 1.10,
            f"tspc / ts step_ms, median of rounds {fmt(cost, '.3f')}x (need <= 1.10); rounds "
            f"[{', '.join(f'{x:.3f}' for x in pc_ts)}], max {fmt(max(pc_ts) if pc_ts else None, '.3f')}"
            f"x; medians tspc {fmt(med(x['tspc']['step_ms'] for x in rounds if 'tspc' in x), '.3f')}"
            f" / ts {fmt(med(x['ts']['step_ms'] for x in rounds if 'ts' in x), '.3f')} / base "
            f"{fmt(med(x['base']['step_ms'] for x in rounds if 'base' in x), '.3f')} ms")

    # Samples: the last round's trace (OUT/tspc.sbt).
    doc = None
    kps = None
    if os.path.exists(os.path.join(out, "tspc.sbt")):
        log("analyze --json tspc.sbt")
        doc = analyze_json(cli, os.path.join(out, "tspc.sbt"), out)
    if doc:
        kps = (doc.get("steps") or {}).get("kernels_per_step") or None
        heavy = kernel_samples(doc)
        RESULTS["samples"] = {"kernels_ge_1pct": heavy, "kernels_per_step": kps,
                              "total": (doc.get("gpu_samples") or {}).get("samples"),
                              "info": stats_per_round[-1] if stats_per_round else {}}
        save(out)
        st = stats_per_round[-1] if stats_per_round else {}
        short = [h for h in heavy if h[2] < 1000]
        fewest = min(heavy, key=lambda h: h[2]) if heavy else None
        c.check("samples", heavy and not short,
                f"{len(heavy) - len(short)} of {len(heavy)} kernels with >= 1% of GPU time have "
                f">= 1,000 samples (need all); fewest: "
                f"{(fewest[0][:60] + f' ({fewest[1]:.1f}% GPU, {fewest[2]} samples)') if fewest else '-'}"
                f"; total {st.get('pc_sampling.samples', RESULTS['samples']['total'])} samples, "
                f"dropped {st.get('pc_sampling.dropped_samples', '?')}, hardware buffer full "
                f"{st.get('pc_sampling.hardware_buffer_full', '?')}"
                + (f"; short: {', '.join(f'{n[:40]} {s}' for n, _, s in short[:5])}" if short else ""))
    else:
        c.fail("samples", "no OUT/tspc.sbt, or `analyze --json` of it failed")

    base_wall = med(x["base"]["wall_s"] for x in rounds if "base" in x and x["base"]["rc"] == 0)
    base_step = med(x["base"]["step_ms"] for x in rounds if "base" in x)
    # The process's start and end (imports, CUDA init, the model): its wall less its steps.
    startup = (base_wall - (N + WARMUP_STEPS) * base_step / 1e3) if base_wall and base_step \
        else None

    # ncu on a few steps, the kernels of one step profiled.
    ncu = find_ncu()
    ncu_res = None
    if "ncu" in skip:
        c.skip("ncu", "--skip ncu")
    elif not ncu:
        c.skip("ncu", "ncu not found (PATH, /usr/local/cuda/bin/ncu, NCU)")
    elif left(a.budget) < 45:
        c.skip("ncu", f"{left(a.budget):.0f} s left of --budget {a.budget:.0f}")
    else:
        K = a.ncu_launch_count or kps or 300
        skip_k = WARMUP_STEPS * kps if kps else 0
        timeout = min(a.ncu_timeout, max(30.0, left(a.budget) / (1 if "proton" in skip else 2)))
        cmd = [ncu, "--section", "SourceCounters", "--target-processes", "all",
               "--launch-skip", str(skip_k), "--launch-count", str(K),
               "-o", os.path.join(out, "ncu_src"), "-f",
               py, "-u", a.workload, "--steps", str(a.ncu_steps)]
        log(f"ncu: {K} kernels after {skip_k} (timeout {timeout:.0f} s)")
        ncu_res, text = run(out, "ncu", cmd, timeout, steps=a.ncu_steps, config="ncu",
                            launch_count=K, launch_skip=skip_k)
        profiled = len(re.findall(r'==PROF== Profiling "', text))
        ncu_res["profiled"] = profiled
        if profiled and base_wall is not None:
            per = max(ncu_res["wall_s"] - base_wall, 0.0) / profiled
            ncu_res["s_per_kernel"] = per
            ncu_res["kernels_per_step"] = kps or K
            ncu_res["extrap_step_ms"] = (base_step or 0) + (kps or K) * per * 1e3
            ncu_res["extrap_wall_s"] = base_wall + (N + WARMUP_STEPS) * (kps or K) * per
        save(out)
        ok = ncu_res["rc"] == 0 and profiled > 0 and not ncu_res["timed_out"]
        what = (f"ncu --section SourceCounters: exit {ncu_res['rc']}, {profiled} kernels profiled "
                f"(asked {K}, after {skip_k}) in {ncu_res['wall_s']:.1f} s process wall (base "
                f"{fmt(base_wall, '.1f')} s): {fmt(ncu_res.get('s_per_kernel'), '.3f')} s per "
                f"profiled kernel")
        if ncu_res["timed_out"]:
            c.skip("ncu", what + f"; timed out after {timeout:.0f} s: the per-kernel time is an "
                   "estimate from the kernels it finished")
        else:
            c.check("ncu", ok, what if ok else what + "; " + tail(text, 3).replace("\n", " | "))
            if not ok:
                print(tail(text))

    # Proton in PC-sampling mode, in process.
    ps = a.proton_steps or N
    prot = None
    wrapper = os.path.join(out, "proton_run.py")
    with open(wrapper, "w") as f:
        f.write(PROTON_RUN)
    if "proton" in skip:
        c.skip("proton", "--skip proton")
    elif left(a.budget) < 45:
        c.skip("proton", f"{left(a.budget):.0f} s left of --budget {a.budget:.0f}")
    else:
        name = os.path.join(out, "proton_pcs")
        cmd = [py, "-u", wrapper, a.workload, str(ps), name] + (["--compile"] if a.compile else [])
        attempts = []
        for attempt, env in enumerate((None, dict(
                os.environ, TRITON_CUPTI_LIB_PATH="/usr/local/cuda/extras/CUPTI/lib64"))):
            timeout = min(a.proton_timeout, max(30.0, left(a.budget) - 10))
            log(f"proton (attempt {attempt + 1}, {ps} steps, timeout {timeout:.0f} s)")
            prot, text = run(out, f"proton{attempt}", cmd, timeout, env=env, steps=ps,
                             config="proton", attempt=attempt + 1)
            api = re.search(r"(?m)^PROTON_API (.+)$", text)
            ver = re.search(r"(?m)^PROTON_TRITON (\S+)", text)
            prot.update(api=api.group(1) if api else None, triton=ver.group(1) if ver else None)
            hatchet = [p for p in os.listdir(out) if p.startswith("proton_pcs")]
            prot["profile_files"] = {p: os.path.getsize(os.path.join(out, p)) for p in hatchet}
            save(out)
            attempts.append((prot, text))
            print(f"PROTON attempt {attempt + 1}: exit {prot['rc']}, triton {prot['triton']}, "
                  f"API {prot['api']}; last lines:\n{tail(text)}", flush=True)
            if prot["rc"] == 0 or prot["timed_out"] or "PROTON_IMPORT_ERROR" in text or \
                    left(a.budget) < 45:
                break
        if "PROTON_IMPORT_ERROR" in text:
            err = re.search(r"PROTON_IMPORT_ERROR (.*)", text).group(1)
            c.skip("proton", f"triton.profiler does not import: {err[:200]}")
            prot = None
        elif prot["timed_out"]:
            c.skip("proton", f"PC sampling under Proton ({prot['api']}, triton {prot['triton']}) "
                   f"timed out after {prot['timeout_s']:.0f} s on {ps} steps: its figures below "
                   "are lower bounds")
        else:
            ok = prot["rc"] == 0 and prot["step_ms"] is not None
            c.check("proton", ok,
                    f"{prot['api']} (triton {prot['triton']}): exit {prot['rc']}, {ps} steps, "
                    f"step_ms {prot['step_ms']}, wall {prot['wall_s']:.1f} s, profile "
                    f"{prot['profile_files']}" if ok else
                    f"failed in {len(attempts)} attempt(s): " + " || ".join(
                        f"exit {p['rc']}: " + tail(t, 4).replace("\n", " | ")[:300]
                        for p, t in attempts))

    table(rounds, N, base_wall, base_step, startup, ncu_res, prot)
    save(out)
    return c.summary()


def table(rounds, N, base_wall, base_step, startup, ncu_res, prot):
    """The table: per configuration its medians and ratios; then how many times faster the
    PC-sampling capture is than Proton's and ncu's."""
    RESULTS["table"] = rows = {}
    for name in ("base", "ts", "tspc"):
        runs = [x[name] for x in rounds if name in x and x[name]["step_ms"] is not None]
        rows[name] = {
            "n": len(runs), "step_ms": med(r["step_ms"] for r in runs),
            "wall_s": med(r["wall_s"] for r in runs),
            "round_ratio_base": med(x[name]["step_ms"] / x["base"]["step_ms"] for x in rounds
                                    if name in x and "base" in x and x[name]["step_ms"]
                                    and x["base"]["step_ms"]),
            "round_ratio_ts": med(x[name]["step_ms"] / x["ts"]["step_ms"] for x in rounds
                                  if name in x and "ts" in x and x[name]["step_ms"]
                                  and x["ts"]["step_ms"]),
            "round_wall_ratio_ts": med(x[name]["wall_s"] / x["ts"]["wall_s"] for x in rounds
                                       if name in x and "ts" in x and x[name]["rc"] == 0
                                       and x["ts"]["rc"] == 0),
        }
    lower = {}
    if prot is not None:
        st, wall, note = prot["step_ms"], prot["wall_s"], ""
        if prot["timed_out"] and st is None and startup is not None:
            # Not finished in the timeout: each of its steps took at least this long.
            st = max(prot["timeout_s"] - startup, 0) * 1e3 / (prot["steps"] + WARMUP_STEPS)
        if prot["steps"] != N and st is not None:  # its wall at N steps
            wall = wall + (N - prot["steps"]) * st / 1e3
            note = f" (wall scaled from {prot['steps']} to {N} steps)"
        rows["proton"] = {"n": 1, "step_ms": st, "wall_s": wall, "note": note}
        lower["proton"] = prot["timed_out"]
    if ncu_res is not None and ncu_res.get("s_per_kernel") is not None:
        rows["ncu"] = {"n": 1, "step_ms": ncu_res["extrap_step_ms"],
                       "wall_s": ncu_res["extrap_wall_s"],
                       "note": f" EXTRAPOLATED: {ncu_res['kernels_per_step']} kernels/step x "
                               f"{N + WARMUP_STEPS} steps x {ncu_res['s_per_kernel']:.3f} s per "
                               f"profiled kernel (+ base); measured: {ncu_res['profiled']} kernels"
                               f" in {ncu_res['wall_s']:.1f} s, printed step_ms "
                               f"{ncu_res['step_ms']} (the profiled step is one of 5 blocks)"}
        lower["ncu"] = ncu_res["timed_out"]
    b, t = rows["base"], rows["ts"]
    print(f"PCPEERS | {N} steps; medians over rounds; ratio = of the medians, round = median of "
          f"per-round ratios")
    print(f"PCPEERS | {'config':7} {'n':>2} {'step_ms':>10} {'wall_s':>8} {'x base':>7} "
          f"{'x ts':>7} {'round/base':>10} {'round/ts':>9} {'wall x ts':>9}")
    for name, r in rows.items():
        ge = ">=" if lower.get(name) else ""
        sb = r["step_ms"] / b["step_ms"] if r["step_ms"] and b["step_ms"] else None
        stt = r["step_ms"] / t["step_ms"] if r["step_ms"] and t["step_ms"] else None
        wt = r["wall_s"] / t["wall_s"] if r["wall_s"] and t["wall_s"] else None
        print(f"PCPEERS | {name:7} {r['n']:>2} {ge + fmt(r['step_ms'], '.3f'):>10} "
              f"{ge + fmt(r['wall_s'], '.1f'):>8} {fmt(sb, '.3f'):>7} {fmt(stt, '.3f'):>7} "
              f"{fmt(r.get('round_ratio_base'), '.3f'):>10} {fmt(r.get('round_ratio_ts'), '.3f'):>9}"
              f" {fmt(r.get('round_wall_ratio_ts') or wt, '.2f'):>9}{r.get('note', '')}")
    ours = rows["tspc"]
    for peer in ("proton", "ncu"):
        r = rows.get(peer)
        if not r or not ours["step_ms"]:
            print(f"PCPEERS | faster than {peer}: not measured")
            continue
        ge = ">= " if lower.get(peer) else ""
        by_step = r["step_ms"] / ours["step_ms"] if r["step_ms"] else None
        by_wall = r["wall_s"] / ours["wall_s"] if r["wall_s"] and ours["wall_s"] else None
        RESULTS.setdefault("faster", {})[peer] = {"by_step": by_step, "by_wall": by_wall,
                                                   "lower_bound": bool(lower.get(peer)),
                                                   "extrapolated": peer == "ncu"}
        print(f"PCPEERS | faster than {peer}{' (EXTRAPOLATED)' if peer == 'ncu' else ''}: "
              f"{ge}{fmt(by_step, '.1f')}x by step_ms ({fmt(r['step_ms'], '.2f')} vs "
              f"{ours['step_ms']:.2f} ms), {ge}{fmt(by_wall, '.1f')}x by process wall "
              f"({fmt(r['wall_s'], '.1f')} vs {fmt(ours['wall_s'], '.1f')} s)")


if __name__ == "__main__":
    sys.exit(main())
