"""Traces as data: an SBT file's rows as NumPy columns, one Table per record kind."""

from __future__ import annotations

import json
import operator
import os
import sys
import threading
import warnings
from typing import Dict, List, NamedTuple, Optional

import numpy as np

from . import _run
from ._native import core

# Fields that hold an id into the trace's string table: `table["name"]`
# gives the strings of `name_id`.
STRING_FIELDS = frozenset({
    "name_id", "demangled_id", "domain_id", "uuid_id", "cmdline_id", "hostname_id",
    "path_id", "build_id_id", "function_id", "file_id", "key_id", "value_id", "stall_id",
    "text_id", "label_id", "unit_id", "args_id",
})

# Event record kinds (the rest are metadata: devices, processes, stacks, stats, ...).
EVENT_KINDS = ("kernel", "memcpy", "memset", "sync", "api", "nvtx", "marker", "memory",
               "counter", "module", "graph", "overhead", "drop", "pcsample", "timeout",
               "gpumetric", "appcounter", "appevent", "nvtxpayload")

# Record kinds by the attribute a Trace offers them under.
KINDS = {
    "kernels": "kernel", "memcpys": "memcpy", "memsets": "memset", "syncs": "sync",
    "api": "api", "nvtx": "nvtx", "markers": "marker", "memory": "memory",
    "counters": "counter", "modules": "module", "graphs": "graph", "overheads": "overhead",
    "drops": "drop", "pc_samples": "pcsample", "kernel_timeouts": "timeout",
    "gpu_metric_samples": "gpumetric", "app_counters": "appcounter", "app_events": "appevent",
    "nvtx_payloads": "nvtxpayload", "devices": "device", "processes": "process",
    "threads": "thread", "clocks": "clock", "mappings": "mapping", "frames": "frame",
    "stack_nodes": "stacknode", "stat_rows": "stat", "metadata_rows": "metadata",
    "pc_lines": "pcline", "pc_sass": "pcsass", "sass_counts": "sasscount",
    "gpu_metric_names": "gpumetricdesc", "graph_nodes": "graphnode",
}


# Table labels by any name a user may try: "kernel", "kernels", "memcpys", ...
_LABELS = {**{label: label for label in KINDS.values()}, **KINDS}

_ENUMS: Optional[Dict[str, Dict[str, np.ndarray]]] = None


def _enum_names(kind: str) -> Dict[str, np.ndarray]:
    """{field: names by value, then "unknown"} of a kind's enumeration fields
    (copy_kind, sync_type, ...: model/enum_fields.h, the CLI's names)."""
    global _ENUMS
    if _ENUMS is None:
        # object arrays of str, as the string columns (`name`, ...) are
        _ENUMS = {label: {field: np.array(list(names) + ["unknown"], dtype=object)
                          for field, names in fields.items()}
                  for label, fields in core().enum_names().items()}
    return _ENUMS.get(kind, {})


def _path(path, what: str = "path") -> str:
    """A file path argument as str (str, bytes or os.PathLike)."""
    if isinstance(path, Trace):
        return path.path
    try:
        return os.fsdecode(os.fspath(path))
    except TypeError:
        raise TypeError(f"{what} must be a file path (str, bytes or os.PathLike), "
                        f"not {type(path).__name__}") from None


def _window(value, what: str) -> str:
    """A window bound: "2ms", "1.5s", a number of nanoseconds, or a timedelta."""
    if value is None or value == "":
        return ""
    if isinstance(value, str):
        return value
    if hasattr(value, "total_seconds"):
        return f"{round(value.total_seconds() * 1e9)}ns"
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return f"{round(value)}ns"
    raise TypeError(f"{what} must be a duration such as '2ms', a number of nanoseconds or a "
                    f"timedelta, not {type(value).__name__}")


class Frame(NamedTuple):
    """One frame of a host call stack, innermost first in Trace.stack()."""
    kind: str       # "python" or "native"
    function: str   # "" when a native frame was not symbolized
    file: str       # Python file, or the native module's path
    line: int       # Python line (0 for native frames)
    pc: int         # native: module-relative pc; Python: 0


