#!/usr/bin/env python3
"""GPU check of the memory profiler (issue #16; run by scripts/gpu-check.sh `memory`).

  tracesmith profile -o OUT/mem.sbt -- python3 gpu/memory_check.py run OUT
  python3 gpu/memory_check.py check CLI OUT

run:   a small MLP trained for STEPS steps (bf16 autocast, AdamW), with a deliberate
       leak: from step 3 on, each step keeps a 48 MiB tensor (`leak_line`, larger
       than anything the model allocates, so the caching allocator takes a fresh
       cudaMalloc for each). Writes OUT/mem_expect.txt: torch.cuda.max_memory_reserved(),
       memory_reserved() at the end, the leak's file:line, the leak count.
check: `tracesmith memory --json OUT/mem.sbt` must say, for this process's device 0:
       - the owner "PyTorch caching allocator" peaked at exactly max_memory_reserved()
         and ends at exactly memory_reserved();
       - the leak's call site holds exactly LEAKS blocks of 48 MiB still live at the
         end, named by its Python line, and is flagged as piling up;
       - every device allocation row has a stack (no "(no stack)" owner except
         module globals);
       - a CUDA graph captured at the end: the memory allocated during its capture
         is exactly its private pool's segments (torch.cuda.memory_snapshot());
       - the peak's NVTX range (each step, the graph's warm-up and capture are ranges)
         is the one in which max_memory_reserved() last grew.
check prints one `MEMCHECK <check>: ... -> PASS|FAIL|SKIP (reason)` line per expectation
(when the run's expectations or the report cannot be read: a FAIL, the others SKIP), then
the summary line "N passed, M failed, K skipped" (gpu/checks.py); exit status 1 when
anything failed. run is the workload (scripts/gpu-check.sh checks its exit status).
"""
import json
import os
import subprocess
import sys
import time

from checks import Checks

STEPS = 10
LEAK_FROM = 3
LEAK_BYTES = 48 << 20


def run(out):
    import torch

    torch.manual_seed(0)
    dev = torch.device("cuda")
    model = torch.nn.Sequential(torch.nn.Linear(1024, 2048), torch.nn.GELU(),
                                torch.nn.Linear(2048, 1024)).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    x = torch.randn(256, 1024, device=dev)
    kept = []
    leak_line = None
    # Each section is an NVTX range; the one in which max_memory_reserved() last
    # grew holds the caching allocator's peak.
    peak_section, reserved = None, 0

    def section_end(name):
        nonlocal peak_section, reserved
        torch.cuda.synchronize()
        torch.cuda.nvtx.range_pop()
        if torch.cuda.max_memory_reserved() > reserved:
            peak_section, reserved = name, torch.cuda.max_memory_reserved()

    for step in range(STEPS):
        torch.cuda.nvtx.range_push(f"step {step}")
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = model(x).float().pow(2).mean()
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        if step >= LEAK_FROM:
            leak_line = sys._getframe().f_lineno + 1
            kept.append(torch.empty(LEAK_BYTES, dtype=torch.uint8, device=dev))
        section_end(f"step {step}")
        time.sleep(0.05)  # steps spread over time, as a real run's are
    # A CUDA graph of the forward pass, captured on the stream it was warmed up on
    # (so cuBLAS has its workspace for that stream before the capture): its
    # private pool's segments are the memory allocated during the capture.
    static_x = torch.randn(512, 1024, device=dev)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    torch.cuda.nvtx.range_push("graph warm-up")
    with torch.cuda.stream(side), torch.no_grad():
        for _ in range(3):
            model(static_x)
    torch.cuda.current_stream().wait_stream(side)
    section_end("graph warm-up")
    graph = torch.cuda.CUDAGraph()
    torch.cuda.nvtx.range_push("graph capture")
    with torch.no_grad(), torch.cuda.graph(graph, stream=side):
        static_y = model(static_x)
    section_end("graph capture")
    graph.replay()
    torch.cuda.synchronize()
    pools = [seg for seg in torch.cuda.memory_snapshot()
             if tuple(seg.get("segment_pool_id", (0, 0))) != (0, 0)]
    with open(os.path.join(out, "mem_expect.txt"), "w") as f:
        f.write(f"graph_pool_bytes={sum(seg['total_size'] for seg in pools)}\n")
        f.write(f"graph_pool_segments={len(pools)}\n")
        f.write(f"max_reserved={torch.cuda.max_memory_reserved()}\n")
        f.write(f"reserved={torch.cuda.memory_reserved()}\n")
        f.write(f"leak_site=memory_check.py:{leak_line})\n")
        f.write(f"leaks={len(kept)}\n")
        f.write(f"peak_section={peak_section}\n")
    print(f"MEMCHECK run: steps={STEPS} leaks={len(kept)} "
          f"max_reserved={torch.cuda.max_memory_reserved()} reserved={torch.cuda.memory_reserved()}")


