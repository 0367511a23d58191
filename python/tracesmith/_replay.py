"""tracesmith.replay: `tracesmith replay` from Python (GPU replay or --dry-run)."""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass, field
from typing import NamedTuple, Optional, Tuple

from ._errors import TraceError
from ._trace import _path


@dataclass(frozen=True)
class ReplayLaunch:
    """One replayed launch, a CUDA graph launch (kind == "graph"; node counts in
    details["graph"]), or one range (kind == "range", launches index..last_index
    as one sequence), from `tracesmith replay --json` (docs/replay-format.md,
    "Results as JSON").

    status: "identical" or "different" (the first replay's output against the
    capture; "error" only in documents of failed runs, which replay() raises on).
    bytes_compared / bytes_differing / first_diff_address: that comparison;
    max_abs_error / max_rel_error: over the differing 4-byte words read as
    float32 (None when nothing differs). deterministic: every later replay
    (of `iterations`) gave the first replay's output; replays_differing: how many
    did not. time_*_ns: the kernel's cold time per replay (inputs restored and
    the L2 flushed before each; time_source "cupti" as `profile` measures it,
    "cuda_events", or "host_clock" for a range); program_ns: its time in the
    captured program (None when unknown). With replay(warm=True):
    warm_time_*_ns, its time per back-to-back run on the memory its last
    replay left (inputs not restored, L2 not flushed), and idempotence:
    "idempotent" (re-run on its own outputs it wrote them again: the warm runs
    repeated the program's work), "not_idempotent" (they computed on changed
    data: not comparable with program_ns) or "unknown" (the change could be
    nondeterminism; iterations >= 2 tells more); all None without warm and for
    a range.
    ranges / ranges_mapped_away: captured address ranges, and those mapped
    away from their captured address (pointers rewritten). details: the
    launch's whole JSON object (every field, e.g. details["time"]["setup_ns"]).
    """
    index: int
    last_index: int
    kind: str
    kernel: str
    status: str
    bytes_compared: int
    bytes_differing: int
    first_diff_address: Optional[int]
    max_abs_error: Optional[float]
    max_rel_error: Optional[float]
    iterations: int
    deterministic: bool
    replays_differing: int
    time_source: Optional[str]
    time_median_ns: int
    time_min_ns: int
    time_max_ns: int
    program_ns: Optional[int]
    ranges: int
    ranges_mapped_away: int
    error: Optional[str] = None
    warm_time_median_ns: Optional[int] = None
    warm_time_min_ns: Optional[int] = None
    warm_time_max_ns: Optional[int] = None
    idempotence: Optional[str] = None
    metrics: Optional[dict] = None
    details: dict = field(default_factory=dict, compare=False, repr=False)


class ReplayResult(NamedTuple):
    """What a replay found.

    status: "identical" (every launch identical to the capture and, with
    iterations > 1, deterministic), "different" (some output differed from the
    capture or between replays: `launches` says which and where), "ok" (a dry
    run). exit_code: the CLI's (0 identical, 4 different; 0 for a dry run).
    report: the CLI's text report (stdout, then stderr), as `tracesmith replay`
    prints it without --json. launches: one ReplayLaunch per replayed launch
    (one for a range; empty for a dry run). device: the GPU the replay ran on
    ("NVIDIA H200 (sm_90), driver 13.0; ..."; None for a dry run).
    """
    status: str
    exit_code: int
    report: str
    launches: Tuple[ReplayLaunch, ...] = ()
    device: Optional[str] = None


def _launch(d: dict) -> ReplayLaunch:
    out = d.get("output") or {}
    det = d.get("determinism") or {}
    t = d.get("time") or {}
    addr = d.get("addresses") or {}
    warm = d.get("warm") or {}
    return ReplayLaunch(
        index=d["index"], last_index=d.get("last_index", d["index"]), kind=d.get("kind", "launch"),
        kernel=d.get("kernel", ""), status=d["status"],
        bytes_compared=out.get("bytes_compared", 0), bytes_differing=out.get("bytes_differing", 0),
        first_diff_address=out.get("first_diff_address"),
        max_abs_error=out.get("max_abs_error"), max_rel_error=out.get("max_rel_error"),
        iterations=det.get("iterations", 0), deterministic=det.get("deterministic", True),
        replays_differing=det.get("replays_differing", 0),
        time_source=t.get("source"), time_median_ns=t.get("median_ns", 0),
        time_min_ns=t.get("min_ns", 0), time_max_ns=t.get("max_ns", 0),
        program_ns=t.get("program_ns"),
        ranges=addr.get("ranges", 0), ranges_mapped_away=addr.get("mapped_away", 0),
        error=d.get("error"), warm_time_median_ns=warm.get("median_ns"),
        warm_time_min_ns=warm.get("min_ns"), warm_time_max_ns=warm.get("max_ns"),
        idempotence=warm.get("idempotence"), metrics=d.get("metrics"), details=d)


