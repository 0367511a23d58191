#!/usr/bin/env python3
"""GPU check of the program's own events (issue #42): a small torch training loop calls
tracesmith.counter("loss", ...) and tracesmith.counter("tokens/s", ...) every step and
runs its evaluation inside `with tracesmith.range("eval")`, under `tracesmith profile`;
the loop prints every value it reported. Then:
  recorded      every call is a row (STEPS loss values, STEPS eval ranges), the values exact
  threads       the rows carry the loop's thread
  analyze       analyze --json gives each counter per step, the loss mean of a step equal
                to the value the loop reported in it
  perfetto      the Perfetto export holds the counter track and the eval slices
  kineto        the Kineto JSON holds the "C" counter events and user_annotation ranges
  capture range under --capture-range=cudaProfilerApi (cudaProfilerStart before step 11,
                cudaProfilerStop after step 20) only steps 11-20's counters and ranges
One `APPEVENTS <check>: <figures> -> PASS|FAIL|SKIP` line per expectation, then the summary.
Usage: app_events_check.py TRACESMITH_CLI OUT_DIR   (PYTHONPATH must reach the package)
"""
import json
import os
import subprocess
import sys

from checks import Checks, torch_skip_reason

STEPS = 30
LOOP = r"""
import sys, threading, time, torch, tracesmith
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.ReLU(),
                            torch.nn.Linear(512, 10)).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.05)
x = torch.randn(512, 256, device="cuda"); y = torch.randint(0, 10, (512,), device="cuda")
print("TID", threading.get_native_id())
for step in range(1, STEPS + 1):
    with tracesmith.range(f"step {step}"):
        t0 = time.perf_counter()
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward(); opt.step()
        value = loss.item()
        tracesmith.counter("loss", value)
        with tracesmith.range("eval"):
            with torch.no_grad():
                model(x).argmax(1).eq(y).float().mean().item()
        tps = 512 / (time.perf_counter() - t0)
        tracesmith.counter("tokens/s", tps)
        print("VALUE", step, repr(value), repr(tps))
""".replace("STEPS", str(STEPS))
# The same loop under --capture-range=cudaProfilerApi, the range on from step 11 (before its
# "step 11" range begins) to the end of step 20: only those 10 steps' calls are recorded.
IN_RANGE = range(11, 21)
_FOR = f"for step in range(1, {STEPS} + 1):\n"
RANGE_LOOP = (LOOP.replace(_FOR, _FOR + "    if step == 11: torch.cuda.profiler.start()\n") +
              "    if step == 20: torch.cuda.synchronize(); torch.cuda.profiler.stop()\n")


def main():
    cli, out = sys.argv[1:3]
    os.makedirs(out, exist_ok=True)
    c = Checks("APPEVENTS")
    names = ["run", "recorded", "values exact", "threads", "analyze per step", "perfetto",
             "kineto", "capture range"]
    why = torch_skip_reason()
    if why:
        c.skip_all(names, why[0], why[1])
        sys.exit(c.summary())
    c.guarded(names, lambda: checks(c, cli, out))
    sys.exit(c.summary())


