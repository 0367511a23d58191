#!/usr/bin/env python3
"""Run every public analysis of HTA (Holistic Trace Analysis) on two Kineto JSON traces of one
workload -- TraceSmith's export and torch.profiler's -- and print a table: analysis | ours |
torch's | agree. A dev tool for docs/export.md ("Read by HTA"); HTA is not part of TraceSmith:
check its source out anywhere and put it on PYTHONPATH (it needs pandas, numpy, plotly, networkx).

    tracesmith export -f json -o /tmp/ts.json capture.sbt
    HTA_DISABLE_NS_ROUNDING=1 PYTHONPATH=/path/to/HolisticTraceAnalysis \\
        python3 scripts/hta-compare.py /tmp/ts.json torch_trace.json.gz [--json out.json]

Each trace is copied into a directory of its own and loaded as rank 0, all steps included (the
files HTA writes go to temporary directories, removed at the end). "agree" is "yes" when both
traces give a result and every number both have is within 2% (relative; shares in percentage
points: 2 points), "no: <the metrics that differ>" otherwise, "n/a" when a side has no data (the
reason is printed), and "error" when the analysis raised on a side.
"""

import argparse
import io
import json
import math
import os
import shutil
import sys
import tempfile
import traceback
from contextlib import redirect_stderr, redirect_stdout

TOL = 0.02


def _quiet(fn, *a, **kw):
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        return fn(*a, **kw)


def _rel(a, b):
    if a is None or b is None:
        return None
    if a == b:
        return 0.0
    return abs(a - b) / max(abs(a), abs(b))


def _steps(ta, _):
    s = ta.get_profiler_steps()
    return {"steps": len(s)}, f"{len(s)} steps {s[:1]}..{s[-1:]}" if s else "no steps"


def _temporal(ta, _):
    df = ta.get_temporal_breakdown(visualize=False)
    r = df.iloc[0]
    return (
        {
            "idle %": float(r["idle_time_pctg"]),
            "compute %": float(r["compute_time_pctg"]),
            "non-compute %": float(r["non_compute_time_pctg"]),
            "compute ms": float(r["compute_time(us)"]) / 1e3,
        },
        None,
    )


def _kernel_breakdown(ta, _):
    by_type, kernels = ta.get_gpu_kernel_breakdown(visualize=False, num_kernels=5)
    m = {}
    for _, r in by_type.iterrows():
        m[f"{r['kernel_type']} %"] = float(r["percentage"])
    k = kernels.sort_values("sum (us)", ascending=False)
    total = float(by_type["sum"].sum())
    top = k[~k["name"].str.startswith("others")].head(5)
    m["top-5 kernels %"] = 100.0 * float(top["sum (us)"].sum()) / total
    m["kernel ms"] = total / 1e3
    return m, None


def _kernels_with_annotations(ta, _):
    df = ta.get_gpu_kernels_with_user_annotations(rank=0)
    if df is None or df.empty:
        return None, "no kernels"
    annotated = df["user_annotation"].ge(0) if "user_annotation" in df else None
    n = int(annotated.sum()) if annotated is not None else 0
    m = {"kernels": len(df), "annotated kernels": n}
    if "s_user_annotation" in df:
        opt = df[df["s_user_annotation"].astype(str).str.contains("Optimizer.step")]
        m["kernels in Optimizer.step"] = len(opt)
        m["their GPU ms"] = float(opt["dur"].sum()) / 1e3
    return m, None


def _user_annotation(ta, _):
    out, errors = {}, []
    for gpu in (True, False):
        key = "gpu" if gpu else "cpu"
        try:
            df = ta.get_gpu_user_annotation_breakdown(use_gpu_annotation=gpu, visualize=False)
        except Exception as e:  # noqa: BLE001
            errors.append(f"{key}: {type(e).__name__} {e}")
            continue
        if df is None or df.empty:
            continue
        out[f"{key} annotations"] = len(df)
        for _, r in df.iterrows():
            if "Optimizer.step" in str(r["name"]):
                out[f"{key} Optimizer.step ms"] = float(r["sum (us)"]) / 1e3
    why = "; ".join(errors) or "no user annotations"
    return (out or None), (why if not out or errors else None)


def _frequent(ta, ctx):
    out = {}
    for op in ctx["freq_ops"]:
        df = ta.get_frequent_cuda_kernel_sequences(
            op, ctx["tmp"], min_pattern_len=3, top_k=5, visualize=False
        )
        if df is not None and not df.empty:
            out[f"{op}: patterns"] = len(df)
            out[f"{op}: top count"] = int(df["count"].max())
    return (out or None), (None if out else "no sequences for " + ", ".join(ctx["freq_ops"]))


