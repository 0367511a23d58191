#!/usr/bin/env python3
"""What a capture option adds to a training step, measured inside one process (issues #39 and
#40 "Cost"; scripts/gpu-check.sh section `abcost`).

  python3 gpu/inproc_ab.py OUT --option gpu_metrics|pc_sampling|capture [--compile] [--batch 16]
      [--option-env KEY=VALUE ...] [--period N] [--rounds 8]
      [--steps 20] [--warm 3] [--limit 1.03] [--cli TRACESMITH]

Why in one process: on the CPU-bound bf16 Transformer step, separate processes of one
configuration differ by up to 25% (base 8.1-10.2 ms, H200, 2026-11-29), more than the 3%
(#40) or 10% (#39) sought, so a comparison of processes cannot settle it. Here one process
builds the step (bench/workloads/torch_transformer_train.py's model; with --compile under
torch.compile, compiled in the warm-up; --batch 128: 8x the sequences, a GPU-bound step), warms up, then runs R rounds of three blocks, in an
order rotated each round:
  none     the step alone;
  default  the step under `with tracesmith.profile(OUT/default.sbt)` (the default capture);
  option   the same with the option (gpu_metrics=True or pc_sampling=True; "capture": the
           default capture again, with --option-env's tuning knobs set while it starts, for the
           A/B of a knob: TRACESMITH_PC_SAMPLING_SLEEP_MS=10, TRACESMITH_BATCH_THREADS=0).
In a capture block the capture starts, W steps run untimed (the first walks of new stacks),
then S steps are timed (wall, synchronized) and the capture stops (its trace written, not
timed). Per round: option / default and default / none.
Verdicts (`ABCOST <check>: <figures> -> PASS|FAIL|SKIP`, then the summary line):
  - blocks: every block ran, every capture wrote its trace and (with --cli) every option
    block's trace holds samples of the option (`info`: gpu_metrics.samples or
    pc_sampling.samples);
  - cost: the median over rounds of option / default <= LIMIT (each round's ratio and the
    maximum shown; default / none shown too);
  - samples (pc_sampling with --cli): one more option block of --sample-steps steps (default
    30, as gpu/pc_peers.py's run) after the rounds: in its trace every kernel with >= 1% of
    GPU time has >= 1,000 samples (`analyze --json`).
The capture is the in-process one (the same engine `tracesmith profile` injects); `tracesmith`
is imported from PYTHONPATH and finds its library through TRACESMITH_INJECT_LIB.
Raw figures: OUT/inproc_ab.json.
"""
import argparse
import json
import os
import statistics
import sys
import time

from checks import Checks, torch_skip_reason

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "bench", "workloads"))

# "capture": the default capture again, for A/B of a tuning knob given by --option-env.
OPTIONS = {"gpu_metrics": {"gpu_metrics": True}, "pc_sampling": {"pc_sampling": True},
           "capture": {}}
SAMPLES_MIN = 1000
# The stat that says the option's capture recorded something (`tracesmith info`).
OPTION_STAT = {"gpu_metrics": "gpu_metrics.samples", "pc_sampling": "pc_sampling.samples",
               "capture": None}


def info_stat(cli, trace, stat):
    """A stat's value in `trace` per `tracesmith info`, summed over processes (None: no line)."""
    import re
    import subprocess
    p = subprocess.run([cli, "info", trace], capture_output=True, text=True, timeout=120)
    found = re.findall(r"(?m)^\s+" + re.escape(stat) + r"\s+(\d+)", p.stdout)
    return sum(int(x) for x in found) if found else None


def option_samples(cli, trace, option):
    """The option's sample count in `trace` per `tracesmith info` (None: no CLI or no line)."""
    if not cli or not OPTION_STAT[option]:
        return None
    return info_stat(cli, trace, OPTION_STAT[option])


def step_fn(compile_model, batch):
    import torch
    import torch_transformer_train as xf
    model, head, opt, x, target = xf.build(batch=batch)
    model.train()
    if compile_model:
        model = torch.compile(model)

    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            logits = head(model(x))
            loss = torch.nn.functional.cross_entropy(logits.flatten(0, 1).float(),
                                                     target.flatten())
        loss.backward()
        opt.step()
    return step


