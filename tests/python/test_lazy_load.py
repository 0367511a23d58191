"""tracesmith.load is lazy: metadata at load, each event kind's rows on first
access (one pass per access), damage reported by the access that reads it, and
a file that changed since load() is never read into the same Trace."""

import gc
import os
import pickle
import re
import shutil
import struct
import threading
import warnings

import numpy as np
import pytest

import tracesmith
from tracesmith import _trace

TABLE_CHUNK = 2  # docs/sbt-format.md: chunk types; table kinds as in model/records.h
KERNEL, MEMCPY, API, DEVICE = 1, 2, 5, 64


def chunk_index(path):
    """[(offset, type, table kind, rows)] of a file's chunks, read from its footer index
    (trailer: u64 index offset + "SBTINDEX"; the index chunk's payload: varint count,
    then offset, type, kind, rows, min_ts, max_ts per chunk)."""
    data = open(path, "rb").read()
    assert data[-8:] == b"SBTINDEX"
    (index_at,) = struct.unpack_from("<Q", data, len(data) - 16)
    payload, pos = data[index_at + 24:len(data) - 16], 0

    def varint():
        nonlocal pos
        value = shift = 0
        while True:
            b = payload[pos]
            pos += 1
            value |= (b & 0x7F) << shift
            shift += 7
            if not b & 0x80:
                return value

    entries = []
    for _ in range(varint()):
        offset, type_, kind, rows, _, _ = (varint() for _ in range(6))
        entries.append((offset, type_, kind, rows))
    return entries


