"""Runs: the traces of a job (one file per process) opened as one trace.

Every function that reads a trace takes a run: a file, a list of files, a
directory of them, or a capture's output name ("run.sbt" also stands for
run.rank*.sbt and run.pid*.sbt beside it). One file is read in place; several
are read as one trace merged on the fly (C++ cluster::RunSource, `opened_source`)
by load, analyze, memory, diff, event_stats and export: no temporary file
(`merge`, C++ cluster::MergeTraces, writes the same trace to a file).
"""

from __future__ import annotations

import contextlib
import os
import warnings

from ._errors import TraceError
from ._native import core


def run_names(arg, what: str = "path") -> list:
    """The names a run argument gives: a Trace's own, a list's, or one path's."""
    sources = getattr(arg, "sources", None)  # a Trace remembers what it was loaded from
    if sources is not None:
        return list(sources)
    items = list(arg) if isinstance(arg, (list, tuple)) else [arg]
    if not items:
        raise TraceError(f"{what}: no trace given")
    names = []
    for p in items:
        try:
            names.append(os.fsdecode(os.fspath(p)))
        except TypeError:
            raise TypeError(f"{what} must be a file path (str, bytes or os.PathLike), a list of "
                            f"them or a Trace, not {type(p).__name__}") from None
    return names


def display_name(names: list, files: list) -> str:
    """As the CLI says it: "run.sbt", "run.sbt (4 traces)", "a.sbt + 2 more (3 traces)"."""
    name = names[0] + (f" + {len(names) - 1} more" if len(names) > 1 else "")
    if len(files) > 1 or len(names) > 1:
        name += f" ({len(files)} traces)"
    return name


def warn_merge(result: dict, doing: str, stacklevel: int) -> None:
    """The merge's damage warnings and notes, as the CLI prints them."""
    for i in result["inputs"]:
        if i["damage_text"]:
            warnings.warn(f"{i['damage_text']}\n{doing} only its readable part",
                          stacklevel=stacklevel)
    for note in result["notes"]:
        warnings.warn(note, stacklevel=stacklevel)


def resolve(arg, single: bool = False, what: str = "path"):
    """(names, files) of a run argument."""
    names = run_names(arg, what)
    files = getattr(arg, "files", None)
    if getattr(arg, "sources", None) is not None and files is not None and len(files) == 1:
        # A Trace of one file (loaded alone, e.g. with single=True): that file
        # again, never the run its name would stand for.
        names, single = list(files), True
    run = core().resolve_run(names, bool(single))
    return names, list(run["files"]), list(run["expanded"])


@contextlib.contextmanager
def opened_source(arg, strict: bool = False, single: bool = False, doing: str = "reading",
                  what: str = "path"):
    """Yields (trace, names, files) for the functions of the C++ core that take a trace
    source: the one file's path, or several files read as one trace merged on the fly
    (core().open_run, cluster::RunSource: no temporary file). What the merge's survey
    found is warned at once; the notes only reading finds, after the block."""
    names, files, expanded = resolve(arg, single, what)
    for name in expanded:
        warnings.warn(f"{name} is one of a run of {len(files)} traces; reading them all together "
                      f"(single=True reads {name} alone)", stacklevel=4)
    if len(files) == 1:
        yield files[0], names, files
        return
    run = core().open_run(files, bool(strict))
    said = run.result()
    warn_merge(said, doing, stacklevel=4)
    yield run, names, files
    for note in run.result()["notes"]:
        if note not in said["notes"]:
            warnings.warn(note, stacklevel=4)


def merge(inputs, out, overwrite: bool = False, strict: bool = False) -> dict:
    """Merges the traces of a run into one SBT file, as `tracesmith merge` does.

    inputs: a list of trace files, a directory of them, or a capture's output
    name (run.sbt also stands for run.rank*.sbt and run.pid*.sbt). Every
    process keeps its pid, rank, host and capture clock (with its clock
    anchors); per-file ids (strings, stacks, ...) are renumbered, and a pid two
    inputs share is given a new one (a note says which). A damaged input is
    merged in its readable part with a warning (strict=True raises TraceError
    and writes nothing). out must not be an input; an existing out is replaced
    only with overwrite=True. Returns {"path", "summary", "events",
    "input_bytes", "output_bytes", "notes", "inputs": [{"path", "events",
    "events_by_kind", "processes": [{"pid", "out_pid", "rank", "host",
    "name"}], "damage_text", ...}]}.
    """
    _, files, _ = resolve(inputs, False, "inputs")
    out = os.fsdecode(os.fspath(out))
    core().check_output(out, files, bool(overwrite), "pass overwrite=True to replace it")
    result = core().merge(files, out, bool(strict), bool(overwrite), False)
    warn_merge(result, "merging", stacklevel=3)
    return result
