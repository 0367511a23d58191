"""In-process capture: `with tracesmith.profile("run.sbt"): ...` and Profiler.

The capture engine is the one `tracesmith profile` injects (C++ Session in
libtracesmith-inject.so), called through its C entry points with ctypes: no
extension module is needed, so capture works under any Python version. CUDA
may be initialised before start(). One capture at a time per process; if
CUPTI is already taken (torch.profiler, Nsight Systems, `tracesmith profile`
around this process) start() raises TraceError and the program goes on.
"""

from __future__ import annotations

import ctypes
import os
import warnings
from typing import Callable, List, NamedTuple, Optional

from ._errors import TraceError

_LIB = None
_LIB_NAME = "libtracesmith-inject.so"


def _library_path() -> str:
    """Where the injection library is ("" when nowhere)."""
    here = os.path.dirname(os.path.abspath(__file__))
    candidates = [os.environ.get("TRACESMITH_INJECT_LIB", ""),
                  os.path.join(here, "_bin", "lib", _LIB_NAME),
                  os.path.join(here, "..", "..", "lib", _LIB_NAME)]
    for path in candidates:
        if path and os.path.isfile(path):
            return os.path.realpath(path)
    return ""


def _library() -> ctypes.CDLL:
    """The injection library: $TRACESMITH_INJECT_LIB, the package's _bin/lib
    (pip install), or <build>/lib beside <build>/python/tracesmith."""
    global _LIB
    if _LIB is not None:
        return _LIB
    path = _library_path()
    if not path:
        raise TraceError(f"{_LIB_NAME} was not found (this TraceSmith was built without CUDA, "
                         "or set TRACESMITH_INJECT_LIB to its path)")
    try:
        lib = ctypes.CDLL(path)
    except OSError as e:  # e.g. libcuda.so.1 missing: no NVIDIA driver
        raise TraceError(f"cannot load the capture library {path}: {e} (capture needs "
                         "the NVIDIA driver and a GPU)") from None
    for name in ("tracesmith_session_start", "tracesmith_session_flush",
                 "tracesmith_session_stop"):
        getattr(lib, name).restype = ctypes.c_int
    lib.tracesmith_session_start.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_size_t]
    lib.tracesmith_session_flush.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
    lib.tracesmith_session_stop.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_char_p,
                                            ctypes.c_size_t]
    # tracesmith.counter / instant / range record into this library's captures.
    from ._app_api import attach
    attach(path)
    _LIB = lib
    return lib


def _options(output: str, kinds, stacks, stack_depth, buffer_mb, flush_ms, overwrite,
             quiet, replay_capture, replay_memory, pc_sampling=None, kernel_timeout=None,
             on_kernel_timeout=None, sass_counts=False, gpu_metrics=None,
             gpu_metrics_interval=None, symbolize=True, symbolize_time_limit=None) -> str:
    env = _options_env(output, kinds, stacks, stack_depth, buffer_mb, flush_ms, overwrite,
                       quiet, replay_capture, replay_memory, pc_sampling, kernel_timeout,
                       on_kernel_timeout, sass_counts, gpu_metrics, gpu_metrics_interval)
    env.update(_symbolize_env(symbolize, symbolize_time_limit))
    return "".join(f"{k}={v}\n" for k, v in env.items())


def _symbolize_env(symbolize, symbolize_time_limit) -> dict:
    """What the in-process capture does at stop (CaptureOptions::symbolize and
    symbolize_time_limit_ns): name the native frames, as `tracesmith profile`
    does when its program ends, within a time limit (seconds, or a duration
    string such as "90s"; 0: no limit)."""
    env = {}
    if not symbolize:
        env["TRACESMITH_SYMBOLIZE"] = "0"
    if symbolize_time_limit is not None:
        if isinstance(symbolize_time_limit, (int, float)):
            if symbolize_time_limit < 0:
                raise ValueError("symbolize_time_limit: seconds >= 0 (0: no limit)")
            env["TRACESMITH_SYMBOLIZE_TIME_LIMIT"] = f"{round(symbolize_time_limit * 1e9)}"
        else:
            env["TRACESMITH_SYMBOLIZE_TIME_LIMIT"] = str(symbolize_time_limit)
    return env


