"""What a user runs into: odd strings, argument types, filters, damage warnings."""

import datetime
import os
import pathlib
import warnings

import numpy as np
import pytest

import tracesmith

DATA = os.path.join(os.path.dirname(__file__), "data")


def test_strings_that_are_not_utf8_read_as_replacement_characters():
    # data/make_bad_utf8.py: "capture.tool" -> b"\xffapture.tool" (the format does not
    # validate strings; the CLI prints the bytes).
    t = tracesmith.load(os.path.join(DATA, "bad_utf8.sbt"))
    assert t.metadata["\ufffdapture.tool"] == "tracesmith-inject"
    assert len(t.kernels) == 3000
    assert tracesmith.analyze(os.path.join(DATA, "bad_utf8.sbt"))["kernel_count"] == 3000


def test_paths_of_every_kind_and_clear_type_errors(mlp):
    n = len(tracesmith.load(mlp).kernels)
    assert len(tracesmith.load(pathlib.Path(mlp)).kernels) == n
    assert len(tracesmith.load(os.fsencode(mlp)).kernels) == n
    for bad in (None, 1, 2.5):
        with pytest.raises(TypeError, match="path"):
            tracesmith.load(bad)
    with pytest.raises(TypeError, match="steps"):
        tracesmith.analyze(mlp, steps=[1])
    with pytest.raises(TypeError, match="start"):
        tracesmith.analyze(mlp, start=object())


def test_window_bounds_as_numbers_and_timedeltas(mlp, cli):
    import json
    want = json.loads(cli("analyze", "--json", "--from", "1ms", "--to", "200ms", mlp).stdout)
    assert tracesmith.analyze(mlp, start=1_000_000, end=200_000_000) == want
    assert tracesmith.analyze(mlp, start=datetime.timedelta(milliseconds=1),
                              end=datetime.timedelta(milliseconds=200)) == want
    steps = tracesmith.analyze(mlp)["steps"]
    if steps.get("steps"):
        assert tracesmith.analyze(mlp, steps=2) == tracesmith.analyze(mlp, steps="2")


def test_rows_filter_and_membership(mlp):
    k = tracesmith.load(mlp).kernels
    long = k[k.duration_ns > 10_000]
    assert 0 < len(long) < len(k)
    assert (long.duration_ns > 10_000).all()
    assert list(long.name) == list(k.name[k.duration_ns > 10_000])
    assert len(k[:5]) == 5
    assert "duration_ns" in k and "name" in k and "start_ns" in k
    with pytest.raises(TypeError, match="columns, not rows"):
        list(k)
    assert {"name", "duration_ns", "grid_x"} <= set(dir(k))


def test_tables_by_label_or_attribute_name(transformer):
    t = tracesmith.load(transformer)
    assert t.table("kernel") is t.table("kernels") is t.kernels
    assert len(t.to_pandas("memcpys")) == len(t.memcpys)
    assert "kernels" in dir(t) and "memcpys" in dir(t)
    with pytest.raises(KeyError, match="no record kind"):
        t.table("kernle")


def test_pandas_categories_are_the_strings_the_rows_use(transformer):
    pytest.importorskip("pandas")
    t = tracesmith.load(transformer)
    df = t.kernels.to_pandas()
    assert set(df["name"].cat.categories) == set(t.kernels.name)
    assert "tracesmith-inject" not in set(df["name"].cat.categories)
    assert (df["name"].astype(str).to_numpy() == t.kernels.name.astype(str)).all()
    # One category per distinct string even when the string table holds one twice.
    table = tracesmith.Table("kernel", {"name_id": np.array([1, 2, 1], np.uint32)},
                             np.array(["", "k", "k"], dtype=object))
    names = table.to_pandas()["name"]
    assert list(names.cat.categories) == ["k"] and list(names) == ["k", "k", "k"]


def test_stack_ids_are_checked(transformer):
    t = tracesmith.load(transformer)
    n = len(t.stack_nodes)
    assert t.stack(n)  # the last id is valid
    for bad in (-1, n + 1, 10**12):
        with pytest.raises(IndexError, match="stack id"):
            t.stack(bad)
    for bad in (1.7, "3"):
        with pytest.raises(TypeError):
            t.stack(bad)
    assert t.stack(np.uint32(1)) == t.stack(1)


def test_export_format_from_the_name_gzip_only_for_json(tmp_path, mlp, cli):
    r = tracesmith.export(mlp, str(tmp_path / "run.json"))
    assert r["format"] == "json"
    cli("export", mlp, "-f", "json", "-o", str(tmp_path / "cli.json"), "-q")
    assert (tmp_path / "run.json").read_bytes() == (tmp_path / "cli.json").read_bytes()
    r = tracesmith.export(mlp, str(tmp_path / "run.json.gz"))
    assert r["format"] == "json" and (tmp_path / "run.json.gz").read_bytes()[:2] == b"\x1f\x8b"
    assert tracesmith.export(mlp, str(tmp_path / "t.sqlite"))["format"] == "sqlite"
    assert tracesmith.export(mlp, str(tmp_path / "t.bin"))["format"] == "perfetto"
    with pytest.raises(tracesmith.TraceError, match="gzip applies to format='json'"):
        tracesmith.export(mlp, str(tmp_path / "a.csv.gz"), format="csv", gzip=True)
    assert not (tmp_path / "a.csv.gz").exists()
    with pytest.raises(tracesmith.TraceError, match="directory"):
        tracesmith.export(mlp, str(tmp_path))


def test_damage_warns_in_analyze_and_export(tmp_path, mlp):
    data = open(mlp, "rb").read()
    cut = tmp_path / "cut.sbt"
    cut.write_bytes(data[: len(data) // 2])
    with pytest.warns(UserWarning, match=r"byte \d+|unfinished|damaged"):
        tracesmith.analyze(str(cut))
    flipped = bytearray(data)
    flipped[len(data) // 2] ^= 0xFF
    bad = tmp_path / "bad.sbt"
    bad.write_bytes(bytes(flipped))
    with pytest.warns(UserWarning, match=r"byte \d+"):
        tracesmith.export(str(bad), str(tmp_path / "bad.pftrace"))
    with pytest.raises(tracesmith.TraceError, match=r"byte \d+"):
        tracesmith.analyze(str(bad), strict=True)
    with pytest.warns(UserWarning, match="B: .*readable part"):
        d = tracesmith.diff(mlp, str(bad))
    assert any(w.startswith("B: ") for w in d["warnings"])
    with pytest.raises(tracesmith.TraceError, match=r"byte \d+"):
        tracesmith.diff(mlp, str(bad), strict=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tracesmith.analyze(mlp)  # a clean file: no warning


def test_load_only_some_kinds(transformer):
    full = tracesmith.load(transformer)
    t = tracesmith.load(transformer, kinds=["kernels", "memcpy"])
    assert len(t.kernels) == len(full.kernels) and len(t.memcpys) == len(full.memcpys)
    assert (t.kernels.start_ns == full.kernels.start_ns).all()
    assert len(t.devices) == 1 and t.stack(int(t.kernels.stack_id[0])) == full.stack(
        int(full.kernels.stack_id[0]))
    with pytest.raises(AttributeError, match="not loaded"):
        t.api
    with pytest.raises(ValueError, match="unknown event kind"):
        tracesmith.load(transformer, kinds=["kernal"])
