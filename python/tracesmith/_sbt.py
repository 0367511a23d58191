"""SBTWriter and SBTReader: the seed tool's names, over the real SBT format."""

from __future__ import annotations

from typing import Dict, Iterator, List, Optional, Tuple, Union

import numpy as np

from ._native import core
from ._trace import STRING_FIELDS, Table, Trace, _path, load


class SBTWriter:
    """Writes rows as an SBT trace that every TraceSmith reader and command reads.

        t = tracesmith.load("run.sbt")
        with tracesmith.SBTWriter("slow.sbt") as w:
            w.write_table(t.kernels[t.kernels.duration_ns > 100_000])
            w.write_table(t.devices)

    Rows are written as given: string fields are re-interned into the new
    file's string table, every other value (stack_id, correlation_id, ...) is
    kept, so write the stack tables (frames, stack_nodes, mappings) too if
    the rows' stacks should resolve. Nothing is written until finalize() (or
    the end of the `with` block without an exception); the file then appears
    whole (atomic rename). An existing file is replaced only with
    overwrite=True (the CLI's --force rule).
    """

    def __init__(self, path, *, overwrite: bool = False):
        self.path = _path(path)
        self._overwrite = bool(overwrite)
        self._check_output()
        self._strings: List[str] = [""]
        self._ids: Dict[str, int] = {"": 0}
        self._tables: Dict[str, List[Dict[str, np.ndarray]]] = {}
        self._done = False

    def _check_output(self) -> None:
        core().check_output(self.path, [], self._overwrite, "pass overwrite=True to replace it")

    def _intern(self, s: str) -> int:
        i = self._ids.get(s)
        if i is None:
            i = self._ids[s] = len(self._strings)
            self._strings.append(s)
        return i

    def write_table(self, table: Table) -> None:
        """Appends a Table's rows (any kind, e.g. `t.kernels[mask]`)."""
        if self._done:
            raise ValueError("SBTWriter: already finalized")
        if not isinstance(table, Table):
            raise TypeError(f"write_table takes a tracesmith.Table, not {type(table).__name__}")
        columns = {}
        for field in table.fields:
            values = np.asarray(table[field])
            if field in STRING_FIELDS:
                used, inverse = np.unique(values, return_inverse=True)
                strings = table._strings
                new = np.array([self._intern(str(strings[i]) if i < len(strings) else "")
                                for i in used], dtype=np.uint32)
                values = new[inverse] if len(values) else values.astype(np.uint32)
            columns[field] = values
        self._tables.setdefault(table.kind, []).append(columns)

    def write_events(self, events: Union[Trace, Table, "list[Table]"]) -> None:
        """Appends a Table, every table of a Trace, or each Table of a list."""
        if isinstance(events, Trace):
            events.read()  # the event kinds not read yet, in one pass
            for kind in events.kinds:
                if kind in events.skipped_kinds:
                    continue
                table = events.table(kind)
                if len(table):
                    self.write_table(table)
        elif isinstance(events, Table):
            self.write_table(events)
        else:
            for table in events:
                self.write_table(table)

    def finalize(self) -> str:
        """Writes the file; returns its path."""
        if self._done:
            return self.path
        # Again: the file may have appeared since the writer was made.
        self._check_output()
        # Each part keeps its own dtypes and fields; the C++ side casts each
        # to the format's types (no lossy common dtype across parts).
        core().write_tables(self.path, self._tables, self._strings)
        self._done = True
        return self.path

    close = finalize

    def __enter__(self) -> "SBTWriter":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self.finalize()
        else:
            self._done = True  # an error in the block: nothing is written


class SBTReader:
    """Reads an SBT file (any version this build reads, SBT 1.0 on).

        r = tracesmith.SBTReader("run.sbt")
        t = r.read()                       # a tracesmith.Trace
        for kind, table in r.tables():     # (kind, Table) with rows
            ...

    `read(kinds=...)` loads only those event kinds' rows; `strict=True`
    raises on damage instead of reading the readable part with a warning.
    """

    def __init__(self, path, *, strict: bool = False):
        self.path = _path(path)
        self.strict = strict
        self._trace: Optional[Trace] = None

    def read(self, kinds=None) -> Trace:
        """The trace (see tracesmith.load)."""
        if kinds is not None:
            return load(self.path, strict=self.strict, kinds=kinds)
        if self._trace is None:
            self._trace = load(self.path, strict=self.strict)
        return self._trace

    read_events = read

    def tables(self) -> Iterator[Tuple[str, Table]]:
        """(kind, Table) for every record kind with rows."""
        t = self.read().read()  # every event kind, in one pass over the file
        for kind in t.kinds:
            table = t.table(kind)
            if len(table):
                yield kind, table

    @property
    def version(self) -> Tuple[int, int]:
        """(major, minor) SBT version of the file (without loading its events)."""
        if self._trace is not None:
            return self._trace.version
        # Asking for no event kind: only strings and metadata chunks are decoded.
        return tuple(core().read_columns(self.path, self.strict, ["(none)"])["version"])

    def __enter__(self) -> "SBTReader":
        return self

    def __exit__(self, *exc) -> None:
        self._trace = None