def _gpu_metrics_value(gpu_metrics) -> str:
    """gpu_metrics= as TRACESMITH_GPU_METRICS: True or "default" (the default
    set), or CUPTI metric names (a comma-separated str or a list)."""
    if gpu_metrics is True:
        return "default"
    if isinstance(gpu_metrics, str):
        value = gpu_metrics
    else:
        value = ",".join(gpu_metrics)
    if value == "list":
        raise ValueError("gpu_metrics='list' is the CLI's `tracesmith profile --gpu-metrics=list`"
                         " (it prints the GPU's metrics): give metric names or True")
    return value


def _options_env(output: str, kinds, stacks, stack_depth, buffer_mb, flush_ms, overwrite,
                 quiet, replay_capture, replay_memory, pc_sampling=None, kernel_timeout=None,
                 on_kernel_timeout=None, sass_counts=False, gpu_metrics=None,
                 gpu_metrics_interval=None) -> dict:
    """The options as the injection library's environment variables."""
    env = {"TRACESMITH_OUTPUT": output}
    if gpu_metrics not in (None, False):
        env["TRACESMITH_GPU_METRICS"] = _gpu_metrics_value(gpu_metrics)
    if gpu_metrics_interval is not None:  # seconds, or a duration string ("100us")
        if gpu_metrics in (None, False):
            raise ValueError("gpu_metrics_interval needs gpu_metrics")
        env["TRACESMITH_GPU_METRICS_INTERVAL"] = (
            f"{round(gpu_metrics_interval * 1e9)}"
            if isinstance(gpu_metrics_interval, (int, float)) else str(gpu_metrics_interval))
    if kernel_timeout is not None:  # seconds, or a duration string ("30s")
        env["TRACESMITH_KERNEL_TIMEOUT"] = (f"{int(kernel_timeout * 1e9)}"
                                            if isinstance(kernel_timeout, (int, float))
                                            else str(kernel_timeout))
    if on_kernel_timeout is not None:
        env["TRACESMITH_ON_KERNEL_TIMEOUT"] = on_kernel_timeout
    if pc_sampling is True:
        env["TRACESMITH_PC_SAMPLING"] = "auto"
    elif pc_sampling not in (None, False):
        env["TRACESMITH_PC_SAMPLING"] = str(pc_sampling)
    if sass_counts:
        env["TRACESMITH_SASS_COUNTS"] = "1"
    if replay_capture is not None:
        env["TRACESMITH_REPLAY_CAPTURE"] = replay_capture
    if replay_memory is not None:
        env["TRACESMITH_REPLAY_MEMORY"] = replay_memory
    if kinds is not None:
        env["TRACESMITH_KINDS"] = kinds if isinstance(kinds, str) else ",".join(kinds)
    if stacks is not None:
        env["TRACESMITH_STACKS"] = stacks
    if stack_depth is not None:
        env["TRACESMITH_STACK_DEPTH"] = str(int(stack_depth))
    if buffer_mb is not None:
        env["TRACESMITH_BUFFER_MB"] = str(int(buffer_mb))
    if flush_ms is not None:
        env["TRACESMITH_FLUSH_MS"] = str(int(flush_ms))
    env["TRACESMITH_FORCE"] = "1" if overwrite else "0"
    env["TRACESMITH_QUIET"] = "1" if quiet else "0"
    for k, v in env.items():
        if "\n" in v:
            raise ValueError(f"{k}: a value may not contain a newline")
    return env


# Schedule actions (torch.profiler's names).
NONE, WARMUP, RECORD, RECORD_AND_SAVE = "NONE", "WARMUP", "RECORD", "RECORD_AND_SAVE"


