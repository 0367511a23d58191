"""TraceSmith: GPU profiling and replay for CUDA programs, from Python.

    import tracesmith
    t = tracesmith.load("run.sbt")            # metadata now; each kind's columns when asked for
    k = t.kernels.to_pandas()                 # kernels read here (one pass); pandas optional
    print(k.groupby("name").duration_ns.sum().nlargest(5))
    report = tracesmith.analyze("run.sbt")    # `tracesmith analyze --json` as a dict
    mem = tracesmith.memory("run.sbt")        # `tracesmith memory --json`: peak, owners, leaks
    change = tracesmith.diff("before.sbt", "after.sbt")  # `tracesmith diff --json`
    tracesmith.export("run.sbt", "run.pftrace")
    tracesmith.merge("run.sbt", "job.sbt")    # a job's run.rank*.sbt in one file
    tracesmith.counter("loss", loss)          # your own counters, instants and ranges on the
    with tracesmith.range("eval"): ...        # capture's timeline (no-ops when nothing captures)

Every function that reads a trace also takes a run of several: a list of
files, a directory, or a capture's output name ("run.sbt" also stands for the
run.rank*.sbt / run.pid*.sbt files beside it), read as one merged trace.

`python -m tracesmith ...` runs the command-line tool. Errors raise
tracesmith.TraceError with the message the CLI prints (file, byte offset);
TraceChangedError (a TraceError) when a loaded trace's file changed or is
gone before the event kinds it had not read yet were read.
"""

from __future__ import annotations

import warnings

from ._app_api import counter, enabled, instant, range  # noqa: A004 (tracesmith.range)
from ._errors import TraceChangedError, TraceError
from ._native import core
from ._profile import CommandResult, Profiler, profile, profile_command, schedule
from ._replay import ReplayLaunch, ReplayResult, replay
from ._run import merge
from . import _run
from ._sbt import SBTReader, SBTWriter
from ._trace import (Frame, Table, Trace, _path, _window, analyze, diff, event_stats, load,
                     memory)
from ._version import __version__


def __getattr__(name):
    if name == "SBT_VERSION":  # (major, minor) of the SBT format this build writes
        return tuple(core().sbt_version)
    raise AttributeError(f"module 'tracesmith' has no attribute {name!r}")

__all__ = [
    "__version__", "SBT_VERSION", "FORMATS", "TraceError", "Trace", "Table", "Frame", "load", "analyze", "memory",
    "profile", "Profiler", "schedule", "profile_command", "CommandResult", "diff", "replay", "ReplayResult", "ReplayLaunch",
    "export", "export_perfetto", "import_trace", "devices", "detect_platform",
    "is_cuda_available", "get_cuda_device_count", "SBTWriter", "SBTReader", "event_stats",
    "merge", "TraceChangedError", "counter", "instant", "range", "enabled",
]


def _check_output(out: str, inputs, overwrite: bool) -> None:
    # The CLI's --force rule, the same C++ function: an input, a directory or a
    # device is never an output, and an existing file is replaced only when asked.
    core().check_output(out, [str(p) for p in inputs], bool(overwrite),
                        "pass overwrite=True to replace it")


FORMATS = ("perfetto", "json", "sqlite", "csv", "dot")
_EXTENSIONS = {"perfetto": ".pftrace", "json": ".json", "sqlite": ".sqlite", "csv": ".csv",
               "dot": ".dot"}
# Output name endings that say the format when none is given.
_BY_ENDING = ((".json.gz", "json"), (".json", "json"), (".pftrace", "perfetto"),
              (".perfetto-trace", "perfetto"), (".sqlite", "sqlite"), (".db", "sqlite"),
              (".csv", "csv"), (".dot", "dot"), (".gv", "dot"))


