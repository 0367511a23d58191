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
"""
import os
import sys

import torch

import tracesmith

N = 5


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


def main():
    mode, out = sys.argv[1], sys.argv[2]
    if mode == "replay":
        return replay_check(out)
    step = build()
    for _ in range(3):  # warm-up: allocator, cuBLAS handles, lazy module loads
        step()
    if mode == "inproc":
        with tracesmith.profile(os.path.join(out, "inproc.sbt"), overwrite=True) as p:
            for _ in range(N):
                step()
        print(f"PYPROFILE inproc wrote {p.last_trace}")
    elif mode == "range":
        torch.cuda.profiler.start()
        for _ in range(N):
            step()
        torch.cuda.profiler.stop()
        print("PYPROFILE range done")
    elif mode == "schedule":
        ready = []
        p = tracesmith.Profiler(os.path.join(out, "sched.sbt"), overwrite=True,
                                schedule=tracesmith.schedule(wait=1, warmup=1, active=2, repeat=2),
                                on_trace_ready=lambda prof: ready.append(prof.last_trace))
        p.start()
        for _ in range(10):
            step()
            p.step()
        p.stop()
        print(f"PYPROFILE schedule traces={p.traces} ready={ready}")
    elif mode == "taken":
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]):
            step()
            try:
                with tracesmith.profile(os.path.join(out, "taken.sbt"), overwrite=True):
                    step()
                print("PYPROFILE taken: NOT refused")
            except tracesmith.TraceError as e:
                print(f"PYPROFILE taken: refused: {e}")
        step()
        print("PYPROFILE taken: program went on")




def replay_check(out):
    import json
    import subprocess
    from tracesmith.__main__ import _find_cli
    path = os.path.join(out, "rc.sbt")
    with tracesmith.profile(path, overwrite=True, replay_capture="launch:0-3"):
        build()()
    cli = subprocess.run([_find_cli(), "replay", path, "--iterations", "3"], capture_output=True,
                         text=True)
    try:
        r = tracesmith.replay(path, iterations=3)
    except tracesmith.TraceError as e:
        print(f"PYPROFILE replay raised TraceError: {e} (cli exit {cli.returncode}: "
              f"{cli.stderr.strip()[:300]}) -> {'PASS' if cli.returncode == 1 else 'FAIL'}")
        return
    # The reports' timings differ from run to run; the verdicts must not.
    def verdicts(text):
        return [line.strip() for line in text.splitlines()
                if "output:" in line or "addresses:" in line or "deterministic" in line]
    same = r.exit_code == cli.returncode and verdicts(r.report) == verdicts(cli.stdout + cli.stderr)
    print(f"PYPROFILE replay verdict lines={len(verdicts(r.report))}")
    print(f"PYPROFILE replay status={r.status} exit={r.exit_code} cli_exit={cli.returncode} "
          f"same_verdicts={same} -> {'PASS' if same and r.exit_code in (0, 4) else 'FAIL'}")
    print("PYPROFILE replay report head: " + " | ".join(r.report.splitlines()[:5]))
    # The structured result: the same per-launch verdicts as the CLI's --json,
    # one ReplayLaunch per "output:" line of the text report.
    doc = json.loads(subprocess.run([_find_cli(), "replay", path, "--iterations", "3", "--json"],
                                    capture_output=True, text=True).stdout or "{}")
    ours = [(l.index, l.status, l.deterministic, l.ranges_mapped_away) for l in r.launches]
    theirs = [(l["index"], l["status"], l["determinism"]["deterministic"],
               l["addresses"]["mapped_away"]) for l in doc.get("launches", [])]
    outputs = sum("output:" in v for v in verdicts(r.report))
    # The device line ends in the driver start time (differs between runs).
    device = (doc.get("device") or "").split(";")[0]
    same = (ours == theirs and len(ours) == outputs > 0 and device != ""
            and (r.device or "").split(";")[0] == device)
    print(f"PYPROFILE replay json launches={len(ours)} output_lines={outputs} "
          f"cli_exit_code={doc.get('summary', {}).get('exit_code')} same_launches={same} -> "
          f"{'PASS' if same else 'FAIL'}")
    # Launches 0..3 as one sequence: the same verdicts as `replay --range 0:3`.
    cli = subprocess.run([_find_cli(), "replay", path, "--range", "0:3"], capture_output=True,
                         text=True)
    try:
        r = tracesmith.replay(path, range=(0, 3))
    except tracesmith.TraceError as e:
        print(f"PYPROFILE replay range raised TraceError: {e} (cli exit {cli.returncode}) -> FAIL")
        return
    same = r.exit_code == cli.returncode and verdicts(r.report) == verdicts(cli.stdout + cli.stderr)
    one = len(r.launches) == 1 and (r.launches[0].kind, r.launches[0].index,
                                     r.launches[0].last_index) == ("range", 0, 3)
    print(f"PYPROFILE replay range status={r.status} exit={r.exit_code} cli_exit={cli.returncode} "
          f"verdict_lines={len(verdicts(r.report))} same_verdicts={same} one_range_launch={one} -> "
          f"{'PASS' if same and one and r.exit_code in (0, 4) else 'FAIL'}")


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


def compare(cli, out):
    """inproc.sbt vs range.sbt (same N steps): the same kernels, in the same order;
    sched.sbt and sched.2.sbt: exactly 2 of those steps each."""
    a = kernel_names(cli, os.path.join(out, "inproc.sbt"))
    b = kernel_names(cli, os.path.join(out, "range.sbt"))
    s = kernel_names(cli, os.path.join(out, "sched.sbt"))
    s2 = kernel_names(cli, os.path.join(out, "sched.2.sbt"))
    per_step = len(b) // N
    ok = (a == b and len(b) == N * per_step > 0 and s == b[: 2 * per_step]
          and s2 == b[: 2 * per_step])
    print(f"PYPROFILE compare inproc={len(a)} profile_range={len(b)} per_step={per_step} "
          f"schedule={len(s)},{len(s2)} (expected {2 * per_step} each) "
          f"identical_names={a == b} -> {'PASS' if ok else 'FAIL'}")
    return ok


def columns(cli, out):
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
    ok = same and with_line > 0 and pandas_ok
    print(f"PYPROFILE columns python={sys.version.split()[0]} kernels={len(names)} "
          f"cli_kernels={len(cli_names)} same_names_in_order={same} "
          f"stacks_with_this_script={with_line} {pandas_note} -> {'PASS' if ok else 'FAIL'}")
    return ok


def command(cli, out):
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
    ok = r.exit_code == 0 and r.files == [a] and ka == kb and len(ka) > 0 and named
    print(f"PYPROFILE command exit={r.exit_code} files={len(r.files)} kernels={len(ka)} "
          f"cli_kernels={len(kb)} same_names_in_order={ka == kb} native_frames_named={named} "
          f"-> {'PASS' if ok else 'FAIL'}")
    return ok


if __name__ == "__main__" and len(sys.argv) > 1 and sys.argv[1] == "command":
    sys.exit(0 if command(sys.argv[2], sys.argv[3]) else 1)
elif __name__ == "__main__" and len(sys.argv) > 1 and sys.argv[1] == "compare":
    sys.exit(0 if compare(sys.argv[2], sys.argv[3]) else 1)
elif __name__ == "__main__" and len(sys.argv) > 1 and sys.argv[1] == "columns":
    sys.exit(0 if columns(sys.argv[2], sys.argv[3]) else 1)
elif __name__ == "__main__":
    main()
