"""tracesmith.profile_command: a command run under capture through the same library
call as `tracesmith profile` (session::RunUnderCapture). Commands here do not
initialise CUDA, so they write no trace; the GPU machine checks real captures."""

import os
import signal
import sys

import pytest

import tracesmith
from tracesmith import _profile

pytestmark = pytest.mark.skipif(not _profile._library_path(),
                                reason="no injection library (a build without CUDA)")


def test_exit_status_environment_and_no_trace(tmp_path):
    seen = tmp_path / "env.txt"
    out = tmp_path / "run.sbt"
    r = tracesmith.profile_command(
        ["/bin/sh", "-c", f'echo "$CUDA_INJECTION64_PATH|$TRACESMITH_OUTPUT|$TRACESMITH_KINDS" '
                          f'> {seen}; exit 3'], str(out), kinds="kernel")
    assert r.exit_code == 3 and r.signal == 0 and r.seconds > 0
    assert r.output == str(out) and r.files == [] and not out.exists()
    inject, output, kinds = seen.read_text().strip().split("|")
    assert inject == _profile._library_path() and output == str(out) and kinds == "kernel"


def test_signal_missing_command_and_refusals(tmp_path):
    r = tracesmith.profile_command(["/bin/sh", "-c", "kill -TERM $$"], str(tmp_path / "a.sbt"))
    assert r.signal == signal.SIGTERM and r.exit_code == 0
    r = tracesmith.profile_command(["/nonexistent/program"], str(tmp_path / "b.sbt"))
    assert r.exit_code == 127
    existing = tmp_path / "c.sbt"
    existing.write_bytes(b"keep")
    with pytest.raises(tracesmith.TraceError, match="exists"):
        tracesmith.profile_command([sys.executable, "-c", "pass"], str(existing))
    with pytest.raises(tracesmith.TraceError, match="TRACESMITH_STACKS|stacks"):
        tracesmith.profile_command([sys.executable, "-c", "pass"], str(tmp_path / "d.sbt"),
                                   stacks="everything")
    with pytest.raises(TypeError):
        tracesmith.profile_command("python train.py")
    assert existing.read_bytes() == b"keep"


def test_overwrite_keeps_the_old_trace_when_nothing_new_is_written(tmp_path):
    old = tmp_path / "run.sbt"
    old.write_bytes(b"previous trace")
    r = tracesmith.profile_command([sys.executable, "-c", "pass"], str(old), overwrite=True)
    assert r.exit_code == 0 and r.kept_previous and r.files == []
    assert old.read_bytes() == b"previous trace"
    assert [p.name for p in tmp_path.iterdir()] == ["run.sbt"]  # nothing set aside left over
