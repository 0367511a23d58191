"""export / import_trace: the same bytes as the CLI; outputs never destroy inputs."""

import os
import subprocess
import sys

import pytest

import tracesmith

SOURCE = os.environ.get("TS_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))


@pytest.mark.parametrize("fmt", ["perfetto", "json", "csv"])
def test_export_writes_what_the_cli_writes(tmp_path, cli, mlp, fmt):
    ours = tmp_path / f"py.{fmt}"
    theirs = tmp_path / f"cli.{fmt}"
    r = tracesmith.export(mlp, str(ours), fmt)
    cli("export", mlp, "-f", fmt, "-o", str(theirs), "-q")
    assert r["events"] > 0 and r["bytes"] == os.path.getsize(ours)
    assert ours.read_bytes() == theirs.read_bytes()


def test_export_dot_writes_what_the_cli_writes(tmp_path, cli, transformer):
    ours, theirs = tmp_path / "py.dot", tmp_path / "cli.dot"
    r = tracesmith.export(transformer, str(ours), node_limit=40, start="1ms", end="80ms")
    assert r["format"] == "dot"
    cli("export", transformer, "-f", "dot", "--node-limit", "40", "--from", "1ms", "--to", "80ms",
        "-o", str(theirs), "-q")
    assert ours.read_bytes() == theirs.read_bytes()
    assert ours.read_text().startswith("digraph") and "40 of " in ours.read_text()


def test_export_refuses_to_destroy_files(tmp_path, mlp):
    out = tmp_path / "x.pftrace"
    tracesmith.export(mlp, str(out))
    with pytest.raises(tracesmith.TraceError, match="exists"):
        tracesmith.export(mlp, str(out))
    tracesmith.export(mlp, str(out), overwrite=True)
    copy = tmp_path / "copy.sbt"
    copy.write_bytes(open(mlp, "rb").read())
    before = copy.read_bytes()
    with pytest.raises(tracesmith.TraceError, match="input"):
        tracesmith.export(str(copy), str(copy), "csv", overwrite=True)
    assert copy.read_bytes() == before
    with pytest.raises(tracesmith.TraceError, match="unknown|format"):
        tracesmith.export(mlp, str(tmp_path / "y"), "pdf")


def test_export_default_name(tmp_path, mlp):
    copy = tmp_path / "run.sbt"
    copy.write_bytes(open(mlp, "rb").read())
    r = tracesmith.export_perfetto(str(copy))
    assert r["path"] == str(tmp_path / "run.pftrace") and os.path.getsize(r["path"]) > 0


def test_import_torch_profiler_json(tmp_path, cli):
    src = os.path.join(SOURCE, "tests", "export", "data", "torch_profiler_mlp.json.gz")
    ours, theirs = tmp_path / "py.sbt", tmp_path / "cli.sbt"
    r = tracesmith.import_trace(src, str(ours))
    cli("import", src, "-o", str(theirs), "-q")
    assert r["format"] and r["events"] > 0
    a, b = tracesmith.load(ours), tracesmith.load(theirs)
    assert len(a.kernels) == len(b.kernels) > 0
    assert (a.kernels.start_ns == b.kernels.start_ns).all()
    assert list(a.kernels.name) == list(b.kernels.name)


def test_python_dash_m_runs_the_cli(mlp):
    env = dict(os.environ)
    r = subprocess.run([sys.executable, "-m", "tracesmith", "info", mlp], capture_output=True,
                       text=True, env=env)
    assert r.returncode == 0, r.stderr
    assert "kernel" in r.stdout
    r = subprocess.run([sys.executable, "-m", "tracesmith", "bogus"], capture_output=True,
                       text=True, env=env)
    assert r.returncode == 1 and "error" in r.stderr


def test_python_dash_m_into_a_closed_pipe_ends_quietly(transformer):
    # `python -m tracesmith analyze X | true`: the reader is gone before the report is
    # written; the tool must end quietly (SIGPIPE), not print "writing ... failed".
    r = subprocess.run(f"'{sys.executable}' -m tracesmith analyze '{transformer}' | true",
                       shell=True, capture_output=True, text=True)
    assert "error" not in r.stderr, r.stderr


def test_version_and_platform():
    assert tracesmith.__version__.count(".") == 2
    assert tracesmith.SBT_VERSION >= (1, 0)
    d = tracesmith.devices()
    assert isinstance(d["devices"], list)
    assert tracesmith.detect_platform() in ("cuda", "cpu")
    assert tracesmith.is_cuda_available() == (tracesmith.get_cuda_device_count() > 0)
    if not d["devices"]:
        assert d.get("error")


def test_replay_dry_run_is_the_cli_report(cli, mlp):
    r = tracesmith.replay(mlp, dry_run=True)
    want = cli("replay", mlp, "--dry-run")
    assert r.status == "ok" and r.exit_code == 0
    assert r.report == want.stdout + want.stderr and "schedule" in r.report.lower()


def test_replay_of_a_trace_without_a_capture_raises_the_cli_message(cli, mlp):
    # No replay payloads in a plain trace (and no GPU here): an error, never a result.
    want = cli("replay", mlp, check=False)
    assert want.returncode == 1
    with pytest.raises(tracesmith.TraceError) as e:
        tracesmith.replay(mlp)
    assert str(e.value) == want.stderr.strip()


def test_replay_range_is_passed_as_the_cli_spells_it(cli, mlp):
    # range=(A, B) must reach `replay --range A:B`: the same error as the CLI
    # with that spelling (no replay payloads / no GPU here), not a parse error.
    want = cli("replay", mlp, "--range", "0:1", check=False)
    assert want.returncode == 1 and "is not A:B" not in want.stderr
    with pytest.raises(tracesmith.TraceError) as e:
        tracesmith.replay(mlp, range=(0, 1))
    assert str(e.value) == want.stderr.strip()


def test_output_rule_is_the_clis_function(tmp_path, mlp):
    # One C++ rule (CheckOutputFile) for the CLI and Python: the same refusals,
    # worded for Python's overwrite=.
    out = tmp_path / "x.csv"
    out.write_text("keep")
    with pytest.raises(tracesmith.TraceError) as e:
        tracesmith.export(mlp, str(out))
    assert str(e.value) == f"{out}: file exists (pass overwrite=True to replace it)"
    with pytest.raises(tracesmith.TraceError, match="is a directory"):
        tracesmith.export(mlp, str(tmp_path), "csv", overwrite=True)
    with pytest.raises(tracesmith.TraceError, match="refusing to replace it"):
        tracesmith.export(mlp, "/dev/null", "csv", overwrite=True)
    assert out.read_text() == "keep"
