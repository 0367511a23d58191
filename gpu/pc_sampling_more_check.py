#!/usr/bin/env python3
"""GPU checks of `profile --kernel-timeout`, and of instruction sampling on CUDA-graph and Triton
kernels (issue #39; scripts/gpu-check.sh section `pcsampling`, after gpu/pc_sampling_check.py).

  python3 gpu/pc_sampling_more_check.py CLI PROGS OUT

  - hang: gpu/programs/pc_sampling_more hang (a kernel waits for a flag never set, launched from
    launch_spin) under `profile --kernel-timeout 2s --on-kernel-timeout exit`: the program is
    ended with status 124 within the timeout + 15 s; the message names pcs_spin and puts >= 90%
    of its samples on the spin line; the trace reads back (`analyze --json`): one kernel
    timeout, pcs_spin, running 2-4 s, launched from launch_spin, >= 90% of its samples on the
    spin line, the program ended;
  - long: `pc_sampling_more long 3` (a 3-s kernel) under `--kernel-timeout 1s`: reported once,
    the program not ended (exit 0, "done" printed), the kernel's row there (>= 2.5 s);
  - graph: `pc_sampling_more graph` (pcs_hot only as nodes of a CUDA graph launched from
    launch_graph, captured in capture_hot; pcs_fma launched directly) under --pc-sampling:
    pcs_hot's samples joined to capture_hot, the code that put the kernels in the graph (>= 99%;
    before the graph-node rows of 2026-11-30: to launch_graph), pcs_fma's to launch_fma (>= 99%);
  - triton: gpu/pc_sampling_triton.py under --pc-sampling: >= 90% of the Triton kernel's
    samples on lines of that file, the hottest its loop line, and >= 99% joined to the
    launching Python line;
  - drops counted: pc_sampling_target at 2^10 with a 1-MiB hardware buffer
    (TRACESMITH_PC_SAMPLING_HW_BUFFER_MB=1): the losses are counted as data loss (`info`) and
    said by profile's summary, never silent.
One `PCSMORE <check>: ... -> PASS|FAIL|SKIP` line per expectation, then the summary line.
"""
import json
import os
import re
import signal
import subprocess
import sys
import time

from checks import Checks


def run(cmd, out, name, timeout=300):
    t0 = time.monotonic()
    # A session of its own: on a timeout the whole process group goes (a hung program would
    # otherwise keep its kernel on the GPU for the checks after it).
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         start_new_session=True)
    try:
        text, _ = p.communicate(timeout=timeout)
        code = p.returncode
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        text, _ = p.communicate()
        code = "timeout"
    wall = time.monotonic() - t0
    with open(os.path.join(out, name + ".out"), "w") as f:
        f.write(" ".join(cmd) + f"\n(exit {code}, {wall:.1f} s)\n" + text)
    return code, text, wall


def analyze(cli, path, out, name):
    p = subprocess.run([cli, "analyze", "--json", path], capture_output=True, text=True,
                       timeout=300)
    with open(os.path.join(out, name + ".json"), "w") as f:
        f.write(p.stdout + p.stderr)
    return json.loads(p.stdout) if p.returncode == 0 else None


def fn(report, key):
    fns = report.get("gpu_samples", {}).get("functions", [])
    return next((f for f in fns if key in f["name"]), None)


def share(entries, key, field):
    return sum(x["share_pct"] for x in entries if key in x[field])


def hang_checks(c, cli, progs, out):
    path = os.path.join(out, "hang.sbt")
    code, text, wall = run([cli, "profile", "-f", "--kernel-timeout", "2s", "--on-kernel-timeout",
                            "exit", "-o", path, "--", os.path.join(progs, "pc_sampling_more"),
                            "hang"], out, "hang", timeout=120)
    spin = re.search(r"spin line (\S+):(\d+)", text)
    spin_at = f"{os.path.basename(spin.group(1))}:{spin.group(2)}" if spin else "?"
    msg = re.search(r"kernel timeout: (pcs_spin\S*).*\n.*\n\s+([0-9.]+)%\s+(\S+)", text)
    c.check("hang ended", code == 124 and wall <= 2 + 15,
            f"exit {code} after {wall:.1f} s (need 124 within 17 s)")
    c.check("hang message", msg and msg.group(3).endswith(spin_at) and float(msg.group(2)) >= 90,
            f"message: {msg.group(0).splitlines()[0][:120] if msg else 'none'}; top line "
            f"{msg.group(3) if msg else '?'} {msg.group(2) if msg else '?'}% (need {spin_at} "
            ">= 90%)")
    r = analyze(cli, path, out, "hang")
    t = (r or {}).get("kernel_timeouts", [])
    k = t[0] if t else {}
    lines = k.get("lines", [])
    on_spin = sum(x["share_pct"] for x in lines
                  if spin and x["file"].endswith(os.path.basename(spin.group(1)))
                  and x["line"] == int(spin.group(2)))
    c.check("hang trace", len(t) == 1 and k.get("name", "").startswith("pcs_spin")
            and 2e9 <= k.get("running_ns", 0) <= 4e9 and "launch_spin" in k.get("site", "")
            and on_spin >= 90 and k.get("ended_program") is True,
            f"{len(t)} timeout(s): {k.get('name', '')[:40]} running "
            f"{k.get('running_ns', 0) / 1e9:.2f} s, site {k.get('site', '')[:60]}, "
            f"{on_spin:.1f}% on {spin_at}, ended {k.get('ended_program')} (need 1, pcs_spin, 2-4 s, "
            "launch_spin, >= 90%, ended)")


