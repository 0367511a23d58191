#!/usr/bin/env python3
"""What NCCL records for grouped calls (ncclGroupStart/End): a probe, not a check.

  tracesmith profile -o OUT/group.sbt -- torchrun --standalone --nproc_per_node=2 \
      gpu/probes/nccl_group_probe.py ITERS

Per iteration: two all-reduces coalesced into one NCCL group (1 MiB and 2 MiB of
floats, torch's _coalescing_manager), then a send/recv pair in one group
(batch_isend_irecv, 1 MiB). Read the trace with `tracesmith view -k
nvtx,nvtxpayload,kernel` to see which NCCL ranges carry payloads and where the
kernels launch.
"""
import os
import sys

for k in ("NCCL_NVLS_ENABLE", "TORCH_SYMM_MEM_DISABLE_MULTICAST", "NVSHMEM_DISABLE_NVLS"):
    os.environ[k] = "0" if k == "NCCL_NVLS_ENABLE" else "1"


def main(iters):
    import torch
    import torch.distributed as dist
    from torch.distributed.distributed_c10d import _coalescing_manager

    dist.init_process_group("nccl")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.cuda.set_device(rank)
    a = torch.ones(1 << 18, device="cuda")  # 1 MiB
    b = torch.ones(1 << 19, device="cuda")  # 2 MiB
    s = torch.ones(1 << 18, device="cuda")
    r = torch.empty(1 << 18, device="cuda")
    dist.all_reduce(a)  # the communicator, outside the groups
    torch.cuda.synchronize()
    for _ in range(iters):
        with _coalescing_manager(async_ops=True) as cm:
            dist.all_reduce(a)
            dist.all_reduce(b)
        cm.wait()
        peer = (rank + 1) % world
        ops = [dist.P2POp(dist.isend, s, peer), dist.P2POp(dist.irecv, r, (rank - 1) % world)]
        for w in dist.batch_isend_irecv(ops):
            w.wait()
    torch.cuda.synchronize()
    dist.destroy_process_group()


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 3)
