"""tracesmith.replay: `tracesmith replay` from Python (GPU replay or --dry-run)."""

from __future__ import annotations

import subprocess
from typing import NamedTuple, Optional

from ._errors import TraceError
from ._trace import _path


class ReplayResult(NamedTuple):
    """What a replay found.

    status: "identical" (every launch identical to the capture and, with
    iterations > 1, deterministic), "different" (some output differed from the
    capture or between replays: the report says which launch and where),
    "ok" (a dry run). report: the CLI's report (stdout, then stderr).
    """
    status: str
    exit_code: int
    report: str


def replay(path, *, launch: Optional[int] = None, range: Optional[tuple] = None,
           iterations: int = 1, device: int = 0, same_addresses_only: bool = False,
           dry_run: bool = False, strict: bool = False) -> ReplayResult:
    """Replays the kernel launches a capture recorded (`tracesmith profile
    --replay-capture`, or Profiler(replay_capture=...)) on the GPU, as
    `tracesmith replay` does, and compares their outputs with the capture.

    launch: only this launch index; range=(A, B): launches A..B as one
    sequence from one initial state; iterations: replays per launch (> 1
    flags nondeterminism). dry_run=True emulates the recorded schedule on the
    CPU instead (any trace; no GPU). Raises TraceError when the replay cannot
    run (no GPU, a damaged capture, ...), with the CLI's message.
    """
    from .__main__ import _find_cli
    args = [_find_cli(), "replay", _path(path)]
    if dry_run:
        args.append("--dry-run")
    else:
        args += ["--iterations", str(int(iterations)), "--device", str(int(device))]
        if launch is not None:
            args += ["--launch", str(int(launch))]
        if range is not None:
            first, last = range
            args += ["--range", f"{int(first)}:{int(last)}"]
        if same_addresses_only:
            args.append("--same-addresses-only")
    if strict:
        args.append("--strict")
    r = subprocess.run(args, capture_output=True, text=True, errors="replace")
    if r.returncode not in (0, 4):
        message = r.stderr.strip() or r.stdout.strip() or f"exit status {r.returncode}"
        raise TraceError(message)
    status = "ok" if dry_run else "identical" if r.returncode == 0 else "different"
    return ReplayResult(status, r.returncode, r.stdout + r.stderr)
