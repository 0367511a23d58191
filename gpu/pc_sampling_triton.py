#!/usr/bin/env python3
"""The Triton program `profile --pc-sampling` is checked on (gpu/pc_sampling_more_check.py, #39).

  python3 gpu/pc_sampling_triton.py [LAUNCHES]

pcs_triton_hot: a dependent multiply-add loop on one source line (printed as "hot line"),
launched LAUNCHES times (default 400) from launch_triton (its line printed as "launch line").
Triton compiles with line information: the samples must land on this file's lines.
"""
import inspect
import sys

import torch
import triton
import triton.language as tl


@triton.jit
def pcs_triton_hot(x_ptr, out_ptr, iters, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    for _ in range(iters):
        x = x * 1.0001 + 0.5  # PCS_HOT
    tl.store(out_ptr + offs, x)


def launch_triton(x, out, iters, block):
    pcs_triton_hot[(x.numel() // block,)](x, out, iters, BLOCK=block)  # PCS_LAUNCH


def line_of(marker):
    lines = inspect.getsource(sys.modules[__name__]).splitlines()
    return next(i + 1 for i, text in enumerate(lines) if text.rstrip().endswith("# " + marker))


def main():
    launches = int(sys.argv[1]) if len(sys.argv) > 1 else 400
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    block = 1024
    x = torch.rand(sms * 4 * block, device="cuda")
    out = torch.empty_like(x)
    print(f"pc_sampling_triton: hot line {__file__}:{line_of('PCS_HOT')}", flush=True)
    print(f"pc_sampling_triton: launch line {__file__}:{line_of('PCS_LAUNCH')}", flush=True)
    for _ in range(launches):
        launch_triton(x, out, 20000, block)
    torch.cuda.synchronize()
    print(f"pc_sampling_triton: {launches} launches", flush=True)


if __name__ == "__main__":
    main()
