"""tracesmith.profile / Profiler / schedule without a GPU: the step logic with a
stand-in for the capture library, and the error when no driver is there.
(The real capture is checked on the GPU machine: gpu/python_profile_check.py.)"""

import ctypes

import pytest

import tracesmith
from tracesmith import _profile


class FakeLibrary:
    """Records start/stop calls as the C API would receive them."""

    def __init__(self, fail_start=None):
        self.calls = []
        self.fail_start = fail_start
        self.current = None

    def tracesmith_session_start(self, options, err, n):
        if self.fail_start:
            ctypes.memmove(err, self.fail_start.encode() + b"\0", len(self.fail_start) + 1)
            return -1
        opts = dict(line.split("=", 1) for line in options.decode().splitlines())
        self.current = opts["TRACESMITH_OUTPUT"]
        self.calls.append(("start", self.current, opts))
        return 0

    def tracesmith_session_stop(self, path, n, err, m):
        ctypes.memmove(path, self.current.encode() + b"\0", len(self.current) + 1)
        self.calls.append(("stop", self.current))
        return 0

    def tracesmith_session_flush(self, err, n):
        self.calls.append(("flush",))
        return 0


@pytest.fixture
def fake(monkeypatch):
    lib = FakeLibrary()
    monkeypatch.setattr(_profile, "_LIB", lib)
    return lib


def test_schedule_matches_torch_profiler_cycles():
    s = tracesmith.schedule(skip_first=1, wait=1, warmup=1, active=2, repeat=2)
    got = [s(i) for i in range(11)]
    assert got == ["NONE", "NONE", "WARMUP", "RECORD", "RECORD_AND_SAVE",
                   "NONE", "WARMUP", "RECORD", "RECORD_AND_SAVE", "NONE", "NONE"]
    forever = tracesmith.schedule(active=1)
    assert [forever(i) for i in range(3)] == ["RECORD_AND_SAVE"] * 3
    with pytest.raises(ValueError):
        tracesmith.schedule(active=0)


def test_context_manager_records_the_block_with_its_options(fake):
    with tracesmith.profile("run.sbt", kinds=["kernel", "memcpy"], stacks="none",
                            overwrite=True) as p:
        p.flush()
    assert [c[0] for c in fake.calls] == ["start", "flush", "stop"]
    opts = fake.calls[0][2]
    assert opts["TRACESMITH_KINDS"] == "kernel,memcpy" and opts["TRACESMITH_STACKS"] == "none"
    assert opts["TRACESMITH_FORCE"] == "1"
    assert p.traces == ["run.sbt"] and p.last_trace == "run.sbt"


def test_pc_sampling_option_and_sass_at_stop(fake, monkeypatch, tmp_path):
    # The SASS text is the capture library's to add at stop (with the names):
    # no `tracesmith symbolize` process is started from Python any more.
    ran = []
    monkeypatch.setattr(_profile, "_symbolize", lambda files, quiet: ran.extend(files))
    out = tmp_path / "run.sbt"
    with tracesmith.profile(str(out), pc_sampling=True):
        (tmp_path / "run.sbt.cubins").mkdir()  # what the capture leaves for nvdisasm
    assert fake.calls[0][2]["TRACESMITH_PC_SAMPLING"] == "auto"
    assert ran == []
    with tracesmith.profile(str(tmp_path / "b.sbt"), pc_sampling=13):
        pass
    assert fake.calls[2][2]["TRACESMITH_PC_SAMPLING"] == "13"
    with tracesmith.profile(str(tmp_path / "c.sbt")):
        pass
    assert "TRACESMITH_PC_SAMPLING" not in fake.calls[4][2]


def test_native_frames_named_at_stop_unless_asked_not_to(fake, tmp_path):
    """Issue #43: the in-process capture names native frames when it stops, as
    `tracesmith profile` does when its program ends (the library's default,
    CaptureOptions::symbolize); symbolize=False and the time limit reach it."""
    with tracesmith.profile(str(tmp_path / "a.sbt"), stacks="mixed"):
        pass
    opts = fake.calls[0][2]
    assert "TRACESMITH_SYMBOLIZE" not in opts  # on, with the default limit (120 s)
    assert "TRACESMITH_SYMBOLIZE_TIME_LIMIT" not in opts
    with tracesmith.profile(str(tmp_path / "b.sbt"), symbolize=False):
        pass
    assert fake.calls[2][2]["TRACESMITH_SYMBOLIZE"] == "0"
    p = tracesmith.Profiler(str(tmp_path / "c.sbt"), symbolize_time_limit=2.5,
                            schedule=tracesmith.schedule(active=1, repeat=2))
    p.start()
    p.step()
    p.step()
    p.stop()
    starts = [c[2] for c in fake.calls if c[0] == "start"][2:]
    assert len(starts) == 2  # each cycle's file is named when it closes
    assert all(o["TRACESMITH_SYMBOLIZE_TIME_LIMIT"] == "2500000000" for o in starts)
    with tracesmith.profile(str(tmp_path / "d.sbt"), symbolize_time_limit="90s"):
        pass
    assert fake.calls[-2][2]["TRACESMITH_SYMBOLIZE_TIME_LIMIT"] == "90s"
    with pytest.raises(ValueError, match="symbolize_time_limit"):
        tracesmith.Profiler("e.sbt", symbolize_time_limit=-1)


