"""PyTorch ops for the replay checks: a matmul (cuBLAS), a softmax and a float
index_add_ with colliding indices (atomics: nondeterministic).

python3 torch_ops.py
"""
import torch


def main():
    torch.manual_seed(0)
    x = torch.randn(256, 1024, device="cuda")
    w = torch.randn(1024, 1024, device="cuda")
    y = x @ w
    p = torch.softmax(y, dim=-1)
    idx = torch.randint(0, 16, (1 << 20,), device="cuda")
    src = torch.randn(1 << 20, device="cuda") * torch.exp2(torch.randint(-20, 20, (1 << 20,), device="cuda").float())
    acc = torch.zeros(16, device="cuda").index_add_(0, idx, src)
    torch.cuda.synchronize()
    print(f"torch_ops: y={y.sum().item():.6g} p={p.sum().item():.6g} acc={acc.sum().item():.6g}")


if __name__ == "__main__":
    main()