class Table:
    """One record kind's rows: a NumPy array per field (`table["start_ns"]`).

    `table["name"]` resolves a string-id field (`name_id`) to its strings,
    `table["copy_kind_name"]` an enumeration field (`copy_kind`, `sync_type`,
    `src_kind`, `op`, ...) to the names the CLI prints ("HtoD",
    "stream_synchronize", ...), and `table["duration_ns"]` is end_ns -
    start_ns where both exist. Nothing is a
    Python object per row until you ask for strings. `table[mask]` (a boolean
    array, an index array or a slice) is a Table of those rows:
    `k[k.duration_ns > 10_000]`. Field names and types: `fields`, or the
    record definitions in include/tracesmith/model/records.h.

    In memory, fields that repeat from row to row (launch configuration,
    stream, device, name: the format's "config" fields) are kept once per
    distinct combination with a row -> combination index, as the SBT file
    keeps them; asking for such a field builds its full column.
    """

    def __init__(self, kind: str, columns: Dict[str, np.ndarray], strings: np.ndarray,
                 codes: Optional[np.ndarray] = None, config: Optional[Dict[str, np.ndarray]] = None,
                 fields: Optional[List[str]] = None):
        self.kind = kind
        self._columns = columns
        self._strings = strings
        self._codes = codes
        self._config = config or {}
        self._fields = list(fields) if fields is not None else list(columns) + list(self._config)

    @classmethod
    def _from_core(cls, kind: str, data: dict, strings: np.ndarray) -> "Table":
        return cls(kind, data["columns"], strings, data["codes"], data["config"], data["fields"])

    def __len__(self) -> int:
        if self._codes is not None:
            return len(self._codes)
        for column in self._columns.values():
            return len(column)
        return 0

    def __repr__(self) -> str:
        return f"<tracesmith.Table {self.kind}: {len(self)} rows, fields {', '.join(self.fields)}>"

    @property
    def fields(self) -> List[str]:
        """The record kind's fields, in the format's order (docs/sbt-format.md)."""
        return list(self._fields)

    def _has(self, field: str) -> bool:
        return field in self._columns or field in self._config

    def __contains__(self, field: str) -> bool:
        if field == "duration_ns":
            return self._has("start_ns") and self._has("end_ns")
        if field.endswith("_name") and field[:-5] in _enum_names(self.kind):
            return self._has(field[:-5])
        return self._has(field) or (f"{field}_id" in STRING_FIELDS and self._has(f"{field}_id"))

    def __iter__(self):
        raise TypeError(f"a Table is columns, not rows: iterate over {self.kind} rows with "
                        f"to_pandas().itertuples(), or over .fields")

    def __dir__(self):
        names = list(self._fields)
        names += [f[:-3] for f in self._fields if f in STRING_FIELDS]
        names += [f + "_name" for f in self._fields if f in _enum_names(self.kind)]
        if "duration_ns" in self:
            names.append("duration_ns")
        return sorted(set(list(super().__dir__()) + names))

    def _strings_of(self, ids: np.ndarray) -> np.ndarray:
        # An id past the string table (a damaged file) reads as "", as in the CLI.
        return self._strings[np.where(ids < len(self._strings), ids, 0)]

    def __getitem__(self, field) -> np.ndarray:
        if not isinstance(field, str):
            # Rows: a mask, indices or a slice.
            return Table(self.kind, {f: c[field] for f, c in self._columns.items()},
                         self._strings, None if self._codes is None else self._codes[field],
                         self._config, self._fields)
        if field in self._columns:
            return self._columns[field]
        if field in self._config:
            return self._config[field][self._codes]
        if field == "duration_ns" and "duration_ns" in self:
            start, end = self["start_ns"], self["end_ns"]
            # Rows whose end is unknown (0) get 0, not a huge unsigned number.
            # (One array of the column's size is made, not three: on 10 M rows
            # each costs its page faults.)
            duration = end - start
            if duration.dtype != np.uint64:
                duration = duration.astype(np.uint64)
            duration[end < start] = 0
            return duration
        if field.endswith("_name") and field[:-5] in _enum_names(self.kind) and self._has(field[:-5]):
            names = _enum_names(self.kind)[field[:-5]]
            values = self[field[:-5]]
            return names[np.minimum(values, len(names) - 1)]
        ids = f"{field}_id"
        if ids in STRING_FIELDS and ids in self._config:
            return self._strings_of(self._config[ids])[self._codes]
        if ids in STRING_FIELDS and ids in self._columns:
            return self._strings_of(self._columns[ids])
        raise KeyError(f"{self.kind} rows have no field {field!r}; fields: {', '.join(self.fields)}")

    def __getattr__(self, field: str) -> np.ndarray:
        if field.startswith("_"):
            raise AttributeError(field)
        try:
            return self[field]
        except KeyError as e:
            raise AttributeError(str(e)) from None

    def to_pandas(self):
        """A pandas DataFrame of the rows (pandas is an optional dependency).

        String-id fields become Categorical columns named without `_id`
        (`name`, `demangled`, ...), which keeps memory per row small; each
        enumeration field (`copy_kind`, ...) keeps its numbers and gains a
        Categorical `<field>_name` column; `duration_ns` is added where the kind
        has start and end times.
        """
        try:
            import pandas as pd
        except ImportError as e:
            raise ImportError("Table.to_pandas needs pandas (pip install pandas, or "
                              "apt-get install python3-pandas)") from e
        data = {}
        for field in self._fields:
            if field in STRING_FIELDS and field in self._config:
                data[field[:-3]] = self._categorical(pd, self._config[field], self._codes)
            elif field in STRING_FIELDS:
                data[field[:-3]] = self._categorical(pd, self._columns[field], None)
            else:
                data[field] = self[field]
                if field in _enum_names(self.kind):
                    data[field + "_name"] = pd.Categorical(self[field + "_name"])
        if "duration_ns" in self:
            data["duration_ns"] = self["duration_ns"]
        return pd.DataFrame(data)

    def _categorical(self, pd, ids: np.ndarray, rows: Optional[np.ndarray]):
        # Categories: the distinct strings the rows use, sorted (a string the
        # table holds under two ids is one category, as in the NumPy column).
        # `rows`: per row, an index into `ids` (config fields), or None.
        if rows is not None:
            used, inverse = np.unique(rows, return_inverse=True)
            ids = ids[used]
        else:
            ids, inverse = np.unique(ids, return_inverse=True)
        names = self._strings_of(ids).astype(str)
        categories, to_category = np.unique(names, return_inverse=True)
        return pd.Categorical.from_codes(to_category[inverse], categories=categories)


