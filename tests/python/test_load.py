"""tracesmith.load: columns equal what the CLI prints; damage and errors."""

import json
import os
import re
import warnings

import numpy as np
import pytest

import tracesmith


def info_counts(cli, path):
    """Event counts per kind from `tracesmith info`."""
    out = cli("info", path).stdout
    counts = {}
    for kind, n in re.findall(r"^\s+(\w+)\s+(\d+)\s*$", out, re.M):
        counts[kind] = int(n)
    return counts, out


def test_counts_match_info(cli, shipped):
    t = tracesmith.load(shipped)
    counts, text = info_counts(cli, shipped)
    assert counts, text
    for kind, n in counts.items():
        if kind in t.kinds:
            assert len(t.table(kind)) == n, (kind, text)
    assert len(t.kernels) == counts["kernel"] > 0


def test_kernel_columns_match_view(cli, mlp):
    t = tracesmith.load(mlp)
    order = np.argsort(t.kernels.start_ns, kind="stable")
    lines = cli("view", mlp, "--kind", "kernel", "-n", "40").stdout.splitlines()
    header, out = lines[0], lines[1:41]
    name_at, details_at = header.index("NAME"), header.index("DETAILS")
    assert len(out) == 40
    for row, line in zip(order, out):
        cols = line.split()
        # DUR(us), correlation id and grid as `view` prints them.
        assert f"{t.kernels.duration_ns[row] / 1000:.3f}" == cols[1]
        assert f"correlation_id={t.kernels.correlation_id[row]}" in line
        assert f"grid_x={t.kernels.grid_x[row]}" in line
        assert f"registers_per_thread={t.kernels.registers_per_thread[row]}" in line
        assert int(cols[4]) == t.kernels.stream_id[row]
        shown = line[name_at:details_at].strip()
        name = str(t.kernels.demangled[row]) or str(t.kernels.name[row])
        assert name.startswith(shown.rstrip(".")), (name, shown)


def test_columns_are_numpy_with_the_format_types(mlp):
    k = tracesmith.load(mlp).kernels
    assert k.start_ns.dtype == np.uint64
    assert k.grid_x.dtype == np.uint32
    assert k.launch_type.dtype == np.uint8
    assert k.name.dtype == object
    assert (k.duration_ns == k.end_ns - k.start_ns).all()
    assert "name" in k and "nonexistent" not in k
    with pytest.raises(KeyError, match="no field 'nonexistent'"):
        k["nonexistent"]


def test_enumeration_fields_have_the_clis_names(cli, transformer):
    t = tracesmith.load(transformer)
    m = t.memcpys
    # `view` names copies "Memcpy <copy kind>": the same names, row for row.
    lines = cli("view", transformer, "--kind", "memcpy", "-n", "1000000").stdout.splitlines()[1:]
    shown = sorted(re.search(r"Memcpy (\w+)", line).group(1) for line in lines if "Memcpy" in line)
    assert len(shown) == len(m) > 0
    assert sorted(m.copy_kind_name) == shown
    assert set(m.copy_kind_name[m.copy_kind == 1]) == {"HtoD"}
    assert type(m.copy_kind_name[0]) is str  # as the string columns: not np.str_
    assert set(t.syncs.sync_type_name) <= {"event_synchronize", "stream_wait_event",
                                           "stream_synchronize", "context_synchronize"}
    assert set(t.api.domain_name) <= {"runtime", "driver"}
    assert set(t.memory.op_name) == {"alloc", "free"} or set(t.memory.op_name) == {"alloc"}
    assert set(t.frames.kind_name) == {"native", "python"}
    assert "copy_kind_name" in m and "copy_kind_name" in dir(m)
    assert "grid_x_name" not in t.kernels
    # A value without a name (a newer writer's) reads as "unknown".
    odd = tracesmith.Table("memcpy", {"copy_kind": np.array([1, 200], np.uint8)},
                           np.array([""], object))
    assert list(odd.copy_kind_name) == ["HtoD", "unknown"]
    pytest.importorskip("pandas")
    df = m.to_pandas()
    assert str(df["copy_kind_name"].dtype) == "category"
    assert (df["copy_kind"].to_numpy() == m.copy_kind).all()


