#!/usr/bin/env python3
"""GPU check of `profile --sass-counts`: exact executed-instruction counts per SASS instruction
(issue #39 item 5; scripts/gpu-check.sh section `sasscounts`).

  python3 gpu/sass_counts_check.py CLI PROGS OUT

On gpu/programs/sass_counts (built with -lineinfo), `sass_counts counts 3` under
`profile --sass-counts`: sc_loop<<<64, 128>>> (256 warps) launched 3 times, its loop body
1000 iterations; sc_branch once, its even blocks' warps (128) looping 200 times on one line,
the odd blocks' (128) 50 times on another. Read back with `tracesmith kernel --json`:
  - loop body: the body line's instructions executed exactly 1000 x 256 x 3 = 768,000 times,
    at least one of them, and the rest once per warp and launch (256 x 3 = 768: the compiler
    puts the loop's set-up on the body's line); no instruction of sc_loop more often; at least
    3 (body and loop control) exactly 768,000 times;
  - thread level: those instructions' thread executions are 32 x theirs (all threads active);
  - total vs ncu: sc_loop's warp instructions = 3 x `ncu --metrics smsp__sass_inst_executed.sum`
    of one launch of the same kernel (SKIP when ncu is not found);
  - branch: the even line's instructions 200 x 128 = 25,600 times, the odd line's 50 x 128 =
    6,400 (and, as above, the rest once per warp: 128);
  - opcodes: the histogram has FFMA with at least 768,000; the SASS text is there (nvdisasm);
  - analyze --json: sass_counts holds sc_loop with the kernel page's total; profile's summary
    line says how many functions were counted;
  - refused: --sass-counts with --pc-sampling exits non-zero with one clear message;
  - cost: `sass_counts time 20` (sc_loop, 200,000 iterations) under the default capture and
    under --sass-counts, interleaved rounds (SASS_COUNTS_ROUNDS, default 5): loop time median
    and max, and the first launch (where CUPTI patches the kernel). A measurement: PASS when
    every run exits 0 and prints its times.
One `SASSCOUNTS <check>: <figures> -> PASS|FAIL|SKIP` line per expectation, then the summary
line.
"""
import csv
import io
import json
import os
import re
import shutil
import statistics
import subprocess
import sys

from checks import Checks

LAUNCHES = 3
WARPS = 64 * 128 // 32
ITERS, EVEN_ITERS, ODD_ITERS = 1000, 200, 50
LOOP_EXPECTED = ITERS * WARPS * LAUNCHES
EVEN_EXPECTED = EVEN_ITERS * WARPS // 2
ODD_EXPECTED = ODD_ITERS * WARPS // 2


def run(cmd, out, name, timeout=300):
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           timeout=timeout)
        code, text = p.returncode, p.stdout
    except subprocess.TimeoutExpired as e:
        code, text = "timeout", (e.stdout or b"").decode(errors="replace")
    with open(os.path.join(out, name + ".out"), "w") as f:
        f.write(" ".join(cmd) + f"\n(exit {code})\n" + text)
    return code, text


def json_of(cmd, out, name):
    code, text = run(cmd, out, name)
    if code != 0:
        return None
    try:
        return json.loads(text[text.index("{"):])
    except ValueError:
        return None


def instructions(page, line=None):
    """(line, instruction) of the page's instructions in sass_counts.cu (all files when line is
    None)."""
    return [(l["line"], i) for l in page.get("lines", []) for i in l["instructions"]
            if line is None or (l["line"] == line and l["file"].endswith("sass_counts.cu"))]


def line_counts_exact(instrs, looped, once):
    """Every instruction of a loop's line ran `looped` times (the loop) or `once` (its set-up, which
    the compiler files under the same line), and at least one ran `looped` times."""
    return (bool(instrs) and all(i["executed"] in (looped, once) for _, i in instrs)
            and any(i["executed"] == looped for _, i in instrs))


def counts_text(instrs):
    return ", ".join(f"+0x{i['pc_offset']:x} {i['executed']}" for _, i in instrs[:8]) or "none"


