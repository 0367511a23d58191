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
        - `export -f perfetto` of the run writes a trace;
        - with JOB_PC_SAMPLING=1 (the run captured with --pc-sampling, issue #39): CUPTI
          serves PC sampling to one process per GPU (three sampling one GPU crashed two of
          them in CUPTI, 2026-11-30), so exactly one rank's trace has samples (none dropped,
          its heaviest kernel sampled) and the other two say the GPU was held elsewhere
          (pc_sampling.gpus_held_elsewhere 1) and have none.
check prints one `JOBCHECK <check>: ... -> PASS|FAIL|SKIP (reason)` line per expectation
(a failed `analyze` or `merge` is a FAIL, the checks of its report SKIP), then the summary
line "N passed, M failed, K skipped" (gpu/checks.py); exit status 1 when anything failed.
worker is the workload (no verdicts: scripts/gpu-check.sh checks its exit status).
"""
import json
import os
import re
import subprocess
import sys
import time

from checks import Checks


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


REPORT_CHECKS = ["ranks", "clocks", "collectives", "straggler", "straggler host time"]


def analyze(c, cli, label, path):
    """`analyze --json` of a stem or file, a check of its own: the job report, or None."""
    p = run([cli, "analyze", "--json", path])
    j, why = None, f"exit {p.returncode}"
    if p.returncode == 0:
        try:
            j = json.loads(p.stdout)
        except ValueError as e:
            why = f"exit 0 but not JSON ({e})"
    if isinstance(j, dict) and isinstance(j.get("ranks"), dict):
        j = j["ranks"]  # (the job report inside the whole document)
    c.check(f"{label} analyze", isinstance(j, dict), f"analyze --json {os.path.basename(path)}: "
            f"{'a job report' if isinstance(j, dict) else why}")
    return j if isinstance(j, dict) else None


def check_report(c, label, j, steps, delay_ms, extra):
    ranks = sorted(r["rank"] for r in j["ranks"])
    c.check(f"{label} ranks", ranks == [0, 1, 2] and len(j.get("left_out", [])) == extra,
            f"ranks={ranks} left_out={j.get('left_out')}")
    methods = {r["clock_method"] for r in j["ranks"]}
    bound = max((r["clock_bound_ns"] or 0) for r in j["ranks"])
    c.check(f"{label} clocks", all(r["clock_aligned"] for r in j["ranks"]) and
            len(methods) == 1 and bound < 50_000,
            f"methods={sorted(methods)} max_bound_ns={bound}")
    colls = [(r["rank"], r["collectives"], r["matched"]) for r in j["ranks"]]
    c.check(f"{label} collectives", all(n == steps and m == steps for _, n, m in colls),
            f"(rank, collectives, matched)={colls} expected {steps} each")
    st = j["stragglers"][0] if j["stragglers"] else None
    late_ms = st["median_late_ns"] / 1e6 if st else None
    c.check(f"{label} straggler", st is not None and st["rank"] == 1 and
            st["last_count"] >= steps - 1 and abs(late_ms - delay_ms) <= 3.0,
            f"rank={st and st['rank']} last={st and st['last_count']}/{st and st['of']} "
            f"median_late_ms={late_ms and round(late_ms, 3)} injected_ms={delay_ms} "
            f"bound_ns={st and st['clock_bound_ns']}")
    # Where the straggler's extra host time goes: rank 1 sleeps outside CUDA calls before
    # the all-reduce, before its first launch (gloo copies the tensor to the host); the
    # others wait for it inside the gloo range, which is not host time before launches.
    ht = st and st.get("host_time")
    excess_ms = ht["excess_ns"] / 1e6 if ht else None
    c.check(f"{label} straggler host time", ht is not None and abs(excess_ms - delay_ms) <= 3.0,
            f"excess_ms={excess_ms and round(excess_ms, 3)} injected_ms={delay_ms} "
            f"site={ht and ht.get('call_site')}")
    for f in j.get("findings", [])[:3]:
        print(f"JOBCHECK {label} finding: {f}")


def report_checks(c, label, j, steps, delay_ms, extra, why):
    """The report's checks, or each a SKIP with the reason the report is missing."""
    names = [f"{label} {n}" for n in REPORT_CHECKS]
    if j is None:
        return c.skip_all(names, why)
    c.guarded(names, lambda: check_report(c, label, j, steps, delay_ms, extra))