def test_to_pandas_finds_the_slowest_kernel(mlp, cli):
    pd = pytest.importorskip("pandas")
    df = tracesmith.load(mlp).to_pandas("kernel")
    assert isinstance(df["name"].dtype, pd.CategoricalDtype)
    slowest = df.loc[df.duration_ns.idxmax()]
    # The same kernel and duration as the longest row `view --stats` lists.
    view = cli("view", mlp, "--kind", "kernel", "-n", "1000").stdout.splitlines()[1:]
    longest = max((float(line.split()[1]), line) for line in view if line.strip()[0].isdigit())
    assert f"{slowest.duration_ns / 1000:.3f}" == f"{longest[0]:.3f}"
    assert f"correlation_id={slowest.correlation_id}" in longest[1]


def test_stacks_resolve_to_python_lines_and_native_functions(transformer):
    t = tracesmith.load(transformer)
    with_stack = t.kernels.stack_id[t.kernels.stack_id > 0]
    assert len(with_stack) > 0
    frames = t.stack(int(with_stack[0]))
    kinds = {f.kind for f in frames}
    assert kinds == {"python", "native"}, frames
    py = [f for f in frames if f.kind == "python"]
    assert all(f.file.endswith(".py") and f.line > 0 for f in py), py
    assert any(f.function for f in frames if f.kind == "native")
    assert t.stack(0) == []


def test_metadata_and_stats(transformer):
    t = tracesmith.load(transformer)
    assert t.metadata["capture.tool"] == "tracesmith-inject"
    assert t.stats.get("capture.cost.launch.calls", 0) > 0
    assert len(t.processes) == 1 and len(t.devices) == 1
    assert t.version >= (1, 0)
    assert t.complete and t.damage == []