def _warn(message: str) -> None:
    """warnings.warn, attributed to the first caller outside this package (the
    user's line that asked for the rows)."""
    level, frame = 2, sys._getframe(1)
    while frame is not None and frame.f_globals.get("__name__", "").split(".")[0] == "tracesmith":
        frame = frame.f_back
        level += 1
    warnings.warn(message, stacklevel=level)


def _event_labels(kinds) -> List[str]:
    """Event kind labels of a kinds argument ("kernel" or "kernels", ...; a str or a list)."""
    labels = []
    for k in ([kinds] if isinstance(kinds, str) else kinds):
        label = _LABELS.get(k)
        if label not in EVENT_KINDS:
            raise ValueError(f"unknown event kind {k!r}; kinds: {', '.join(EVENT_KINDS)}")
        labels.append(label)
    return labels


class _Source:
    """Where a lazily loaded Trace reads the event kinds it has not read yet:
    the file (or, for a run of several files, the core's OpenRun that reads
    them merged on the fly), its name in messages, its identity when loaded
    (the chunk index and every chunk's header, of each file; checked before
    each read) and strict."""

    def __init__(self, file, what: str, identity: int, strict: bool):
        self.file = file
        self.what = what
        self.identity = identity
        self.strict = strict


class Trace:
    """An SBT trace loaded as columns (see `load`).

    Loading reads the strings and the metadata (devices, processes, threads,
    stacks, capture stats, metadata); each event kind's rows are read from the
    file the first time they are asked for (`t.kernels`, `t.table("memcpy")`,
    `t.to_pandas("api")`), in one streaming pass over the file that decodes
    that kind's chunks only, and kept. `t.read(kinds)` reads several kinds in
    one pass (`t.read()`: every kind not read yet). `unread_kinds` says which
    are still in the file. A damaged chunk warns (or, loaded with strict=True,
    raises TraceError) with its byte offset at the access that reads it, and
    `damage` lists the damage of what has been read so far. If the file
    changed, was replaced or is gone since load(), reading another kind raises
    TraceChangedError (a TraceError) naming it: rows of other contents are
    never mixed with what was loaded. Pickling keeps the kinds read and reads
    the others from the same file later (a run of several files is read whole
    first); the reads are thread-safe.
    """

    def __init__(self, path: str, data: dict, kinds=None, sources=None, files=None):
        #: the file read, or for a run of several files its name ("run.sbt (4 traces)")
        self.path = path
        #: the names it was loaded from, and the trace files they stand for
        self.sources = list(sources) if sources is not None else [path]
        self.files = list(files) if files is not None else [path]
        #: event kinds left out by load(..., kinds=...) (their tables are not available)
        self.skipped_kinds = frozenset()
        self.strings = np.asarray(data["strings"], dtype=object)
        self.version = tuple(data["version"])
        #: (byte offset, length, what) of each damaged range of what has been
        #: read (the metadata, and the event kinds read); empty when clean.
        self.damage = [tuple(d) for d in data["damage"]]
        #: the writer closed the file (False: an unfinished or cut capture).
        self.complete = bool(data["complete"])
        self._tables = {kind: Table._from_core(kind, table, self.strings)
                        for kind, table in data["tables"].items()}
        # Every record kind, in the format's order; the event kinds still in
        # the file (read on first access from _source) and their row counts
        # as the file's index lists them.
        self._kinds = list(data.get("kinds") or data["tables"])
        self._unread = frozenset(data.get("pending", ()))
        self._index_rows = dict(data.get("rows", {}))
        self._source: Optional[_Source] = None
        self._lock = threading.Lock()
        if kinds:
            self.skipped_kinds = frozenset(k for k in EVENT_KINDS if k not in kinds)
        self._frame_cache: Optional[List[Frame]] = None

    def _rows(self, kind: str) -> int:
        table = self._tables.get(kind)
        return len(table) if table is not None else self._index_rows.get(kind, 0)

    def __repr__(self) -> str:
        # (kinds not read yet: the row counts of the file's index)
        counts = ", ".join(f"{self._rows(k)} {k}" for k in self._kinds
                           if self._rows(k) and k in KINDS.values() and k not in
                           ("frame", "stacknode", "mapping", "stat", "metadata", "clock"))
        return f"<tracesmith.Trace {self.path}: {counts}>"

    def table(self, kind: str) -> Table:
        """Rows of one record kind by its label or attribute name: "kernel" or
        "kernels", "memcpy" or "memcpys", "api", ... An event kind not read
        yet is read from the file now (see Trace)."""
        label = _LABELS.get(kind)
        if label is None or label not in self._kinds:
            raise KeyError(f"no record kind {kind!r}; kinds: {', '.join(self._kinds)}")
        if label in self.skipped_kinds:
            raise KeyError(f"{label} rows were not loaded (load(..., kinds=...) left them out)")
        if label in self._unread:
            self._read([label])
        return self._tables[label]

    def read(self, kinds=None) -> "Trace":
        """Reads these event kinds' rows now if they are not read yet ("kernel"
        or "kernels", a list of them; None: every kind not read yet), in one
        pass over the file, and returns the trace. Raises as the first access
        to each of them would (TraceChangedError, strict's TraceError)."""
        if kinds is None:
            labels = list(self._unread)
        else:
            labels = _event_labels(kinds)
            for label in labels:
                if label in self.skipped_kinds:
                    raise KeyError(f"{label} rows were not loaded (load(..., kinds=...) left "
                                   "them out)")
        self._read(labels)
        return self

    @property
    def unread_kinds(self) -> frozenset:
        """Event kinds whose rows are still in the file: read on first access
        (or by read())."""
        return self._unread

    def _read(self, labels) -> None:
        with self._lock:  # one read at a time; another thread may have read them meanwhile
            labels = [k for k in self._kinds if k in labels and k in self._unread]
            if not labels:
                return
            source = self._source
            if source is None:
                raise KeyError(f"{', '.join(labels)} rows were not loaded (this trace has no "
                               "file to read them from)")
            data = core().read_kinds(source.file, labels, source.strict, source.identity,
                                     source.what)
            for kind, table in data["tables"].items():
                self._tables[kind] = Table._from_core(kind, table, self.strings)
            self.damage = sorted(set(self.damage) | {tuple(d) for d in data["damage"]})
            self._unread = self._unread.difference(labels)
            if not self._unread:
                self._source = None
        if data["damage_text"]:
            _warn(data["damage_text"] +
                  f"\nloading only the readable part of its {', '.join(labels)} rows")

    def __getstate__(self):
        source = self._source
        if source is not None and not isinstance(source.file, str):
            self.read()  # a run read on the fly (the core's OpenRun does not pickle): whole first
        state = self.__dict__.copy()
        del state["_lock"]
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._lock = threading.Lock()

    def __dir__(self):
        return sorted(set(list(super().__dir__()) + list(KINDS)))

    @property
    def kinds(self) -> List[str]:
        """Every record kind, by label (those with no rows too; event kinds not
        read yet included: table() reads them)."""
        return list(self._kinds)

    def __getattr__(self, name: str) -> Table:
        if name in KINDS:
            try:
                return self.table(name)
            except KeyError as e:
                raise AttributeError(str(e)) from None
        raise AttributeError(f"Trace has no attribute {name!r}; tables: {', '.join(KINDS)}"
                             " (t.stats and t.metadata are dicts; their rows: stat_rows,"
                             " metadata_rows)")

    def to_pandas(self, kind: str = "kernel"):
        """`table(kind).to_pandas()`."""
        return self.table(kind).to_pandas()

    @property
    def metadata(self) -> Dict[str, str]:
        """Capture metadata (command line, tool version, host, ...) of the trace."""
        rows = self._tables["metadata"]
        return {str(k): str(v) for k, v in zip(rows["key"], rows["value"])}

    @property
    def stats(self) -> Dict[str, int]:
        """Capture statistics (drops, capture cost, ...), by name; summed over processes."""
        out: Dict[str, int] = {}
        rows = self._tables["stat"]
        for name, value in zip(rows["name"], rows["value"]):
            out[str(name)] = out.get(str(name), 0) + int(value)
        return out

    @property
    def gpu_metrics(self) -> Table:
        """GPU hardware metrics over time (`profile --gpu-metrics`) as one table:
        a row per sample of one metric on one GPU, with start_ns, end_ns,
        value, pid, device_id, metric_id, and the metric as strings:
        `["name"]` (CUPTI's name), `["label"]` (its short plain name, "SM
        active") and `["unit"]` ("%", "bytes/s"). `to_pandas()` gives a
        DataFrame (e.g. `.pivot_table(index="start_ns", columns="label",
        values="value")`). Empty when the trace has no GPU metrics."""
        samples = self.table("gpumetric")
        desc = self.table("gpumetricdesc")
        n = len(samples)

        def column(table, field, dtype=np.uint32):  # an empty table may hold no column
            return table[field] if field in table else np.zeros(len(table), dtype=dtype)

        pid, metric = column(samples, "pid"), column(samples, "metric_id")
        ids = {f: np.zeros(n, dtype=np.uint32) for f in ("name_id", "label_id", "unit_id")}
        for i in range(len(desc)):
            rows = (pid == column(desc, "pid")[i]) & (metric == column(desc, "metric_id")[i])
            for f in ids:
                ids[f][rows] = column(desc, f)[i]
        columns = {f: column(samples, f, np.float64 if f == "value" else
                             np.uint64 if f.endswith("_ns") else np.uint32)
                   for f in ("start_ns", "end_ns", "value", "pid", "device_id", "metric_id")}
        columns.update(ids)
        return Table("gpumetric", columns, self.strings)

    def _frames(self) -> List[Frame]:
        if self._frame_cache is None:
            f = self._tables["frame"]
            m = self._tables["mapping"]
            paths = {int(i): str(p) for i, p in zip(m["mapping_id"], m["path"])}
            self._frame_cache = [
                Frame("python" if kind == 2 else "native", str(func), str(file) if kind == 2
                      else paths.get(int(mapping), ""), int(line), 0 if kind == 2 else int(pc))
                for kind, func, file, line, mapping, pc in zip(
                    f["kind"], f["function"], f["file"], f["line"], f["mapping_id"], f["rel_pc"])
            ]
        return self._frame_cache

    def stack(self, stack_id: int) -> List[Frame]:
        """The host call stack of an event's `stack_id`, innermost frame first
        (empty for 0: no stack). IndexError for an id the trace does not have."""
        frames = self._frames()
        nodes = self._tables["stacknode"]
        frame_ids, parents = nodes["frame_id"], nodes["parent_id"]
        out: List[Frame] = []
        sid = operator.index(stack_id)  # TypeError for floats and strings
        if sid < 0 or sid > len(frame_ids):
            raise IndexError(f"stack id {sid} is not in this trace (it has 1..{len(frame_ids)}, "
                             "and 0 for no stack)")
        while 0 < sid <= len(frame_ids):
            fid = int(frame_ids[sid - 1])
            if 0 < fid <= len(frames):
                out.append(frames[fid - 1])
            parent = int(parents[sid - 1])
            if parent >= sid:
                break
            sid = parent
        return out


