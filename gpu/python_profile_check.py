#!/usr/bin/env python3
"""GPU check of in-process capture from Python (run by scripts/gpu-check.sh `python`).

  python3 gpu/python_profile_check.py MODE OUT_DIR
MODE:
  inproc    warm-up steps, then `with tracesmith.profile(OUT/inproc.sbt)` around
            N steps (CUDA initialised long before start())
  range     the same N steps between torch.cuda.profiler.start()/stop(), for
            `tracesmith profile --capture-range=cudaProfilerApi` to record
  schedule  Profiler(schedule(wait=1, warmup=1, active=2, repeat=2)) over 10 steps:
            steps 2-3 into sched.sbt, 6-7 into sched.2.sbt (the capture restarts)
  taken     torch.profiler holds CUPTI: tracesmith.profile must raise
            TraceError and the program must go on
  replay    Profiler(replay_capture="launch:0-3") started before any CUDA work (a
            replay needs the module images, seen only as modules load while the
            capture runs), model built and 1 step run inside it; then
            tracesmith.replay(iterations=3): the same outcome as `tracesmith replay`
            (text verdicts, and per launch the same verdicts as `replay --json`)
  compare   (python_profile_check.py compare CLI OUT_DIR) inproc.sbt has exactly the
            kernels of range.sbt; sched.sbt exactly 2 steps' worth
  command   (python_profile_check.py command CLI OUT_DIR; needs _core) profile_command
            around the MLP workload: the kernels of `tracesmith profile` of it
  columns   (python_profile_check.py columns CLI OUT_DIR; needs the _core extension)
            inproc.sbt through tracesmith.load: the CLI's kernels in order, Python
            stacks naming this script, pandas' slowest kernel = the columns' one
Each step synchronizes, so the steps' kernels are exactly those between start and stop.
Needs PYTHONPATH to reach python/ and TRACESMITH_INJECT_LIB (or the package's _bin).

Every mode prints one `PYPROFILE <check>: ... -> PASS|FAIL|SKIP (reason)` line per
expectation and ends with the summary line "N passed, M failed, K skipped" (gpu/checks.py);
exit status 1 when a check failed or the mode was skipped where it was expected to run
(torch imports but has no CUDA on a machine with a GPU). Without torch, the modes SKIP.
"""
import os
import sys

from checks import Checks, torch_skip_reason

try:
    import torch
except Exception:  # noqa: BLE001 (main() says SKIP)
    torch = None

N = 5
MODES = ("inproc", "range", "schedule", "taken", "replay", "compare", "command", "columns")


def build():
    torch.manual_seed(0)
    model = torch.nn.Sequential(*[torch.nn.Sequential(torch.nn.Linear(512, 512), torch.nn.GELU(),
                                                      torch.nn.LayerNorm(512)) for _ in range(4)]).cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    x = torch.randn(32, 512, device="cuda")

    def step():
        opt.zero_grad(set_to_none=True)
        model(x).pow(2).mean().backward()
        opt.step()
        torch.cuda.synchronize()

    return step


def inproc(c, out, step):
    want = os.path.join(out, "inproc.sbt")
    with tracesmith.profile(want, overwrite=True) as p:
        for _ in range(N):
            step()
    got = p.last_trace or ""
    c.check("inproc", os.path.exists(got) and os.path.getsize(got) > 0 and
            os.path.realpath(got) == os.path.realpath(want),
            f"{N} steps in `with tracesmith.profile({want})`: wrote {got or None} "
            f"({os.path.getsize(got) if os.path.exists(got) else 0} bytes)")


def range_steps(c, step):
    torch.cuda.profiler.start()
    for _ in range(N):
        step()
    torch.cuda.profiler.stop()
    c.check("range", True, f"{N} steps ran between cudaProfilerStart and Stop (their kernels: "
            "`compare`)")


def schedule(c, out, step):
    ready = []
    p = tracesmith.Profiler(os.path.join(out, "sched.sbt"), overwrite=True,
                            schedule=tracesmith.schedule(wait=1, warmup=1, active=2, repeat=2),
                            on_trace_ready=lambda prof: ready.append(prof.last_trace))
    p.start()
    for _ in range(10):
        step()
        p.step()
    p.stop()
    names = [os.path.basename(t) for t in p.traces]
    written = all(os.path.exists(t) and os.path.getsize(t) > 0 for t in p.traces)
    c.check("schedule", names == ["sched.sbt", "sched.2.sbt"] and ready == p.traces and written,
            f"traces={p.traces} ready={ready} files_written={written} "
            f"(expected sched.sbt, sched.2.sbt, each announced once)")


def taken(c, out, step):
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]):
        step()
        try:
            with tracesmith.profile(os.path.join(out, "taken.sbt"), overwrite=True):
                step()
            c.fail("taken refused", "tracesmith.profile inside torch.profiler: NOT refused")
        except tracesmith.TraceError as e:
            c.check("taken refused", True, f"refused with TraceError: {e}")
    try:
        step()
        c.check("taken program went on", True, "a step after the refusal ran")
    except Exception as e:  # noqa: BLE001
        c.fail("taken program went on", f"the step after the refusal raised {e!r}")