def test_sass_counts_option(fake, tmp_path):
    with tracesmith.profile(str(tmp_path / "a.sbt"), sass_counts=True):
        pass
    assert fake.calls[0][2]["TRACESMITH_SASS_COUNTS"] == "1"
    with tracesmith.profile(str(tmp_path / "b.sbt")):
        pass
    assert "TRACESMITH_SASS_COUNTS" not in fake.calls[2][2]
    env = _profile._options_env("c.sbt", None, None, None, None, None, False, True, None, None,
                                sass_counts=True)
    assert env["TRACESMITH_SASS_COUNTS"] == "1"


def test_kernel_timeout_options(fake, tmp_path):
    with tracesmith.profile(str(tmp_path / "a.sbt"), kernel_timeout=2.5, on_kernel_timeout="exit"):
        pass
    opts = fake.calls[0][2]
    assert opts["TRACESMITH_KERNEL_TIMEOUT"] == "2500000000"
    assert opts["TRACESMITH_ON_KERNEL_TIMEOUT"] == "exit"
    with tracesmith.profile(str(tmp_path / "b.sbt"), kernel_timeout="30s"):
        pass
    assert fake.calls[2][2]["TRACESMITH_KERNEL_TIMEOUT"] == "30s"
    assert "TRACESMITH_ON_KERNEL_TIMEOUT" not in fake.calls[2][2]


def test_gpu_metrics_options(fake, tmp_path):
    with tracesmith.profile(str(tmp_path / "a.sbt"), gpu_metrics=True):
        pass
    opts = fake.calls[0][2]
    assert opts["TRACESMITH_GPU_METRICS"] == "default"
    assert "TRACESMITH_GPU_METRICS_INTERVAL" not in opts
    names = ["sm__cycles_active.avg.pct_of_peak_sustained_elapsed", "lts__throughput.avg.pct"]
    with tracesmith.profile(str(tmp_path / "b.sbt"), gpu_metrics=names,
                            gpu_metrics_interval=250e-6):
        pass
    opts = fake.calls[2][2]
    assert opts["TRACESMITH_GPU_METRICS"] == ",".join(names)
    assert opts["TRACESMITH_GPU_METRICS_INTERVAL"] == "250000"
    with tracesmith.profile(str(tmp_path / "c.sbt"), gpu_metrics="default",
                            gpu_metrics_interval="1ms"):
        pass
    assert fake.calls[4][2]["TRACESMITH_GPU_METRICS_INTERVAL"] == "1ms"
    with tracesmith.profile(str(tmp_path / "d.sbt")):
        pass
    assert "TRACESMITH_GPU_METRICS" not in fake.calls[6][2]
    with pytest.raises(ValueError, match="--gpu-metrics=list"):
        tracesmith.profile(str(tmp_path / "e.sbt"), gpu_metrics="list")
    with pytest.raises(ValueError, match="needs gpu_metrics"):
        tracesmith.profile(str(tmp_path / "f.sbt"), gpu_metrics_interval=1e-4)


def test_schedule_records_only_active_steps_one_file_per_cycle(fake):
    ready = []
    p = tracesmith.Profiler("out/run.sbt",
                            schedule=tracesmith.schedule(wait=1, warmup=1, active=2, repeat=2),
                            on_trace_ready=lambda prof: ready.append((prof.step_num,
                                                                      prof.last_trace)))
    p.start()
    trace = []  # which step each start/stop happened at
    for step in range(10):
        before = len(fake.calls)
        p.step()  # end of step `step`
        trace += [(c[0], step) for c in fake.calls[before:]]
    p.stop()
    # Steps 2-3 and 6-7 recorded: started at the end of steps 1 and 5, stopped after 3 and 7.
    assert trace == [("start", 1), ("stop", 3), ("start", 5), ("stop", 7)]
    assert p.traces == ["out/run.sbt", "out/run.2.sbt"]
    assert ready == [(3, "out/run.sbt"), (7, "out/run.2.sbt")]


def test_start_refused_raises_and_the_program_goes_on(monkeypatch):
    lib = FakeLibrary(fail_start="CUPTI is already in use by another profiler (torch.profiler?)")
    monkeypatch.setattr(_profile, "_LIB", lib)
    with pytest.raises(tracesmith.TraceError, match="already in use"):
        with tracesmith.profile("x.sbt"):
            pass
    with pytest.raises(tracesmith.TraceError, match="not started"):
        tracesmith.Profiler().step()


def test_without_a_driver_the_error_says_so(monkeypatch, tmp_path):
    lib = tmp_path / "libtracesmith-inject.so"
    lib.write_bytes(b"not a library")
    monkeypatch.setattr(_profile, "_LIB", None)
    monkeypatch.setenv("TRACESMITH_INJECT_LIB", str(lib))
    with pytest.raises(tracesmith.TraceError, match="cannot load the capture library"):
        tracesmith.Profiler(str(tmp_path / "x.sbt")).start()


def test_version_is_the_cli_version(cli):
    assert cli("version").stdout.split()[1] == tracesmith.__version__