def ncu_per_launch(prog, out):
    """smsp__sass_inst_executed.sum of one launch of sc_loop, by Nsight Compute; None when ncu is
    not found, "error" when it failed."""
    ncu = shutil.which("ncu") or next(
        (p for p in ("/usr/local/cuda/bin/ncu",) if os.access(p, os.X_OK)), None)
    if not ncu:
        return None
    code, text = run([ncu, "--metrics", "smsp__sass_inst_executed.sum", "--csv", "--print-units",
                      "base", "--kernel-name", "sc_loop", "--launch-count", "1", prog, "counts",
                      "1"], out, "ncu", timeout=600)
    rows = [l for l in text.splitlines() if l.startswith('"')]
    if code != 0 or not rows:
        return "error"
    for row in csv.DictReader(io.StringIO("\n".join(rows))):
        if row.get("Metric Name") == "smsp__sass_inst_executed.sum":
            return int(float(row["Metric Value"].replace(",", "")))
    return "error"


def cost(c, cli, prog, out):
    rounds = int(os.environ.get("SASS_COUNTS_ROUNDS", "5"))
    times = {"default": [], "sass-counts": []}
    ok = True
    for r in range(rounds):
        order = ["default", "sass-counts"] if r % 2 == 0 else ["sass-counts", "default"]
        for variant in order:
            extra = ["--sass-counts"] if variant == "sass-counts" else []
            code, text = run([cli, "profile", "-f", "-q", "-o",
                              os.path.join(out, f"cost-{variant}.sbt")] + extra +
                             ["--", prog, "time", "20"], out, f"cost-{variant}-{r}")
            m = re.search(r"first_ms ([0-9.]+) loop_ms ([0-9.]+)", text)
            if code != 0 or not m:
                ok = False
                continue
            times[variant].append((float(m.group(1)), float(m.group(2))))
    if not ok or not all(times.values()):
        c.fail("cost", f"a run failed or printed no times (see {out}/cost-*.out)")
        return
    med = {v: statistics.median(t[1] for t in ts) for v, ts in times.items()}
    mx = {v: max(t[1] for t in ts) for v, ts in times.items()}
    first = {v: statistics.median(t[0] for t in ts) for v, ts in times.items()}
    c.check("cost", True,
            f"20 launches of sc_loop (200,000 iterations, 256 warps), {rounds} interleaved rounds: "
            f"default capture median {med['default']:.2f} ms (max {mx['default']:.2f}), "
            f"--sass-counts median {med['sass-counts']:.2f} ms (max {mx['sass-counts']:.2f}): "
            f"{med['sass-counts'] / med['default']:.2f}x; first launch (CUPTI patches it there) "
            f"median {first['default']:.2f} ms vs {first['sass-counts']:.2f} ms")


NAMES = ["profile", "summary", "loop body", "loop max", "thread level", "total vs ncu",
         "branch even", "branch odd", "opcodes", "sass text", "analyze", "refused", "cost"]