def schedule(*, wait: int = 0, warmup: int = 0, active: int = 1, repeat: int = 0,
             skip_first: int = 0) -> Callable[[int], str]:
    """torch.profiler.schedule's cycle: after `skip_first` steps, repeat
    (`repeat` times; 0: for ever) `wait` steps idle, `warmup` steps not
    recorded, `active` steps recorded, the last of which ends the cycle's trace.
    Returns step -> action (NONE, WARMUP, RECORD, RECORD_AND_SAVE)."""
    if min(wait, warmup, repeat, skip_first) < 0 or active < 1:
        raise ValueError("schedule: wait, warmup, repeat, skip_first >= 0 and active >= 1")

    def action(step: int) -> str:
        if step < skip_first:
            return NONE
        step -= skip_first
        cycle = wait + warmup + active
        if repeat > 0 and step // cycle >= repeat:
            return NONE
        at = step % cycle
        if at < wait:
            return NONE
        if at < wait + warmup:
            return WARMUP
        return RECORD_AND_SAVE if at == cycle - 1 else RECORD

    return action


class Profiler:
    """Captures this process's GPU work into an SBT trace, as `tracesmith profile` does.

        p = tracesmith.Profiler("run.sbt", schedule=tracesmith.schedule(wait=1, active=3),
                                on_trace_ready=lambda p: print(p.last_trace))
        p.start()
        for batch in data:
            train_step(batch)
            p.step()
        p.stop()

    Without a schedule, everything between start() and stop() is recorded into
    `output`. With one, each cycle's active steps are recorded into their own
    file (`output`, then STEM.2.sbt, STEM.3.sbt, ...) and on_trace_ready(self)
    is called with `last_trace` set when a cycle's file is closed. Options are
    those of `tracesmith profile`: kinds ("kernel,memcpy,..." or a list),
    stacks ("none", "native", "python", "mixed", "full"; default mixed under
    Python: native frames up to the innermost Python frame, then the Python
    frames; "full" also keeps the interpreter's native frames),
    stack_depth, buffer_mb, flush_ms, replay_capture ("all", "kernel:REGEX",
    "launch:A-B": record those launches with their inputs for
    tracesmith.replay), pc_sampling (True, or the period N / "2^N": GPU
    instruction samples, as --pc-sampling; their SASS text is added at stop(),
    with the names below, when the CUDA toolkit's nvdisasm is found),
    kernel_timeout (seconds, or "30s": report a kernel still running that long,
    as --kernel-timeout; turns pc_sampling on) and on_kernel_timeout ("report",
    the default, or "exit": write the trace and end the process, status 124),
    sass_counts (True: exact executions of each SASS instruction, summed over
    each kernel's launches, as --sass-counts; not with pc_sampling; counted on
    the CUDA contexts created after start()),
    gpu_metrics (True: GPU hardware metrics over time, the default set, as
    --gpu-metrics; or CUPTI metric names, a list or "a,b,c") and
    gpu_metrics_interval (seconds, or "100us": one sample per interval),
    replay_memory ("reachable", the default: the
    allocations the parameters point into and those reached through pointers
    stored in them; "params": only the first; "all": every live allocation);
    overwrite replaces an existing output.

    When a trace's file is closed (stop(), each cycle's end), its native frames
    are named from the modules' symbol tables, as `tracesmith profile` does
    when its program ends (the same library call, run by the capture library
    at its stop in a `tracesmith symbolize --capture-end` process), in
    at most symbolize_time_limit seconds (default 120; 0: no limit; frames left
    then stay unnamed); symbolize=False leaves them all unnamed, for a later
    `tracesmith symbolize`. pc_sampling's SASS text is added either way.
    """

    def __init__(self, output: str = "tracesmith.sbt", *, kinds=None, stacks: Optional[str] = None,
                 stack_depth: Optional[int] = None, buffer_mb: Optional[int] = None,
                 flush_ms: Optional[int] = None, overwrite: bool = False, quiet: bool = True,
                 replay_capture: Optional[str] = None, replay_memory: Optional[str] = None,
                 pc_sampling=None, kernel_timeout=None, on_kernel_timeout: Optional[str] = None,
                 sass_counts: bool = False, gpu_metrics=None, gpu_metrics_interval=None,
                 symbolize: bool = True, symbolize_time_limit=None,
                 schedule: Optional[Callable[[int], str]] = None,
                 on_trace_ready: Optional[Callable[["Profiler"], None]] = None):
        self.output = os.fsdecode(os.fspath(output))
        self._kw = dict(kinds=kinds, stacks=stacks, stack_depth=stack_depth,
                        buffer_mb=buffer_mb, flush_ms=flush_ms, overwrite=overwrite, quiet=quiet,
                        replay_capture=replay_capture, replay_memory=replay_memory,
                        pc_sampling=pc_sampling, kernel_timeout=kernel_timeout,
                        on_kernel_timeout=on_kernel_timeout, sass_counts=sass_counts,
                        gpu_metrics=gpu_metrics, gpu_metrics_interval=gpu_metrics_interval,
                        symbolize=symbolize, symbolize_time_limit=symbolize_time_limit)
        _options("", **self._kw)  # a bad gpu_metrics value is refused here, not at start
        self.schedule = schedule
        self.on_trace_ready = on_trace_ready
        self.step_num = 0
        self.traces: List[str] = []  #: files written, in order
        self.last_trace: Optional[str] = None
        self._recording = False
        self._started = False

    # The file of the n-th recorded cycle (1-based).
    def _cycle_output(self, n: int) -> str:
        if n == 1:
            return self.output
        stem, ext = os.path.splitext(self.output)
        return f"{stem}.{n}{ext or '.sbt'}"

    def _begin(self) -> None:
        out = self._cycle_output(len(self.traces) + 1)
        err = ctypes.create_string_buffer(4096)
        if _library().tracesmith_session_start(_options(out, **self._kw).encode(), err,
                                               len(err)) != 0:
            raise TraceError(err.value.decode(errors="replace"))
        self._recording = True

    def _end(self) -> str:
        path = ctypes.create_string_buffer(4096)
        err = ctypes.create_string_buffer(4096)
        rc = _library().tracesmith_session_stop(path, len(path), err, len(err))
        self._recording = False
        written = path.value.decode(errors="replace")
        if written:
            self.traces.append(written)
            self.last_trace = written
        if rc != 0:
            raise TraceError(err.value.decode(errors="replace"))
        # (The capture library's stop named the native frames and added the
        # SASS text of sampled instructions: session/finish_process.h.)
        if self.on_trace_ready is not None:
            self.on_trace_ready(self)
        return written

    def _apply(self, action: str) -> None:
        if action in (RECORD, RECORD_AND_SAVE) and not self._recording:
            self._begin()
        elif action in (NONE, WARMUP) and self._recording:
            self._end()

    def start(self) -> "Profiler":
        """Starts recording (with a schedule: starts counting steps at 0)."""
        if self._started:
            raise TraceError("Profiler.start: already started")
        self._started = True
        self.step_num = 0
        if self.schedule is None:
            self._begin()
        else:
            self._apply(self.schedule(0))
        return self

    def step(self) -> None:
        """Marks the end of a training step (with a schedule: may close or open a trace)."""
        if not self._started:
            raise TraceError("Profiler.step: not started")
        if self.schedule is None:
            self.step_num += 1
            return
        if self._recording and self.schedule(self.step_num) == RECORD_AND_SAVE:
            self._end()
        self.step_num += 1
        self._apply(self.schedule(self.step_num))

    def flush(self) -> None:
        """Writes what was captured so far to the file (it stays open)."""
        if not self._recording:
            return
        err = ctypes.create_string_buffer(4096)
        if _library().tracesmith_session_flush(err, len(err)) != 0:
            raise TraceError(err.value.decode(errors="replace"))

    def stop(self) -> Optional[str]:
        """Stops recording and closes the file; returns the last file written."""
        if not self._started:
            return self.last_trace
        self._started = False
        if self._recording:
            self._end()
        return self.last_trace

    def __enter__(self) -> "Profiler":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def profile(output: str = "tracesmith.sbt", **options) -> Profiler:
    """`with tracesmith.profile("run.sbt"): ...` records the GPU work of the block
    (a Profiler: see its options)."""
    return Profiler(output, **options)


