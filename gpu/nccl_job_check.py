#!/usr/bin/env python3
"""Two-GPU NCCL check of distributed runs (issue #18; scripts/gpu-check.sh `nccl`).

Needs two GPUs of one host (nvidia-h200-x2). NVLink multicast stays off: the caller
sets NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
(also set here for the workers, in case they are started without them).

  tracesmith profile -o OUT/ar.sbt -- torchrun --standalone --nproc_per_node=2 \
      gpu/nccl_job_check.py allreduce ITERS
  tracesmith profile -o OUT/ddp.sbt -- torchrun ... gpu/nccl_job_check.py ddp STEPS DELAY_MS
  tracesmith profile -o OUT/mix.sbt -- torchrun ... gpu/nccl_job_check.py mix ITERS
  python3 gpu/nccl_job_check.py check CLI OUT ITERS STEPS DELAY_MS

allreduce: ITERS all-reduces of each of SIZES (bytes) per rank, each inside a
           `all_reduce bytes=<N>` NVTX range (the bytes convention of docs/distributed.md).
ddp:       a small DDP model, STEPS steps in `step N` ranges; rank 1 sleeps DELAY_MS
           before each forward: the straggler.
mix:       ITERS each of broadcast, all_gather_into_tensor and reduce_scatter_tensor.
check:     for each run, `analyze --json` (by its stem) must say:
           - allreduce: 2 ranks, exactly ITERS x len(SIZES) all_reduce collectives per rank
             recognised from the NCCL kernels, all matched; a bandwidth row per size;
           - ddp: rank 1 the straggler, its lateness per step (summed over the step's
             collectives, median step) within 3 ms of DELAY_MS, and the clock bound stated
             (per collective the median is small: DDP's second bucket's all-reduce
             starts after the first's on every rank);
           - mix: exactly ITERS broadcast, all_gather and reduce_scatter per rank, matched;
           and `export -f perfetto` of each run links the collectives across ranks (flows).
Prints `NCCLCHECK ... PASS|FAIL` lines.
"""
import json
import os
import subprocess
import sys
import time

SIZES = [1 << 20, 16 << 20, 64 << 20]
for k in ("NCCL_NVLS_ENABLE", "TORCH_SYMM_MEM_DISABLE_MULTICAST", "NVSHMEM_DISABLE_NVLS"):
    os.environ[k] = "0" if k == "NCCL_NVLS_ENABLE" else "1"


def setup():
    import torch
    import torch.distributed as dist

    dist.init_process_group("nccl")
    rank = dist.get_rank()
    torch.cuda.set_device(rank)
    return torch, dist, rank