def _result_from_cli(returncode: int, stdout: str, stderr: str) -> ReplayResult:
    """The ReplayResult of `tracesmith replay FILE --json` (GPU replay) from its
    exit code and output. Raises TraceError with the CLI's message on an error."""
    if returncode not in (0, 4):
        message = stderr.strip() or f"exit status {returncode}"
        if not stderr.strip():  # the document's "error", when only stdout has it
            try:
                message = json.loads(stdout).get("error") or message
            except ValueError:
                message = stdout.strip() or message
        raise TraceError(message)
    try:
        doc = json.loads(stdout)
    except ValueError:
        doc = None
    if not isinstance(doc, dict) or doc.get("mode") != "gpu":
        raise TraceError("tracesmith replay --json printed no JSON document (is the GPU replayer "
                         "library, libtracesmith-replay-gpu.so or $TRACESMITH_REPLAY_GPU_LIB, "
                         "older than the tracesmith command?): " + stdout.strip()[:200])
    status = "identical" if returncode == 0 else "different"
    return ReplayResult(status, returncode, doc.get("report", "") + stderr,
                        tuple(_launch(d) for d in doc.get("launches", [])), doc.get("device"))


def replay(path, *, launch: Optional[int] = None, range: Optional[tuple] = None,
           iterations: int = 1, device: int = 0, same_addresses_only: bool = False,
           warm: bool = False, metrics=None, dry_run: bool = False,
           strict: bool = False) -> ReplayResult:
    """Replays the kernel launches a capture recorded (`tracesmith profile
    --replay-capture`, or Profiler(replay_capture=...)) on the GPU, as
    `tracesmith replay --json` does, and compares their outputs with the
    capture. The result has the verdict per launch (ReplayResult.launches:
    status, bytes differing and where, float32 errors, determinism, kernel
    times, relocation) and the text report.

    launch: only this launch index; range=(A, B): launches A..B as one
    sequence from one initial state (one ReplayLaunch, kind "range");
    iterations: replays per launch (> 1 flags nondeterminism). warm=True
    also times each launch warm, `iterations` runs back to back without
    restoring its inputs (as consecutive launches in the program run), and
    says whether it is idempotent on its inputs (ReplayLaunch.idempotence,
    warm_time_*_ns; not with range). metrics=True (or a list of Nsight
    Compute metric names) also measures each launch's hardware counters
    (ReplayLaunch.metrics: throughputs, occupancy, DRAM bytes, FLOPs, the
    roofline verdict; docs/replay-format.md, "Hardware counters of a launch";
    not with range). dry_run=True
    emulates the recorded schedule on the CPU instead (any trace; no GPU; the
    text report only). Raises TraceError when the replay cannot run (no GPU, a
    damaged capture, ...), with the CLI's message.
    """
    from .__main__ import _find_cli
    args = [_find_cli(), "replay", _path(path)]
    if dry_run:
        args.append("--dry-run")
    else:
        args += ["--json", "--iterations", str(int(iterations)), "--device", str(int(device))]
        if launch is not None:
            args += ["--launch", str(int(launch))]
        if range is not None:
            first, last = range
            args += ["--range", f"{int(first)}:{int(last)}"]
        if same_addresses_only:
            args.append("--same-addresses-only")
        if warm:
            args.append("--warm")
        if metrics:
            args.append("--metrics" if metrics is True else
                        "--metrics=" + (metrics if isinstance(metrics, str) else ",".join(metrics)))
    if strict:
        args.append("--strict")
    r = subprocess.run(args, capture_output=True, text=True, errors="replace")
    if not dry_run:
        return _result_from_cli(r.returncode, r.stdout, r.stderr)
    if r.returncode not in (0, 4):
        raise TraceError(r.stderr.strip() or r.stdout.strip() or f"exit status {r.returncode}")
    return ReplayResult("ok", r.returncode, r.stdout + r.stderr)
