"""tracesmith.replay's structured result: `tracesmith replay --json` parsed into
ReplayResult.launches (no GPU here: GPU documents are canned, in the schema of
docs/replay-format.md, "Results as JSON"; --dry-run --json runs for real)."""

import json
import subprocess

import pytest

import tracesmith
from tracesmith import _replay

REPORT = ("GPU replay of cap.sbt on NVIDIA H200 (sm_90), driver 13.0; driver and context start "
          "95.1 ms\ndevice memory: 2 range(s), 4.0 MiB, 1 at the captured addresses, 1 mapped "
          "away; 1.2 ms\nlaunch 0  scale\n  output: identical to the capture (4.0 KiB compared)\n")


def _compare(differing=0, address=None, abs_err=None, rel_err=None):
    return {"bytes_compared": 4096, "bytes_differing": differing, "first_diff_address": address,
            "float32_words_differing": 1 if abs_err is not None else 0,
            "max_abs_error": abs_err, "max_rel_error": rel_err}


def _launch(index, status, *, kind="launch", last=None, nondeterministic=0, source="cupti",
            sequence=None, mapped_away=0, differing=0, address=None, abs_err=None, rel_err=None,
            warm=None):
    return {
        "index": index, "kind": kind, "last_index": index if last is None else last,
        "kernel": f"k{index}", "attributes": [], "status": status, "error": None,
        "output": _compare(differing, address, abs_err, rel_err),
        "determinism": {"iterations": 20, "deterministic": nondeterministic == 0,
                        "replays_differing": nondeterministic,
                        "vs_first_replay": _compare(7, 4096) if nondeterministic else None},
        "time": {"source": source, "median_ns": 1500, "min_ns": 1250, "max_ns": 2000,
                 "cuda_events_median_ns": 3000 if source == "cupti" else None,
                 "program_ns": 1000, "replay_over_program": 1.5, "setup_ns": 12500000,
                 "l2_flushed": kind == "launch"},
        "warm": warm,
        "addresses": {"ranges": 2, "at_captured_address": 2 - mapped_away,
                      "mapped_away": mapped_away, "param_words_rewritten": mapped_away,
                      "memory_words_rewritten": 0},
        "sequence": sequence,
    }


def _document(launches, exit_code):
    return json.dumps({
        "mode": "gpu", "version": 1, "file": "cap.sbt",
        "device": "NVIDIA H200 (sm_90), driver 13.0; driver and context start 95.1 ms",
        "device_memory": "device memory: 2 range(s), 4.0 MiB, 1 at the captured addresses, "
                         "1 mapped away; 1.2 ms",
        "options": {"iterations": 20, "launch": None, "range": None, "device": 0,
                    "same_addresses_only": False},
        "launches": launches,
        "summary": {"launches": len(launches), "identical": 0, "different": 0,
                    "nondeterministic": 0, "errors": 0, "exit_code": exit_code, "meaning": ""},
        "error": None, "report": REPORT}, indent=2) + "\n"


def test_launches_carry_the_per_launch_fields():
    doc = _document([_launch(0, "identical", mapped_away=1),
                     _launch(1, "different", differing=6, address=0x7f0000001006, abs_err=1.0,
                             rel_err=0.25, source="cuda_events"),
                     _launch(2, "identical", nondeterministic=19)], 4)
    r = _replay._result_from_cli(4, doc, "")
    assert r.status == "different" and r.exit_code == 4
    assert r.report == REPORT  # the text report, as without --json
    assert r.device == "NVIDIA H200 (sm_90), driver 13.0; driver and context start 95.1 ms"
    assert [l.index for l in r.launches] == [0, 1, 2]
    a, b, c = r.launches
    assert isinstance(a, tracesmith.ReplayLaunch)
    assert (a.kind, a.kernel, a.status, a.last_index) == ("launch", "k0", "identical", 0)
    assert (a.bytes_compared, a.bytes_differing, a.first_diff_address) == (4096, 0, None)
    assert a.max_abs_error is None and a.max_rel_error is None
    assert (a.iterations, a.deterministic, a.replays_differing) == (20, True, 0)
    assert (a.time_source, a.time_median_ns, a.time_min_ns, a.time_max_ns, a.program_ns) == (
        "cupti", 1500, 1250, 2000, 1000)
    assert (a.ranges, a.ranges_mapped_away) == (2, 1)
    assert a.details["time"]["cuda_events_median_ns"] == 3000 and a.error is None
    assert (b.status, b.bytes_differing, b.first_diff_address) == ("different", 6, 0x7f0000001006)
    assert (b.max_abs_error, b.max_rel_error, b.time_source) == (1.0, 0.25, "cuda_events")
    assert (c.status, c.deterministic, c.replays_differing) == ("identical", False, 19)
    assert c.details["determinism"]["vs_first_replay"]["bytes_differing"] == 7


