"""Launch-bound PyTorch loop: N tiny in-place ops (one kernel each), for
profiler overhead on the launch path, the Python twin of launch_loop.cu.

python3 torch_launch_loop.py [--n 50000] [--profiler none|torch]
Prints: launches=<n> seconds=<loop time> cpu_seconds=<its thread CPU time> [cuda_events=<count under torch.profiler>]
"""
import argparse
import time

import torch


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=50000)
    ap.add_argument("--profiler", default="none", choices=["none", "torch"])
    args = ap.parse_args()
    x = torch.ones(1024, device="cuda")
    for _ in range(1000):
        x.mul_(0.5)
    torch.cuda.synchronize()

    def loop():
        c0, t0 = time.thread_time(), time.perf_counter()
        for _ in range(args.n):
            x.mul_(0.5)
        torch.cuda.synchronize()
        return time.perf_counter() - t0, time.thread_time() - c0

    if args.profiler == "none":
        s, cpu = loop()
        print(f"launches={args.n} seconds={s:.6f} cpu_seconds={cpu:.6f}")
        return
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        s, cpu = loop()
    n = sum(1 for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA)
    print(f"launches={args.n} seconds={s:.6f} cpu_seconds={cpu:.6f} cuda_events={n}")


if __name__ == "__main__":
    main()
