#!/usr/bin/env python3
"""GPU check of distributed runs on one GPU (issue #17; scripts/gpu-check.sh `job`).

  tracesmith profile -o OUT/job.sbt -- torchrun --standalone --nproc_per_node=3 \
      gpu/job_check.py worker OUT STEPS DELAY_MS
  python3 gpu/job_check.py check CLI OUT STEPS DELAY_MS

worker: one rank of a gloo job whose ranks share GPU 0. Every step: a "step N" NVTX
        range holding GPU work (matmuls, synchronized), then an all-reduce of a CUDA
        tensor through gloo inside a `gloo:all_reduce bytes=<N>` NVTX range (gloo runs
        collectives on the host: the range is the rank's part). Rank 1 sleeps DELAY_MS
        before each all-reduce: the deliberate straggler.
check:  over the run's per-rank traces (the stem OUT/job.sbt), and over their merge:
        - ranks 0, 1, 2, one per trace (plus torchrun's agent when it initialised CUDA:
          no rank, no GPU work, left out of the ranks and said), clocks aligned by the monotonic
          anchors of one host with a bound under 50 us;
        - every rank has exactly STEPS host collectives, all matched across ranks;
        - rank 1 is the straggler: last at >= STEPS - 1 all-reduces, median lateness
          within 3 ms of DELAY_MS (the other ranks' GPU work on the shared GPU varies);
        - `merge` writes one file with the 3 processes that gives the same answer;
        - `export -f perfetto` of the run writes a trace.
Prints `JOBCHECK ... PASS|FAIL` lines.
"""
import json
import os
import subprocess
import sys
import time


def worker(out, steps, delay_ms):
    import torch
    import torch.distributed as dist

    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.cuda.set_device(0)
    a = torch.randn(1024, 1024, device="cuda")
    grad = torch.ones(1 << 20, device="cuda")  # 4 MiB
    nbytes = grad.numel() * grad.element_size()
    for step in range(steps):
        torch.cuda.nvtx.range_push(f"step {step}")
        for _ in range(4):
            a = torch.tanh(a @ a) * 0.5
        torch.cuda.synchronize()
        if rank == 1:
            time.sleep(delay_ms / 1000.0)
        torch.cuda.nvtx.range_push(f"gloo:all_reduce bytes={nbytes}")
        dist.all_reduce(grad)
        torch.cuda.nvtx.range_pop()
        torch.cuda.nvtx.range_pop()
    torch.cuda.synchronize()
    dist.destroy_process_group()
    print(f"JOBCHECK worker rank={rank} steps={steps} done", flush=True)


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        print(f"JOBCHECK command failed ({p.returncode}): {' '.join(cmd)}\n{p.stderr[-2000:]}")
    return p


def verdict(name, ok, detail):
    print(f"JOBCHECK {name}: {detail} -> {'PASS' if ok else 'FAIL'}", flush=True)
    return ok


def check_report(label, j, steps, delay_ms, extra):
    ok = True
    ranks = sorted(r["rank"] for r in j["ranks"])
    ok &= verdict(f"{label} ranks", ranks == [0, 1, 2] and len(j.get("left_out", [])) == extra,
                  f"ranks={ranks} left_out={j.get('left_out')}")
    methods = {r["clock_method"] for r in j["ranks"]}
    bound = max((r["clock_bound_ns"] or 0) for r in j["ranks"])
    ok &= verdict(f"{label} clocks", all(r["clock_aligned"] for r in j["ranks"]) and
                  len(methods) == 1 and bound < 50_000,
                  f"methods={sorted(methods)} max_bound_ns={bound}")
    colls = [(r["rank"], r["collectives"], r["matched"]) for r in j["ranks"]]
    ok &= verdict(f"{label} collectives", all(c == steps and m == steps for _, c, m in colls),
                  f"(rank, collectives, matched)={colls} expected {steps} each")
    st = j["stragglers"][0] if j["stragglers"] else None
    late_ms = st["median_late_ns"] / 1e6 if st else None
    ok &= verdict(f"{label} straggler", st is not None and st["rank"] == 1 and
                  st["last_count"] >= steps - 1 and abs(late_ms - delay_ms) <= 3.0,
                  f"rank={st and st['rank']} last={st and st['last_count']}/{st and st['of']} "
                  f"median_late_ms={late_ms and round(late_ms, 3)} injected_ms={delay_ms} "
                  f"bound_ns={st and st['clock_bound_ns']}")
    # Where the straggler's extra host time goes: rank 1 sleeps outside CUDA calls before
    # the all-reduce, before its first launch (gloo copies the tensor to the host); the
    # others wait for it inside the gloo range, which is not host time before launches.
    ht = st and st.get("host_time")
    excess_ms = ht["excess_ns"] / 1e6 if ht else None
    ok &= verdict(f"{label} straggler host time", ht is not None and
                  abs(excess_ms - delay_ms) <= 3.0,
                  f"excess_ms={excess_ms and round(excess_ms, 3)} injected_ms={delay_ms} "
                  f"site={ht and ht.get('call_site')}")
    for f in j.get("findings", [])[:3]:
        print(f"JOBCHECK {label} finding: {f}")
    return ok


def check(cli, out, steps, delay_ms):
    stem = os.path.join(out, "job.sbt")
    files = sorted(f for f in os.listdir(out) if f.startswith("job") and f.endswith(".sbt"))
    # torchrun's agent initialises CUDA to count devices: its trace (no rank, no GPU
    # work) is the 4th when it does, and the report leaves it out.
    extra = len(files) - 3
    ok = verdict("traces", extra in (0, 1), f"files={files}")
    p = run([cli, "analyze", "--json", stem])
    if p.returncode == 0:
        j = json.loads(p.stdout)
        ok &= check_report("run", j["ranks"] if isinstance(j.get("ranks"), dict) else j, steps,
                           delay_ms, extra)
    else:
        ok = verdict("run analyze", False, "analyze --json failed")
    merged = os.path.join(out, "merged.sbt")
    p = run([cli, "merge", "--force", stem, "-o", merged])
    ok &= verdict("merge", p.returncode == 0 and os.path.exists(merged),
                  (p.stdout + p.stderr).strip().splitlines()[-1] if (p.stdout + p.stderr).strip()
                  else "")
    if p.returncode == 0:
        p = run([cli, "analyze", "--json", merged])
        if p.returncode == 0:
            j = json.loads(p.stdout)
            ok &= check_report("merged", j["ranks"] if isinstance(j.get("ranks"), dict) else j,
                               steps, delay_ms, extra)
    pf = os.path.join(out, "job.pftrace")
    p = run([cli, "export", "-f", "perfetto", "--force", "-o", pf, stem])
    ok &= verdict("perfetto", p.returncode == 0 and os.path.getsize(pf) > 0 if os.path.exists(pf)
                  else False, f"bytes={os.path.getsize(pf) if os.path.exists(pf) else 0}")
    print(f"JOBCHECK all: {'PASS' if ok else 'FAIL'}")
    return 0 if ok else 1


if __name__ == "__main__":
    if len(sys.argv) >= 5 and sys.argv[1] == "worker":
        worker(sys.argv[2], int(sys.argv[3]), float(sys.argv[4]))
    elif len(sys.argv) >= 6 and sys.argv[1] == "check":
        sys.exit(check(sys.argv[2], sys.argv[3], int(sys.argv[4]), float(sys.argv[5])))
    else:
        sys.exit(__doc__)