def main(argv):
    if len(argv) < 2 or argv[0] not in MODES:
        print(__doc__)
        return 2
    mode = argv[0]
    c = Checks("PYPROFILE")
    names = {"taken": ["taken refused", "taken program went on"],
             "replay": REPLAY_CHECKS}.get(mode, [mode])
    # (compare, command and columns read the traces the torch modes wrote)
    skip = ("torch does not import", False) if torch is None else torch_skip_reason()
    if skip:
        c.skip_all(names, skip[0], skip[1])
        return c.summary()
    c.guarded(names, lambda: run_mode(c, mode, argv))
    return c.summary()


def run_mode(c, mode, argv):
    global tracesmith
    import tracesmith  # (PYTHONPATH=python, or the package built here)
    if mode == "compare":
        compare(c, argv[1], argv[2])
    elif mode == "columns":
        columns(c, argv[1], argv[2])
    elif mode == "command":
        command(c, argv[1], argv[2])
    elif mode == "replay":
        replay_check(c, argv[1])
    else:
        step = build()
        for _ in range(3):  # warm-up: allocator, cuBLAS handles, lazy module loads
            step()
        {"inproc": lambda: inproc(c, argv[1], step), "range": lambda: range_steps(c, step),
         "schedule": lambda: schedule(c, argv[1], step),
         "taken": lambda: taken(c, argv[1], step)}[mode]()


REPLAY_CHECKS = ["replay verdicts", "replay json", "replay range"]


def replay_check(c, out, workload=None):
    """tracesmith.replay against `tracesmith replay` of the same capture: a raise of the
    Python replay is a FAIL whatever the CLI did (the checks after it SKIP)."""
    import json
    import subprocess
    from tracesmith.__main__ import _find_cli
    path = os.path.join(out, "rc.sbt")
    with tracesmith.profile(path, overwrite=True, replay_capture="launch:0-3"):
        (workload or build())()
    cli = subprocess.run([_find_cli(), "replay", path, "--iterations", "3"], capture_output=True,
                         text=True)
    try:
        r = tracesmith.replay(path, iterations=3)
    except tracesmith.TraceError as e:
        c.fail("replay verdicts", f"tracesmith.replay raised TraceError: {e} (cli exit "
               f"{cli.returncode}: {cli.stderr.strip()[:300]})")
        c.skip_all(REPLAY_CHECKS[1:], "not run: tracesmith.replay raised")
        return
    # The reports' timings differ from run to run; the verdicts must not.
    def verdicts(text):
        return [line.strip() for line in text.splitlines()
                if "output:" in line or "addresses:" in line or "deterministic" in line]
    same = r.exit_code == cli.returncode and verdicts(r.report) == verdicts(cli.stdout + cli.stderr)
    print(f"PYPROFILE replay report head: " + " | ".join(r.report.splitlines()[:5]))
    c.check("replay verdicts", same and r.exit_code in (0, 4) and len(verdicts(r.report)) > 0,
            f"status={r.status} exit={r.exit_code} cli_exit={cli.returncode} "
            f"verdict_lines={len(verdicts(r.report))} same_verdicts={same}")
    # The structured result: the same per-launch verdicts as the CLI's --json,
    # one ReplayLaunch per "output:" line of the text report.
    p = subprocess.run([_find_cli(), "replay", path, "--iterations", "3", "--json"],
                       capture_output=True, text=True)
    try:
        doc = json.loads(p.stdout or "{}")
    except ValueError:
        doc = {}
    ours = [(l.index, l.status, l.deterministic, l.ranges_mapped_away) for l in r.launches]
    theirs = [(l["index"], l["status"], l["determinism"]["deterministic"],
               l["addresses"]["mapped_away"]) for l in doc.get("launches", [])]
    outputs = sum("output:" in v for v in verdicts(r.report))
    # The device line ends in the driver start time (differs between runs).
    device = (doc.get("device") or "").split(";")[0]
    same = (ours == theirs and len(ours) == outputs > 0 and device != ""
            and (r.device or "").split(";")[0] == device)
    c.check("replay json", same, f"launches={len(ours)} output_lines={outputs} "
            f"cli_exit_code={doc.get('summary', {}).get('exit_code')} same_launches={same}")
    # Launches 0..3 as one sequence: the same verdicts as `replay --range 0:3`.
    cli = subprocess.run([_find_cli(), "replay", path, "--range", "0:3"], capture_output=True,
                         text=True)
    try:
        r = tracesmith.replay(path, range=(0, 3))
    except tracesmith.TraceError as e:
        c.fail("replay range", f"tracesmith.replay(range=(0, 3)) raised TraceError: {e} "
               f"(cli exit {cli.returncode})")
        return
    same = r.exit_code == cli.returncode and verdicts(r.report) == verdicts(cli.stdout + cli.stderr)
    one = len(r.launches) == 1 and (r.launches[0].kind, r.launches[0].index,
                                     r.launches[0].last_index) == ("range", 0, 3)
    c.check("replay range", same and one and r.exit_code in (0, 4),
            f"status={r.status} exit={r.exit_code} cli_exit={cli.returncode} "
            f"verdict_lines={len(verdicts(r.report))} same_verdicts={same} one_range_launch={one}")


