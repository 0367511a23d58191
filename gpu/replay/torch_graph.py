"""PyTorch CUDA graph for replay capture (#15 item 2): a small MLP forward
captured with torch.cuda.CUDAGraph on a static input, replayed 4 times with
the input changed in place between replays; each output is checked against
the same model on the CPU (so that the GPU runs little besides the graph:
under `--replay-capture all` the graph launches stay within the launch
limit). Prints "TORCH_GRAPH OK" (exit 0), or "SKIP ..." (exit 0) when
torch or CUDA is missing."""
import sys

try:
    import torch
except ImportError:
    print("SKIP torch_graph: no torch")
    sys.exit(0)
if not torch.cuda.is_available():
    print("SKIP torch_graph: no CUDA device")
    sys.exit(0)

torch.manual_seed(0)
model = torch.nn.Sequential(
    torch.nn.Linear(256, 512), torch.nn.ReLU(), torch.nn.Linear(512, 128)
).cuda().eval()
static_in = torch.randn(64, 256, device="cuda")
with torch.no_grad():
    # Warm-up on a side stream, as the CUDA graphs documentation asks.
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            model(static_in)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        static_out = model(static_in)
    cpu_model = torch.nn.Sequential(
        torch.nn.Linear(256, 512), torch.nn.ReLU(), torch.nn.Linear(512, 128)
    ).eval()
    cpu_model.load_state_dict({k: v.cpu() for k, v in model.state_dict().items()})
    ok = True
    for step in range(4):
        x = torch.randn(64, 256)
        static_in.copy_(x.cuda())
        graph.replay()
        torch.cuda.synchronize()
        want = cpu_model(x)
        close = torch.allclose(static_out.cpu(), want, rtol=1e-3, atol=1e-3)
        print(f"TORCH_GRAPH replay {step} {'OK' if close else 'WRONG'} sum={static_out.sum().item():.4f}")
        ok &= close
print("TORCH_GRAPH OK" if ok else "TORCH_GRAPH FAILED")
sys.exit(0 if ok else 1)
