#!/usr/bin/env python3
"""NCCL check of distributed runs on 2 or 4 GPUs (issues #18, #41; scripts/gpu-check.sh `nccl`).

Needs two or more GPUs of one host (nvidia-h200-x2, nvidia-h200-x4: one rank per GPU, the
runs' WORLD ranks; 2 when not given). NVLink multicast stays off: the caller
sets NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
(also set here for the workers, in case they are started without them).

  tracesmith profile -o OUT/ar.sbt -- torchrun --standalone --nproc_per_node=WORLD \
      gpu/nccl_job_check.py allreduce ITERS [MEASURED]
  tracesmith profile -o OUT/ddp.sbt -- torchrun ... gpu/nccl_job_check.py ddp STEPS DELAY_MS
  tracesmith profile -o OUT/mix.sbt -- torchrun ... gpu/nccl_job_check.py mix ITERS
  tracesmith profile -o OUT/grp.sbt -- torchrun ... gpu/nccl_job_check.py group ITERS
  python3 gpu/nccl_job_check.py check CLI OUT ITERS STEPS DELAY_MS [WORLD]

allreduce: ITERS all-reduces of each of SIZES (bytes) per rank, back to back, no range
           naming a size: the sizes come from NCCL's own NVTX payloads. With MEASURED
           (a path), rank 0 writes there what the program measures itself: per size, CUDA
           events around its last ITERS-2 all-reduces, queued behind a sleep kernel so that
           they run back to back on the GPU (nccl-tests' way), the mean time of one and its
           bus bandwidth.
ddp:       a small DDP model, STEPS steps in `step N` ranges; rank 1 sleeps DELAY_MS
           before each forward: the straggler.
mix:       ITERS each of broadcast, all_gather_into_tensor and reduce_scatter_tensor (no
           range naming a size either).
group:     NCCL's grouped calls: one all-reduce of 1 MiB, then ITERS times two all-reduces
           (1 and 2 MiB) coalesced into one group (torch's _coalescing_manager: NCCL runs
           them as one kernel launched in ncclGroupEnd) and a batch_isend_irecv pair of
           1 MiB (the send to the next rank, the receive from the previous).
check:     for each run, `analyze --json` (by its stem) must say:
           - allreduce: WORLD ranks, exactly ITERS x len(SIZES) all_reduce collectives per
             rank recognised from the NCCL kernels, all matched; every collective's size
             from NCCL's payload, group size WORLD and NCCL's communicator id on each; a
             bandwidth row per size whose back-to-back bus bandwidth over the ITERS - 2
             all-reduces the program timed is within 10% of what it measured,
             OUT/ar_measured.json (the transfer-time figure shown beside it, not judged:
             see check_allreduce); the
             trace's time per all-reduce over the window the program timed within 10% of
             the program's CUDA events;
           - ddp: WORLD ranks, every collective of each rank matched; rank 1 the straggler, its
             lateness per step (summed over the step's collectives, median step) from
             DELAY_MS - 1 to DELAY_MS + 4 ms, the host time it spends more than the other
             ranks' median (the finding's host clause) within 1 ms of DELAY_MS and at the
             `ddp` line of this file (per collective the median swings between runs: 0.9
             and 16.3 ms); clocks aligned, the straggler's clock bound stated and under
             50 us, below its lateness per step;
           - mix: exactly ITERS broadcast, all_gather and reduce_scatter per rank, matched;
             a bandwidth row for each in nccl-tests' sizes (broadcast: the buffer; all-gather:
             its output, reduce-scatter: its input = NCCL's per-rank size x WORLD);
             `export -f kineto` gives every NCCL kernel of each rank torch.profiler's
             collective args: ITERS each of broadcast, allgather and reduce_scatter, NCCL's
             per-rank size, group size WORLD;
           - arpc (the allreduce run again, under `profile --pc-sampling`, issue #39: one
             sampling process per GPU, each rank on its own GPU): the same collective counts;
             each rank's trace has PC samples, none dropped, none refused (held elsewhere 0);
             its NCCL all-reduce kernel has >= 100 samples, every sampled instruction with
             SASS text (NCCL ships no line info: SASS only), >= 99% of them joined to the
             `allreduce` line of this file that launched the collective;
           - group: per rank 1 + ITERS all_reduce and ITERS send_recv collectives, all
             matched, every one with its size from NCCL's payloads: the grouped kernel's
             the sum of its group's calls of its operation (1 MiB once, then 3 MiB ITERS
             times; each send/recv kernel the 1 MiB its rank sends);
           and `export -f perfetto` of each of the three runs links the collectives across
           ranks: one flow mark on each rank's kernel of each matched collective, so the
           "N collective flows" it prints equals the ranks' matched collectives summed.
check prints one `NCCLCHECK <check>: ... -> PASS|FAIL|SKIP (reason)` line per expectation
(a failed `analyze` is a FAIL, the checks of its report SKIP), then the summary line
"N passed, M failed, K skipped" (gpu/checks.py); exit status 1 when anything failed.
allreduce, ddp and mix are the workloads (no verdicts: scripts/gpu-check.sh checks their
exit status).
"""
import json
import os
import re
import subprocess
import sys
import time