def kernel_names(cli, path):
    """Kernel names of a trace, in time order, from `tracesmith export -f csv`."""
    import csv
    import subprocess
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "k.csv")
        subprocess.run([cli, "export", path, "-f", "csv", "-o", out, "-q"], check=True)
        with open(out) as f:
            return [r["name"] for r in csv.DictReader(f) if r["kind"] == "kernel"]


def compare(c, cli, out):
    """inproc.sbt vs range.sbt (same N steps): the same kernels, in the same order;
    sched.sbt and sched.2.sbt: exactly 2 of those steps each."""
    files = [os.path.join(out, f) for f in ("inproc.sbt", "range.sbt", "sched.sbt", "sched.2.sbt")]
    missing = [os.path.basename(f) for f in files if not os.path.exists(f)]
    if missing:
        c.fail("compare", f"missing {missing} (the inproc, range and schedule modes write them)")
        return False
    a, b, s, s2 = (kernel_names(cli, f) for f in files)
    per_step = len(b) // N
    ok = (a == b and len(b) == N * per_step > 0 and s == b[: 2 * per_step]
          and s2 == b[: 2 * per_step])
    return c.check("compare", ok, f"inproc={len(a)} profile_range={len(b)} per_step={per_step} "
                   f"schedule={len(s)},{len(s2)} (expected {2 * per_step} each) "
                   f"identical_names={a == b}")


def columns(c, cli, out):
    """The in-process trace through tracesmith.load (the _core extension built on
    this machine): the kernels `tracesmith export` lists, in the same order; the
    launches' stacks resolve to this script's Python lines; the slowest kernel
    found with pandas (when installed) is the one the columns give."""
    import numpy as np
    import tracesmith
    path = os.path.join(out, "inproc.sbt")
    t = tracesmith.load(path)
    k = t.kernels
    order = np.argsort(k.start_ns, kind="stable")
    # (the CSV export names a kernel by its demangled name when it has one)
    names = [str(k.demangled[i]) or str(k.name[i]) for i in order]
    cli_names = kernel_names(cli, path)
    same = names == cli_names and len(names) > 0
    here = os.path.basename(__file__)
    with_line = sum(1 for sid in set(int(x) for x in k.stack_id) if sid and any(
        f.kind == "python" and f.file.endswith(here) for f in t.stack(sid)))
    slowest = int(np.argmax(k.duration_ns))
    try:
        import pandas  # noqa: F401
        df = k.to_pandas()
        pandas_ok = int(df.duration_ns.idxmax()) == slowest
        pandas_note = f"pandas_slowest_agrees={pandas_ok}"
    except ImportError:
        pandas_ok, pandas_note = True, "pandas=absent"
    return c.check("columns", same and with_line > 0 and pandas_ok,
                   f"python={sys.version.split()[0]} kernels={len(names)} "
                   f"cli_kernels={len(cli_names)} same_names_in_order={same} "
                   f"stacks_with_this_script={with_line} {pandas_note}")


def command(c, cli, out):
    """tracesmith.profile_command (capture::RunUnderCapture through _core) around the
    MLP workload: the same kernels, in the same order, as `tracesmith profile` of
    the same command, and native frames named (symbolized afterwards)."""
    import subprocess
    import tracesmith
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    prog = [sys.executable, os.path.join(root, "bench", "workloads", "torch_mlp_train.py"),
            "--steps", "3"]
    a, b = os.path.join(out, "cmd.sbt"), os.path.join(out, "cmd_cli.sbt")
    r = tracesmith.profile_command(prog, a, overwrite=True, quiet=True)
    subprocess.run([cli, "profile", "-q", "-f", "-o", b, "--", *prog], check=True,
                   stdout=subprocess.DEVNULL)
    ka, kb = kernel_names(cli, a), kernel_names(cli, b)
    t = tracesmith.load(a)
    named = any(f.kind == "native" and f.function
                for sid in set(int(x) for x in t.kernels.stack_id) if sid for f in t.stack(sid))
    return c.check("command", r.exit_code == 0 and r.files == [a] and ka == kb and len(ka) > 0
                   and named, f"exit={r.exit_code} files={len(r.files)} kernels={len(ka)} "
                   f"cli_kernels={len(kb)} same_names_in_order={ka == kb} "
                   f"native_frames_named={named}")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
