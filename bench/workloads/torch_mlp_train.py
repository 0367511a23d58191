"""A small but real PyTorch training step, for profiler overhead measurements.

python3 torch_mlp_train.py [--steps 50] [--profiler none|torch|torch-stack|cuda-range]
(TraceSmith copy of ../shared/workloads/torch_mlp_train.py; the timing and
profiler modes are in step_harness.py.)
Prints: steps=<n> step_ms=<median of 5 blocks> cpu_ms=<launching thread's CPU
time per step> [cuda_events=<count under torch.profiler>]
"""
import torch

import step_harness


def build(seed=0):
    torch.manual_seed(seed)
    blocks = [torch.nn.Sequential(torch.nn.Linear(1024, 1024), torch.nn.GELU(), torch.nn.LayerNorm(1024))
              for _ in range(8)]
    model = torch.nn.Sequential(*blocks).cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    x = torch.randn(64, 1024, device="cuda")
    return model, opt, x


def main():
    args = step_harness.parse_args(__doc__)
    model, opt, x = build()

    def step():
        opt.zero_grad(set_to_none=True)
        loss = model(x).pow(2).mean()
        loss.backward()
        opt.step()

    step_harness.run(step, args)


if __name__ == "__main__":
    main()