def test_damaged_file_loads_its_readable_part_or_raises_with_the_offset(tmp_path, mlp, cli):
    data = bytearray(open(mlp, "rb").read())
    cut = tmp_path / "cut.sbt"
    cut.write_bytes(bytes(data[: len(data) * 2 // 3]))
    with pytest.warns(UserWarning, match=r"byte \d+"):
        t = tracesmith.load(cut)
    assert not t.complete
    assert 0 < len(t.kernels) < len(tracesmith.load(mlp).kernels)
    with pytest.raises(tracesmith.TraceError, match=r"byte \d+"):
        tracesmith.load(cut, strict=True)
    # A flipped byte inside a chunk: the chunk is skipped, its offset named.
    flipped = tmp_path / "flipped.sbt"
    data[len(data) // 2] ^= 0xFF
    flipped.write_bytes(bytes(data))
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        t = tracesmith.load(flipped).read()  # (event kinds are read when first asked for)
    assert any(re.search(r"byte \d+", str(x.message)) for x in w)
    assert t.damage and t.damage[0][0] > 0


def test_not_a_trace_raises(tmp_path):
    bad = tmp_path / "notes.txt"
    bad.write_text("hello\n")
    with pytest.raises(tracesmith.TraceError, match="notes.txt"):
        tracesmith.load(bad)
    with pytest.raises(tracesmith.TraceError, match="missing.sbt"):
        tracesmith.load(tmp_path / "missing.sbt")
    assert issubclass(tracesmith.TraceError, RuntimeError)


def test_analyze_equals_the_cli_json(cli, shipped):
    assert tracesmith.analyze(shipped) == json.loads(cli("analyze", "--json", shipped).stdout)
    windowed = tracesmith.analyze(shipped, start="1ms", end="50ms")
    assert windowed == json.loads(
        cli("analyze", "--json", "--from", "1ms", "--to", "50ms", shipped).stdout)
    with pytest.raises(tracesmith.TraceError):
        tracesmith.analyze(shipped, start="soon")


def test_analyze_sets_the_warmup_apart(cli, transformer):
    # The default window starts after the warm-up (steps 1-2 of the transformer run);
    # with_warmup=True is --with-warmup: from the first kernel, nothing set apart.
    steady = tracesmith.analyze(transformer)
    warmup = steady["warmup"]
    assert warmup["steps"] == steady["steps"]["warmup"] == 2
    assert warmup["end_ns"] == steady["window"]["begin_ns"]
    assert warmup["end_ns"] == steady["steps"]["list"][2]["begin_ns"]
    assert warmup["begin_ns"] == steady["startup"]["end_ns"]
    assert any(f.startswith("The warm-up took 2.747 s, 95.3% of") for f in steady["findings"])
    whole = tracesmith.analyze(transformer, with_warmup=True)
    assert whole == json.loads(cli("analyze", "--json", "--with-warmup", transformer).stdout)
    assert "warmup" not in whole and whole["steps"]["warmup"] == 0
    assert whole["window"]["begin_ns"] == warmup["begin_ns"]
    assert whole["kernel_count"] > steady["kernel_count"]


def test_memory_equals_the_cli_json(cli, transformer):
    import datetime
    report = tracesmith.memory(transformer)
    assert report == json.loads(cli("memory", "--json", transformer).stdout)
    at = tracesmith.memory(transformer, at=datetime.timedelta(seconds=8), top=3)
    assert at == json.loads(cli("memory", "--json", "--at", "8s", "--top", "3", transformer).stdout)
    device = at["memory"][0]
    assert device["space"] == "device" and device["at"]["ts_ns"] == 8_000_000_000
    assert device["at_peak"]["live_bytes"] == device["peak_bytes"]
    with pytest.raises(tracesmith.TraceError):
        tracesmith.memory(transformer, at="soon")


def test_diff_equals_the_cli_json(cli, transformer, mlp):
    assert tracesmith.diff(mlp, transformer) == json.loads(
        cli("diff", "--json", mlp, transformer).stdout)
    same = tracesmith.diff(mlp, mlp)
    assert same == json.loads(cli("diff", "--json", mlp, mlp).stdout)


def test_event_stats_are_view_stats(cli, transformer):
    r = tracesmith.event_stats(transformer, kinds=["kernels", "memcpy"], start="5s", end="9s")
    out = cli("view", transformer, "--stats", "-k", "kernel,memcpy", "--from", "5s", "--to", "9s",
              "-n", "100000").stdout
    assert out.startswith(f"{r['matched']} events match")
    assert r["matched"] == sum(r["per_kind"].values()) > 0
    for kind, n in r["per_kind"].items():
        assert re.search(rf"^{kind}\s+{n}$", out, re.M), (kind, n)
    rows = out.split("  NAME\n", 1)[1].splitlines()
    assert len(rows) == len(r["per_name"])
    for line, row in zip(rows, r["per_name"]):
        cols = line.split()
        assert cols[0] == row["kind"] and int(cols[1]) == row["count"], (line, row)
        assert line.rstrip().endswith(row["name"])
    totals = [row["total_ns"] for row in r["per_name"]]
    assert totals == sorted(totals, reverse=True)
    with pytest.raises(tracesmith.TraceError, match="unknown event kind 'kernelz'"):
        tracesmith.event_stats(transformer, kinds="kernelz")
    with pytest.raises(tracesmith.TraceError, match="bad --name regex"):
        tracesmith.event_stats(transformer, name="(")


def test_columns_past_the_huge_page_size_are_whole(cli, tmp_path):
    # Columns of 4 MiB and more live in huge-page mappings (src/python/column_buffer.h):
    # reserved from the file's index when it has one, grown (and moved off the heap)
    # chunk by chunk when it has none. Both must hold every row, unchanged.
    path = str(tmp_path / "big.sbt")
    cli("benchmark", "scale", "--kernels", "800000", "--keep", path, "--commands", "info")
    whole = tracesmith.load(path, kinds=["kernel"]).kernels
    assert len(whole) == 800000
    assert whole.start_ns.nbytes > 4 << 20
    # Every row as the library's own per-name statistics count it (the same pass as
    # `view --stats`, no NumPy in it).
    stats = tracesmith.event_stats(path, kinds=["kernel"])["per_name"]
    assert sum(row["count"] for row in stats) == len(whole)
    assert sum(row["total_ns"] for row in stats) == int(whole.duration_ns.sum())
    assert max(row["max_ns"] for row in stats) == int(whole.duration_ns.max())
    cut = str(tmp_path / "cut.sbt")
    with open(path, "rb") as src, open(cut, "wb") as dst:
        dst.write(src.read(os.path.getsize(path) * 9 // 10))  # no index: read whole, grown
    with pytest.warns(UserWarning, match="damaged"):
        part = tracesmith.load(cut).kernels
    n = len(part)
    assert 500000 < n < 800000
    assert part.start_ns.nbytes > 4 << 20
    for field in ("start_ns", "end_ns", "name_id", "correlation_id"):
        assert np.array_equal(part[field], whole[field][:n]), field