def _aten_delay(ta, _):
    d = ta.get_aten_op_kernels_and_delay()
    df = d.get(0)
    if df is None or df.empty:
        return None, "no aten ops"
    lin = df[df["aten_op_name"].eq("aten::linear")]
    m = {"aten op paths": len(df), "occurrences": int(df["occurrence_count"].sum())}
    if not lin.empty:
        m["aten::linear occurrences"] = int(lin["occurrence_count"].sum())
    w = df["occurrence_count"]
    m["mean runtime delay us"] = float((df["avg_runtime_delay"] * w).sum() / w.sum())
    m["mean aten op launch delay us"] = float((df["avg_aten_op_launch_delay"] * w).sum() / w.sum())
    return m, None


def _launch_stats(ta, _):
    df = ta.get_cuda_kernel_launch_stats(visualize=False)[0]
    return (
        {
            "launches": len(df),
            "launch delay median us": float(df["launch_delay"].median()),
            "cpu duration median us": float(df["cpu_duration"].median()),
            "gpu duration ms": float(df["gpu_duration"].sum()) / 1e3,
        },
        None,
    )


def _with_counters(ta, _):
    ta.generate_trace_with_counters()
    return {"written": 1}, None


def _queue_summary(ta, _):
    df = ta.get_queue_length_summary()
    if df is None or df.empty:
        return None, "empty"
    q = df.xs("queue_length", axis=1, level=0) if df.columns.nlevels > 1 else df
    return {"streams": len(q), "queue max": float(q["max"].max()), "mean": float(q["mean"].max())}, None


def _queue_series(ta, ctx):
    d = ta.get_queue_length_time_series()
    ctx["qlen"] = d
    n = sum(len(v) for v in d.values())
    return ({"points": n} if n else None), (None if n else "empty")


def _queue_from_series(ta, ctx):
    df = ta.get_queue_length_summary_from_time_series(ctx.get("qlen") or {})
    if df is None or df.empty:
        return None, "empty"
    return {"rows": len(df)}, None


def _blocked(ta, ctx):
    df = ta.get_time_spent_blocked_on_full_queue(ctx.get("qlen") or {})
    if df is None or df.empty:
        return None, "never at the maximum queue length"
    return {"blocked ms": float(df["duration_at_max_queue_length"].sum()) / 1e3}, None


def _bw_summary(ta, _):
    df = ta.get_memory_bw_summary()
    if df is None or df.empty:
        return None, "empty"
    m = {}
    for (_, name), r in df["memory_bw_gbps"].iterrows():
        m[f"{name} count"] = int(r["count"])
        m[f"{name} mean GB/s"] = float(r["mean"])
    return m, None


def _bw_series(ta, _):
    d = ta.get_memory_bw_time_series()
    n = sum(len(v) for v in d.values())
    return ({"points": n} if n else None), (None if n else "empty")


def _idle(ta, _):
    df, _ = ta.get_idle_time_breakdown(visualize=False)
    m = {}
    tot = {}
    for _, r in df.iterrows():
        tot[r["idle_category"]] = tot.get(r["idle_category"], 0.0) + float(r["idle_time"])
    s = sum(tot.values())
    for k, v in tot.items():
        m[f"{k} %"] = 100.0 * v / s if s else 0.0
    m["idle ms"] = s / 1e3
    return m, None


def _cupti_counters(ta, _):
    d = ta.get_cupti_counter_data_with_operators()
    n = sum(len(x) for x in d)
    return ({"rows": n} if n else None), (None if n else "no cuda_profiler_range events")


def _comm_overlap(ta, _):
    df = ta.get_comm_comp_overlap(visualize=False)
    if df is None or df.empty:
        return None, "empty"
    v = float(df.iloc[0]["comp_comm_overlap_pctg"])
    if math.isnan(v):
        return None, "no communication kernels (overlap NaN)"
    return {"overlap %": v}, None


def _stragglers(ta, _):
    s = ta.get_potential_stragglers(num_candidates=1)
    return {"candidates": len(s)}, None


def _cp(annotation, instance):
    def run(ta, ctx):
        r = ta.critical_path_analysis(rank=0, annotation=annotation, instance_id=instance)
        if r is None:
            return None, f"no '{annotation}' annotation"
        g, ok = r
        if not ok:
            return None, "analysis failed"
        ctx["cp"] = g
        edf = g.get_critical_path_breakdown()
        total = float(edf["duration"].sum())
        m = {"critical path ms": total / 1e3}
        for k, v in edf.groupby("bound_by")["duration"].sum().items():
            if k and v:  # HTA labels zero-weight edges ""
                m[f"{k} %"] = 100.0 * float(v) / total if total else 0.0
        lo, hi = _region(ta, annotation, instance)
        if hi > lo:  # coverage: the path's length over the window's wall time
            m["coverage %"] = 100.0 * total / (hi - lo)
        return m, None

    return run


def _region(ta, annotation, instance):
    df = ta.t.get_trace(0)
    if not annotation:
        return float(df["ts"].min()), float((df["ts"] + df["dur"]).max())
    sym = ta.t.symbol_table.get_sym_id_map()
    ids = [i for n, i in sym.items() if annotation in n]
    sel = df[df["name"].isin(ids)].iloc[instance : instance + 1]
    return float(sel["ts"].min()), float((sel["ts"] + sel["dur"]).max())


