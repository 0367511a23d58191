"""Fixtures for the tracesmith package tests (run by ctest: tests/python/CMakeLists.txt).

Environment: PYTHONPATH=<build>/python, TRACESMITH_CLI=<build>/bin/tracesmith,
TS_SOURCE_DIR=<repo>. The CLI is the independent reference: every figure the
package gives is compared with what the command-line tool prints.
"""

import os
import subprocess

import pytest

SOURCE = os.environ.get("TS_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
TRACES = os.path.join(SOURCE, "examples", "traces")


@pytest.fixture(scope="session")
def cli():
    path = os.environ.get("TRACESMITH_CLI")
    if not path:
        pytest.fail("TRACESMITH_CLI is not set (run through ctest)")

    def run(*args, check=True):
        r = subprocess.run([path, *args], capture_output=True, text=True)
        if check and r.returncode != 0:
            raise AssertionError(f"tracesmith {' '.join(args)} failed: {r.stderr}")
        return r

    run.path = path
    return run


@pytest.fixture(params=["transformer_train.sbt", "mlp_train.sbt", "launch_loop.sbt"])
def shipped(request):
    return os.path.join(TRACES, request.param)


@pytest.fixture
def transformer():
    return os.path.join(TRACES, "transformer_train.sbt")


@pytest.fixture
def mlp():
    return os.path.join(TRACES, "mlp_train.sbt")


@pytest.fixture
def app_program(tmp_path):
    """Runs a program text (with {pythonpath} and {out} to fill) under the app-events
    stand-in capture library (TS_APP_FAKE_LIB, set by ctest); returns (its trace's path,
    the finished process). Skips without the library."""
    fake = os.environ.get("TS_APP_FAKE_LIB", "")
    if not fake:
        pytest.skip("TS_APP_FAKE_LIB not set (run through ctest)")

    def run(template, name):
        import sys
        out, script = tmp_path / f"{name}.sbt", tmp_path / f"{name}.py"
        pythonpath = os.environ.get("PYTHONPATH", "").split(os.pathsep)[0]
        script.write_text(template.format(pythonpath=pythonpath, out=str(out)))
        r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                           env={**os.environ, "TRACESMITH_INJECT_LIB": fake})
        assert r.returncode == 0, r.stderr
        return out, r

    return run
