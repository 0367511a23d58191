"""A short PyTorch forward pass on two side streams, for multi-stream range
replay (scripts/gpu-replay-check.sh): the branches run on their own streams
(ordered with events by wait_stream), a host-to-device copy and a
device-to-device copy feed them, and the default stream joins the results."""
import torch


def main():
    torch.manual_seed(0)
    dev = "cuda"
    x = torch.randn(256, 512, device=dev)
    w1 = torch.randn(512, 512, device=dev) / 16
    w2 = torch.randn(512, 512, device=dev) / 16
    scale_host = torch.linspace(0.5, 1.5, 512)
    main_stream = torch.cuda.current_stream()
    s1, s2 = torch.cuda.Stream(), torch.cuda.Stream()
    torch.cuda.synchronize()
    for _ in range(2):
        s1.wait_stream(main_stream)
        s2.wait_stream(main_stream)
        with torch.cuda.stream(s1):
            a = torch.relu(x @ w1)
            a_copy = torch.empty_like(a)
            a_copy.copy_(a)  # device to device
        with torch.cuda.stream(s2):
            scale = scale_host.to(dev)  # host to device
            b = torch.tanh(x @ w2) * scale
        main_stream.wait_stream(s1)
        main_stream.wait_stream(s2)
        x = torch.layer_norm(a_copy + b, (512,))
    y = x.sum(dim=1)
    torch.cuda.synchronize()
    print(f"checksum {float(y.double().abs().sum()):.6f}")


if __name__ == "__main__":
    main()
