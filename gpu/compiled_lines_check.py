#!/usr/bin/env python3
"""GPU check of torch.compile's model lines (issue #41 item 1; scripts/gpu-check.sh section
`compiledlines`).

  python3 gpu/compiled_lines_check.py CLI OUT

`tracesmith profile` (defaults) of gpu/probes/inductor_lines.py --model 5: a block compiled
with Inductor (layer norm line 13, qkv line 14, attention line 15, residual line 16, MLP with
GELU line 17 of its model source), trained 5 steps (forward and backward graphs), AdamW
eager. Then `analyze --json`:
  - run: exit 0, and profile says it added model lines ("torch.compile: model lines for N
    and graph nodes for K of M generated lines");
  - no generated line: call sites that name Inductor's generated code (torchinductor_*
    files) hold at most 1% of GPU time (before: every compiled kernel's);
  - model lines: call sites that name the model's lines 13-17 hold >= 50% of GPU time, and
    at least 4 of those 5 lines are named.
Then the same block under mode="reduce-overhead", 12 steps (torch's CUDA graph trees: after
warm-up the compiled graphs are recorded into CUDA graphs and replayed), `graphs ...` checks:
  - graphs run: exit 0 and model lines added, as above;
  - graphs replayed: kernels replayed from CUDA graphs hold >= 50% of the GPU time analyze
    reports (else the run did not test replays);
  - graphs no generated line, graphs model lines: as above, over the replays too (before: a
    replayed kernel was named by the line that replays the graph, cudagraph_trees.py);
  - graphs flame: `export -f folded`: the stacks under a model line's frame (put above the
    generated line) hold as much of the GPU time as analyze's model-line call sites (within 2
    points) - the flame graph names the model too.
Then the first run again, its compiled graphs now in Inductor's cache (`warm ...` checks: the
model lines must come from a cache hit too; the first two runs compile into a fresh cache).
One `COMPILEDLINES <check>: <figures> -> PASS|FAIL|SKIP` line per expectation, then the
summary.
"""
import json
import os
import re
import shutil
import subprocess
import sys

from checks import Checks, torch_skip_reason

HERE = os.path.dirname(os.path.abspath(__file__))
MODEL = os.path.join(HERE, "probes", "inductor_lines.py")
LINES = range(13, 18)


def main():
    cli, out = sys.argv[1:3]
    os.makedirs(out, exist_ok=True)
    c = Checks("COMPILEDLINES")
    names = ["run", "no generated line", "model lines"]
    names += ["graphs run", "graphs replayed", "graphs no generated line", "graphs model lines",
              "graphs flame"]
    names += ["warm run", "warm no generated line", "warm model lines"]
    skip = torch_skip_reason()
    if skip is not None:
        for n in names:
            c.skip(n, skip[0])
        return c.summary()
    c.guarded(names, lambda: checks(c, cli, out))
    return c.summary()


def checks(c, cli, out):
    cache = os.path.join(out, "torchinductor_check")
    shutil.rmtree(cache, ignore_errors=True)
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = cache  # cold for the first two, then warm
    mode(c, cli, out, "", ["5"])
    mode(c, cli, out, "graphs ", ["12", "reduce-overhead"])
    mode(c, cli, out, "warm ", ["5"])


