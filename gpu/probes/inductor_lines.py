#!/usr/bin/env python3
"""Where torch.compile keeps the model line behind each Inductor kernel (issue #41 item 1).

  python3 gpu/probes/inductor_lines.py OUT            # the probe: facts printed
  python3 gpu/probes/inductor_lines.py --model STEPS [MODE]  # the workload alone (for
                                                  # profile); MODE: torch.compile's mode

A small GPT-like block (linear, GELU, layer norm, attention by hand) compiled with Inductor,
trained STEPS steps. The probe runs it twice in child processes, each with a cold Inductor cache and
its first (compiling) step timed: plain, and with INDUCTOR_PROVENANCE=1 and
TORCH_TRACE=OUT/trace (torch's structured log). It prints torch's version,
whether the provenance level took, the structured log's artifact names, a few entries of the
kernel -> stack-trace table, the "Provenance" comment lines and kernel calls of each
generated wrapper file, and the model lines the table names. Findings: docs/analysis.md,
"Compiled code".
"""
import glob
import json
import os
import re
import subprocess
import sys
import time

MODEL = r'''
import torch, torch.nn as nn, torch.nn.functional as F

class Block(nn.Module):
    def __init__(s, d=256):
        super().__init__()
        s.ln = nn.LayerNorm(d)
        s.qkv = nn.Linear(d, 3 * d)
        s.fc = nn.Linear(d, 4 * d)
        s.proj = nn.Linear(4 * d, d)

    def forward(s, x):
        h = s.ln(x)
        q, k, v = s.qkv(h).chunk(3, dim=-1)
        a = torch.softmax(q @ k.transpose(-1, -2) / 16.0, dim=-1) @ v
        x = x + a
        return x + s.proj(F.gelu(s.fc(x)))
'''


def model(steps, mode=None):
    ns = {}
    exec(compile(MODEL, os.path.abspath(__file__) + ".model", "exec"), ns)
    import torch
    m = ns["Block"]().cuda()
    opt = torch.optim.AdamW(m.parameters(), lr=1e-3)
    # mode="reduce-overhead": after warm-up, the compiled graphs are recorded into CUDA
    # graphs (torch's cudagraph trees) and replayed.
    step = torch.compile(m, mode=mode)
    x = torch.randn(8, 128, 256, device="cuda")
    t0 = time.time()
    for i in range(steps):
        if mode:
            torch.compiler.cudagraph_mark_step_begin()
        loss = step(x).float().pow(2).mean()
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        if i == 0:
            torch.cuda.synchronize()
            print(f"PROBE first step (compile) {time.time() - t0:.2f} s", flush=True)
    torch.cuda.synchronize()
    import torch._inductor.config as ic
    import torch._inductor.debug as dbg
    print(f"PROBE torch {torch.__version__}; provenance_tracking_level "
          f"{getattr(ic.trace, 'provenance_tracking_level', 'absent')}", flush=True)
    st = getattr(dbg, "_inductor_kernel_stack_trace", None)
    print(f"PROBE in-process _inductor_kernel_stack_trace: "
          f"{'absent' if st is None else f'{len(st)} kernels'}", flush=True)
    for k, v in list((st or {}).items())[:6]:
        print(f"PROBE   {k}: {json.dumps(v)[:400]}", flush=True)


def probe(out):
    os.makedirs(out, exist_ok=True)
    me = os.path.abspath(__file__)
    trace = os.path.join(out, "trace")
    runs = [("plain", {}), ("provenance", {"INDUCTOR_PROVENANCE": "1", "TORCH_TRACE": trace})]
    for name, env in runs:
        cache = os.path.join(out, f"cache_{name}")  # a cold Inductor cache each
        e = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=cache, **env)
        t0 = time.time()
        p = subprocess.run([sys.executable, me, "--model", "5"], env=e, capture_output=True,
                           text=True, timeout=400)
        print(f"PROBE run {name}: exit {p.returncode} in {time.time() - t0:.1f} s", flush=True)
        for line in (p.stdout + p.stderr).splitlines():
            if line.startswith("PROBE") or "Error" in line:
                print("  " + line[:600], flush=True)
    logs = sorted(glob.glob(os.path.join(trace, "*")))
    print(f"PROBE structured logs: {len(logs)} files, "
          f"{sum(os.path.getsize(f) for f in logs)} bytes", flush=True)
    names, stack_payloads, wrappers = {}, [], []
    for f in logs:
        lines = open(f, errors="replace").read().splitlines()
        for i, line in enumerate(lines):
            m = re.search(r"(\{.*\})\s*$", line)
            if not m or line.startswith("\t"):
                continue
            try:
                meta = json.loads(m.group(1))
            except ValueError:
                continue
            art = meta.get("artifact", {}).get("name") if isinstance(meta.get("artifact"),
                                                                     dict) else None
            key = art or next((k for k in meta if k not in ("frame_id", "frame_compile_id",
                                                            "attempt", "has_payload",
                                                            "compiled_autograd_id")), "?")
            names[key] = names.get(key, 0) + 1
            payload = []
            j = i + 1
            while j < len(lines) and lines[j].startswith("\t"):
                payload.append(lines[j][1:])
                j += 1
            if art and "stack" in art:
                stack_payloads.append((art, "\n".join(payload)))
            if "inductor_output_code" in meta:
                wrappers.append((meta["inductor_output_code"], "\n".join(payload)))
    print(f"PROBE log entries by name: {json.dumps(names)}", flush=True)
    for art, payload in stack_payloads[:2]:
        print(f"PROBE artifact {art}: {payload[:1500]}", flush=True)
    for meta, code in wrappers[:2]:
        print(f"PROBE output code {json.dumps(meta)[:300]}", flush=True)
        for n, line in enumerate(code.splitlines(), 1):
            s = line.strip()
            if "Provenance" in s or re.match(r"(triton_\w+\.run|extern_kernels\.\w+)\(", s):
                print(f"PROBE   {n}: {s[:200]}", flush=True)
    files = glob.glob(os.path.join(out, "cache_provenance", "**", "*.py"), recursive=True)
    hits = [f for f in files if "Provenance" in open(f, errors="replace").read()]
    print(f"PROBE cache .py files {len(files)}, with 'Provenance' comments {len(hits)}",
          flush=True)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--model"]:
        model(int(sys.argv[2]), sys.argv[3] if len(sys.argv) > 3 else None)
    elif len(sys.argv) == 2:
        probe(sys.argv[1])
    else:
        sys.exit(__doc__)
