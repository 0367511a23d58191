"""Shared timing harness of the PyTorch training-step workloads.

Warm-up, then 5 timed blocks of steps; prints the median wall time per step
(`step_ms`) and the median CPU time per step of the thread that runs the
steps (`cpu_ms`: the launching thread, less noisy than wall time on a shared
machine). `--profiler` runs the same steps under torch.profiler (`torch`,
`torch-stack` = with_stack=True) or inside cudaProfilerStart/Stop
(`cuda-range`, for `tracesmith profile --capture-range=cudaProfilerApi`).
"""
import argparse
import collections
import os
import statistics
import time

import torch

PROFILERS = ["none", "torch", "torch-stack", "cuda-range"]


def parse_args(description, default_steps=50):
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--steps", type=int, default=default_steps)
    ap.add_argument("--profiler", default="none", choices=PROFILERS)
    ap.add_argument("--compile", action="store_true",
                    help="torch.compile the model (Inductor; compiled in the warm-up steps)")
    return ap.parse_args()


def _timed_blocks(step, steps, after_step=None):
    per_block = max(1, steps // 5)
    wall, cpu = [], []
    for _ in range(5):
        c0, t0 = time.thread_time(), time.perf_counter()
        for _ in range(per_block):
            step()
            if after_step:
                after_step()
        torch.cuda.synchronize()
        wall.append((time.perf_counter() - t0) / per_block)
        cpu.append((time.thread_time() - c0) / per_block)
    return statistics.median(wall), statistics.median(cpu)


def run(step, args, warmup=5):
    for _ in range(warmup):
        step()
    torch.cuda.synchronize()
    head = f"steps={args.steps}"
    if args.profiler in ("none", "cuda-range"):
        if args.profiler == "cuda-range":
            torch.cuda.profiler.start()
        wall, cpu = _timed_blocks(step, args.steps)
        if args.profiler == "cuda-range":
            torch.cuda.profiler.stop()
        print(f"{head} step_ms={wall * 1e3:.4f} cpu_ms={cpu * 1e3:.4f}")
        return
    from torch.profiler import ProfilerActivity, profile, schedule
    # TS_TORCH_SCHEDULE=1: a schedule covering every timed step, so that prof.step() after each
    # step writes Kineto's ProfilerStep#N annotations (HTA's iterations; without a schedule
    # prof.step() records nothing). Not the default: the overhead figures were taken without.
    steps_timed = max(1, args.steps // 5) * 5
    sched = schedule(wait=0, warmup=0, active=steps_timed, repeat=1) \
        if os.environ.get("TS_TORCH_SCHEDULE") == "1" else None
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA],
                 with_stack=(args.profiler == "torch-stack"), schedule=sched) as prof:
        wall, cpu = _timed_blocks(step, args.steps, prof.step if sched else None)
    if os.environ.get("TS_TORCH_TRACE"):  # a real trace for TraceSmith's JSON fixtures
        prof.export_chrome_trace(os.environ["TS_TORCH_TRACE"])
    cuda = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
    n = len(cuda)
    # cuda_events also counts CPU annotations that torch.profiler projects onto
    # the GPU timeline (e.g. "Optimizer.step#AdamW.step", once per step);
    # gpu_activities counts only kernels, memcpys and memsets.
    annotations = [e for e in cuda if "#" in e.name and "(" not in e.name and "<" not in e.name]
    gpu = n - len(annotations)
    print(f"{head} step_ms={wall * 1e3:.4f} cpu_ms={cpu * 1e3:.4f} cuda_events={n} "
          f"gpu_activities={gpu}")
    if os.environ.get("TS_EVENT_BREAKDOWN"):  # which kinds torch.profiler counts
        kinds = collections.Counter()
        for e in cuda:
            name = e.name.lower()
            kinds["memcpy" if "memcpy" in name else "memset" if "memset" in name
                  else "sync" if "sync" in name else "kernel"] += 1
        print("cuda_event_kinds=" + ",".join(f"{k}:{v}" for k, v in sorted(kinds.items())))
        for name, count in collections.Counter(e.name for e in cuda).most_common():
            print(f"cuda_event_name {count} {name[:100]}")
