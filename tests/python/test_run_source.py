"""A run of several traces read on the fly (issue #38 item 1): analyze, memory, diff,
event_stats and export read it as one trace source (C++ cluster::RunSource), with no
temporary file: they work with Python's temporary directory gone, and give what the
CLI gives and what the same run merged into a file gives."""

import json
import os
import tempfile

import pytest

import tracesmith


@pytest.fixture
def run(cli, tmp_path):
    """run.rank0..2.sbt, as torchrun leaves them (synthetic, `benchmark merge`)."""
    cli("benchmark", "merge", "--ranks", "3", "--kernels", "3000", "--keep", str(tmp_path))
    os.remove(tmp_path / "job.sbt")  # the benchmark's own merge
    return tmp_path


def test_a_run_is_read_without_a_temporary_file(cli, run, tmp_path, monkeypatch):
    stem = str(run / "run.sbt")
    merged = str(tmp_path / "merged.sbt")
    tracesmith.merge(stem, merged)
    os.makedirs(run / "out")
    # No temporary directory: a merge into a temporary file could not start.
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "no-such-dir"))
    report = tracesmith.analyze(stem)
    assert report == json.loads(cli("analyze", "--json", stem).stdout)
    from_file = tracesmith.analyze(merged)
    from_file["source"] = report["source"]
    # The cross-rank part reads the run's files one by one, and the merged file as one.
    assert {**report, "ranks": None} == {**from_file, "ranks": None}
    memory = tracesmith.memory(stem)
    assert memory["source"] == stem + " (3 traces)"
    stats = tracesmith.event_stats(stem, kinds="kernel")
    assert stats["matched"] == report["kernel_count"]
    assert stats == tracesmith.event_stats(merged, kinds="kernel")
    d = tracesmith.diff(str(run / "run.rank0.sbt"), stem)
    assert d["b"] == stem + " (3 traces)"
    out = str(run / "out" / "run.csv")
    result = tracesmith.export(stem, out, format="csv")
    assert result["events"] > 0
    tracesmith.export(merged, str(run / "out" / "merged.csv"), format="csv")
    with open(out, "rb") as a, open(run / "out" / "merged.csv", "rb") as b:
        assert a.read() == b.read()


def _no_temporary_file(monkeypatch, tmp_path):
    """Python's temporary directory gone, and making a temporary file an error."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "no-such-dir"))

    def refused(*args, **kwargs):
        raise AssertionError("a temporary file was made")

    monkeypatch.setattr(tempfile, "mkstemp", refused)


def _rows(t, kind):
    table = t.table(kind)
    return {f: list(table[f]) for f in table.fields}


def test_load_of_a_run_reads_it_on_the_fly(run, tmp_path, monkeypatch):
    stem = str(run / "run.sbt")
    merged = str(tmp_path / "merged.sbt")
    tracesmith.merge(stem, merged)
    _no_temporary_file(monkeypatch, tmp_path)
    t = tracesmith.load(stem)
    f = tracesmith.load(merged)
    assert t.path == stem + " (3 traces)" and len(t.processes) == 3
    assert list(t.strings) == list(f.strings)
    # Lazily: the kinds not read yet are read from the run's files when asked.
    assert "kernel" in t.unread_kinds
    for kind in f.kinds:
        assert _rows(t, kind) == _rows(f, kind), kind
    assert t.unread_kinds == frozenset()
    # Some kinds only, then the rest.
    k = tracesmith.load(stem, kinds=["kernel"])
    assert _rows(k, "kernel") == _rows(f, "kernel") and "api" in k.skipped_kinds


def test_kineto_json_export_of_a_run_is_the_clis(cli, run, tmp_path, monkeypatch):
    stem = str(run / "run.sbt")
    merged = str(tmp_path / "merged.sbt")
    tracesmith.merge(stem, merged)
    cli("export", "-q", "-f", "json", stem, "-o", str(tmp_path / "cli.json"))
    cli("export", "-q", "-f", "json", merged, "-o", str(tmp_path / "file.json"))
    _no_temporary_file(monkeypatch, tmp_path)
    result = tracesmith.export(stem, str(tmp_path / "py.json"), format="json")
    assert result["events"] > 0 and result["flows"] > 0
    py = (tmp_path / "py.json").read_bytes()
    assert py == (tmp_path / "cli.json").read_bytes()
    assert py == (tmp_path / "file.json").read_bytes()


def test_load_of_a_run_with_a_cut_rank_says_so(run):
    """A rank file cut short (a killed rank): the run's Trace is not complete and its damage
    names that file, as the file's own Trace would."""
    cut = run / "run.rank1.sbt"
    os.truncate(cut, os.path.getsize(cut) * 6 // 10)
    with pytest.warns(UserWarning):
        t = tracesmith.load(str(run / "run.sbt"))
    assert t.complete is False
    assert t.damage and all(what.startswith(str(cut) + ": ") for _, _, what in t.damage), t.damage
    whole = tracesmith.load(str(run / "run.rank0.sbt"), single=True)
    assert whole.complete is True and whole.damage == []
