"""A realistic PyTorch training step for profiler overhead measurements:
bf16 autocast, multi-head attention (scaled-dot-product kernels), dropout,
LayerNorm, GELU, backward on the autograd thread, AdamW. CPU-bound like most
eager training loops (~300 kernels and a few dozen copies/memsets per step).

python3 torch_transformer_train.py [--steps 50] [--profiler none|torch|torch-stack|cuda-range]
    [--compile]
Prints: steps=<n> step_ms=<median of 5 blocks> cpu_ms=<launching thread's CPU
time per step> [cuda_events=<count under torch.profiler>]
"""
import torch

import step_harness


def build(seed=0, batch=16):
    torch.manual_seed(seed)
    layer = torch.nn.TransformerEncoderLayer(d_model=512, nhead=8, dim_feedforward=2048,
                                             dropout=0.1, activation="gelu", batch_first=True)
    model = torch.nn.TransformerEncoder(layer, num_layers=4, enable_nested_tensor=False).cuda()
    head = torch.nn.Linear(512, 1000).cuda()
    params = list(model.parameters()) + list(head.parameters())
    opt = torch.optim.AdamW(params, lr=1e-4)
    x = torch.randn(batch, 128, 512, device="cuda")
    target = torch.randint(0, 1000, (batch, 128), device="cuda")
    return model, head, opt, x, target


def main():
    args = step_harness.parse_args(__doc__)
    model, head, opt, x, target = build()
    model.train()
    if args.compile:
        model = torch.compile(model)

    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            logits = head(model(x))
            loss = torch.nn.functional.cross_entropy(logits.flatten(0, 1).float(), target.flatten())
        loss.backward()
        opt.step()

    step_harness.run(step, args)


if __name__ == "__main__":
    main()
