"""SBTWriter / SBTReader: rows written through the real format read back the same."""

import re

import numpy as np
import pytest

import tracesmith


def test_a_filtered_table_round_trips_with_its_strings_and_stacks(tmp_path, cli, transformer):
    t = tracesmith.load(transformer)
    k = t.kernels
    slow = k[k.duration_ns > 20_000]
    assert 0 < len(slow) < len(k)
    out = tmp_path / "slow.sbt"
    with tracesmith.SBTWriter(out) as w:
        for table in (slow, t.devices, t.processes, t.frames, t.stack_nodes, t.mappings):
            w.write_table(table)
    u = tracesmith.SBTReader(out).read()
    assert len(u.kernels) == len(slow)
    for field in slow.fields:
        if field.endswith("_id") and field not in ("stack_id", "correlation_id", "device_id",
                                                    "stream_id", "context_id", "graph_id"):
            continue  # string ids are renumbered; their strings are compared below
        assert (u.kernels[field] == slow[field]).all(), field
    assert list(u.kernels.name) == list(slow.name)
    assert list(u.kernels.demangled) == list(slow.demangled)
    # Stacks resolve to the same frames.
    sid = int(slow.stack_id[0])
    assert sid and u.stack(sid) == t.stack(sid)
    # The CLI reads it as its own.
    info = cli("info", str(out)).stdout
    assert int(re.search(r"^\s+kernel\s+(\d+)\s*$", info, re.M).group(1)) == len(slow)
    assert "complete (footer index present)" in info


def test_write_events_takes_a_whole_trace(tmp_path, mlp):
    t = tracesmith.load(mlp)
    out = tmp_path / "copy.sbt"
    w = tracesmith.SBTWriter(out)
    w.write_events(t)
    assert w.finalize() == str(out)
    assert tracesmith.SBTReader(out).version == tracesmith.SBT_VERSION  # before any read
    r = tracesmith.SBTReader(out)
    u = r.read_events()
    assert r.version == tracesmith.SBT_VERSION
    for kind, table in tracesmith.SBTReader(mlp).tables():
        assert len(u.table(kind)) == len(table), kind
    assert (u.kernels.start_ns == t.kernels.start_ns).all()
    assert list(u.memcpys.copy_kind_name) == list(t.memcpys.copy_kind_name)


def test_tables_of_different_dtypes_and_fields_keep_every_value(tmp_path, mlp):
    k = tracesmith.load(mlp).kernels[:3]
    # A user-built table: Python ints (int64), fewer fields, a name of its own.
    big = 1795304792076304692  # beyond float64's 53 bits
    mine = tracesmith.Table("kernel", {"start_ns": np.array([big], np.int64),
                                       "end_ns": np.array([big + 1000], np.int64),
                                       "name_id": np.array([1], np.uint32)},
                            np.array(["", "my_kernel"], object))
    out = tmp_path / "mixed.sbt"
    with tracesmith.SBTWriter(out) as w:
        w.write_table(mine)  # first: the fewer fields
        w.write_table(k)
    u = tracesmith.load(out).kernels
    assert len(u) == 4
    assert int(u.start_ns[0]) == big and int(u.end_ns[0]) == big + 1000
    assert u.name[0] == "my_kernel" and u.grid_x[0] == 0
    assert (u.start_ns[1:] == k.start_ns).all() and list(u.name[1:]) == list(k.name)
    assert (u.grid_x[1:] == k.grid_x).all() and (u.queued_ns[1:] == k.queued_ns).all()


def test_finalize_keeps_a_file_that_appeared_meanwhile(tmp_path, mlp):
    out = tmp_path / "late.sbt"
    w = tracesmith.SBTWriter(out)
    w.write_table(tracesmith.load(mlp).kernels)
    out.write_bytes(b"someone else's")
    with pytest.raises(tracesmith.TraceError, match="overwrite=True"):
        w.finalize()
    assert out.read_bytes() == b"someone else's"


def test_the_output_rule_and_bad_rows_are_errors(tmp_path, mlp):
    existing = tmp_path / "x.sbt"
    existing.write_bytes(b"keep")
    with pytest.raises(tracesmith.TraceError, match="overwrite=True"):
        tracesmith.SBTWriter(existing)
    assert existing.read_bytes() == b"keep"
    k = tracesmith.load(mlp).kernels
    bad = tracesmith.Table("kernel", {"start_ns": np.array([1, 2], np.uint64),
                                      "grid_x": np.array([1], np.uint32)}, np.array([""], object))
    w = tracesmith.SBTWriter(tmp_path / "bad.sbt")
    w.write_table(bad)
    with pytest.raises(tracesmith.TraceError, match="grid_x: 1 values, other fields have 2|"
                                                    "start_ns: 2 values, other fields have 1"):
        w.finalize()
    assert not (tmp_path / "bad.sbt").exists()
    # An exception inside the block writes nothing.
    with pytest.raises(RuntimeError):
        with tracesmith.SBTWriter(tmp_path / "none.sbt") as w:
            w.write_table(k)
            raise RuntimeError("stop")
    assert not (tmp_path / "none.sbt").exists()