def block(step, steps, warm, capture, env=None):
    """Seconds per timed step; `capture`: None or (path, kwargs) for tracesmith.profile;
    `env`: environment set while the capture starts (its tuning knobs are read then)."""
    import torch
    import tracesmith

    def timed():
        for _ in range(warm):
            step()
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(steps):
            step()
        torch.cuda.synchronize()
        return (time.perf_counter() - t0) / steps

    if capture is None:
        return timed()
    path, kwargs = capture
    saved = {k: os.environ.get(k) for k in (env or {})}
    os.environ.update(env or {})
    try:
        with tracesmith.profile(path, quiet=True, overwrite=True, symbolize=False, **kwargs):
            per_step = timed()
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    if not os.path.getsize(path):
        raise RuntimeError(f"{path}: empty trace")
    return per_step


def ratios(rounds, num, den):
    return [r[num] / r[den] for r in rounds if r.get(num) and r.get(den)]


def fmt_list(xs):
    return "[" + ", ".join(f"{x:.3f}" for x in xs) + "]"


def main():
    import faulthandler
    faulthandler.enable()  # a crash names its Python stack (a segfault once ended a run silently)
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--option", choices=sorted(OPTIONS), required=True)
    ap.add_argument("--compile", action="store_true")
    ap.add_argument("--batch", type=int, default=16,
                    help="sequences per step (16: the workload's CPU-bound step; 128: GPU-bound)")
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--warm", type=int, default=3)
    ap.add_argument("--limit", type=float, default=None,
                    help="the cost bar (default: 1.03 for gpu_metrics, 1.10 for pc_sampling)")
    ap.add_argument("--cli", help="tracesmith, for the samples check (pc_sampling)")
    ap.add_argument("--sample-steps", type=int, default=30)
    ap.add_argument("--option-env", action="append", default=[], metavar="KEY=VALUE",
                    help="set while the option's captures start (a tuning knob: "
                         "TRACESMITH_PC_SAMPLING_SLEEP_MS=10, TRACESMITH_BATCH_THREADS=0, ...)")
    ap.add_argument("--budget", type=float, default=480, help="seconds: no round starts after")
    ap.add_argument("--period", type=int, default=None,
                    help="pc_sampling: a sample every 2^N cycles per SM (default: the capture's)")
    a = ap.parse_args()
    if a.period is not None:
        if a.option != "pc_sampling":
            ap.error("--period is pc_sampling's")
        OPTIONS["pc_sampling"] = {"pc_sampling": str(a.period)}
    limit = a.limit or (1.10 if a.option == "pc_sampling" else 1.03)
    option_env = dict(kv.split("=", 1) for kv in a.option_env)
    out = os.path.abspath(a.out)
    os.makedirs(out, exist_ok=True)
    tag = (f"{a.option}{f' period 2^{a.period}' if a.period is not None else ''}"
           f"{' compiled' if a.compile else ''}"
           f"{f' batch {a.batch}' if a.batch != 16 else ''}"
           + "".join(f" {k}={v}" for k, v in option_env.items()))
    c = Checks("ABCOST")
    names = ["blocks", "cost"] + (["samples"] if a.option == "pc_sampling" and a.cli else [])
    skip = torch_skip_reason()
    if skip is not None:
        c.skip_all(names, skip[0], skip[1])
        return c.summary()
    t_start = time.perf_counter()
    doc = {"option": a.option, "compile": a.compile, "steps": a.steps, "warm": a.warm,
           "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "rounds": []}
    state = {"errors": []}

    def run_all():
        step = step_fn(a.compile, a.batch)
        t0 = time.perf_counter()
        for _ in range(10):  # warm-up (and compilation)
            step()
        import torch
        torch.cuda.synchronize()
        print(f"ABCOST note: {tag}: warm-up {time.perf_counter() - t0:.1f} s", flush=True)
        configs = [("none", None), ("default", (os.path.join(out, "default.sbt"), {})),
                   ("option", (os.path.join(out, "option.sbt"), OPTIONS[a.option]))]
        for r in range(a.rounds):
            if r >= 3 and time.perf_counter() - t_start > a.budget:
                print(f"ABCOST note: rounds stopped after {r}: --budget {a.budget:.0f} s",
                      flush=True)
                break
            this = {}
            for name, cap in configs[r % 3:] + configs[:r % 3]:
                try:
                    this[name] = block(step, a.steps, a.warm, cap,
                                       option_env if name == "option" else None)
                    if name == "option" and a.cli and OPTION_STAT[a.option]:
                        n = option_samples(a.cli, cap[0], a.option)
                        this["option_samples"] = n
                        if not n:
                            state["errors"].append(f"round {r + 1}: the option's trace has "
                                                   f"{OPTION_STAT[a.option]} {n}")
                except Exception as e:  # noqa: BLE001 - reported as the blocks check
                    state["errors"].append(f"round {r + 1} {name}: {e}")
            doc["rounds"].append(this)
            print(f"ABCOST round {r + 1}: " + ", ".join(
                f"{k} {v * 1e3:.3f} ms" for k, v in this.items() if k != "option_samples") +
                (f" ({this['option_samples']} samples)" if "option_samples" in this else ""),
                flush=True)
            with open(os.path.join(out, "inproc_ab.json"), "w") as f:
                json.dump(doc, f, indent=1)
        judge(c, doc["rounds"], state["errors"], a.steps, a.warm, limit, tag)
        if "samples" in names:
            trace = os.path.join(out, "samples.sbt")
            block(step, a.sample_steps, a.warm, (trace, OPTIONS[a.option]), option_env)
            samples_check(c, a.cli, trace, out, a.sample_steps)

    c.guarded(names, run_all)
    return c.summary()


def judge(c, rounds, errors, steps, warm, limit, tag):
    """The blocks and cost verdicts from the rounds' seconds per step ({config: s})."""
    c.check("blocks", bool(rounds) and not errors,
            f"{len(rounds)} rounds x none / default / option ({steps} timed steps after "
            f"{warm} untimed each): " + ("; ".join(errors[:3]) or "all ran"))
    cost, base = ratios(rounds, "option", "default"), ratios(rounds, "default", "none")
    med = statistics.median(cost) if cost else None
    medians = []
    for k in ("none", "default", "option"):
        xs = [x[k] for x in rounds if k in x]
        medians.append(f"{statistics.median(xs) * 1e3:.3f}" if xs else "-")
    c.check("cost", med is not None and med <= limit,
            f"{tag} on the bf16 Transformer step, in one process: option / default median of "
            f"rounds {med or 0:.3f}x (need <= {limit:.2f}), rounds {fmt_list(cost)}, max "
            f"{max(cost or [0]):.3f}x; default / none median "
            f"{statistics.median(base) if base else 0:.3f}x, rounds {fmt_list(base)}; medians "
            f"none / default / option {' / '.join(medians)} ms")


def samples_check(c, cli, trace, out, steps):
    import pc_peers
    doc = pc_peers.analyze_json(cli, trace, out) if os.path.exists(trace) else None
    if not doc:
        c.fail("samples", f"analyze --json {trace} gave nothing")
        return
    heavy = pc_peers.kernel_samples(doc)
    short = [h for h in heavy if h[2] < SAMPLES_MIN]
    fewest = min(heavy, key=lambda h: h[2]) if heavy else None
    # None lost: the hardware buffer (pc_sampling.hardware_buffer_mb) kept up.
    lost = {k: info_stat(cli, trace, f"pc_sampling.{k}")
            for k in ("hardware_buffer_full", "dropped_samples", "hardware_buffer_mb")}
    # (the recorder writes hardware_buffer_mb always: without it, nothing was read)
    c.check("samples", heavy and not short and lost["hardware_buffer_mb"] is not None
            and not lost["hardware_buffer_full"] and not lost["dropped_samples"],
            f"{len(heavy) - len(short)} of {len(heavy)} kernels with >= 1% of GPU time have >= "
            f"{SAMPLES_MIN} samples in a block of {steps} steps; fewest: " +
            (f"{fewest[0][:60]} ({fewest[1]:.1f}%, {fewest[2]} samples)" if fewest else "-") +
            f"; hardware buffer {lost['hardware_buffer_mb']} MiB, full "
            f"{lost['hardware_buffer_full']}x, dropped {lost['dropped_samples']} (need 0, 0)")


if __name__ == "__main__":
    sys.exit(main())