def export(path, out=None, format: str | None = None, gzip: bool = False,
           overwrite: bool = False, strict: bool = False, node_limit: int = 500, start="",
           end="") -> dict:
    """Exports an SBT trace (or a run of several, merged on the fly: no temporary file), as
    `tracesmith export` does.

    format: "perfetto" (ui.perfetto.dev), "json" (torch.profiler/Kineto
    schema; gzip=True or an out name ending .json.gz for gzip), "sqlite"
    (nsys export schema), "csv", "dot" (Graphviz of the dependency graph,
    critical path in red: the earliest node_limit nodes of the start/end
    window). Without it, the out name's ending says (.pftrace, .json,
    .json.gz, .sqlite, .db, .csv, .dot), else perfetto. out
    defaults to the trace's name with the format's extension. A damaged input
    is exported in its readable part with a warning (strict=True raises
    TraceError and writes nothing). A run of several processes (a job's ranks)
    to Perfetto is the job's export, as the CLI writes it: one process per rank
    on the job's clock, collectives linked (events: its slices; also "ranks",
    "warnings", "left_out"). Returns {"path", "format", "events", "bytes",
    "flows", "damage_text"}.
    """
    names, files, _ = _run.resolve(path)
    if out is not None:
        out = _path(out, "out")
    if format is None:
        ending = next((f for e, f in _BY_ENDING if out is not None and out.endswith(e)), None)
        format = ending or "perfetto"
        gzip = gzip or (out is not None and out.endswith(".json.gz"))
    if not isinstance(format, str) or format not in FORMATS:
        raise TraceError(f"unknown export format {format!r}; formats: {', '.join(FORMATS)}")
    if gzip and format != "json":
        raise TraceError(f"gzip applies to format='json' only, not {format!r}")
    if out is None:
        stem = names[0].rstrip("/") or names[0]
        stem = stem[:-4] if stem.endswith(".sbt") else stem
        out = stem + _EXTENSIONS[format] + (".gz" if gzip else "")
    _check_output(out, files, overwrite)
    if format == "perfetto":
        # Several processes (a job's ranks): the job's export, as the CLI writes it.
        job = core().export_job(files, out, bool(strict))
        if job is not None:
            for w in job["warnings"]:
                warnings.warn(w, stacklevel=2)
            if job["damage_text"]:
                warnings.warn(job["damage_text"] + "\nexported only its readable part",
                              stacklevel=2)
            return job
    with _run.opened_source(path, strict, False, "exporting") as (file, _, _):
        result = core().export(file, out, format, bool(gzip), bool(strict), int(node_limit),
                               _window(start, "start"), _window(end, "end"))
    if result["damage_text"]:
        warnings.warn(result["damage_text"] + "\nexported only its readable part", stacklevel=2)
    return result


def export_perfetto(path, out=None, overwrite: bool = False) -> dict:
    """`export(path, out, "perfetto")` (the earlier tool's name)."""
    return export(path, out, "perfetto", overwrite=overwrite)


def import_trace(path, out=None, xray_binary: str = "", overwrite: bool = False,
                 strict: bool = False) -> dict:
    """Converts a torch.profiler (Kineto) JSON trace (.json, .json.gz) or an LLVM
    XRay log to SBT, as `tracesmith import` does; out defaults to PATH.sbt."""
    path = _path(path)
    out = _path(out, "out") if out is not None else path + ".sbt"
    _check_output(out, [path] + ([xray_binary] if xray_binary else []), overwrite)
    result = core().import_trace(path, out, xray_binary, bool(strict))
    for w in result["warnings"]:
        warnings.warn(f"{path}: {w}", stacklevel=2)
    if result["damage_text"]:
        warnings.warn(f"{path}: {result['damage_text']}; imported what precedes it", stacklevel=2)
    return result


def devices() -> dict:
    """{"driver_version", "devices": [{"ordinal", "name", "uuid", "compute_capability",
    "sm_count", "memory_bytes"}], "error" (when no driver or GPU)}: the CUDA
    driver is loaded with dlopen, so this works without a GPU."""
    return core().devices()


def detect_platform() -> str:
    """"cuda" when a CUDA driver and at least one GPU are usable, else "cpu"."""
    return "cuda" if get_cuda_device_count() > 0 else "cpu"


def is_cuda_available() -> bool:
    """True when the CUDA driver loads and sees at least one GPU."""
    return get_cuda_device_count() > 0


def get_cuda_device_count() -> int:
    """GPUs the CUDA driver sees (0 without a driver or GPU)."""
    return len(devices()["devices"])