def checks(c, cli, out):
    script = os.path.join(out, "train_loop.py")
    with open(script, "w") as f:
        f.write(LOOP)
    trace = os.path.join(out, "app.sbt")
    r = subprocess.run([cli, "profile", "-q", "-f", "-o", trace, "--", sys.executable, script],
                       capture_output=True, text=True, timeout=300)
    with open(os.path.join(out, "run.log"), "w") as f:
        f.write(r.stdout + r.stderr)
    if not c.check("run", r.returncode == 0, f"exit {r.returncode}"):
        raise RuntimeError(r.stderr[-500:])
    reported = {}
    tid = 0
    for line in r.stdout.splitlines():
        if line.startswith("VALUE "):
            _, step, value, tps = line.split()
            reported[int(step)] = (float(value), float(tps))
        elif line.startswith("TID "):
            tid = int(line.split()[1])
    import tracesmith
    t = tracesmith.load(trace)
    cn = list(t.app_counters["name"])
    cv = list(t.app_counters["value"])
    loss = [v for n, v in zip(cn, cv) if n == "loss"]
    tps = [v for n, v in zip(cn, cv) if n == "tokens/s"]
    en = list(t.app_events["name"])
    evals = en.count("eval")
    c.check("recorded", len(loss) == STEPS and len(tps) == STEPS and evals == STEPS,
            f"{len(loss)} loss, {len(tps)} tokens/s values, {evals} eval ranges of {STEPS} steps")
    want_loss = [reported[s][0] for s in sorted(reported)]
    want_tps = [reported[s][1] for s in sorted(reported)]
    c.check("values exact", loss == want_loss and tps == want_tps,
            f"loss {loss[:2]}... vs reported {want_loss[:2]}...")
    tids = set(t.app_counters["tid"]) | set(t.app_events["tid"])
    c.check("threads", tids == {tid}, f"rows' threads {sorted(tids)}, the loop's {tid}")
    a = subprocess.run([cli, "analyze", "--json", trace], capture_output=True, text=True)
    rep = json.loads(a.stdout)
    counters = {x["name"]: x for x in rep.get("app_counters", {}).get("counters", [])}
    steps = counters.get("loss", {}).get("steps", [])
    means = [s["mean"] for s in steps if s["values"]]
    c.check("analyze per step", len(steps) >= STEPS - 3 and
            all(any(abs(m - v) <= 1e-12 * max(1, abs(v)) for v in want_loss) for m in means),
            f"{len(steps)} steps ({rep.get('steps', {}).get('method', '?')}), "
            f"{len(means)} with a loss value, each one of the reported values")
    pf = os.path.join(out, "app.pftrace")
    e = subprocess.run([cli, "export", "-f", "perfetto", "-o", pf, trace], capture_output=True,
                       text=True)
    blob = open(pf, "rb").read() if e.returncode == 0 else b""
    c.check("perfetto", b"Counter: loss" in blob and b"eval" in blob,
            f"export exit {e.returncode}, {len(blob)} bytes")
    js = os.path.join(out, "app.json")
    e = subprocess.run([cli, "export", "-f", "json", "-o", js, trace], capture_output=True,
                       text=True)
    ev = json.load(open(js))["traceEvents"] if e.returncode == 0 else []
    cs = [x["args"]["loss"] for x in ev if x.get("ph") == "C" and x.get("name") == "loss"]
    ua = [x for x in ev if x.get("cat") == "user_annotation" and x.get("name") == "eval"]
    c.check("kineto", cs == want_loss and len(ua) == STEPS,
            f"{len(cs)} loss counter events, {len(ua)} eval user_annotations")
    capture_range(c, cli, out)


def capture_range(c, cli, out):
    script = os.path.join(out, "train_loop_range.py")
    with open(script, "w") as f:
        f.write(RANGE_LOOP)
    trace = os.path.join(out, "app_range.sbt")
    r = subprocess.run([cli, "profile", "-q", "-f", "--capture-range=cudaProfilerApi", "-o", trace,
                        "--", sys.executable, script], capture_output=True, text=True, timeout=300)
    with open(os.path.join(out, "run_range.log"), "w") as f:
        f.write(r.stdout + r.stderr)
    reported = {}
    for line in r.stdout.splitlines():
        if line.startswith("VALUE "):
            _, step, value, _tps = line.split()
            reported[int(step)] = float(value)
    import tracesmith
    t = tracesmith.load(trace)
    loss = [v for n, v in zip(t.app_counters["name"], t.app_counters["value"]) if n == "loss"]
    en = list(t.app_events["name"])
    steps = sorted(int(n.split()[1]) for n in en if n.startswith("step "))
    want = [reported[s] for s in IN_RANGE if s in reported]
    c.check("capture range", r.returncode == 0 and loss == want and en.count("eval") == 10 and
            steps == list(IN_RANGE),
            f"exit {r.returncode}; {len(loss)} loss values (want steps 11-20's {len(want)}), "
            f"{en.count('eval')} eval ranges, step ranges {steps[:3]}..{steps[-2:]}")


if __name__ == "__main__":
    main()