def damage_chunk(src, dst, kind):
    """A copy of `src` with one payload byte flipped in its first table chunk of `kind`
    (its checksum then fails); returns that chunk's offset."""
    data = bytearray(open(src, "rb").read())
    offset = next(o for o, t, k, _ in chunk_index(src) if t == TABLE_CHUNK and k == kind)
    (stored,) = struct.unpack_from("<I", data, offset + 8)  # header: magic, type, flags, stored_len
    data[offset + 24 + stored // 2] ^= 0xFF
    open(dst, "wb").write(bytes(data))
    return offset


def kinds_with_rows(path):
    # (EVENT_KINDS is in table kind order: kernel = 1 ... drop = 13)
    labels = {k: label for k, label in enumerate(_trace.EVENT_KINDS, start=1)}
    return {labels[k] for _, t, k, rows in chunk_index(path) if t == TABLE_CHUNK and k in labels}


class CountingCore:
    """tracesmith._core with its read_kinds calls counted."""

    def __init__(self, core):
        self._core, self.reads = core, []

    def __getattr__(self, name):
        return getattr(self._core, name)

    def read_kinds(self, path, kinds, *args):
        self.reads.append(list(kinds))
        return self._core.read_kinds(path, kinds, *args)


@pytest.fixture
def counting(monkeypatch):
    counter = CountingCore(_trace.core())
    monkeypatch.setattr(_trace, "core", lambda: counter)
    return counter


def test_metadata_at_load_each_kind_on_first_access(transformer, counting):
    t = tracesmith.load(transformer)
    assert t.unread_kinds == kinds_with_rows(transformer) >= {"kernel", "memcpy", "api"}
    # Metadata is there without reading any event kind.
    assert t.metadata["capture.tool"] == "tracesmith-inject"
    assert t.stats.get("capture.cost.launch.calls", 0) > 0
    assert len(t.devices) == 1 and len(t.processes) == 1 and t.stack(1)
    assert t.complete and t.damage == [] and counting.reads == []
    # repr counts the kinds not read yet from the index.
    eager = tracesmith.load(transformer, kinds=list(_trace.EVENT_KINDS))
    assert repr(t) == repr(eager)
    kernels = t.kernels
    assert counting.reads == [["kernel"]] and "kernel" not in t.unread_kinds
    assert t.table("kernels") is kernels  # kept: no second read
    len(t.table("memcpys"))
    assert counting.reads == [["kernel"], ["memcpy"]]
    # Kinds the file has no chunks of are empty tables, read at load.
    assert "marker" not in t.unread_kinds and len(t.markers) == len(eager.markers)
    assert counting.reads == [["kernel"], ["memcpy"]]
    for kind in _trace.EVENT_KINDS:
        a, b = t.table(kind), eager.table(kind)
        assert a.fields == b.fields and len(a) == len(b), kind
        for field in a.fields:
            assert np.array_equal(a[field], b[field]), (kind, field)
    assert t.unread_kinds == frozenset()


def test_read_takes_several_kinds_in_one_pass(transformer, counting):
    t = tracesmith.load(transformer)
    assert t.read(["kernels", "api"]) is t
    assert counting.reads == [["kernel", "api"]]
    t.read("kernel")  # already read: no pass
    assert counting.reads == [["kernel", "api"]]
    t.read()
    assert len(counting.reads) == 2 and t.unread_kinds == frozenset()
    with pytest.raises(ValueError, match="unknown event kind"):
        t.read(["kernal"])
    # load(kinds=...) stays eager for those kinds; the others are not available.
    k = tracesmith.load(transformer, kinds=["kernel"])
    assert k.unread_kinds == frozenset() and len(counting.reads) == 2
    with pytest.raises(KeyError, match="not loaded"):
        k.read(["api"])


def test_damage_in_a_kind_never_read_does_not_warn(tmp_path, mlp):
    bad = tmp_path / "bad_api.sbt"
    offset = damage_chunk(mlp, bad, API)  # the first of its 3 API chunks
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        t = tracesmith.load(bad)
        s = tracesmith.load(bad, strict=True)
        assert len(t.kernels) == len(s.kernels) > 0 and len(t.devices) == 1
        assert t.damage == []
    # Reading the damaged kind warns with the chunk's byte offset, on the user's line.
    with pytest.warns(UserWarning, match=rf"byte {offset} \(0x{offset:x}\).*checksum") as w:
        api = t.api
    assert w[0].filename == __file__
    assert 0 < len(api) < len(tracesmith.load(mlp).api)
    assert [d[0] for d in t.damage] == [offset]
    assert "api rows" in str(w[0].message)
    # strict: raised by the access, every time it is tried; other kinds still read.
    with pytest.raises(tracesmith.TraceError, match=rf"bad_api.sbt is damaged.*\n.*byte {offset} "):
        s.api
    with pytest.raises(tracesmith.TraceError, match=rf"byte {offset} "):
        s.read()
    assert "api" in s.unread_kinds and len(s.memcpys) > 0


def test_damage_in_metadata_warns_at_load(tmp_path, transformer):
    bad = tmp_path / "bad_device.sbt"
    offset = damage_chunk(transformer, bad, DEVICE)
    with pytest.warns(UserWarning, match=rf"byte {offset} "):
        t = tracesmith.load(bad)
    assert [d[0] for d in t.damage] == [offset] and len(t.devices) == 0
    with pytest.raises(tracesmith.TraceError, match=rf"byte {offset} "):
        tracesmith.load(bad, strict=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert len(t.kernels) > 0  # the kernels' chunks are whole: no second warning


def test_an_unfinished_file_is_read_whole_at_load(tmp_path, mlp):
    data = open(mlp, "rb").read()
    cut = tmp_path / "cut.sbt"
    cut.write_bytes(data[: len(data) * 2 // 3])  # no index: chunks cannot be told apart by kind
    with pytest.warns(UserWarning, match=r"byte \d+"):
        t = tracesmith.load(cut)
    assert not t.complete and t.unread_kinds == frozenset() and len(t.kernels) > 0
    os.remove(cut)
    assert len(t.api) > 0  # already in memory


def copy_of(src, dst):
    shutil.copyfile(src, dst)
    return str(dst)


def test_a_file_replaced_or_removed_after_load_raises(tmp_path, mlp, transformer):
    path = copy_of(mlp, tmp_path / "run.sbt")
    t = tracesmith.load(path)
    n = len(t.kernels)
    # Replaced by another trace: its rows would not match the strings and metadata loaded.
    os.replace(copy_of(transformer, tmp_path / "other.sbt"), path)
    with pytest.raises(tracesmith.TraceChangedError, match=re.escape(path) + " changed since"):
        t.memcpys
    assert issubclass(tracesmith.TraceChangedError, tracesmith.TraceError)
    assert "memcpy" in t.unread_kinds and len(t.kernels) == n and len(t.devices) == 1
    # Replaced by a copy of the same contents: the same trace, read on.
    os.replace(copy_of(mlp, tmp_path / "same.sbt"), path)
    assert len(t.memcpys) == len(tracesmith.load(mlp).memcpys)
    # Removed.
    os.remove(path)
    with pytest.raises(tracesmith.TraceChangedError, match=re.escape(path) + " is gone"):
        t.api


def test_a_file_rewritten_in_place_keeping_size_and_mtime_raises(tmp_path, mlp, transformer):
    path = copy_of(mlp, tmp_path / "run.sbt")
    t = tracesmith.load(path)
    st = os.stat(path)
    other = open(transformer, "rb").read()
    assert len(other) > st.st_size
    with open(path, "r+b") as f:  # another trace's first bytes over it, in place
        f.write(other[:st.st_size])
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert os.stat(path).st_size == st.st_size and os.stat(path).st_ino == st.st_ino
    with pytest.raises(tracesmith.TraceChangedError, match="changed since"):
        t.kernels


def test_pickled_traces_read_their_other_kinds_later(tmp_path, transformer):
    path = copy_of(transformer, tmp_path / "run.sbt")
    t = tracesmith.load(path)
    len(t.kernels)
    u = pickle.loads(pickle.dumps(t))
    assert u.unread_kinds == t.unread_kinds and "kernel" not in u.unread_kinds
    assert np.array_equal(u.kernels.start_ns, t.kernels.start_ns)
    assert np.array_equal(u.api.start_ns, t.api.start_ns)
    os.remove(path)
    with pytest.raises(tracesmith.TraceChangedError, match="is gone"):
        pickle.loads(pickle.dumps(t)).memcpys


def test_threads_read_a_kind_once(transformer, counting):
    t = tracesmith.load(transformer)
    got, barrier = [], threading.Barrier(4)

    def read():
        barrier.wait()
        got.append(t.kernels)

    threads = [threading.Thread(target=read) for _ in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert len(got) == 4 and all(k is got[0] for k in got)
    assert counting.reads == [["kernel"]]


@pytest.fixture
def run(cli, tmp_path):
    """run.rank0..2.sbt (synthetic, `benchmark merge`)."""
    cli("benchmark", "merge", "--ranks", "3", "--kernels", "3000", "--keep", str(tmp_path))
    os.remove(tmp_path / "job.sbt")
    return tmp_path


def test_a_run_is_read_lazily_from_its_files(run):
    stem = str(run / "run.sbt")
    singles = [tracesmith.load(str(run / f"run.rank{r}.sbt")) for r in range(3)]
    t = tracesmith.load(stem)
    # Its kinds not read yet come from the run's files, merged on the fly again.
    assert not isinstance(t._source.file, str)
    assert "kernel" in t.unread_kinds and len(t.processes) == 3
    assert len(t.kernels) == sum(len(s.kernels) for s in singles)
    t.read()
    assert t._source is None and len(t.api) == sum(len(s.api) for s in singles)
    # Pickling reads the run whole first (the core's run does not pickle).
    t = tracesmith.load(stem)
    u = pickle.loads(pickle.dumps(t))
    assert u.unread_kinds == frozenset() and t.unread_kinds == frozenset()
    assert len(u.kernels) == len(t.kernels)
    # A file of the run vanishing under the Trace is said with the run's name.
    t = tracesmith.load(stem)
    os.remove(run / "run.rank1.sbt")
    with pytest.raises(tracesmith.TraceChangedError,
                       match=re.escape(stem) + r" \(3 traces\): .*run.rank1.sbt cannot be read"):
        t.kernels


def test_a_trace_built_in_memory_has_only_its_tables(mlp):
    t = tracesmith.load(mlp)
    data = {"strings": list(t.strings), "version": t.version, "damage": [], "complete": True,
            "tables": {"kernel": {"columns": {"start_ns": np.array([1, 2], np.uint64)},
                                  "codes": None, "config": {}, "fields": ["start_ns"]}}}
    u = tracesmith.Trace("mine", data)
    assert u.kinds == ["kernel"] and len(u.kernels) == 2 and u.unread_kinds == frozenset()
    with pytest.raises(AttributeError, match="no record kind"):
        u.api
