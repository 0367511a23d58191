"""A small but real PyTorch training step, for profiler overhead measurements.

python3 torch_mlp_train.py [--steps 50] [--profiler none|torch|torch-stack|cuda-range]
(TraceSmith copy of ../shared/workloads/torch_mlp_train.py; added: --profiler cuda-range
wraps the timed steps in cudaProfilerStart/Stop, for `tracesmith profile
--capture-range=cudaProfilerApi`, so both profilers see exactly the same steps.)
Prints: steps=<n> step_ms=<median of 5 blocks> [cuda_events=<count under torch.profiler>]
"""
import argparse
import collections
import os
import statistics
import time

import torch


def build(seed=0):
    torch.manual_seed(seed)
    blocks = [torch.nn.Sequential(torch.nn.Linear(1024, 1024), torch.nn.GELU(), torch.nn.LayerNorm(1024))
              for _ in range(8)]
    model = torch.nn.Sequential(*blocks).cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    x = torch.randn(64, 1024, device="cuda")
    return model, opt, x


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=50)
    ap.add_argument("--profiler", default="none", choices=["none", "torch", "torch-stack", "cuda-range"])
    args = ap.parse_args()
    model, opt, x = build()

    def step():
        opt.zero_grad(set_to_none=True)
        loss = model(x).pow(2).mean()
        loss.backward()
        opt.step()

    for _ in range(5):
        step()
    torch.cuda.synchronize()

    def timed_blocks():
        times = []
        for _ in range(5):
            t0 = time.perf_counter()
            for _ in range(args.steps // 5):
                step()
            torch.cuda.synchronize()
            times.append((time.perf_counter() - t0) / (args.steps // 5))
        return statistics.median(times)

    if args.profiler == "none":
        print(f"steps={args.steps} step_ms={timed_blocks() * 1e3:.4f}")
        return
    if args.profiler == "cuda-range":
        torch.cuda.profiler.start()
        t = timed_blocks()
        torch.cuda.profiler.stop()
        print(f"steps={args.steps} step_ms={t * 1e3:.4f}")
        return
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA],
                 with_stack=(args.profiler == "torch-stack")) as prof:
        t = timed_blocks()
    if os.environ.get("TS_TORCH_TRACE"):  # a real trace for TraceSmith's JSON fixtures
        prof.export_chrome_trace(os.environ["TS_TORCH_TRACE"])
    cuda = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
    n = len(cuda)
    # cuda_events also counts CPU annotations that torch.profiler projects onto
    # the GPU timeline (e.g. "Optimizer.step#AdamW.step", once per step);
    # gpu_activities counts only kernels, memcpys and memsets.
    annotations = [e for e in cuda if "#" in e.name and "(" not in e.name and "<" not in e.name]
    gpu = n - len(annotations)
    print(f"steps={args.steps} step_ms={t * 1e3:.4f} cuda_events={n} gpu_activities={gpu}")
    if os.environ.get("TS_EVENT_BREAKDOWN"):  # which kinds torch.profiler counts
        kinds = collections.Counter()
        for e in cuda:
            name = e.name.lower()
            kinds["memcpy" if "memcpy" in name else "memset" if "memset" in name
                  else "sync" if "sync" in name else "kernel"] += 1
        print("cuda_event_kinds=" + ",".join(f"{k}:{v}" for k, v in sorted(kinds.items())))
        for name, count in collections.Counter(e.name for e in cuda).most_common():
            print(f"cuda_event_name {count} {name[:100]}")


if __name__ == "__main__":
    main()
