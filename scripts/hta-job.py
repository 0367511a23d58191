#!/usr/bin/env python3
"""Run HTA's (Holistic Trace Analysis) distributed analyses on a job's Kineto JSON export:
communication/computation overlap per rank and the potential stragglers. A dev tool for
docs/export.md; HTA is not part of TraceSmith: check its source out anywhere and put it on
PYTHONPATH (it needs pandas, numpy, plotly, networkx).

    tracesmith export -f json -o /tmp/job_kineto/ run/        # rank-N.json per rank
    PYTHONPATH=/path/to/HolisticTraceAnalysis python3 scripts/hta-job.py /tmp/job_kineto \\
        [--candidates 1] [--json out.json]

Prints one line per analysis: what HTA returned, or the exception it raised.
"""

import argparse
import io
import json
import sys
import traceback
from contextlib import redirect_stderr, redirect_stdout


def quiet(fn, *a, **kw):
    with redirect_stdout(io.StringIO()), redirect_stderr(io.StringIO()):
        return fn(*a, **kw)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("trace_dir", help="a directory of rank-N.json (tracesmith export -f json)")
    ap.add_argument("--candidates", type=int, default=1, help="stragglers HTA looks for")
    ap.add_argument("--json", help="also write the results here")
    a = ap.parse_args()
    try:
        from hta.trace_analysis import TraceAnalysis
    except ImportError as e:
        sys.exit(f"hta-job: HTA does not import ({e}): put its checkout on PYTHONPATH")
    out = {}
    try:
        t = quiet(TraceAnalysis, trace_dir=a.trace_dir)
    except Exception as e:  # noqa: BLE001 -- HTA's own failure is the finding
        sys.exit(f"hta-job: HTA could not load {a.trace_dir}: {type(e).__name__}: {e}")
    out["ranks"] = sorted(int(r) for r in t.t.traces)
    print(f"ranks loaded: {out['ranks']}")
    for name, call in (
            ("profiler steps", lambda: t.get_profiler_steps()),
            ("comm/comp overlap", lambda: t.get_comm_comp_overlap(visualize=False)),
            ("potential stragglers",
             lambda: t.get_potential_stragglers(num_candidates=a.candidates, visualize=False))):
        try:
            r = quiet(call)
            if hasattr(r, "to_dict"):
                r = r.to_dict(orient="records")
            out[name] = r
            print(f"{name}: {r}")
        except Exception as e:  # noqa: BLE001
            out[name] = f"error: {type(e).__name__}: {e}"
            print(f"{name}: ERROR {type(e).__name__}: {e}")
            traceback.print_exc(limit=3, file=sys.stderr)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=1, default=str)


if __name__ == "__main__":
    main()