def long_checks(c, cli, progs, out):
    path = os.path.join(out, "long.sbt")
    code, text, wall = run([cli, "profile", "-f", "--kernel-timeout", "1s", "-o", path, "--",
                            os.path.join(progs, "pc_sampling_more"), "long", "3"], out, "long",
                           timeout=120)
    r = analyze(cli, path, out, "long") or {}
    t = r.get("kernel_timeouts", [])
    spin = next((k for k in r.get("kernels", []) if k["name"].startswith("pcs_spin")), None)
    spin_ns = spin["duration"]["total_ns"] if spin and "duration" in spin else 0
    c.check("long kernel", code == 0 and "long: done" in text and len(t) == 1
            and t[0].get("ended_program") is False and text.count("tracesmith: kernel timeout:") == 1
            and spin_ns >= 2.5e9,
            f"exit {code} after {wall:.1f} s, done printed {'long: done' in text}, "
            f"{len(t)} timeout row(s), {text.count('tracesmith: kernel timeout:')} message(s), "
            f"pcs_spin row {spin_ns / 1e9:.2f} s (need exit 0, done, 1 row not ended, 1 message, >= 2.5 s)")


def graph_checks(c, cli, progs, out):
    path = os.path.join(out, "graph.sbt")
    code, text, _ = run([cli, "profile", "-q", "-f", "--pc-sampling", "-o", path, "--",
                         os.path.join(progs, "pc_sampling_more"), "graph"], out, "graph")
    r = analyze(cli, path, out, "graph") or {}
    hot, fma = fn(r, "pcs_hot"), fn(r, "pcs_fma")
    ph = share(hot["sites"], "capture_hot", "site") if hot else 0
    pf = share(fma["sites"], "launch_fma", "site") if fma else 0
    c.check("graph", code == 0 and hot and fma and ph >= 99 and pf >= 99,
            f"exit {code}; pcs_hot (graph nodes) {hot['samples'] if hot else 0} samples, "
            f"{ph:.2f}% joined to capture_hot; pcs_fma {pf:.2f}% to launch_fma (need >= 99% each)")


def triton_checks(c, cli, out):
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "pc_sampling_triton.py")
    path = os.path.join(out, "triton.sbt")
    code, text, _ = run([cli, "profile", "-q", "-f", "--pc-sampling", "-o", path, "--",
                         sys.executable, script], out, "triton")
    hot = re.search(r"hot line (\S+):(\d+)", text)
    launch = re.search(r"launch line (\S+):(\d+)", text)
    if code != 0 or not hot:
        c.fail("triton", f"exit {code}: {text[-300:]}")
        return
    r = analyze(cli, path, out, "triton") or {}
    f = fn(r, "pcs_triton_hot")
    lines = f["lines"] if f else []
    in_file = sum(x["share_pct"] for x in lines if x["file"].endswith("pc_sampling_triton.py"))
    top = lines[0] if lines else {"file": "", "line": 0, "share_pct": 0}
    site = share(f["sites"], f"pc_sampling_triton.py:{launch.group(2)}", "site") if f else 0
    c.check("triton", f and in_file >= 90 and top["line"] == int(hot.group(2)) and site >= 99,
            f"pcs_triton_hot {f['samples'] if f else 0} samples, {in_file:.1f}% on lines of "
            f"pc_sampling_triton.py (the listed ones), hottest {os.path.basename(top['file'])}:"
            f"{top['line']} {top['share_pct']:.1f}% (loop line {hot.group(2)}), {site:.1f}% "
            f"joined to the launch line {launch.group(2) if launch else '?'} (need >= 90%, the "
            "loop line, >= 99%)")


def drop_checks(c, cli, progs, out):
    """An undersized hardware buffer (1 MiB) at a dense period (2^10): losses counted, said."""
    path = os.path.join(out, "drops.sbt")
    env = dict(os.environ, TRACESMITH_PC_SAMPLING_HW_BUFFER_MB="1")
    cmd = [cli, "profile", "-f", "--pc-sampling-period", "10", "-o", path, "--",
           os.path.join(progs, "pc_sampling_target"), "1", "100"]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env)
    info = subprocess.run([cli, "info", path], capture_output=True, text=True, timeout=120)
    with open(os.path.join(out, "drops.out"), "w") as f:
        f.write(" ".join(cmd) + f"\n(exit {p.returncode})\n" + p.stdout + p.stderr + info.stdout)
    lost = re.findall(r"(pc_sampling\.(?:hardware_buffer_full|dropped_samples))\s+([1-9]\d*)\s+"
                      r"\(DATA LOSS\)", info.stdout)
    said = re.findall(r"data loss: (pc_sampling\.\S+) (\d+)", p.stderr)
    c.check("drops counted", p.returncode == 0 and lost and said,
            f"exit {p.returncode}; info: {lost}; profile's summary: {said} (need a counted, "
            "said loss)")


def main():
    cli, progs, out = sys.argv[1:4]
    os.makedirs(out, exist_ok=True)
    c = Checks("PCSMORE")
    c.guarded(["hang ended", "hang message", "hang trace"], lambda: hang_checks(c, cli, progs, out))
    c.guarded(["long kernel"], lambda: long_checks(c, cli, progs, out))
    c.guarded(["graph"], lambda: graph_checks(c, cli, progs, out))
    c.guarded(["drops counted"], lambda: drop_checks(c, cli, progs, out))
    try:
        import triton  # noqa: F401
        c.guarded(["triton"], lambda: triton_checks(c, cli, out))
    except ImportError:
        c.skip("triton", "no triton on this machine")
    for f in os.listdir(out):  # traces are large; the logs and JSON stay
        if f.endswith(".sbt") or f.endswith(".cubins"):
            subprocess.run(["rm", "-rf", os.path.join(out, f)])
    sys.exit(c.summary())


if __name__ == "__main__":
    main()