def _warm(idempotence, differing=0):
    return {"runs": 20, "source": "cupti", "median_ns": 900, "min_ns": 850, "max_ns": 1100,
            "cuda_events_median_ns": 2500,
            "replay_over_program": 0.9 if idempotence == "idempotent" else None,
            "idempotence": idempotence, "rerun_vs_outputs": _compare(differing),
            "bytes_beyond_nondeterminism": differing}


def test_warm_times_and_idempotence():
    doc = _document([_launch(0, "identical", warm=_warm("idempotent")),
                     _launch(1, "identical", warm=_warm("not_idempotent", differing=4096)),
                     _launch(2, "identical")], 0)
    a, b, c = _replay._result_from_cli(0, doc, "").launches
    assert (a.time_median_ns, a.warm_time_median_ns, a.warm_time_min_ns, a.warm_time_max_ns) == (
        1500, 900, 850, 1100)
    assert a.idempotence == "idempotent" and a.details["warm"]["replay_over_program"] == 0.9
    assert (b.idempotence, b.warm_time_median_ns) == ("not_idempotent", 900)
    assert b.details["warm"]["bytes_beyond_nondeterminism"] == 4096
    assert b.details["warm"]["replay_over_program"] is None  # not comparable
    assert (c.idempotence, c.warm_time_median_ns) == (None, None)  # no --warm
    assert a.details["time"]["l2_flushed"] is True


def test_metrics_under_each_launch():
    with_metrics = _launch(0, "identical")
    with_metrics["metrics"] = {"measured": True, "passes": 10, "roofline": "memory-bound",
                               "dram_bytes": 133579520.0, "values": {}}
    doc = _document([with_metrics, _launch(1, "identical")], 0)
    a, b = _replay._result_from_cli(0, doc, "").launches
    assert a.metrics["roofline"] == "memory-bound" and a.metrics["passes"] == 10
    assert b.metrics is None


def test_metrics_option_reaches_the_cli(monkeypatch):
    seen = []

    def fake_run(args, **kwargs):
        seen.append(args)
        return subprocess.CompletedProcess(args, 0, _document([], 0), "")
    monkeypatch.setattr(_replay.subprocess, "run", fake_run)
    tracesmith.replay("cap.sbt", launch=3, metrics=True)
    tracesmith.replay("cap.sbt", metrics=["dram__bytes_read.sum", "gpu__time_duration.sum"])
    assert "--metrics" in seen[0]
    assert "--metrics=dram__bytes_read.sum,gpu__time_duration.sum" in seen[1]


def test_range_replay_is_one_launch_of_kind_range():
    seq = {"launches": 4, "stream_ops": 3, "copies": 1, "memsets": 0, "syncs": 2, "streams": 2,
           "external_writes": 0, "ranges_not_compared": 0}
    doc = _document([_launch(0, "identical", kind="range", last=3, source="host_clock",
                             sequence=seq)], 0)
    r = _replay._result_from_cli(0, doc, "tracesmith: warning: something\n")
    assert r.status == "identical" and r.exit_code == 0
    assert r.report == REPORT + "tracesmith: warning: something\n"  # stdout, then stderr
    (l,) = r.launches
    assert (l.kind, l.index, l.last_index, l.time_source) == ("range", 0, 3, "host_clock")
    assert l.details["sequence"]["streams"] == 2


