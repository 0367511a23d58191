"""A Triton kernel for the replay checks: out = x * scale + y, a few launches.

python3 triton_add.py   (prints the max error against torch)
"""
import torch
import triton
import triton.language as tl


@triton.jit
def scaled_add_kernel(x_ptr, y_ptr, out_ptr, n, scale, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x * scale + y, mask=mask)


def main():
    n = 1 << 20
    x = torch.randn(n, device="cuda")
    y = torch.randn(n, device="cuda")
    out = torch.empty_like(x)
    for i in range(3):
        scaled_add_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, 0.5 + i, BLOCK=1024)
    torch.cuda.synchronize()
    print(f"triton_add: max_error={(out - (x * 2.5 + y)).abs().max().item():.3g}")


if __name__ == "__main__":
    main()