def pc_sampling_checks(c, cli, out, files):
    """Each rank's PC samples (JOB_PC_SAMPLING=1): the `pc samples` check."""
    per = []
    for f in (f for f in files if ".rank" in f):  # (job.sbt itself: the run's stem)
        path = os.path.join(out, f)
        p = run([cli, "analyze", "--json", path])
        try:
            doc = json.loads(p.stdout[p.stdout.index("{"):]) if p.returncode == 0 else None
        except ValueError:
            doc = None
        if not doc or not doc.get("kernels"):
            continue  # torchrun's agent: no GPU work
        info = run([cli, "info", path]).stdout
        st = {k: int(v) for k, v in re.findall(
            r"(?m)^\s+(pc_sampling\.(?:samples|dropped_samples|hardware_buffer_full|"
            r"gpus_held_elsewhere))\s+(\d+)", info)}
        kernels = {k["name"]: k.get("share_pct", 0) for k in doc["kernels"]}
        fns = {}
        for fn in (doc.get("gpu_samples") or {}).get("functions") or []:
            fns[fn["name"]] = fns.get(fn["name"], 0) + int(fn.get("samples", 0))
        top = max(kernels, key=kernels.get)
        per.append((f, st, top[:40], fns.get(top, 0)))
    sampled = [p for p in per if p[1].get("pc_sampling.samples", 0) > 0]
    refused = [p for p in per if p[1].get("pc_sampling.gpus_held_elsewhere") == 1 and
               p[1].get("pc_sampling.samples", 0) == 0]
    ok = len(per) == 3 and len(sampled) == 1 and len(refused) == 2 and all(
        st.get("pc_sampling.dropped_samples", 1) == 0 and
        st.get("pc_sampling.hardware_buffer_full", 1) == 0 and top_n >= 100
        for _, st, _, top_n in sampled)
    c.check("pc samples", ok, "; ".join(
        f"{f}: {st.get('pc_sampling.samples')} samples, dropped "
        f"{st.get('pc_sampling.dropped_samples')}, full {st.get('pc_sampling.hardware_buffer_full')}"
        f", held elsewhere {st.get('pc_sampling.gpus_held_elsewhere')}, heaviest kernel {top} "
        f"{top_n}" for f, st, top, top_n in per) +
        " (need 3 ranks: 1 sampled with 0 dropped, 0 full, heaviest >= 100; "
        "2 held elsewhere with 0 samples)")


def check(cli, out, steps, delay_ms):
    c = Checks("JOBCHECK")
    stem = os.path.join(out, "job.sbt")
    files = sorted(f for f in os.listdir(out) if f.startswith("job") and f.endswith(".sbt")) \
        if os.path.isdir(out) else []
    # torchrun's agent initialises CUDA to count devices: its trace (no rank, no GPU
    # work) is the 4th when it does, and the report leaves it out.
    extra = len(files) - 3
    c.check("traces", extra in (0, 1), f"files={files} (expected 3, or 4 with torchrun's agent)")
    j = analyze(c, cli, "run", stem)
    report_checks(c, "run", j, steps, delay_ms, extra, "analyze of the run failed")
    merged, pf = os.path.join(out, "merged.sbt"), os.path.join(out, "job.pftrace")
    for f in (merged, pf):  # (a file left by an earlier run proves nothing)
        if os.path.exists(f):
            os.remove(f)
    p = run([cli, "merge", "--force", stem, "-o", merged])
    text = (p.stdout + p.stderr).strip()
    merge_ok = c.check("merge", p.returncode == 0 and os.path.exists(merged),
                       text.splitlines()[-1] if text else f"exit {p.returncode}")
    j = analyze(c, cli, "merged", merged) if merge_ok else None
    if not merge_ok:
        c.skip("merged analyze", "merge failed")
    report_checks(c, "merged", j, steps, delay_ms, extra,
                  "merge failed" if not merge_ok else "analyze of the merged file failed")
    p = run([cli, "export", "-f", "perfetto", "--force", "-o", pf, stem])
    size = os.path.getsize(pf) if os.path.exists(pf) else 0
    c.check("perfetto", p.returncode == 0 and size > 0, f"exit={p.returncode} bytes={size}")
    if os.environ.get("JOB_PC_SAMPLING") == "1":
        c.guarded(["pc samples"], lambda: pc_sampling_checks(c, cli, out, files))
    return c.summary()


if __name__ == "__main__":
    if len(sys.argv) >= 5 and sys.argv[1] == "worker":
        worker(sys.argv[2], int(sys.argv[3]), float(sys.argv[4]))
    elif len(sys.argv) >= 6 and sys.argv[1] == "check":
        sys.exit(check(sys.argv[2], sys.argv[3], int(sys.argv[4]), float(sys.argv[5])))
    else:
        sys.exit(__doc__)