def checks(c, cli, prog, out):
    names = NAMES
    trace = os.path.join(out, "counts.sbt")
    code, text = run([cli, "profile", "-f", "--sass-counts", "-o", trace, "--", prog, "counts",
                      str(LAUNCHES)], out, "profile")
    c.check("profile", code == 0 and "--sass-counts) are off" not in text,
            f"exit {code}" + ("; " + text.strip().splitlines()[-1] if code != 0 and text else "")
            + ("; counts off: " + re.search(r"--sass-counts\) are off.*", text).group(0)
               if "--sass-counts) are off" in text else ""))
    lines = re.search(r"body=(\d+) even=(\d+) odd=(\d+)", text)
    body_line, even_line, odd_line = (int(x) for x in lines.groups()) if lines else (0, 0, 0)
    m = re.search(r"instruction counts \(--sass-counts\): (\d+) functions counted, ([\d,]+) warp",
                  text)
    c.check("summary", m is not None and int(m.group(1)) >= 2,
            m.group(0) if m else "no 'instruction counts' line in profile's summary")

    page = json_of([cli, "kernel", "--json", trace, "sc_loop"], out, "kernel-sc_loop")
    if not page or "counts" not in page:
        c.skip_all(names[2:11], "no counted sc_loop page (`tracesmith kernel --json ... sc_loop`: "
                   f"see {out}/kernel-sc_loop.out)", expected=True)
    else:
        body = instructions(page, body_line)
        c.check("loop body", line_counts_exact(body, LOOP_EXPECTED, WARPS * LAUNCHES),
                f"{len(body)} instructions on sass_counts.cu:{body_line}: {counts_text(body)}; "
                f"expected {ITERS} x {WARPS} warps x {LAUNCHES} launches = {LOOP_EXPECTED} (the "
                f"loop), else {WARPS * LAUNCHES} (once per warp and launch)")
        every = instructions(page)
        top = max((i["executed"] for _, i in every), default=0)
        at = [x for x in every if x[1]["executed"] == LOOP_EXPECTED]
        c.check("loop max", top == LOOP_EXPECTED and len(at) >= 3,
                f"{len(every)} instructions counted, the most executed {top} times, {len(at)} "
                f"exactly {LOOP_EXPECTED} (expected >= 3: body and loop control)")
        wrong = [i for _, i in at if i["thread_executed"] != 32 * LOOP_EXPECTED]
        c.check("thread level", at and not wrong,
                f"{len(at) - len(wrong)} of {len(at)} loop instructions with "
                f"{32 * LOOP_EXPECTED} thread executions (32 per warp)"
                + (f"; e.g. +0x{wrong[0]['pc_offset']:x}: {wrong[0]['thread_executed']}"
                   if wrong else ""))
        total = page["counts"]["executed"]
        v = ncu_per_launch(prog, out)
        if v is None:
            c.skip("total vs ncu", "ncu (Nsight Compute) not found")
        else:
            c.check("total vs ncu", v != "error" and total == LAUNCHES * v,
                    f"sc_loop: {total} warp instructions counted over {LAUNCHES} launches; ncu "
                    + (f"{v} per launch x {LAUNCHES} = {LAUNCHES * v}" if v != "error"
                       else f"failed (see {out}/ncu.out)"))
        branch = json_of([cli, "kernel", "--json", trace, "sc_branch"], out, "kernel-sc_branch")
        even = instructions(branch, even_line) if branch else []
        odd = instructions(branch, odd_line) if branch else []
        c.check("branch even", line_counts_exact(even, EVEN_EXPECTED, WARPS // 2),
                f"sass_counts.cu:{even_line}: {counts_text(even)}; expected {EVEN_ITERS} x "
                f"{WARPS // 2} warps = {EVEN_EXPECTED} (the loop), else {WARPS // 2} (once per warp)")
        c.check("branch odd", line_counts_exact(odd, ODD_EXPECTED, WARPS // 2),
                f"sass_counts.cu:{odd_line}: {counts_text(odd)}; expected {ODD_ITERS} x "
                f"{WARPS // 2} warps = {ODD_EXPECTED} (the loop), else {WARPS // 2} (once per warp)")
        ops = page["counts"]["opcodes"]
        ffma = sum(o["executed"] for o in ops if o["opcode"].startswith("FFMA"))
        c.check("opcodes", ffma >= LOOP_EXPECTED,
                ", ".join(f"{o['opcode'] or '(no SASS text)'} {o['executed']}" for o in ops[:6])
                + f"; FFMA expected >= {LOOP_EXPECTED}")
        with_text = sum(1 for _, i in every if i["sass"])
        c.check("sass text", with_text == len(every) and every,
                f"{with_text} of {len(every)} counted instructions with SASS text (nvdisasm at "
                "the end of profile)")
        report = json_of([cli, "analyze", "--json", trace], out, "analyze")
        fn = next((f for f in (report or {}).get("sass_counts", []) if "sc_loop" in f["name"]),
                  None)
        c.check("analyze", fn is not None and fn["counts"]["executed"] == total,
                f"analyze --json sass_counts: sc_loop {fn['counts']['executed'] if fn else '-'}, "
                f"kernel page {total}")
    code, text = run([cli, "profile", "-f", "--sass-counts", "--pc-sampling", "-o",
                      os.path.join(out, "refused.sbt"), "--", prog, "counts", "1"], out,
                     "refused")
    c.check("refused", code != 0 and "cannot be combined with --pc-sampling" in text,
            f"exit {code}: {text.strip().splitlines()[-1] if text.strip() else ''}")
    cost(c, cli, prog, out)


def main():
    c = Checks("SASSCOUNTS")
    cli, progs, out = sys.argv[1:4]
    os.makedirs(out, exist_ok=True)
    prog = os.path.join(progs, "sass_counts")
    if not os.access(prog, os.X_OK):
        c.skip_all(NAMES, f"{prog} not built (gpu/build-programs.sh)", expected=True)
    else:
        c.guarded(NAMES, lambda: checks(c, cli, prog, out))
    return c.summary()


if __name__ == "__main__":
    sys.exit(main())