def load(path, strict: bool = False, kinds=None, single: bool = False) -> Trace:
    """Loads an SBT trace as columns (one NumPy array per field, allocated once).

    path: a trace file, or a run of several (a list of files, a directory, or
    a capture's output name: "run.sbt" also stands for run.rank*.sbt and
    run.pid*.sbt), merged into one trace with every process (`merge`);
    single=True reads the file named alone.

    Loading is lazy: it reads the strings and the metadata (devices,
    processes, threads, stacks, capture stats and metadata: `t.devices`,
    `t.stats`, `t.stack()`, ... are there at once); each event kind's rows
    are read the first time they are asked for (`t.kernels`,
    `t.table("memcpy")`, `t.to_pandas("api")`), one streaming pass over the
    file per kind asked, or one for several with `t.read(["kernel", "api"])`
    (`t.read()`: all). Memory is the columns of the kinds read (about 44
    bytes per kernel, 36 per API call). If the file changes or disappears
    before a kind is read, that read raises TraceChangedError naming it. A run
    of several files is read merged on the fly (no temporary file), its kinds
    not read yet from its files later. A file without its index (an unfinished capture, or a damaged
    index) is read whole here: its chunks cannot be told apart by kind
    without decoding them.

    kinds: only these event kinds ("kernel" or "kernels", "api", ...), read
    here with the metadata in one pass (for large traces); the others are
    not available (`skipped_kinds`).

    A damaged or unfinished file loads its readable part with a warning naming
    the byte ranges skipped (`Trace.damage`); with strict=True it raises
    TraceError instead. Damage in an event kind's chunks is reported by the
    access that reads that kind (a kind never read never warns). A file that
    is not a trace raises TraceError.
    """
    labels = _event_labels(kinds) if kinds is not None else []
    with _run.opened_source(path, strict, single, "loading") as (file, names, files):
        name = files[0] if len(files) == 1 else _run.display_name(names, files)
        data = core().read_columns(file, bool(strict), labels, kinds is None,
                                   "" if len(files) == 1 else name)
    trace = Trace(name, data, labels, sources=names, files=files)
    if trace.unread_kinds:
        trace._source = _Source(file, file if len(files) == 1 else name, data["identity"],
                                bool(strict))
    if data["damage_text"]:
        warnings.warn(data["damage_text"] + "\nloading only its readable part", stacklevel=2)
    return trace