def test_an_error_raises_the_cli_message():
    doc = _document([], 1)
    with pytest.raises(tracesmith.TraceError) as e:
        _replay._result_from_cli(1, doc, "tracesmith: error: launch 0 (k0): cuInit failed\n")
    assert str(e.value) == "tracesmith: error: launch 0 (k0): cuInit failed"


def test_text_instead_of_json_is_an_error_not_a_wrong_result():
    # An older replayer library ignores the --json flag bit and prints text.
    with pytest.raises(tracesmith.TraceError, match="no JSON document"):
        _replay._result_from_cli(0, REPORT, "")


def test_replay_asks_the_cli_for_json(monkeypatch):
    seen = []

    def fake_run(args, **kwargs):
        seen.append(args)
        return subprocess.CompletedProcess(args, 0, _document([_launch(5, "identical")], 0), "")

    monkeypatch.setattr(_replay.subprocess, "run", fake_run)
    r = tracesmith.replay("cap.sbt", launch=5, iterations=20)
    assert "--json" in seen[0] and seen[0][seen[0].index("--launch") + 1] == "5"
    assert "--warm" not in seen[0]
    assert r.status == "identical" and [l.index for l in r.launches] == [5]
    assert r.device.startswith("NVIDIA H200")
    # Dry runs keep the text report: no --json, no launches.
    monkeypatch.setattr(_replay.subprocess, "run",
                        lambda args, **kw: (seen.append(args),
                                            subprocess.CompletedProcess(args, 0, "sched\n", ""))[1])
    r = tracesmith.replay("t.sbt", dry_run=True)
    assert "--json" not in seen[1] and r == ("ok", 0, "sched\n", (), None)
    monkeypatch.setattr(_replay.subprocess, "run", fake_run)
    tracesmith.replay("cap.sbt", warm=True, iterations=5)
    assert "--warm" in seen[2] and seen[2][seen[2].index("--iterations") + 1] == "5"


def test_dry_run_json_is_the_text_reports_figures(cli, mlp):
    text = cli("replay", mlp, "--dry-run", "--schedule", "3").stdout
    doc = json.loads(cli("replay", mlp, "--dry-run", "--schedule", "3", "--json").stdout)
    assert doc["mode"] == "dry-run" and doc["version"] == 1 and doc["file"] == mlp
    assert len(doc["schedule"]) == 3
    # The first scheduled op, as the text lists it: start and duration (both
    # under 1 ms in this trace, printed in us), device, stream, name.
    row = doc["schedule"][0]
    listed = text.split("times from the predicted start)\n")[1].splitlines()[0].split()
    assert listed == [f"{row['start_ns'] / 1000:.3f}", "us", f"{row['duration_ns'] / 1000:.3f}",
                      "us", "dev", str(row["device"]), "stream", str(row["stream"]), row["name"]]
    assert f"{doc['nodes']['gpu_ops']} GPU ops, {doc['nodes']['api_calls']} API calls" in text
    assert sum(s["ops"] for s in doc["streams"]) == doc["nodes"]["gpu_ops"]
    assert f"({doc['predicted_vs_recorded_pct']:+.2f}% vs recorded)" in text


def test_gpu_replay_json_without_a_replayer_is_the_same_error(cli, mlp, monkeypatch):
    # No GPU replayer library (also on a machine that has one): --json
    # changes nothing on the error path.
    monkeypatch.setenv("TRACESMITH_REPLAY_GPU_LIB", "/nonexistent/libtracesmith-replay-gpu.so")
    plain = cli("replay", mlp, check=False)
    as_json = cli("replay", mlp, "--json", check=False)
    assert as_json.returncode == plain.returncode == 1
    assert as_json.stderr == plain.stderr and as_json.stdout == ""