def mode(c, cli, out, tag, args):
    stem = tag.strip() or "compiled"
    trace = os.path.join(out, stem + ".sbt")
    p = subprocess.run([cli, "profile", "-f", "-o", trace, "--", sys.executable, MODEL,
                        "--model"] + args, capture_output=True, text=True, timeout=400)
    with open(os.path.join(out, stem + ".profile.log"), "w") as f:
        f.write(p.stdout + p.stderr)
    added = re.search(r"model lines (?:of|for) (\d+) (?:and graph nodes for \d+ )?of (\d+) "
                      r"generated lines", p.stderr)
    c.check(tag + "run", p.returncode == 0 and added is not None,
            f"exit {p.returncode}; " + (added.group(0) if added else "no model lines added: " +
                                        " | ".join(p.stderr.strip().splitlines()[-3:])))
    a = subprocess.run([cli, "analyze", "--json", trace], capture_output=True, text=True,
                       timeout=300)
    report = json.loads(a.stdout) if a.returncode == 0 else {}
    sites = report.get("call_sites", [])
    with open(os.path.join(out, stem + ".call_sites.json"), "w") as f:
        json.dump(sites, f, indent=1)
    if tag == "graphs ":
        graph_ns = sum(g["kernel_ns"] for g in report.get("graphs", []))
        total = report.get("kernel_ns", 0)
        share = 100.0 * graph_ns / total if total else 0.0
        c.check(tag + "replayed", share >= 50,
                f"{share:.1f}% of {total / 1e6:.2f} ms GPU time in kernels replayed from "
                f"{len(report.get('graphs', []))} CUDA graphs, "
                f"{report.get('graph_launches', 0)} graph launches (need >= 50%)")
    generated = sum(s["share_pct"] for s in sites if "torchinductor" in s["name"])
    show_generated(sites, os.path.join(out, stem + ".generated.txt"))
    top_gen = next((s["name"] for s in sites if "torchinductor" in s["name"]), "none")
    c.check(tag + "no generated line", bool(sites) and generated <= 1.0,
            f"{generated:.1f}% of GPU time under generated lines (first: {top_gen[:120]}); "
            f"{len(sites)} call sites (need <= 1%)")
    per_line = {}
    for s in sites:
        for n in LINES:
            if re.search(rf"inductor_lines\.py\.model:{n}\)", s["name"]):
                per_line[n] = per_line.get(n, 0.0) + s["share_pct"]
                break
    share = sum(per_line.values())
    c.check(tag + "model lines", share >= 50 and len(per_line) >= 4,
            f"{share:.1f}% of GPU time on model lines "
            + ", ".join(f"{n}: {v:.1f}%" for n, v in sorted(per_line.items()))
            + "; top call sites: " + "; ".join(f"{s['name'][:90]} {s['share_pct']:.1f}%"
                                               for s in sites[:4])
            + " (need >= 50% and >= 4 of lines 13-17)")
    if tag == "graphs ":
        flame(c, cli, trace, os.path.join(out, stem + ".folded"), share)


def flame(c, cli, trace, folded, site_share):
    p = subprocess.run([cli, "export", "-f", "folded", "--force", "-o", folded, trace],
                       capture_output=True, text=True, timeout=300)
    total = on_model = 0
    if p.returncode == 0:
        for line in open(folded):
            stack, _, weight = line.rstrip("\n").rpartition(" ")
            total += int(weight)
            if re.search(r"inductor_lines\.py\.model:1[3-7]\)", stack):
                on_model += int(weight)
    share = 100.0 * on_model / total if total else 0.0
    c.check("graphs flame", p.returncode == 0 and abs(share - site_share) <= 2,
            f"exit {p.returncode}; {share:.1f}% of {total} ns of folded stacks under the model's "
            f"lines 13-17, call sites {site_share:.1f}% (need within 2 points)")


def show_generated(sites, path):
    """Writes the generated code around each line a call site still names (Inductor's cache
    under /tmp: torchinductor_<user>/...), to see what kernel call has no model line."""
    with open(path, "w") as f:
        for s in sites:
            m = re.search(r"\((torchinductor_[^:]+\.py):(\d+)\)", s["name"])
            if not m:
                continue
            n = int(m.group(2))
            f.write(f"== {s['share_pct']:.2f}% {s['name']}\n")
            root = os.environ.get("TORCHINDUCTOR_CACHE_DIR", "/tmp/torchinductor_root")
            try:
                lines = open(os.path.join(root, m.group(1).split("/", 1)[1]),
                             errors="replace").readlines()
            except OSError as e:
                f.write(f"  ({e})\n")
                continue
            for i in range(max(1, n - 12), min(len(lines), n + 2) + 1):
                f.write(f"{'>' if i == n else ' '}{i:5d} {lines[i - 1].rstrip()[:200]}\n")


if __name__ == "__main__":
    sys.exit(main())