def analyze(path, start="", end="", steps="", whole: bool = False, strict: bool = False,
            with_warmup: bool = False) -> dict:
    """The report of `tracesmith analyze --json` as a dict (times in ns).

    start/end: a window relative to the trace start ("2ms", "1.5s", a number
    of nanoseconds or a timedelta); steps: N, "N" or "A:B" of the report's
    Steps table (it takes precedence over start/end, as in the CLI); whole:
    the whole trace instead of first kernel to last GPU operation;
    with_warmup: keep the warm-up (the first steps, when they are outliers)
    in the window instead of reporting it apart (CLI: --with-warmup). Keys:
    source, events, window, kernel_count, devices, streams, findings, ...;
    ranks (the cross-rank report: clocks, collectives, stragglers) when the
    trace or run holds several processes;
    startup and teardown only when the default window is used, and warmup
    when it also set the warm-up apart. A
    damaged file is analysed in its readable part with a warning naming the
    byte ranges (strict=True raises TraceError instead).
    """
    if isinstance(steps, int) and not isinstance(steps, bool):
        steps = str(steps)
    if not isinstance(steps, str):
        raise TypeError(f"steps must be N or 'A:B', not {type(steps).__name__}")
    with _run.opened_source(path, strict, False, "analysing") as (file, names, files):
        report, damage = core().analyze_json(file, _window(start, "start"), _window(end, "end"),
                                            steps, bool(whole), bool(strict), list(files),
                                            bool(with_warmup))
    if damage:
        warnings.warn(damage + "\nanalysing only its readable part", stacklevel=2)
    result = json.loads(report.decode("utf-8", "replace"))
    if len(files) > 1:
        result["source"] = _run.display_name(names, files)
    return result


