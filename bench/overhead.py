#!/usr/bin/env python3
"""Capture overhead benchmark (GPU machine): configurations interleaved round
by round on the same workloads, medians, ratios to the baseline.

  bench/overhead.py --tracesmith BIN --launch-loop BIN --cupti-floor SO
                    [--set main|groups|pcsampling|gpumetrics] [--configs SPEC,...]
                    [--workloads ll,pyll,mlp,xf] [--rounds 8] [--json FILE]
  bench/overhead.py ... --from-json A.json B.json   (report earlier runs together)

Workloads (each prints its own timed-loop figures; warm-up and process start
are excluded): ll = bench/workloads/launch_loop.cu (200k tiny launches, C++),
pyll = torch_launch_loop.py (50k x.mul_), mlp = torch_mlp_train.py (8-block
MLP + AdamW), xf = torch_transformer_train.py (bf16 TransformerEncoder +
AdamW), launch = bench/workloads/api_costs.cu's cudaLaunchKernel measure alone
(host ns per launch, the median of ~780 blocks of 256 launches: the most
precise per-launch figure; needs --api-costs). Two metrics per run: wall
time of the timed loop and CPU time of the
thread that launches (less noisy on a shared machine).

A configuration SPEC is LABEL=KIND[:ARGS]:
  base                      no profiler
  cupti:KINDS               bench/cupti_floor alone (e.g. cupti:kernel,runtime)
  ts:ARGS                   tracesmith profile ARGS (e.g. "ts:--stacks none")
  torch / torch-stack       torch.profiler (Python workloads only)
Environment for one configuration: LABEL=env:VAR=VAL;VAR=VAL|KIND:ARGS.
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))

SETS = {
    # The issue-#12 table: floors, defaults, no stacks, torch.profiler.
    "main": [
        "base=base", "cupti_kernel=cupti:kernel", "cupti_kernel_runtime=cupti:kernel,runtime",
        "tracesmith=ts:", "nostacks=ts:--stacks none", "torch=torch", "torch_stack=torch-stack",
    ],
    # One group at a time on top of --kinds kernel, CUPTI's own cost of the
    # same groups, and the defaults with and without stacks.
    "groups": [
        "base=base", "cupti_kernel=cupti:kernel", "cupti_kernel_runtime=cupti:kernel,runtime",
        "cupti_kernel_sync=cupti:kernel,sync",
        "ts_kernel=ts:--kinds kernel --stacks none",
        "ts_+runtime=ts:--kinds kernel,runtime --stacks none",
        "ts_+driver=ts:--kinds kernel,driver --stacks none",
        "ts_+memcpy,memset=ts:--kinds kernel,memcpy,memset --stacks none",
        "ts_+sync=ts:--kinds kernel,sync --stacks none",
        "ts_+memory=ts:--kinds kernel,memory --stacks none",
        "ts_+nvtx,overhead,module,external=ts:--kinds kernel,nvtx,overhead,module,external --stacks none",
        "ts_default_nostacks=ts:--stacks none", "ts_default=ts:",
    ],
    # GPU instruction sampling (issue #39) on top of the default capture, at the
    # default period (2^15; 2^17 loses the sample shares: docs/pc-sampling.md).
    "pcsampling": [
        "base=base", "tracesmith=ts:", "pc_sampling_2^15=ts:--pc-sampling-period 15",
    ],
    # GPU hardware metrics over time (issue #40: <= 3% on top of the default
    # capture at the default interval, 1 ms), and at 100 us for the record.
    "gpumetrics": [
        "base=base", "tracesmith=ts:", "gpu_metrics_1ms=ts:--gpu-metrics",
        "gpu_metrics_100us=ts:--gpu-metrics --gpu-metrics-interval 100us",
    ],
}


def workload_cmd(name, args):
    py = [sys.executable, "-u"]
    if name == "ll":
        return [args.launch_loop, "200000", "1"], "seconds", "cpu_seconds"
    if name == "launch":
        if not args.api_costs:
            raise SystemExit("workload 'launch' needs --api-costs BIN")
        return [args.api_costs, "200000", "cudaLaunchKernel"], "ns_per_call", "ns_per_call"
    if name == "pyll":
        return py + [f"{HERE}/workloads/torch_launch_loop.py", "--n", "50000"], "seconds", "cpu_seconds"
    if name == "mlp":
        return py + [f"{HERE}/workloads/torch_mlp_train.py", "--steps", "50"], "step_ms", "cpu_ms"
    if name == "xf":
        return py + [f"{HERE}/workloads/torch_transformer_train.py", "--steps", "50"], "step_ms", "cpu_ms"
    raise SystemExit(f"unknown workload {name}")


def parse_spec(spec):
    label, _, rest = spec.partition("=")
    env = {}
    if rest.startswith("env:"):
        envs, _, rest = rest[4:].partition("|")
        for kv in envs.split(";"):
            k, _, v = kv.partition("=")
            env[k] = v
    kind, _, cargs = rest.partition(":")
    return label, kind or label, cargs, env


def build(spec, workload, args, trace):
    label, kind, cargs, env = parse_spec(spec)
    cmd, wall_key, cpu_key = workload_cmd(workload, args)
    env = dict(os.environ, **env)
    if kind == "base":
        pass
    elif kind == "cupti":
        env.update(CUDA_INJECTION64_PATH=args.cupti_floor, CUPTI_FLOOR_KINDS=cargs or "kernel")
    elif kind == "ts":
        cmd = [args.tracesmith, "profile", "-q", "-f", *cargs.split(), "-o", trace, "--", *cmd]
    elif kind in ("torch", "torch-stack"):
        if workload in ("ll", "launch"):
            return None
        if workload == "pyll" and kind == "torch-stack":
            return None
        cmd = cmd + ["--profiler", kind]
    else:
        raise SystemExit(f"unknown configuration kind in {spec!r}")
    return label, cmd, env, wall_key, cpu_key


def value(out, key):
    m = re.findall(rf"\b{key}=([0-9.]+)", out)
    return float(m[-1]) if m else None


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tracesmith")
    ap.add_argument("--launch-loop")
    ap.add_argument("--cupti-floor")
    ap.add_argument("--taskset", metavar="CPUS",
                    help="run every configuration on these CPUs (taskset -c CPUS, e.g. 4-7): the "
                         "same cores for all, against the process-to-process spread of a VM")
    ap.add_argument("--api-costs", help="bench/workloads/api_costs binary (workload 'launch')")
    ap.add_argument("--set", default="main", choices=sorted(SETS))
    ap.add_argument("--configs", help="comma-free list of SPECs separated by ';;' (replaces --set)")
    ap.add_argument("--workloads", default="ll,pyll,mlp,xf")
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--json", help="write every run's figures here")
    ap.add_argument("--tag", default="BENCH", help="prefix of the printed lines")
    ap.add_argument("--from-json", nargs="+", metavar="FILE",
                    help="no runs: report the runs of earlier --json files together (rounds split "
                         "over several device calls)")
    args = ap.parse_args()
    if not args.from_json and not (args.tracesmith and args.launch_loop and args.cupti_floor):
        ap.error("--tracesmith, --launch-loop and --cupti-floor are needed to run (not with --from-json)")
    specs = args.configs.split(";;") if args.configs else SETS[args.set]
    workloads = args.workloads.split(",")
    if args.from_json:
        runs = []
        for i, name in enumerate(args.from_json):
            with open(name) as f:
                runs += [(w, label, 1000 * i + r, *rest) for w, label, r, *rest in json.load(f)]
        seen = {x[1] for x in runs}
        # Labels as the files name them (--configs may have named any).
        labels = [parse_spec(s)[0] for s in specs if parse_spec(s)[0] in seen]
        labels += sorted(seen - set(labels))
        report(runs, [w for w in workloads if any(x[0] == w for x in runs)], labels, args.tag)
        return
    runs = []  # (workload, label, round, wall, cpu, process_seconds)
    with tempfile.TemporaryDirectory() as tmp:
        trace = os.path.join(tmp, "t.sbt")
        for r in range(args.rounds):
            print(f"# round {r + 1}/{args.rounds}", flush=True)
            for w in workloads:
                for spec in specs:
                    b = build(spec, w, args, trace)
                    if b is None:
                        continue
                    label, cmd, env, wall_key, cpu_key = b
                    if args.taskset:
                        cmd = ["taskset", "-c", args.taskset, *cmd]
                    t0 = time.perf_counter()
                    p = subprocess.run(cmd, env=env, capture_output=True, text=True)
                    dt = time.perf_counter() - t0
                    wall, cpu = value(p.stdout, wall_key), value(p.stdout, cpu_key)
                    if p.returncode != 0 or wall is None:
                        print(f"FAILED {w} {label} rc={p.returncode}: {p.stderr[-600:]}", flush=True)
                        continue
                    runs.append((w, label, r, wall, cpu, dt))
                    print(f"{args.tag} run {w} {label} wall={wall:.6g} cpu={cpu} process_s={dt:.2f}",
                          flush=True)
                    if args.json:  # after every run: a call cut by its time limit keeps its runs
                        with open(args.json, "w") as f:
                            json.dump(runs, f)
    report(runs, workloads, [parse_spec(s)[0] for s in specs], args.tag)


def report(runs, workloads, labels, tag):
    print(f"\n{tag} ratios of medians to base (wall | launching-thread CPU | whole process), n runs;"
          f" then the median of each round's ratio to that round's base (robust to a machine that"
          f" changes between rounds or device calls), and the ratio of the fastest runs (wall)")
    for w in workloads:
        def med(label, i):
            v = [x[i] for x in runs if x[0] == w and x[1] == label and x[i] is not None]
            return (statistics.median(v), len(v)) if v else (None, 0)
        base = [med("base", i)[0] for i in (3, 4, 5)]
        base_of = {x[2]: x for x in runs if x[0] == w and x[1] == "base"}
        for label in labels:
            m = [med(label, i) for i in (3, 4, 5)]
            if m[0][0] is None:
                continue
            ratios = ["%.3fx" % (m[i][0] / base[i]) if base[i] and m[i][0] else "—" for i in range(3)]
            per_round = [x[3] / base_of[x[2]][3] for x in runs
                         if x[0] == w and x[1] == label and x[2] in base_of and x[3]]
            rr = "%.3fx" % statistics.median(per_round) if per_round else "—"
            # Against the default capture of the same round too: what an option adds on
            # top of it (--gpu-metrics, --pc-sampling), the rounds' spread beside it.
            ts_of = {x[2]: x for x in runs if x[0] == w and x[1] == "tracesmith"}
            per_ts = [x[3] / ts_of[x[2]][3] for x in runs if x[0] == w and x[1] == label and
                      x[2] in ts_of and x[3]] if label not in ("base", "tracesmith") else []
            rts = (" round_ratio_to_tracesmith=%.3fx (rounds %s)" % (
                statistics.median(per_ts), ", ".join("%.3f" % r for r in per_ts))
                   if per_ts else "")
            walls = [x[3] for x in runs if x[0] == w and x[1] == label and x[3]]
            base_min = min((x[3] for x in runs if x[0] == w and x[1] == "base" and x[3]), default=0)
            mn = "%.3fx" % (min(walls) / base_min) if base_min else "—"
            print(f"{tag} {w:5s} {label:38s} median={m[0][0]:.5g} wall={ratios[0]} cpu={ratios[1]} "
                  f"process={ratios[2]} n={m[0][1]} round_ratio={rr} min_ratio={mn}{rts}")

if __name__ == "__main__":
    main()
