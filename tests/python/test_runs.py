"""Runs of several traces (issue #17): tracesmith.merge, and load/analyze/...
given a list of files, a directory or a capture's output name; each figure
checked against the CLI's."""

import json
import os
import shutil
import warnings

import pytest

import tracesmith


def events(trace):
    """Event rows of a loaded trace, all kinds."""
    return sum(len(trace.table(k)) for k in trace.kinds if k in tracesmith._trace.EVENT_KINDS)


@pytest.fixture
def run(cli, tmp_path):
    """run.rank0..2.sbt, as torchrun leaves them (synthetic, `benchmark merge`)."""
    cli("benchmark", "merge", "--ranks", "3", "--kernels", "3000", "--keep", str(tmp_path))
    os.remove(tmp_path / "job.sbt")  # the benchmark's own merge
    return tmp_path


def test_merge_writes_every_process(cli, run):
    files = [str(run / f"run.rank{r}.sbt") for r in range(3)]
    result = tracesmith.merge(str(run / "run.sbt"), str(run / "job.sbt"))
    assert result["summary"].startswith("3 traces (ranks 0-2 on host bench-host), ")
    assert [i["path"] for i in result["inputs"]] == files
    assert result["events"] == sum(i["events"] for i in result["inputs"])
    assert result["notes"] == []
    merged = tracesmith.load(str(run / "job.sbt"))
    assert len(merged.processes) == 3
    assert sorted(merged.processes["rank"].tolist()) == [0, 1, 2]
    singles = [tracesmith.load(f) for f in files]
    for kind in ("kernel", "api", "memcpy", "nvtx"):
        assert len(merged.table(kind)) == sum(len(t.table(kind)) for t in singles), kind
    # The CLI says the same of the file.
    assert cli("info", str(run / "job.sbt")).stdout.count("Process:") == 3
    # Output rules: never an input, an existing file only with overwrite.
    with pytest.raises(tracesmith.TraceError, match="file exists"):
        tracesmith.merge(files, str(run / "job.sbt"))
    with pytest.raises(tracesmith.TraceError, match="the input"):
        tracesmith.merge(files, files[0], overwrite=True)
    assert tracesmith.merge(files[:2], str(run / "job.sbt"), overwrite=True)["events"] == \
        events(singles[0]) + events(singles[1])
    with pytest.raises(tracesmith.TraceError, match="no trace matches"):
        tracesmith.merge(str(run / "none.sbt"), str(run / "x.sbt"))


def test_load_takes_a_run(run):
    files = [str(run / f"run.rank{r}.sbt") for r in range(3)]
    singles = [tracesmith.load(f) for f in files]
    for arg in (str(run / "run.sbt"), files, str(run), run):
        t = tracesmith.load(arg)
        assert t.files == files, arg
        assert len(t.kernels) == sum(len(s.kernels) for s in singles), arg
        assert sorted(set(t.kernels.pid.tolist())) == [1000, 1001, 1002]
    t = tracesmith.load(str(run / "run.sbt"))
    assert t.path == str(run / "run.sbt") + " (3 traces)"
    assert t.sources == [str(run / "run.sbt")]
    assert "(3 traces)" in repr(t)
    # One file of the run alone.
    one = tracesmith.load(files[1])
    assert one.path == files[1] and one.files == [files[1]]
    # A Trace loaded alone stays alone when it is analysed (not its run again).
    sub = run / "alone"
    sub.mkdir()
    shutil.copy(files[0], sub / "a.sbt")  # a.sbt stands for a.sbt + a.rank1.sbt ...
    shutil.copy(files[1], sub / "a.rank1.sbt")
    alone = tracesmith.load(str(sub / "a.sbt"), single=True)
    assert "ranks" not in tracesmith.analyze(alone)
    assert tracesmith.analyze(alone)["kernel_count"] == len(alone.kernels)


def test_analyze_export_diff_of_a_run_match_the_cli(cli, run):
    stem = str(run / "run.sbt")
    report = tracesmith.analyze(stem)
    assert report["source"] == stem + " (3 traces)"
    cli_report = json.loads(cli("analyze", "--json", stem).stdout)
    assert report == cli_report
    # Several processes: the cross-rank report, as the CLI's.
    assert sorted(r["rank"] for r in report["ranks"]["ranks"]) == [0, 1, 2]
    # A Trace loaded from a run is the run again.
    assert tracesmith.analyze(tracesmith.load(stem))["kernel_count"] == report["kernel_count"]
    result = tracesmith.export(stem, format="perfetto")
    assert result["path"] == str(run / "run.pftrace")
    # Several processes: the job's export, the same file as the CLI's (issue #38).
    assert result["ranks"] == 3 and result["events"] > 0
    cli_out = str(run.parent / (run.name + "-cli.pftrace"))
    cli("export", stem, "-f", "perfetto", "-o", cli_out)
    with open(result["path"], "rb") as a, open(cli_out, "rb") as b:
        assert a.read() == b.read()
    os.remove(cli_out)
    d = tracesmith.diff(str(run / "run.rank0.sbt"), stem)
    assert d["b"] == stem + " (3 traces)"
    stats = tracesmith.event_stats(stem, kinds="kernel")
    assert stats["matched"] == report["kernel_count"]
    # No temporary file is left behind.
    assert sorted(os.listdir(run)) == ["run.pftrace", "run.rank0.sbt", "run.rank1.sbt",
                                       "run.rank2.sbt"]


def test_a_named_file_with_siblings_is_its_run_unless_single(run):
    shutil.copy(run / "run.rank0.sbt", run / "run.sbt")
    with pytest.warns(UserWarning, match="is one of a run of 4 traces"):
        t = tracesmith.load(str(run / "run.sbt"))
    assert len(t.files) == 4
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        alone = tracesmith.load(str(run / "run.sbt"), single=True)
    assert alone.files == [str(run / "run.sbt")]


def test_a_damaged_rank_warns_or_with_strict_raises(run, tmp_path):
    cut = run / "run.rank2.sbt"
    size = os.path.getsize(cut)
    with open(cut, "r+b") as f:
        f.truncate(size // 2)
    with pytest.warns(UserWarning, match="is damaged"):
        t = tracesmith.load(str(run / "run.sbt"))
    assert len(t.processes) == 3
    with pytest.raises(tracesmith.TraceError, match="run.rank2.sbt is damaged"):
        tracesmith.load(str(run / "run.sbt"), strict=True)
    with pytest.raises(tracesmith.TraceError, match="run.rank2.sbt is damaged"):
        tracesmith.merge(str(run / "run.sbt"), str(tmp_path / "strict.sbt"), strict=True)
    assert not os.path.exists(tmp_path / "strict.sbt")
    # The job's Perfetto export: the same warning, or with strict nothing written.
    out = str(tmp_path / "job.pftrace")
    with pytest.raises(tracesmith.TraceError, match="run.rank2.sbt is damaged"):
        tracesmith.export(str(run / "run.sbt"), out, strict=True)
    assert not os.path.exists(out)
    with pytest.warns(UserWarning, match="is damaged"):
        assert tracesmith.export(str(run / "run.sbt"), out)["ranks"] == 3