def memory(path, at="", top: int = 10, strict: bool = False) -> dict:
    """The report of `tracesmith memory --json` as a dict: per process, device and
    memory space ("memory" list) the peak with what was live then by owner and by
    call site, the owners over time, the live bytes summarised ("bins"), what is
    still live at the end (leak suspects marked), plus "churn" and "findings".
    at: also what was live at this time after the trace start ("2.5s", ns or a
    timedelta), under each entry's "at". Times in ns from the trace start. A
    damaged file is read in its readable part with a warning (strict=True raises
    TraceError instead)."""
    with _run.opened_source(path, strict, False, "analysing") as (file, names, files):
        report, damage = core().memory_json(file, _window(at, "at"), int(top), bool(strict))
    if damage:
        warnings.warn(damage + "\nanalysing only its readable part", stacklevel=2)
    result = json.loads(report.decode("utf-8", "replace"))
    if len(files) > 1:
        result["source"] = _run.display_name(names, files)
    return result


def diff(a, b, nvtx: str = "", strict: bool = False) -> dict:
    """`tracesmith diff --json A B` as a dict: per-kernel and per-call-site count and
    GPU time differences of B against the baseline A. A damaged side is compared
    in its readable part and named in the result's "warnings" (and a Python
    warning); strict=True raises TraceError instead. nvtx: only work inside
    NVTX ranges of that name."""
    with _run.opened_source(a, strict, False, "comparing", "a") as (file_a, names_a, files_a), \
            _run.opened_source(b, strict, False, "comparing", "b") as (file_b, names_b, files_b):
        result = json.loads(core().diff_json(file_a, file_b, str(nvtx),
                                             bool(strict)).decode("utf-8", "replace"))
    if len(files_a) > 1:
        result["a"] = _run.display_name(names_a, files_a)
    if len(files_b) > 1:
        result["b"] = _run.display_name(names_b, files_b)
    for w in result.get("warnings", []):
        warnings.warn(w, stacklevel=2)
    return result