from checks import Checks

SIZES = [1 << 20, 16 << 20, 64 << 20]
WORLD = 2  # ranks in the checked runs (check's WORLD argument)
for k in ("NCCL_NVLS_ENABLE", "TORCH_SYMM_MEM_DISABLE_MULTICAST", "NVSHMEM_DISABLE_NVLS"):
    os.environ[k] = "0" if k == "NCCL_NVLS_ENABLE" else "1"


def setup():
    import torch
    import torch.distributed as dist

    dist.init_process_group("nccl")
    rank = dist.get_rank()
    torch.cuda.set_device(rank)
    return torch, dist, rank


def allreduce(iters, measured=None):
    torch, dist, rank = setup()
    world = dist.get_world_size()
    out = {}
    for size in SIZES:
        t = torch.ones(size // 4, device="cuda")
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        # The first two all-reduces of a size are not timed: the first (the first of all
        # sets NCCL's connections up: 52 ms), and one queued behind a 20-ms sleep kernel,
        # which lines the GPUs up again (their sleeps end up to 0.3 ms apart: clocks).
        # The others are timed as nccl-tests runs them: back to back on the GPU, all
        # queued behind the sleep, so the events measure the GPU's time per all-reduce,
        # not the host's launch rate.
        dist.all_reduce(t)
        torch.cuda.synchronize()
        torch.cuda._sleep(40_000_000)  # ~20 ms at the H200's clock
        dist.all_reduce(t)
        start.record()
        for _ in range(iters - 2):
            dist.all_reduce(t)
        end.record()
        end.synchronize()
        ns = start.elapsed_time(end) * 1e6 / (iters - 2)
        out[str(size)] = {"mean_ns": ns, "busbw_gbps": size / ns * 2 * (world - 1) / world}
    torch.cuda.synchronize()
    if measured and rank == 0:
        with open(measured, "w") as f:
            json.dump(out, f)
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
        dist.broadcast(src, 0)
        dist.all_gather_into_tensor(gathered, src)
        dist.reduce_scatter_tensor(part, big)
    torch.cuda.synchronize()
    dist.destroy_process_group()


def group(iters):
    from torch.distributed.distributed_c10d import _coalescing_manager
    torch, dist, rank = setup()
    world = dist.get_world_size()
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
        ops = [dist.P2POp(dist.isend, s, (rank + 1) % world),
               dist.P2POp(dist.irecv, r, (rank - 1) % world)]
        for w in dist.batch_isend_irecv(ops):
            w.wait()
    torch.cuda.synchronize()
    dist.destroy_process_group()


def check_group(c, j, iters):
    """Grouped calls: one kernel per group, sized by the sum of its calls' payloads."""
    per_rank = [(r["rank"], r["collectives"], r["matched"], r.get("collectives_with_payload"))
                for r in j["ranks"]]
    c.check("group counts", ops_per_rank(j) == {"all_reduce": iters + 1, "send_recv": iters} and
            all(n == m == 2 * iters + 1 for _, n, m, _ in per_rank),
            f"ops={ops_per_rank(j)} (rank, collectives, matched, with payload)={per_rank} "
            f"(want all_reduce {iters + 1}, send_recv {iters} per rank, all matched)")
    sizes = {}
    for x in j["collectives"]:
        key = (x["op"], x.get("bytes"))
        sizes[key] = sizes.get(key, 0) + 1
    # Apart: the send/recv groups (each call in a group of its own inside torch's) and the
    # coalesced all-reduces (two calls, one kernel).
    for op, want in (("send_recv", {("send_recv", 1 << 20): iters}),
                     ("all_reduce", {("all_reduce", 1 << 20): 1, ("all_reduce", 3 << 20): iters})):
        got = {k: v for k, v in sizes.items() if k[0] == op}
        c.check(f"group {op} bytes", got == want,
                f"(op, bytes): count = {sorted(got.items(), key=str)} (want {sorted(want.items())};"
                f" a grouped kernel sized by the sum of its group's calls of its operation)")


def analyze(c, cli, name, stem):
    """`analyze --json` of a run's stem, a check of its own: the job report, or None."""
    p = subprocess.run([cli, "analyze", "--json", stem], capture_output=True, text=True)
    j, why = None, f"exit {p.returncode}: {p.stderr.strip()[-300:]}"
    if p.returncode == 0:
        try:
            doc = json.loads(p.stdout)
            j = doc.get("ranks") if isinstance(doc, dict) else None
            why = 'no job report ("ranks") in the document'
        except ValueError as e:
            why = f"exit 0 but not JSON ({e})"
    j = j if isinstance(j, dict) else None
    c.check(f"{name} analyze", j is not None,
            f"analyze --json {os.path.basename(stem)}: {'a job report' if j else why}")
    return j


def ops_per_rank(j):
    """Matched collectives by operation (each is one operation of every rank)."""
    out = {}
    for c in j["collectives"]:
        out[c["op"]] = out.get(c["op"], 0) + 1
    return out


def perfetto(c, cli, name, stem, out, j):
    """`export -f perfetto` of the run: one flow mark per rank per matched collective."""
    if os.path.exists(out):
        os.remove(out)
    p = subprocess.run([cli, "export", "-f", "perfetto", "--force", "-o", out, stem],
                       capture_output=True, text=True)
    line = (p.stderr.strip().splitlines() or [""])[-1]
    m = re.search(r"(\d+) collective flows", line)
    flows = int(m.group(1)) if m else None
    want = sum(r["matched"] for r in j["ranks"])
    return c.check(f"{name} perfetto", p.returncode == 0 and os.path.exists(out) and
                   flows == want > 0,
                   f"{line} (expected {want} collective flows: each rank's matched "
                   f"collectives, summed)")


def check_allreduce(c, cli, out, j, iters):
    ranks = sorted(r["rank"] for r in j["ranks"])
    per_rank = [(r["rank"], r["collectives"], r["matched"]) for r in j["ranks"]]
    want = iters * len(SIZES)
    c.check("allreduce ranks", ranks == list(range(WORLD)), f"ranks={ranks} (want {WORLD})")
    c.check("allreduce counts", all(n == want and m == want for _, n, m in per_rank) and
            ops_per_rank(j) == {"all_reduce": want},
            f"(rank, collectives, matched)={per_rank} ops={ops_per_rank(j)} "
            f"expected {want} all_reduce each")
    payload(c, "allreduce", j)
    try:
        with open(os.path.join(out, "ar_measured.json")) as f:
            measured = json.load(f)
    except (OSError, ValueError):
        measured = {}
    measured = measured if isinstance(measured, dict) else {}
    rows = {b["bytes"]: b for b in j["bandwidth"] if b["op"] == "all_reduce"}
    # Bandwidth: a row per size, in the sizes NCCL's payloads gave. Judged: analyze's
    # back-to-back bus bandwidth (a loop's time per collective as nccl-tests measures a
    # size: from the end of the all-reduce before) over exactly the ITERS - 2 all-reduces
    # the program timed, within 10% of the program's CUDA events around that loop. Shown
    # beside it, not judged: the transfer's (last arrival to last end), which leaves out
    # the GPU's gap between two collectives (1.6-2.9 us on the H200s: 14-24% of 1 MiB).
    parts, ok = [], bool(measured)
    for size in SIZES:
        b, m = rows.get(size), measured.get(str(size))
        b2b = b and b.get("back_to_back_busbw_gbps")
        if b and m and b2b:
            off = b2b / m["busbw_gbps"] - 1
            ok = ok and abs(off) <= 0.10 and b.get("back_to_back") == iters - 2
            parts.append(f"{size} B: back to back busbw {b2b:.1f} GB/s ({b['back_to_back']} of "
                         f"{b['count']}, mean {b['back_to_back_mean_ns'] / 1e3:.2f} us) vs the "
                         f"program's {m['busbw_gbps']:.1f} GB/s (CUDA events, mean "
                         f"{m['mean_ns'] / 1e3:.2f} us) {100 * off:+.1f}%; transfer busbw "
                         f"{b['busbw_gbps']:.1f} GB/s (median {b['median_ns'] / 1e3:.1f} us)")
        else:
            ok = False
            parts.append(f"{size} B: ours {b and round(b['busbw_gbps'], 1)}, back to back "
                         f"{b2b and round(b2b, 1)}, program's {m and round(m['busbw_gbps'], 1)}")
    c.check("allreduce bandwidth", ok and sorted(rows) == SIZES,
            "; ".join(parts) + f" (need a row for every size, {iters - 2} of its all-reduces "
            "back to back, their busbw within 10% of the program's)")
    # Timing: the trace's time per all-reduce over the window the program timed (each
    # size's collectives after its first two, back to back: the first arrival of the
    # third to the end of the last, per collective) against the events' mean.
    by_size = {}
    for x in sorted(j["collectives"], key=lambda x: (x["comm"], x["seq"])):
        by_size.setdefault(x.get("bytes"), []).append(x)
    parts, ok = [], bool(measured)
    for size in SIZES:
        xs, m = by_size.get(size, []), measured.get(str(size))
        if len(xs) != iters or not m:
            parts.append(f"{size} B: {len(xs)} collectives, program's {m and m['mean_ns']}")
            ok = False
            continue
        ours = (xs[-1]["end_ns"] - xs[2]["first_arrival_ns"]) / (iters - 2)
        off = ours / m["mean_ns"] - 1
        ok = ok and abs(off) <= 0.10
        parts.append(f"{size} B: {ours / 1e3:.2f} us per all-reduce vs the events' "
                     f"{m['mean_ns'] / 1e3:.2f} us {100 * off:+.1f}%")
    c.check("allreduce timing", ok, "; ".join(parts) + " (the program's back-to-back window; "
            "need every size within 10%)")
    perfetto(c, cli, "allreduce", os.path.join(out, "ar.sbt"), os.path.join(out, "ar.pftrace"), j)


def payload(c, name, j):
    """Every collective's size from NCCL's payload, its group size WORLD, communicator id."""
    per_rank = [(r["rank"], r["collectives"], r.get("collectives_with_payload")) for r in j["ranks"]]
    groups = sorted({x.get("group_size") for x in j["collectives"]}, key=str)
    comms = sorted({x.get("nccl_comm") for x in j["collectives"]}, key=str)
    no_bytes = sum(1 for x in j["collectives"] if not x.get("bytes"))
    c.check(f"{name} payload", all(n == p > 0 for _, n, p in per_rank) and groups == [WORLD] and
            None not in comms and no_bytes == 0,
            f"(rank, collectives, with NCCL payload)={per_rank} group sizes={groups} "
            f"NCCL communicators={len(comms)} collectives without bytes={no_bytes}")


def check_ddp(c, cli, out, j, delay_ms):
    ranks = sorted(r["rank"] for r in j["ranks"])
    per_rank = [(r["rank"], r["collectives"], r["matched"]) for r in j["ranks"]]
    c.check("ddp ranks", ranks == list(range(WORLD)) and all(n == m > 0 for _, n, m in per_rank),
            f"ranks={ranks} (rank, collectives, matched)={per_rank} (every collective matched)")
    st = j["stragglers"][0] if j["stragglers"] else None
    late = st["step_late_ns"] / 1e6 if st and st["step_late_ns"] is not None else None
    # Late per step: the sleep plus the straggler's own launches after it (its GPU idle,
    # one kernel at a time, while the other rank's work was queued): 17.46-18.04 ms for a
    # 15-ms sleep in four runs. The host clause must put the sleep itself (host time
    # outside CUDA calls) at its line within 1 ms.
    excess = (st or {}).get("host_time") or {}
    excess_ms = excess.get("excess_ns", 0) / 1e6
    site = excess.get("call_site") or ""
    c.check("ddp straggler", st is not None and st["rank"] == 1 and late is not None and
            delay_ms - 1.0 <= late <= delay_ms + 4.0 and abs(excess_ms - delay_ms) <= 1.0 and
            site.startswith("ddp (nccl_job_check.py:"),
            f"rank={st and st['rank']} last={st and st['last_count']}/{st and st['of']} "
            f"late_per_step_ms={late and round(late, 3)} (steps={st and st['steps']}) "
            f"per_collective_median_ms={st and round(st['median_late_ns'] / 1e6, 3)} "
            f"host_excess_ms={round(excess_ms, 3)} at {excess.get('call_site')} "
            f"injected_ms={delay_ms} (need late per step in [injected - 1, injected + 4] ms, "
            f"host excess within 1 ms of it, at the ddp line of nccl_job_check.py)")
    # Same host, monotonic anchors: each process's bound is its anchors' read window
    # (a few hundred ns on the H200); the straggler's is the pair's.
    bound = st["clock_bound_ns"] if st else None
    methods = sorted({r["clock_method"] for r in j["ranks"]})
    c.check("ddp clocks", all(r["clock_aligned"] for r in j["ranks"]) and len(methods) == 1 and
            bound is not None and bound < 50_000 and late is not None and bound < late * 1e6,
            f"methods={methods} aligned={[r['clock_aligned'] for r in j['ranks']]} "
            f"straggler_bound_ns={bound} (under 50000 and the lateness per step)")
    for f in j["findings"][:2]:
        print(f"NCCLCHECK ddp finding: {f}")
    perfetto(c, cli, "ddp", os.path.join(out, "ddp.sbt"), os.path.join(out, "ddp.pftrace"), j)


def check_mix(c, cli, out, j, iters):
    ops = ops_per_rank(j)
    per_rank = [(r["rank"], r["collectives"], r["matched"]) for r in j["ranks"]]
    c.check("mix counts", ops == {"broadcast": iters, "all_gather": iters,
                                  "reduce_scatter": iters} and
            all(n == 3 * iters and m == 3 * iters for _, n, m in per_rank),
            f"ops={ops} (rank, collectives, matched)={per_rank}")
    payload(c, "mix", j)
    n = 4 << 20  # the mix's floats per rank's part
    want = {"broadcast": n * 4, "all_gather": n * 4 * WORLD, "reduce_scatter": n * 4 * WORLD}
    got = {b["op"]: b["bytes"] for b in j["bandwidth"]}
    c.check("mix bytes", got == want,
            "; ".join(f"{b['op']} {b['bytes']} B: busbw {b['busbw_gbps']:.1f} GB/s "
                      f"(n={b['count']})" for b in j["bandwidth"]) + f" (want {want})")
    kineto(c, cli, out, iters, n)
    perfetto(c, cli, "mix", os.path.join(out, "mix.sbt"), os.path.join(out, "mix.pftrace"), j)


def kineto(c, cli, out, iters, n):
    """`export -f kineto` of the mix: each rank's NCCL kernels carry torch.profiler's
    collective args from NCCL's payloads (name, group size WORLD, NCCL's per-rank size)."""
    d = os.path.join(out, "mix_kineto")
    p = subprocess.run([cli, "export", "-f", "kineto", "--force", "-o", d + "/",
                        os.path.join(out, "mix.sbt")], capture_output=True, text=True)
    want = {"broadcast": (iters, n * 4), "allgather": (iters, n * 4),
            "reduce_scatter": (iters, n * 4)}
    parts, ok = [], p.returncode == 0
    for rank in range(WORLD):
        got = {}
        try:
            with open(os.path.join(d, f"rank-{rank}.json")) as f:
                events = json.load(f)["traceEvents"]
        except (OSError, ValueError, KeyError) as e:
            parts.append(f"rank {rank}: {e}")
            ok = False
            continue
        for e in events:
            a = e.get("args", {}) if e.get("cat") == "kernel" else {}
            if "Collective name" in a:
                name = a["Collective name"]
                count, sizes, groups = got.get(name, (0, set(), set()))
                got[name] = (count + 1, sizes | {a.get("Message size [bytes]")},
                             groups | {a.get("Group size")})
        ok = ok and {k: (v[0], v[1], v[2]) for k, v in got.items()} == \
            {k: (cnt, {size}, {WORLD}) for k, (cnt, size) in want.items()}
        parts.append(f"rank {rank}: " + ", ".join(
            f"{k} x{v[0]} {sorted(v[1], key=str)} B group {sorted(v[2], key=str)}"
            for k, v in sorted(got.items())))
    c.check("mix kineto", ok, "; ".join(parts) + f" (exit {p.returncode}; want each of "
            f"{sorted(want)} x{iters} with NCCL's per-rank size {n * 4} B, group size {WORLD})")


RUNS = [("allreduce", "ar.sbt", ["ranks", "counts", "payload", "bandwidth", "timing",
                                  "perfetto"]),
        ("ddp", "ddp.sbt", ["ranks", "straggler", "clocks", "perfetto"]),
        ("mix", "mix.sbt", ["counts", "payload", "bytes", "kineto", "perfetto"]),
        ("arpc", "arpc.sbt", ["counts", "samples"]),
        ("group", "grp.sbt", ["counts", "send_recv bytes", "all_reduce bytes"])]


def kernel_page(cli, path, name):
    """`kernel --json --single` of the kernel matching `name` in one rank's trace, or None."""
    p = subprocess.run([cli, "kernel", "--json", "--single", "-q", path, name],
                       capture_output=True, text=True)
    try:
        return json.loads(p.stdout) if p.returncode == 0 else None
    except ValueError:
        return None


def pc_stats(cli, path):
    """The pc_sampling.* counters `info` shows of one trace."""
    p = subprocess.run([cli, "info", path], capture_output=True, text=True)
    return {k: int(v) for k, v in re.findall(
        r"(?m)^\s+pc_sampling\.(samples|dropped_samples|hardware_buffer_full|"
        r"gpus_held_elsewhere)\s+(\d+)", p.stdout)}


def check_pc(c, cli, out, j, iters):
    """The all-reduce run under --pc-sampling: counts as without, each rank's NCCL kernel
    sampled on its own GPU, SASS for every sampled instruction, joined to the launch line."""
    per_rank = [(r["rank"], r["collectives"], r["matched"]) for r in j["ranks"]]
    want = iters * len(SIZES)
    c.check("arpc counts", sorted(r for r, _, _ in per_rank) == list(range(WORLD)) and
            all(n == want and m == want for _, n, m in per_rank) and
            ops_per_rank(j) == {"all_reduce": want},
            f"(rank, collectives, matched)={per_rank} ops={ops_per_rank(j)} expected {want} "
            f"all_reduce each")
    parts, ok = [], True
    for rank in range(WORLD):
        path = os.path.join(out, f"arpc.rank{rank}.sbt")
        st = pc_stats(cli, path)
        page = kernel_page(cli, path, "AllReduce")
        insts = [i for line in (page or {}).get("lines", []) for i in line["instructions"]
                 if i["samples"] > 0]
        bare = sum(1 for i in insts if not i["sass"].strip())
        n = (page or {}).get("samples", 0)
        on_line = sum(s["samples"] for s in (page or {}).get("sites", [])
                      if "allreduce" in s["site"] and "nccl_job_check.py" in s["site"])
        ok = ok and bool(page) and st.get("samples", 0) > 0 and \
            st.get("dropped_samples", 1) == 0 and st.get("gpus_held_elsewhere", 1) == 0 and \
            st.get("hardware_buffer_full", 0) == 0 and \
            n >= 100 and insts and bare == 0 and on_line >= 0.99 * n
        top = (page or {}).get("sites", [{}])[0].get("site", "-") if page and page.get(
            "sites") else "-"
        parts.append(f"rank {rank}: {st.get('samples')} samples, dropped "
                     f"{st.get('dropped_samples')}, hardware buffer full "
                     f"{st.get('hardware_buffer_full', 0)}, held elsewhere "
                     f"{st.get('gpus_held_elsewhere')}; {(page or {}).get('name', 'no page')[:48]}"
                     f" {n} samples, {len(insts) - bare} of {len(insts)} sampled instructions "
                     f"with SASS, {100.0 * on_line / max(n, 1):.1f}% from {top[:60]}")
    c.check("arpc samples", ok, "; ".join(parts) + " (need samples, 0 dropped or full, 0 held "
            "elsewhere; the all-reduce kernel >= 100 samples, all with SASS, >= 99% from "
            "allreduce (nccl_job_check.py))")


def check(cli, out, iters, steps, delay_ms):
    c = Checks("NCCLCHECK")
    fns = {"allreduce": lambda j: check_allreduce(c, cli, out, j, iters),
           "ddp": lambda j: check_ddp(c, cli, out, j, delay_ms),
           "mix": lambda j: check_mix(c, cli, out, j, iters),
           "arpc": lambda j: check_pc(c, cli, out, j, iters),
           "group": lambda j: check_group(c, j, iters)}
    for name, file, what in RUNS:
        names = [f"{name} {n}" for n in what]
        j = analyze(c, cli, name, os.path.join(out, file))
        if j is None:
            c.skip_all(names, f"analyze of {file} failed")
        else:
            c.guarded(names, lambda: fns[name](j))
    return c.summary()


if __name__ == "__main__":
    a = sys.argv[1:]
    if a[:1] == ["allreduce"] and len(a) in (2, 3):
        allreduce(int(a[1]), a[2] if len(a) == 3 else None)
    elif a[:1] == ["ddp"] and len(a) == 3:
        ddp(int(a[1]), float(a[2]))
    elif a[:1] == ["mix"] and len(a) == 2:
        mix(int(a[1]))
    elif a[:1] == ["group"] and len(a) == 2:
        group(int(a[1]))
    elif a[:1] == ["check"] and len(a) in (6, 7):
        if len(a) == 7 and not (a[6].isdigit() and int(a[6]) >= 2):
            sys.exit(f"nccl_job_check: WORLD must be a number of ranks >= 2, not {a[6]!r}")
        WORLD = int(a[6]) if len(a) == 7 else 2
        sys.exit(check(a[1], a[2], int(a[3]), int(a[4]), float(a[5])))
    else:
        sys.exit(__doc__)