class CommandResult(NamedTuple):
    """How a command run under capture ended, and the traces it left.

    exit_code: its exit status (0 when a signal ended it); signal: the signal
    that killed it, else 0; seconds: its wall time; output: the trace path
    (absolute); files: the traces this run wrote (output first when written,
    then other processes' STEM.pid<N>.sbt / STEM.rank<N>.sbt); kept_previous:
    overwrite=True over an existing trace, and the run wrote no new one (the
    old trace is kept).
    """
    exit_code: int
    signal: int
    seconds: float
    output: str
    files: List[str]
    kept_previous: bool


def profile_command(command, output: str = "tracesmith.sbt", *, kinds=None,
                    stacks: Optional[str] = None, stack_depth: Optional[int] = None,
                    buffer_mb: Optional[int] = None, flush_ms: Optional[int] = None,
                    overwrite: bool = False, quiet: bool = False,
                    replay_capture: Optional[str] = None, replay_memory: Optional[str] = None,
                    pc_sampling=None, kernel_timeout=None, on_kernel_timeout: Optional[str] = None,
                    sass_counts: bool = False, gpu_metrics=None, gpu_metrics_interval=None,
                    symbolize: bool = True) -> CommandResult:
    """Runs `command` (a list: program and arguments) under capture and waits for
    it, as `tracesmith profile -- COMMAND` does, through the same library call
    (session::RunUnderCapture): every process of it that initialises CUDA writes
    a trace. Its stdin/stdout/stderr are this process's; SIGTERM/SIGHUP sent
    here meanwhile are passed on to it. Options as Profiler's. symbolize: name
    native frames from the modules' symbol tables afterwards (`tracesmith
    symbolize`; not for replay captures). Raises TraceError for options or an
    output the CLI would refuse, before anything runs; the command's own
    failure is in the result (exit_code 127: it could not be run).
    """
    from ._native import core
    if isinstance(command, (str, bytes)):
        raise TypeError("command must be a list of arguments, e.g. ['python', 'train.py']")
    args = [os.fspath(a) for a in command]
    if not args:
        raise ValueError("command is empty")
    inject = _library_path()
    if not inject:
        raise TraceError(f"{_LIB_NAME} was not found (this TraceSmith was built without CUDA, "
                         "or set TRACESMITH_INJECT_LIB to its path)")
    env = _options_env(os.fspath(output), kinds, stacks, stack_depth, buffer_mb, flush_ms,
                       overwrite, quiet, replay_capture, replay_memory, pc_sampling,
                       kernel_timeout, on_kernel_timeout, sass_counts, gpu_metrics,
                       gpu_metrics_interval)
    r = core().run_command(args, env, inject)
    if r["previous_trace_error"]:
        warnings.warn(r["previous_trace_error"], stacklevel=2)
    if symbolize and not replay_capture and r["files"]:
        # Native frames' names, and the SASS text of GPU instruction samples.
        todo = [f for f in r["files"] if stacks != "none" or os.path.isdir(f + ".cubins")]
        if todo:
            _symbolize(todo, quiet)
    return CommandResult(r["exit_code"], r["signal"], r["seconds"], r["output"],
                         list(r["files"]), r["kept_previous"])


def _symbolize(files: List[str], quiet: bool) -> None:
    import subprocess
    from .__main__ import _find_cli
    try:
        cli = _find_cli()
    except SystemExit as e:
        warnings.warn(f"traces left unsymbolized: {e}", stacklevel=3)
        return
    for f in files:
        r = subprocess.run([cli, "symbolize", f], capture_output=True, text=True)
        if r.returncode != 0 and not quiet:
            warnings.warn(f"{f}: not symbolized: {r.stderr.strip()}", stacklevel=3)