def event_stats(path, kinds=None, name: str = "", stream: Optional[int] = None,
                device: Optional[int] = None, start="", end="", strict: bool = False) -> dict:
    """`tracesmith view --stats` as a dict, streamed over the file (bounded memory):
    {"matched": N, "per_kind": {kind: count}, "per_name": [{"kind", "name",
    "count", "timed", "total_ns", "mean_ns", "min_ns", "max_ns"}, ...]} with
    per_name largest total first. Filters as `view`: kinds ("kernel", "api",
    ...), name (a regex searched in the name), stream, device, and a window
    start/end relative to the trace start ("2ms", ns, or a timedelta); other
    kinds' chunks are not even decoded. A damaged file is counted in its
    readable part with a warning (strict=True raises TraceError)."""
    labels = []
    for k in ([kinds] if isinstance(kinds, str) else (kinds or [])):
        label = _LABELS.get(k, k)
        labels.append(label)
    with _run.opened_source(path, strict, False, "counting") as (file, _, _):
        result = core().event_stats(file, labels, str(name),
                                    -1 if stream is None else int(stream),
                                    -1 if device is None else int(device),
                                    _window(start, "start"), _window(end, "end"), bool(strict))
    damage = result.pop("damage_text")
    if damage:
        warnings.warn(damage + "\ncounting only its readable part", stacklevel=2)
    return result