def _overlay(ta, ctx):
    g = ctx.get("cp")
    if g is None:
        return None, "no critical path to overlay"
    path = ta.overlay_critical_path_analysis(0, g, ctx["tmp"])
    return {"written": 1 if path else 0}, None


ANALYSES = [
    ("get_profiler_steps", _steps),
    ("get_temporal_breakdown", _temporal),
    ("get_gpu_kernel_breakdown", _kernel_breakdown),
    ("get_gpu_kernels_with_user_annotations", _kernels_with_annotations),
    ("get_gpu_user_annotation_breakdown", _user_annotation),
    ("get_idle_time_breakdown", _idle),
    ("get_cuda_kernel_launch_stats", _launch_stats),
    ("get_aten_op_kernels_and_delay", _aten_delay),
    ("get_frequent_cuda_kernel_sequences", _frequent),
    ("get_queue_length_summary", _queue_summary),
    ("get_queue_length_time_series", _queue_series),
    ("get_queue_length_summary_from_time_series", _queue_from_series),
    ("get_time_spent_blocked_on_full_queue", _blocked),
    ("get_memory_bw_summary", _bw_summary),
    ("get_memory_bw_time_series", _bw_series),
    ("generate_trace_with_counters", _with_counters),
    ("get_cupti_counter_data_with_operators", _cupti_counters),
    ("get_comm_comp_overlap", _comm_overlap),
    ("get_potential_stragglers", _stragglers),
    ("critical_path_analysis (whole trace)", _cp("", (0, 0))),
    ("critical_path_analysis (ProfilerStep#1)", _cp("ProfilerStep", 1)),
    ("critical_path_analysis (Optimizer.step, 2nd)", _cp("Optimizer.step", 1)),
    ("overlay_critical_path_analysis", _overlay),
]


def run_all(trace, freq_ops):
    from hta.trace_analysis import TraceAnalysis

    # A fresh directory per trace, as rank 0: generate_trace_with_counters writes next to it.
    trace_dir = tempfile.mkdtemp(prefix="hta-trace-")
    shutil.copy(trace, trace_dir)
    # All steps: torch.profiler without a schedule writes no ProfilerStep, so HTA keeps its whole
    # trace; with steps it would drop the last one.
    ta = _quiet(TraceAnalysis, trace_dir=trace_dir, include_last_profiler_step=True)
    tmp = tempfile.mkdtemp(prefix="hta-out-")
    ctx = {"tmp": tmp, "freq_ops": freq_ops}
    res = {}
    for name, fn in ANALYSES:
        try:
            m, why = _quiet(fn, ta, ctx)
            res[name] = {"metrics": m, "why": why}
        except Exception as e:  # noqa: BLE001 -- an analysis failing is a result here
            tb = traceback.extract_tb(e.__traceback__)[-1]
            where = f"{os.path.basename(tb.filename)}:{tb.lineno}"
            res[name] = {"error": f"{type(e).__name__} {e!s:.80} ({where})"}
    shutil.rmtree(trace_dir, ignore_errors=True)
    shutil.rmtree(tmp, ignore_errors=True)
    return res


def compare(a, b):
    """'yes', 'no: <the metrics that differ>', 'n/a' or 'error'."""
    if "error" in a or "error" in b:
        return "error"
    ma, mb = a["metrics"], b["metrics"]
    shared = [k for k in (ma or {}) if k in (mb or {})]
    if not shared:
        return "n/a"
    differ = []
    for k in shared:
        d = abs(ma[k] - mb[k]) / 100.0 if k.endswith("%") else _rel(ma[k], mb[k])
        if d > TOL:
            differ.append(k)
    return "yes" if not differ else "no: " + ", ".join(differ)


def fmt(r):
    if "error" in r:
        return "error: " + r["error"]
    if not r["metrics"]:
        return "none: " + (r["why"] or "")
    if r.get("why"):
        return _fmt_metrics(r["metrics"]) + " (" + r["why"] + ")"
    return _fmt_metrics(r["metrics"])


def _fmt_metrics(m):
    return ", ".join(f"{k} {v:.4g}" if isinstance(v, float) else f"{k} {v}" for k, v in m.items())


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("ours", help="TraceSmith's Kineto JSON (tracesmith export -f json)")
    ap.add_argument("torch", help="torch.profiler's trace (.json or .json.gz)")
    ap.add_argument("--freq-op", action="append", default=None,
                    help="operator names for get_frequent_cuda_kernel_sequences "
                    "(default: aten::linear, Optimizer.step)")
    ap.add_argument("--json", help="also write the results here")
    a = ap.parse_args()
    ops = a.freq_op or ["aten::linear", "Optimizer.step"]
    ours, torch = run_all(a.ours, ops), run_all(a.torch, ops)
    print("| analysis | ours | torch's | agree |")
    print("|---|---|---|---|")
    for name, _ in ANALYSES:
        print(f"| {name} | {fmt(ours[name])} | {fmt(torch[name])} | {compare(ours[name], torch[name])} |")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"ours": ours, "torch": torch}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