def allreduce(iters):
    torch, dist, rank = setup()
    for size in SIZES:
        t = torch.ones(size // 4, device="cuda")
        for _ in range(iters):
            with torch.cuda.nvtx.range(f"all_reduce bytes={size}"):
                dist.all_reduce(t)
    torch.cuda.synchronize()
    dist.destroy_process_group()


def ddp(steps, delay_ms):
    torch, dist, rank = setup()
    from torch.nn.parallel import DistributedDataParallel

    model = torch.nn.Sequential(*[torch.nn.Linear(1024, 1024) for _ in range(4)]).cuda()
    model = DistributedDataParallel(model, device_ids=[rank])
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    x = torch.randn(64, 1024, device="cuda")
    for step in range(steps):
        with torch.cuda.nvtx.range(f"step {step}"):
            if rank == 1:
                time.sleep(delay_ms / 1000.0)
            loss = model(x).square().mean()
            loss.backward()
            opt.step()
            opt.zero_grad()
    torch.cuda.synchronize()
    dist.destroy_process_group()


def mix(iters):
    torch, dist, rank = setup()
    world = dist.get_world_size()
    n = 4 << 20  # floats per rank's part
    src = torch.ones(n, device="cuda")
    gathered = torch.empty(n * world, device="cuda")
    big = torch.ones(n * world, device="cuda")
    part = torch.empty(n, device="cuda")
    for _ in range(iters):
        with torch.cuda.nvtx.range(f"broadcast bytes={n * 4}"):
            dist.broadcast(src, 0)
        with torch.cuda.nvtx.range(f"all_gather bytes={n * 4 * world}"):
            dist.all_gather_into_tensor(gathered, src)
        with torch.cuda.nvtx.range(f"reduce_scatter bytes={n * 4 * world}"):
            dist.reduce_scatter_tensor(part, big)
    torch.cuda.synchronize()
    dist.destroy_process_group()


def verdict(name, ok, detail):
    print(f"NCCLCHECK {name}: {detail} -> {'PASS' if ok else 'FAIL'}", flush=True)
    return ok


def analyze(cli, stem):
    p = subprocess.run([cli, "analyze", "--json", stem], capture_output=True, text=True)
    if p.returncode != 0 or "ranks" not in p.stdout:
        print(f"NCCLCHECK analyze {stem} failed ({p.returncode}): {p.stderr[-1500:]}")
        return None
    return json.loads(p.stdout)["ranks"]


def ops_per_rank(j):
    """Matched collectives by operation (each is one operation of every rank)."""
    out = {}
    for c in j["collectives"]:
        out[c["op"]] = out.get(c["op"], 0) + 1
    return out


def perfetto(cli, stem, out):
    p = subprocess.run([cli, "export", "-f", "perfetto", "--force", "-o", out, stem],
                       capture_output=True, text=True)
    line = (p.stderr.strip().splitlines() or [""])[-1]
    return verdict(f"perfetto {os.path.basename(stem)}", p.returncode == 0 and
                   "collective flows" in line and " 0 collective flows" not in line, line)


def check(cli, out, iters, steps, delay_ms):
    ok = True
    j = analyze(cli, os.path.join(out, "ar.sbt"))
    if j:
        ranks = sorted(r["rank"] for r in j["ranks"])
        per_rank = [(r["rank"], r["collectives"], r["matched"]) for r in j["ranks"]]
        want = iters * len(SIZES)
        ok &= verdict("allreduce ranks", ranks == [0, 1], f"ranks={ranks}")
        ok &= verdict("allreduce counts", all(c == want and m == want for _, c, m in per_rank) and
                      ops_per_rank(j) == {"all_reduce": want},
                      f"(rank, collectives, matched)={per_rank} ops={ops_per_rank(j)} "
                      f"expected {want} all_reduce each")
        sizes = sorted(b["bytes"] for b in j["bandwidth"] if b["op"] == "all_reduce")
        ok &= verdict("allreduce bandwidth", sizes == SIZES,
                      "; ".join(f"{b['bytes']} B: busbw {b['busbw_gbps']:.1f} GB/s (n={b['count']})"
                                for b in j["bandwidth"]))
        ok &= perfetto(cli, os.path.join(out, "ar.sbt"), os.path.join(out, "ar.pftrace"))
    else:
        ok = False
    j = analyze(cli, os.path.join(out, "ddp.sbt"))
    if j:
        st = j["stragglers"][0] if j["stragglers"] else None
        late = st["step_late_ns"] / 1e6 if st and st["step_late_ns"] is not None else None
        ok &= verdict("ddp straggler", st is not None and st["rank"] == 1 and
                      late is not None and abs(late - delay_ms) <= 3.0,
                      f"rank={st and st['rank']} last={st and st['last_count']}/{st and st['of']} "
                      f"late_per_step_ms={late and round(late, 3)} "
                      f"(steps={st and st['steps']}) "
                      f"per_collective_median_ms={st and round(st['median_late_ns'] / 1e6, 3)} "
                      f"injected_ms={delay_ms} bound_ns={st and st['clock_bound_ns']}")
        for f in j["findings"][:2]:
            print(f"NCCLCHECK ddp finding: {f}")
    else:
        ok = False
    j = analyze(cli, os.path.join(out, "mix.sbt"))
    if j:
        ops = ops_per_rank(j)
        per_rank = [(r["rank"], r["collectives"], r["matched"]) for r in j["ranks"]]
        ok &= verdict("mix counts", ops == {"broadcast": iters, "all_gather": iters,
                                            "reduce_scatter": iters} and
                      all(c == 3 * iters and m == 3 * iters for _, c, m in per_rank),
                      f"ops={ops} (rank, collectives, matched)={per_rank}")
        ok &= perfetto(cli, os.path.join(out, "mix.sbt"), os.path.join(out, "mix.pftrace"))
    else:
        ok = False
    print(f"NCCLCHECK all: {'PASS' if ok else 'FAIL'}")
    return 0 if ok else 1


if __name__ == "__main__":
    a = sys.argv[1:]
    if a[:1] == ["allreduce"] and len(a) == 2:
        allreduce(int(a[1]))
    elif a[:1] == ["ddp"] and len(a) == 3:
        ddp(int(a[1]), float(a[2]))
    elif a[:1] == ["mix"] and len(a) == 2:
        mix(int(a[1]))
    elif a[:1] == ["check"] and len(a) == 6:
        sys.exit(check(a[1], a[2], int(a[3]), int(a[4]), float(a[5])))
    else:
        sys.exit(__doc__)