CHECKS = ["caching allocator", "leak", "leak finding", "graph pool", "peak range", "stacks"]


def read_inputs(cli, out):
    """(expectations the run wrote, device 0's part of `memory --json`, the report), or
    (None, None, why)."""
    path = os.path.join(out, "mem_expect.txt")
    try:
        with open(path) as f:
            expect = dict(line.strip().split("=", 1) for line in f if "=" in line)
    except OSError as e:
        return None, None, f"{path}: {e.strerror} (the run writes it)"
    missing = {"max_reserved", "reserved", "leak_site", "leaks", "graph_pool_bytes",
               "graph_pool_segments", "peak_section"} - set(expect)
    if missing:
        return None, None, f"{path} lacks {sorted(missing)}"
    p = subprocess.run([cli, "memory", "--json", "--top", "50", os.path.join(out, "mem.sbt")],
                       capture_output=True, text=True)
    if p.returncode != 0:
        return None, None, f"memory --json exit {p.returncode}: {p.stderr.strip()[-300:]}"
    try:
        report = json.loads(p.stdout)
    except ValueError as e:
        return None, None, f"memory --json: not JSON ({e})"
    devs = [m for m in report.get("memory", []) if m.get("space") == "device" and
            m.get("device_id") == 0]
    if not devs:
        return None, None, "no device memory of device 0 in the report"
    return expect, devs[0], report


def check(cli, out):
    c = Checks("MEMCHECK")
    expect, d, report = read_inputs(cli, out)
    if expect is None:
        c.fail("inputs", report)
        c.skip_all(CHECKS, "no inputs to check")
        return c.summary()
    c.check("inputs", True, "mem_expect.txt and memory --json read, device 0 in the report")
    c.guarded(CHECKS, lambda: device_checks(c, expect, d, report))
    return c.summary()


def device_checks(c, expect, d, report):
    owners = {o["owner"]: o for o in d["owners"]}

    caching = owners.get("PyTorch caching allocator", {})
    peak, end = caching.get("peak_bytes"), caching.get("end_bytes")
    c.check("caching allocator", peak == int(expect["max_reserved"]) and
            end == int(expect["reserved"]),
            f"peak={peak} max_memory_reserved={expect['max_reserved']} "
            f"end={end} memory_reserved={expect['reserved']}")

    leaks = int(expect["leaks"])
    # "run (<path>/memory_check.py:<line>)": the function and line of the leak.
    rows = [s for s in d["live_at_end"]
            if s["site"].startswith("run (") and s["site"].endswith(expect["leak_site"])]
    row = rows[0] if rows else {}
    c.check("leak", leaks > 0 and row.get("count") == leaks and
            row.get("bytes") == leaks * LEAK_BYTES and row.get("leak_suspect") is True,
            f"site={expect['leak_site']!r} count={row.get('count')} bytes={row.get('bytes')} "
            f"expected={leaks}x{LEAK_BYTES} suspect={row.get('leak_suspect')}")
    flagged = [f for f in report["findings"] if expect["leak_site"] in f]
    c.check("leak finding", flagged, f"{flagged[0] if flagged else None!r}")

    c.check("graph pool", report.get("graph_captures") == 1
            and d.get("graph_pool_end_bytes") == int(expect["graph_pool_bytes"])
            and d.get("graph_pool_end_count") == int(expect["graph_pool_segments"]),
            f"captures={report.get('graph_captures')} bytes={d.get('graph_pool_end_bytes')} "
            f"blocks={d.get('graph_pool_end_count')} "
            f"torch_private_pool_bytes={expect['graph_pool_bytes']} "
            f"segments={expect['graph_pool_segments']}")

    # The peak (every owner) falls where the caching allocator's did: cuBLAS's own
    # workspaces are allocated in step 0 and held.
    c.check("peak range", d.get("peak_nvtx_range") == expect["peak_section"],
            f"{d.get('peak_nvtx_range')!r} torch_peak_section={expect['peak_section']!r}")

    unowned = owners.get("(no stack)", {}).get("peak_bytes", 0)
    c.check("stacks", unowned == 0, f"owners={sorted(owners)} no_stack_peak={unowned}")
    for f in report["findings"]:
        print(f"MEMCHECK finding: {f}")


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "run":
        run(sys.argv[2])
    elif len(sys.argv) == 4 and sys.argv[1] == "check":
        sys.exit(check(sys.argv[2], sys.argv[3]))
    else:
        sys.exit(__doc__)
