#!/usr/bin/env python3
"""The GPU checks' own verdicts, on the CPU (issue #44): scripts/lib/checks.sh,
scripts/gpu-replay-check.sh, scripts/gpu-check.sh and gpu/*_check.py fed recorded-style
outputs through a fake `tracesmith` (a script that prints canned output for the command
lines it is given), fake gtest binaries and fake programs. A planted failure (a DIFFERENT
line, 0 bytes compared, a missing section or program, a claim the output does not back)
must read FAIL or SKIP and make the exit status non-zero; a clean run ends with the
summary line "N passed, 0 failed, K skipped" and exit 0. Standard library only."""

import importlib.util
import io
import json
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile
import unittest
from contextlib import redirect_stdout
from unittest import mock

sys.dont_write_bytecode = True  # (gpu/*.py are imported: no __pycache__ in the tree)
SOURCE_DIR = os.environ.get("TS_SOURCE_DIR") or os.path.dirname(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CHECKS_SH = os.path.join(SOURCE_DIR, "scripts", "lib", "checks.sh")
GPU = os.path.join(SOURCE_DIR, "gpu")
SUMMARY = r"(?m)^\d+ passed, \d+ failed, \d+ skipped$"

# The fake tracesmith (bash: it starts fast): the first row of the table in
# $FAKE_TS_TABLE (files N.re, N.code, N.out, N.err) whose extended regex matches its
# arguments answers; on exit 0 it writes the file after -o.
FAKE_TS = r"""#!/usr/bin/env bash
args="$*"
for re in "$FAKE_TS_TABLE"/*.re; do
  [ -e "$re" ] || break
  read -r pattern < "$re"
  if [[ $args =~ $pattern ]]; then
    cat "${re%.re}.out"
    cat "${re%.re}.err" >&2
    read -r code < "${re%.re}.code"
    if [ "$code" = 0 ]; then
      prev=
      for a in "$@"; do [ "$prev" = -o ] && echo "fake trace" > "$a"; prev=$a; done
    fi
    exit "$code"
  fi
done
echo "fake tracesmith: nothing canned for: $args" >&2
exit 99
"""


def write(path, text, executable=False):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)
    if executable:
        os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR)
    return path


def last_line(out):
    return out.rstrip("\n").splitlines()[-1]


def verdict(out, name):
    """The verdict word of the one line of check `name`: a shell script's "PASS NAME..."
    (NAME a prefix of the line's name), or a Python checker's "PREFIX NAME: ... -> PASS"."""
    found = []
    for line in out.splitlines():
        word, _, rest = line.partition(" ")
        if word in ("PASS", "FAIL", "SKIP") and rest.startswith(name):
            found.append(word)
        elif " -> " in line and re.match(r"[A-Z]+ (.+?)(: | -> )", line).group(1) == name:
            found.append(line.rsplit(" -> ", 1)[1].split(" ")[0])
    assert len(found) == 1, f"{name!r}: {len(found)} verdict lines in:\n{out}"
    return found[0]


# A `tracesmith replay` text report (replay/compare.cc, FormatLaunchOutcome).
def launch(idx, name, compared="4.00 MiB", iterations=3, deterministic=True, extra=""):
    s = f"launch {idx}  {name}\n  addresses: all 1 ranges at their captured addresses\n"
    s += (f"  output: identical to the capture ({compared} compared)\n" if compared else
          "  output: DIFFERENT from the capture: 16 of 4.00 MiB differ, first at 0x7f0000001000\n")
    if iterations > 1:
        s += (f"  determinism: {iterations} replays, all outputs identical\n" if deterministic else
              f"  determinism: NONDETERMINISTIC: 2 of {iterations} replays differ from the "
              "first: 8 bytes\n")
    return s + "  kernel time, cold L2 (CUPTI): median 2.00 us, min 1.90 us, max 2.10 us\n" + extra


def report(*launches):
    return "GPU replay of x.sbt on NVIDIA H200 (sm_90)\n" + "".join(launches)


class Fake:
    """A temporary build folder with the fake tracesmith, fake programs and gtest binaries."""

    def __init__(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = self.tmp.name
        self.build = os.path.join(self.dir, "build")
        self.cli = write(os.path.join(self.build, "bin", "tracesmith"), FAKE_TS, executable=True)
        self.progs = os.path.join(self.build, "gpu-programs")
        self.table_path = os.path.join(self.dir, "table")
        self.table([])

    def table(self, rows):
        """rows: [extended regex over the arguments, exit status, stdout, stderr]."""
        shutil.rmtree(self.table_path, ignore_errors=True)
        os.makedirs(self.table_path)
        for i, (pattern, code, out, err) in enumerate(rows):
            for ext, text in (("re", pattern + "\n"), ("code", f"{code}\n"), ("out", out),
                              ("err", err)):
                write(os.path.join(self.table_path, f"{i:03d}.{ext}"), text)

    def program(self, name, text="#!/bin/sh\necho holding\n"):
        return write(os.path.join(self.progs, name), text, executable=True)

    def env(self, **extra):
        env = dict(os.environ, FAKE_TS_TABLE=self.table_path, TS_GPU_BIN=self.progs,
                   OUT=os.path.join(self.dir, "out"), TS_HAVE_GPU="1", TS_TORCH_STATE="cuda",
                   TS_TRITON_STATE="yes", PYTHONDONTWRITEBYTECODE="1", TMPDIR=self.dir)
        env.pop("REPLAY_ONLY", None)
        env.update(extra)
        return env

    def run(self, cmd, **env):
        p = subprocess.run(cmd, cwd=SOURCE_DIR, env=self.env(**env), capture_output=True,
                           text=True, timeout=120)
        return p.returncode, p.stdout + p.stderr

    def close(self):
        self.tmp.cleanup()


def sh(script, **env):
    """Runs bash with checks.sh sourced; (exit status, output)."""
    p = subprocess.run(["bash", "-c", f'. "{CHECKS_SH}"\n{script}'], capture_output=True,
                       text=True, env=dict(os.environ, **env), timeout=30)
    return p.returncode, p.stdout + p.stderr


GTEST_OK = """[==========] Running 2 tests from 1 test suite.
[ RUN      ] Gpu.A
[       OK ] Gpu.A (10 ms)
[ RUN      ] Gpu.B
[       OK ] Gpu.B (10 ms)
[==========] 2 tests from 1 test suite ran. (20 ms total)
[  PASSED  ] 2 tests.
"""
GTEST_NO_GPU = """[==========] Running 2 tests from 1 test suite.
[ RUN      ] Gpu.A
tests/capture/gpu_profile.h:35: Skipped
skipped (no GPU)

[  SKIPPED ] Gpu.A (0 ms)
[ RUN      ] Gpu.B
tests/capture/gpu_profile.h:35: Skipped
skipped (no GPU)

[  SKIPPED ] Gpu.B (0 ms)
[==========] 2 tests from 1 test suite ran. (0 ms total)
[  PASSED  ] 0 tests.
[  SKIPPED ] 2 tests, listed below:
[  SKIPPED ] Gpu.A
[  SKIPPED ] Gpu.B
"""


class ShellHelpers(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)

    def file(self, name, text):
        return write(os.path.join(self.tmp.name, name), text)

    def test_summary_and_exit_status(self):
        rc, out = sh('check one 0; check two 1; skip three "no program"; summary')
        self.assertEqual(rc, 1)
        self.assertIn("PASS one\nFAIL two\nSKIP three (no program)\n", out)
        self.assertRegex(out, SUMMARY)
        self.assertEqual(last_line(out), "1 passed, 1 failed, 1 skipped")
        rc, out = sh('pass one; skip two "no torch" 0; summary')
        self.assertEqual((rc, last_line(out)), (0, "1 passed, 0 failed, 1 skipped"))
        rc, out = sh('pass one; skip two "not built" 1; summary')  # expected here: a failure
        self.assertEqual((rc, last_line(out)), (1, "1 passed, 0 failed, 1 skipped"))
        self.assertIn("SKIP two (not built; expected on this machine: counts as a failure)", out)

    def test_skip_mode_turns_every_check_into_a_skip(self):
        rc, out = sh('skip_mode "prog not built" 1; check a 0; check b 1; skip_mode_off; '
                     'check c 0; summary')
        self.assertEqual(rc, 1)
        self.assertIn("SKIP a (prog not built; expected", out)
        self.assertIn("SKIP b (prog not built; expected", out)
        self.assertEqual(last_line(out), "1 passed, 0 failed, 2 skipped")

    def test_replay_all_ok_counts_identical_launches_over_bytes(self):
        good = self.file("good", report(launch(0, "k"), launch(1, "k", "512 B")))
        zero = self.file("zero", report(launch(0, "k"), launch(1, "k", "0 B")))
        diff = self.file("diff", report(launch(0, "k"), launch(1, "k", None)))
        nondet = self.file("nondet", report(launch(0, "k"), launch(1, "k", deterministic=False)))
        empty = self.file("empty", "GPU replay of x.sbt\n")
        rc, out = sh(f'replay_all_ok {good} 2 3 && echo ok; replay_all_ok {good} any 3 && echo any;'
                     f'replay_all_ok {good} 3 3 || echo three; replay_all_ok {zero} 2 || echo zero;'
                     f'replay_all_ok {diff} 2 || echo diff; replay_all_ok {nondet} 2 3 || echo nd;'
                     f'replay_all_ok {nondet} 2 && echo nd-identical; '
                     f'replay_all_ok {empty} any || echo empty; replay_identical {zero}')
        self.assertEqual(out.split(), ["ok", "any", "three", "zero", "diff", "nd", "nd-identical",
                                       "empty", "1"])

    def test_gtest_check(self):
        ok, no_gpu = self.file("ok", GTEST_OK), self.file("no_gpu", GTEST_NO_GPU)
        torch_skip = self.file("torch", GTEST_OK.replace("[  PASSED  ] 2 tests.", "skipped (torch "
                               "not usable here): boom\n[  PASSED  ] 1 test.\n[  SKIPPED ] 1 test, "
                               "listed below:"))
        rc, out = sh(f"gtest_check g {ok} 0; summary", TS_HAVE_GPU="1")
        self.assertEqual((rc, last_line(out)), (0, "1 passed, 0 failed, 0 skipped"))
        self.assertIn("PASS g: 2 passed, 0 skipped", out)
        rc, out = sh(f"gtest_check g {no_gpu} 0; summary", TS_HAVE_GPU="1")
        self.assertEqual((rc, verdict(out, "g")), (1, "FAIL"))
        self.assertIn("no GPU", out)
        rc, out = sh(f"gtest_check g {no_gpu} 0; summary", TS_HAVE_GPU="0")
        self.assertEqual((rc, verdict(out, "g")), (0, "SKIP"))
        rc, out = sh(f"gtest_check g {ok} 1; summary", TS_HAVE_GPU="1")
        self.assertEqual((rc, verdict(out, "g")), (1, "FAIL"))
        rc, out = sh(f"gtest_check g {torch_skip} 0; summary", TS_HAVE_GPU="1",
                     TS_TORCH_STATE="cuda")
        self.assertEqual((rc, verdict(out, "g")), (1, "FAIL"))
        rc, out = sh(f"gtest_check g {self.file('none', 'crashed')} 0; summary", TS_HAVE_GPU="1")
        self.assertEqual((rc, verdict(out, "g")), (1, "FAIL"))

    def test_absorb_adds_up_sub_summaries(self):
        good = self.file("good", "PASS a\n4 passed, 0 failed, 2 skipped\n")
        bad = self.file("bad", "FAIL a\n4 passed, 1 failed, 0 skipped\n")
        rc, out = sh(f"pass own; absorb sub {good} 0; summary")
        self.assertEqual((rc, last_line(out)), (0, "5 passed, 0 failed, 2 skipped"))
        rc, out = sh(f"absorb sub {bad} 1; summary")
        self.assertEqual((rc, last_line(out)), (1, "4 passed, 1 failed, 0 skipped"))
        rc, out = sh(f"absorb sub {self.file('none', 'Traceback ...')} 1; summary")
        self.assertEqual(rc, 1)
        self.assertIn("FAIL sub (printed no summary line; exit 1)", out)
        rc, out = sh(f"absorb sub {good} 1; summary")  # an expected skip in the sub-check
        self.assertEqual((rc, last_line(out)), (1, "4 passed, 1 failed, 2 skipped"))


def kernel_count_table(rc_all=None, rc3=None, warm=None):
    k = "scale_kernel(float*, int)"
    three = report(*(launch(i, k) for i in range(3)))
    return [
        [r"^profile .*kernel:scale_kernel", 0, "kernel_count: launched 10\n",
         "tracesmith: replay capture: 3 launch(es) and 0 stream op(s) recorded, 12.0 MiB\n"],
        [r"^profile .*launch:2 --replay-memory all", 0, "",
         f"tracesmith: replay capture: launch 2 {k}: 2 allocation(s), 8.00 MiB\n"],
        [r"^replay [^ ]*/rc_all\.sbt$", 0, rc_all or report(launch(2, k, iterations=1)), ""],
        [r"^replay [^ ]*/rc\.sbt --iterations 3$", 0, rc3 or three, ""],
        [r"^replay [^ ]*/rc\.sbt --iterations 3 --warm$", 0, warm or report(*(launch(
            i, k, extra="  NOT IDEMPOTENT: re-run on its own outputs, it changed 4 MiB\n")
            for i in range(3))), ""],
        [r"^replay [^ ]*/rc\.sbt --iterations 50$", 0,
         f"tracesmith: replay launch 2 (3 of 3) {k}\n\r\033[KGPU replay of rc.sbt\n"
         f"\r\033[Klaunch 1  {k}\n\r\033[Klaunch 2  {k}\n", ""],
    ]


class ReplayCheck(unittest.TestCase):
    SCRIPT = os.path.join(SOURCE_DIR, "scripts", "gpu-replay-check.sh")

    def setUp(self):
        self.fake = Fake()
        self.addCleanup(self.fake.close)

    def run_sections(self, sections, **env):
        return self.fake.run(["bash", self.SCRIPT, self.fake.build], REPLAY_ONLY=sections, **env)

    def test_kernel_count_clean(self):
        self.fake.program("kernel_count")
        self.fake.table(kernel_count_table())
        rc, out = self.run_sections("kernel_count")
        # (the progress line needs `script` for a terminal; without it that check skips)
        want = "6 passed, 0 failed, 0 skipped" if shutil.which("script") else \
            "5 passed, 0 failed, 1 skipped"
        self.assertEqual((rc, last_line(out)), (0, want), out)
        with open(os.path.join(self.fake.dir, "out", "replay-check.log")) as f:
            self.assertEqual(last_line(f.read()), want)

    def test_planted_failures_each_fail_their_check(self):
        self.fake.program("kernel_count")
        k = "scale_kernel(float*, int)"
        not_idempotent = "  NOT IDEMPOTENT: re-run on its own outputs, it changed 4 MiB\n"
        self.fake.table(kernel_count_table(
            rc_all=report(launch(2, k, "0 B", iterations=1)),  # 0 bytes compared
            rc3=report(launch(0, k), launch(1, k, None), launch(2, k)),  # a DIFFERENT line
            warm=report(*(launch(i, k, extra=not_idempotent) for i in range(2)))))  # 2 of 3
        rc, out = self.run_sections("kernel_count")
        self.assertEqual(rc, 1, out)
        self.assertEqual(verdict(out, "--replay-memory all capture replays identical"), "FAIL")
        self.assertEqual(verdict(out, "the 3 captured scale_kernel launches"), "FAIL")
        self.assertEqual(verdict(out, "--warm: the 3 scale_kernel launches"), "FAIL")
        self.assertEqual(last_line(out), "3 passed, 3 failed, 0 skipped")

    def test_missing_program_skips_and_fails_where_a_gpu_is(self):
        self.fake.table(kernel_count_table())
        rc, out = self.run_sections("kernel_count,launch_attrs")
        self.assertEqual(rc, 1, out)
        self.assertEqual(verdict(out, "the 3 captured scale_kernel launches"), "SKIP")
        self.assertIn("kernel_count not built (gpu/build-programs.sh); expected on this machine",
                      out)
        self.assertEqual(last_line(out), "0 passed, 0 failed, 7 skipped")
        rc, out = self.run_sections("kernel_count", TS_HAVE_GPU="0")
        self.assertEqual((rc, last_line(out)), (0, "0 passed, 0 failed, 6 skipped"), out)

    def test_nothing_built(self):
        empty = os.path.join(self.fake.dir, "empty")
        rc, out = self.fake.run(["bash", self.SCRIPT, empty], TS_TORCH_STATE="absent")
        self.assertEqual(rc, 1)
        self.assertRegex(last_line(out), r"^0 passed, 0 failed, [1-9]\d+ skipped$")
        self.assertNotIn("\nPASS ", out)

    def test_torch_sections_skip_without_torch_and_fail_without_its_cuda(self):
        rc, out = self.run_sections("torch_ops", TS_TORCH_STATE="absent")
        self.assertEqual(rc, 0, out)
        self.assertIn("SKIP PyTorch matmul (cuBLAS) and softmax", out)
        self.assertIn("(torch does not import)", out)
        rc, out = self.run_sections("torch_ops", TS_TORCH_STATE="nocuda")
        self.assertEqual(rc, 1, out)
        self.assertIn("torch.cuda.is_available() is False; expected on this machine", out)

    def ops_table(self, names):
        blocks = [launch(i, n, iterations=20, deterministic="index" not in n)
                  for i, n in enumerate(names)]
        return [[r"^profile ", 0, "", ""], [r"^replay ", 0, report(*blocks), ""]]

    def test_matmul_and_softmax_named_apart(self):
        self.fake.table(self.ops_table(["ampere_sgemm_128x64_nn", "cunn_SoftMaxForward",
                                        "indexFuncLargeIndex"]))
        rc, out = self.run_sections("torch_ops")
        self.assertEqual((rc, last_line(out)), (0, "2 passed, 0 failed, 0 skipped"), out)
        self.fake.table(self.ops_table(["ampere_sgemm_128x64_nn", "sm90_xmma_gemm_f32",
                                        "indexFuncLargeIndex"]))  # two GEMMs, no softmax
        rc, out = self.run_sections("torch_ops")
        self.assertEqual((rc, verdict(out, "PyTorch matmul (cuBLAS) and softmax")), (1, "FAIL"))

    def test_stream_ops_must_be_recorded(self):
        self.fake.table([[r"^profile -f --replay-capture all", 0, "checksum 1234.5\n",
                          "tracesmith: replay capture: 24 launch(es) and 0 stream op(s) recorded\n"]])
        rc, out = self.run_sections("torch_streams")
        self.assertEqual(rc, 1)
        self.assertEqual(verdict(out, "PyTorch two-stream forward pass"), "FAIL")

    def test_every_torch_graph_launch_counted(self):
        graph = [launch(i, f"graph launch (3 nodes: 3 kernels) {i}") for i in range(4)]
        eager = [launch(4, "vectorized_elementwise_kernel", None)]  # one eager launch differs
        self.fake.table([[r"^profile ", 0, "TORCH_GRAPH OK\n",
                          "".join(f"graph launch {i} (3 kernels): 4 allocation(s)\n"
                                  for i in range(4))],
                         [r"^replay [^ ]*rc_torch_graph\.sbt --iterations 3$", 0,
                          report(*(graph + eager)), ""],
                         [r"^replay ", 0, report(launch(3, "graph launch (3 nodes: 3 kernels)")),
                          ""]])
        rc, out = self.run_sections("torch_graph")
        self.assertEqual(rc, 1, out)
        self.assertEqual(verdict(out, "GRAPH: PyTorch CUDAGraph: every launch"), "FAIL")
        self.assertEqual(verdict(out, "GRAPH: PyTorch CUDAGraph: the program's results"), "PASS")


class GpuCheck(unittest.TestCase):
    SCRIPT = os.path.join(SOURCE_DIR, "scripts", "gpu-check.sh")
    TESTS = ["capture_gpu_test", "capture_gpu_stacks_test"]

    def setUp(self):
        self.fake = Fake()
        self.addCleanup(self.fake.close)
        # Every program gpu/build-programs.sh would compile, already there (no nvcc).
        for f in os.listdir(os.path.join(GPU, "programs")):
            if f.endswith(".cu"):
                self.fake.program(f[:-3])
        for name in ("launch_loop", "api_costs"):
            self.fake.program(name)
        self.fake.table([[r"^devices$", 0, "CUDA driver 13.0\nGPU 0: NVIDIA H200\n", ""]])

    def gtest(self, name, text):
        write(os.path.join(self.fake.build, "tests", "capture", name),
              f"#!/bin/sh\ncat <<'EOF'\n{text}EOF\n", executable=True)

    def run_check(self, what, **env):
        return self.fake.run(["bash", self.SCRIPT, self.fake.build], GPU_CHECK=what,
                             GPU_TESTS=" ".join(self.TESTS), **env)

    def test_gtests_all_skipped_with_a_gpu_fail_the_run(self):
        self.gtest(self.TESTS[0], GTEST_OK)
        self.gtest(self.TESTS[1], GTEST_OK)
        rc, out = self.run_check("tests")
        self.assertEqual((rc, last_line(out)), (0, "3 passed, 0 failed, 0 skipped"), out)
        self.gtest(self.TESTS[1], GTEST_NO_GPU)
        rc, out = self.run_check("tests")
        self.assertEqual(rc, 1, out)
        self.assertEqual(verdict(out, f"gtest {self.TESTS[1]}"), "FAIL")
        self.assertEqual(last_line(out), "2 passed, 1 failed, 0 skipped")
        with open(os.path.join(self.fake.dir, "out", "gpu-check.log")) as f:
            self.assertIn("2 passed, 1 failed, 0 skipped\n", f.read())

    def test_missing_gtest_binary_is_an_expected_skip(self):
        self.gtest(self.TESTS[0], GTEST_OK)
        rc, out = self.run_check("tests")
        self.assertEqual(rc, 1, out)
        self.assertEqual(verdict(out, f"gtest {self.TESTS[1]}"), "SKIP")

    def test_replay_check_verdicts_are_added_up(self):
        self.fake.table([[r"^devices$", 0, "GPU 0: NVIDIA H200\n", ""]] + kernel_count_table(
            rc_all=report(launch(2, "scale_kernel(float*, int)", "0 B", iterations=1))))
        rc, out = self.run_check("replay", REPLAY_ONLY="kernel_count")
        self.assertEqual(rc, 1, out)
        self.assertIn("FAIL --replay-memory all capture replays identical", out)
        self.assertEqual(last_line(out), "6 passed, 1 failed, 0 skipped")  # devices + 5 of 6


# The Python checkers, run as the scripts they are (their summary line and exit status).
def job_report(ranks, collectives, ops=(), stragglers=(), bandwidth=(), bound=300):
    return json.dumps({"ranks": {
        "ranks": [{"rank": r, "clock_method": "monotonic anchors", "clock_aligned": True,
                   "clock_bound_ns": bound, "collectives": collectives, "matched": collectives}
                  for r in ranks],
        "collectives": [{"op": op} for op in ops], "stragglers": list(stragglers),
        "bandwidth": list(bandwidth), "findings": [], "left_out": []}})


def flows(n):
    return f"tracesmith: wrote x.pftrace (100.00 KiB, 2 ranks on one clock, 3000 slices, " \
           f"{n} collective flows)\n"


class PythonCheckers(unittest.TestCase):
    def setUp(self):
        self.fake = Fake()
        self.addCleanup(self.fake.close)
        self.out = os.path.join(self.fake.dir, "run")
        os.makedirs(self.out)

    def checker(self, script, *args, **env):
        return self.fake.run([sys.executable, os.path.join(GPU, script), "check",
                              self.fake.cli, self.out, *args], **env)

    def job_table(self, merged_analyze=0):
        st = {"rank": 1, "last_count": 10, "of": 10, "median_late_ns": 19_800_000,
              "clock_bound_ns": 600, "host_time": {"excess_ns": 20_100_000, "call_site": "w"}}
        good = job_report([0, 1, 2], 10, stragglers=[st])
        return [[r"^analyze --json [^ ]*/job\.sbt$", 0, good, ""],
                [r"^analyze --json [^ ]*/merged\.sbt$", merged_analyze, good, "boom\n"],
                [r"^merge ", 0, "", "tracesmith: merged 3 files\n"],
                [r"^export -f perfetto", 0, "", flows(0)]]

    def test_job_check(self):
        for f in ("job.sbt", "job.pid2.sbt", "job.pid3.sbt"):
            write(os.path.join(self.out, f), "x")
        self.fake.table(self.job_table())
        rc, out = self.checker("job_check.py", "10", "20")
        self.assertEqual((rc, last_line(out)), (0, "15 passed, 0 failed, 0 skipped"), out)
        self.fake.table(self.job_table(merged_analyze=1))  # analyze of the merged file fails
        rc, out = self.checker("job_check.py", "10", "20")
        self.assertEqual(rc, 1, out)
        self.assertEqual(verdict(out, "merged analyze"), "FAIL")
        self.assertEqual(verdict(out, "merged straggler"), "SKIP")
        self.assertEqual(last_line(out), "9 passed, 1 failed, 5 skipped")
        self.assertNotIn("all: PASS", out)

    def nccl_table(self, ddp_flows=88, ddp_bound=373, ar_code=0):
        ar = job_report([0, 1], 60, ["all_reduce"] * 60, bandwidth=[
            {"op": "all_reduce", "bytes": b, "busbw_gbps": 100.0, "count": 20}
            for b in (1 << 20, 16 << 20, 64 << 20)])
        st = {"rank": 1, "last_count": 42, "of": 44, "median_late_ns": 921_405,
              "step_late_ns": 17_771_000, "steps": 19, "clock_bound_ns": ddp_bound}
        ddp = job_report([0, 1], 44, ["all_reduce"] * 44, stragglers=[st], bound=ddp_bound)
        mix = job_report([0, 1], 60, ["broadcast", "all_gather", "reduce_scatter"] * 20)
        return [[r"^analyze --json [^ ]*/ar\.sbt$", ar_code, ar, ""],
                [r"^analyze --json [^ ]*/ddp\.sbt$", 0, ddp, ""],
                [r"^analyze --json [^ ]*/mix\.sbt$", 0, mix, ""],
                [r"ddp\.pftrace", 0, "", flows(ddp_flows)],
                [r"^export -f perfetto", 0, "", flows(120)]]

    def test_nccl_check(self):
        self.fake.table(self.nccl_table())
        rc, out = self.checker("nccl_job_check.py", "20", "20", "15")
        self.assertEqual((rc, last_line(out)), (0, "13 passed, 0 failed, 0 skipped"), out)
        # Flows: one per rank per matched collective, not "> 0"; the clock bound is tested.
        self.fake.table(self.nccl_table(ddp_flows=1, ddp_bound=60_000))
        rc, out = self.checker("nccl_job_check.py", "20", "20", "15")
        self.assertEqual((rc, verdict(out, "ddp perfetto")), (1, "FAIL"), out)
        self.assertEqual(verdict(out, "ddp clocks"), "FAIL")
        self.assertEqual(last_line(out), "11 passed, 2 failed, 0 skipped")
        self.fake.table(self.nccl_table(ar_code=1))
        rc, out = self.checker("nccl_job_check.py", "20", "20", "15")
        self.assertEqual((rc, verdict(out, "allreduce analyze")), (1, "FAIL"), out)
        self.assertEqual(verdict(out, "allreduce counts"), "SKIP")

    def test_memory_check(self):
        rc, out = self.checker("memory_check.py")  # the run wrote no expectations
        self.assertEqual((rc, verdict(out, "inputs")), (1, "FAIL"), out)
        self.assertEqual(last_line(out), "0 passed, 1 failed, 6 skipped")
        mib48 = 48 << 20
        write(os.path.join(self.out, "mem_expect.txt"),
              "graph_pool_bytes=2097152\ngraph_pool_segments=1\nmax_reserved=900\nreserved=800\n"
              "leak_site=memory_check.py:257)\nleaks=7\npeak_section=step 9\n")

        def memory(count):
            return json.dumps({"graph_captures": 1, "findings": ["site memory_check.py:257) piles up"],
                               "memory": [{"space": "device", "device_id": 0, "owners": [
                                   {"owner": "PyTorch caching allocator", "peak_bytes": 900,
                                    "end_bytes": 800}],
                                   "live_at_end": [{"site": "run (/g/memory_check.py:257)",
                                                    "count": count, "bytes": count * mib48,
                                                    "leak_suspect": True}],
                                   "graph_pool_end_bytes": 2097152, "graph_pool_end_count": 1,
                                   "peak_nvtx_range": "step 9"}]})
        self.fake.table([[r"^memory --json", 0, memory(7), ""]])
        rc, out = self.checker("memory_check.py")
        self.assertEqual((rc, last_line(out)), (0, "7 passed, 0 failed, 0 skipped"), out)
        self.fake.table([[r"^memory --json", 0, memory(6), ""]])
        rc, out = self.checker("memory_check.py")
        self.assertEqual((rc, verdict(out, "leak")), (1, "FAIL"), out)


class PcPeers(unittest.TestCase):
    """gpu/pc_peers.py (issue #39 "Cost") with a fake tracesmith, python and ncu: the cost
    verdict from the per-round ratios, the samples verdict from analyze's kernels, the table."""

    FAKE_PY = """#!/usr/bin/env bash
case "$2" in
  *proton_run.py) echo "PROTON_IMPORT_ERROR ModuleNotFoundError: No module named 'triton'"; exit 3 ;;
  *) echo "steps=$4 step_ms=12.0 cpu_ms=8.0" ;;
esac
"""
    FAKE_NCU = """#!/usr/bin/env bash
for i in 1 2 3; do echo '==PROF== Profiling "k" - 0: 0%....50%....100% - 9 passes'; done
echo "steps=5 step_ms=13.0 cpu_ms=8.0"
"""
    INFO = ("Capture stats:\n  dropped_records                    0\n"
            "  pc_sampling.samples                476069\n"
            "  pc_sampling.dropped_samples        0\n"
            "  pc_sampling.hardware_buffer_full   0  (DATA LOSS)\n")

    def setUp(self):
        self.fake = Fake()
        self.addCleanup(self.fake.close)
        self.out = os.path.join(self.fake.dir, "run")
        self.py = self.fake.program("python3", self.FAKE_PY)
        self.ncu = self.fake.program("ncu", self.FAKE_NCU)

    def run_check(self, pc_step_ms, softmax_samples):
        doc = {"kernels": [{"name": "gemm", "share_pct": 60.0}, {"name": "softmax", "share_pct": 5.0},
                           {"name": "tiny", "share_pct": 0.4}],
               "steps": {"kernels_per_step": 300},
               "gpu_samples": {"samples": 400000, "functions": [
                   {"name": "gemm", "samples": 300000}, {"name": "softmax",
                                                         "samples": softmax_samples}]}}
        self.fake.table([
            [r"^profile .*--pc-sampling", 0, f"steps=30 step_ms={pc_step_ms} cpu_ms=9.0\n", ""],
            [r"^profile ", 0, "steps=30 step_ms=14.0 cpu_ms=9.0\n", ""],
            [r"^info [^ ]*/tspc\.sbt$", 0, self.INFO, ""],
            [r"^analyze --json [^ ]*/tspc\.sbt$", 0, json.dumps(doc), ""]])
        return self.fake.run([sys.executable, os.path.join(GPU, "pc_peers.py"), self.fake.cli,
                              self.out, "--rounds", "3"], PCPEERS_PYTHON=self.py, NCU=self.ncu)

    def test_clean_run(self):
        rc, out = self.run_check(15.0, 5000)
        self.assertEqual((rc, last_line(out)), (0, "4 passed, 0 failed, 1 skipped"), out)
        self.assertEqual(verdict(out, "pc cost"), "PASS")
        self.assertEqual(verdict(out, "proton"), "SKIP")  # triton does not import
        self.assertIn("faster than ncu (EXTRAPOLATED)", out)
        with open(os.path.join(self.out, "pc_peers.json")) as f:
            doc = json.load(f)
        self.assertEqual(len([r for r in doc["runs"] if r["config"] in ("base", "ts", "tspc")]), 9)
        self.assertEqual(doc["runs"][-1]["name"], "proton0")  # its import error: no retry

    def test_planted_cost_and_short_samples_fail(self):
        rc, out = self.run_check(16.0, 900)  # 1.14x the default capture; softmax 900 samples
        self.assertEqual(rc, 1, out)
        self.assertEqual(verdict(out, "pc cost"), "FAIL")
        self.assertEqual(verdict(out, "samples"), "FAIL")
        self.assertEqual(verdict(out, "ncu"), "PASS")


def call_sites_json(sites, unnamed=0.0):
    return json.dumps({"call_sites": [{"name": n, "share_pct": s} for n, s in sites],
                       "unnamed_call_site_share": unnamed})


SITES = [("autograd backward: AddmmBackward0", 58.0),
         ("build.<locals>.step (inproc_names_check.py:66) > Linear.forward "
          "(torch/nn/modules/linear.py:134)", 30.0),
         ("autograd backward: GeluBackward0", 8.0), ("SGD.step (torch/optim/sgd.py:80)", 4.0)]
HINT_LINE = ("  call sites: 66.0% of GPU time under unnamed native frames (module+offset) -- run "
             "`tracesmith symbolize {}` to name them\n")


class StallCheck(unittest.TestCase):
    """gpu/stall_check.py (issue #41 item 2) with a fake tracesmith: the verdicts from what
    `info` says of CUPTI's overhead rows and the callback sites' maxima."""

    @staticmethod
    def info(request_max, launch_max, kernels=3000, zeroed=1, probe=""):
        return ("Events:      9000\n  kernel             %d\n\nCapture stats:\n"
                "  dropped_records                    0\n"
                "  capture.buffers_zeroed_by_tracesmith %d\n"
                "  capture.buffers_allocated_on_request 0\n\nCapture cost (pid 7):\n"
                "  capture cost: 0.50 us per launch\n"
                "    launch: 1.2 ms in 2000 calls (600 ns each), 0.600 us per launch; one call: "
                "median 400 ns, p99 2.0 us, p99.9 9.0 us, max %s%s\n"
                "    first_time: 1.0 ms in 3 calls (333 us each); the longest 250.0 us\n"
                "    CUPTI's own work (its overhead rows, inside the program's CUDA calls or the writer's flushes): "
                "activity buffer request 9x, 1.0 ms in all, max %s; resource 4x, 6.7 ms in all, "
                "max 2.4 ms.\n" % (kernels, zeroed, launch_max, probe, request_max))

    def run_check(self, new_request, new_launch, kernels=3000):
        fake = Fake()
        self.addCleanup(fake.close)
        fake.program("launch_loop")
        fake.table([[r"^profile ", 0, "", ""],
                    [r"^info .*ll_zeroed", 0, self.info(new_request, new_launch, kernels), ""],
                    [r"^info .*ll_cupti-zeroes", 0, self.info("2.0 ms", "40.0 us", 3000, 0), ""],
                    [r"^info .*ll_probe", 0, self.info(
                        "13.0 us", "245.0 us", probe=", 4 calls of 100 us or more (slow-call "
                        "probe, 4 calls of 100 us or more by exact time: 3 preempted, 1 "
                        "unexplained)"), ""]])
        out = os.path.join(fake.dir, "run")
        return fake.run([sys.executable, os.path.join(GPU, "stall_check.py"), fake.cli,
                         fake.progs, out, "--launches", "2000"], TS_TORCH_STATE="absent")

    def test_clean_run(self):
        rc, out = self.run_check("13.1 us", "86.8 us")
        self.assertEqual((rc, last_line(out)), (0, "4 passed, 0 failed, 0 skipped"), out)
        self.assertIn("cupti-zeroes 9x max 2.00 ms", out)  # (fmt: two decimals)
        self.assertIn("by what happened to the thread: launch: preempted 3, unexplained 1; "
                      "launch max 245.0 us", out)
        self.assertIn("with the probe: preempted 3, unexplained 1", out)

    def test_stalls_and_lost_records_fail(self):
        rc, out = self.run_check("1.60 ms", "245.2 us", kernels=2999)
        self.assertEqual(rc, 1, out)
        for name in ("buffer request", "launch callback", "records intact"):
            self.assertEqual(verdict(out, name), "FAIL", out)
        self.assertEqual(verdict(out, "zeroed buffers"), "PASS", out)


class InprocNamesCheck(unittest.TestCase):
    """gpu/inproc_names_check.py check (issue #43) on canned `analyze` outputs."""

    def setUp(self):
        self.fake = Fake()
        self.addCleanup(self.fake.close)
        self.out = os.path.join(self.fake.dir, "run")
        for f in ("cli.sbt", "inproc.sbt", "raw.sbt"):
            write(os.path.join(self.out, f), "x")

    def run_check(self, inproc=SITES, hints=1):
        raw = os.path.join(self.out, "raw.sbt")
        self.fake.table([
            [r"^analyze [^ ]*/cli\.sbt --json$", 0, call_sites_json(SITES), ""],
            [r"^analyze [^ ]*/inproc\.sbt --json$", 0, call_sites_json(inproc), ""],
            [r"^analyze [^ ]*/raw\.sbt$", 0, "Kernel GPU time\n" + HINT_LINE.format(raw) * hints,
             ""],
            [r"^symbolize ", 0, "Symbolized 900 of 1000 native frames\n", ""],
            [r"^analyze [^ ]*/raw_symbolized\.sbt --json$", 0, call_sites_json(SITES), ""],
            [r"^analyze [^ ]*/raw_symbolized\.sbt$", 0, "Kernel GPU time\n", ""]])
        return self.fake.run([sys.executable, os.path.join(GPU, "inproc_names_check.py"),
                              "check", self.fake.cli, self.out])

    def test_same_names_passes(self):
        rc, out = self.run_check()
        self.assertEqual((rc, last_line(out)), (0, "6 passed, 0 failed, 0 skipped"), out)

    def test_bare_call_site_and_shares_apart_fail(self):
        bare = [("autograd backward: libtorch_cuda.so+0x3a127c1", 14.0)] + \
            [(n, s - 14.0 if n.startswith("autograd backward: Addmm") else s) for n, s in SITES]
        rc, out = self.run_check(inproc=bare)
        self.assertEqual(rc, 1, out)
        self.assertEqual(verdict(out, "no bare call site"), "FAIL")
        self.assertEqual(verdict(out, "same call sites"), "FAIL")
        self.assertEqual(verdict(out, "hint once"), "PASS")

    def test_hint_twice_or_never_fails(self):
        for hints in (0, 2):
            rc, out = self.run_check(hints=hints)
            self.assertEqual((rc, verdict(out, "hint once")), (1, "FAIL"), out)

    def test_without_torch_every_mode_skips(self):
        rc, out = self.fake.run([sys.executable, os.path.join(GPU, "inproc_names_check.py"),
                                 "check", self.fake.cli, self.out], TS_TORCH_STATE="absent")
        self.assertEqual((rc, last_line(out)), (0, "0 passed, 0 failed, 6 skipped"), out)


class InprocAbCheck(unittest.TestCase):
    """gpu/inproc_ab.py (issues #39, #40 cost in one process): verdicts from canned rounds,
    and the visible skip without torch."""

    @staticmethod
    def judge(rounds, errors=(), limit=1.03):
        mod = load_gpu_module("inproc_ab")
        c = mod.Checks("ABCOST")
        buf = io.StringIO()
        with redirect_stdout(buf):
            mod.judge(c, rounds, list(errors), 20, 3, limit, "gpu_metrics")
        return c, buf.getvalue()

    def test_cost_within_and_past_the_bar(self):
        rounds = [{"none": 0.0100, "default": 0.0110, "option": 0.0110 * f}
                  for f in (1.01, 1.02, 0.99, 1.20, 1.00)]
        c, out = self.judge(rounds)
        self.assertEqual((c.passed, c.failed), (2, 0), out)
        self.assertIn("option / default median of rounds 1.010x (need <= 1.03)", out)
        self.assertIn("max 1.200x", out)
        self.assertIn("default / none median 1.100x", out)
        self.assertIn("medians none / default / option 10.000 / 11.000 / 11.110 ms", out)
        c, out = self.judge([{"none": 0.01, "default": 0.01, "option": 0.0105}] * 3)
        self.assertEqual(verdict(out, "cost"), "FAIL", out)

    def test_a_failed_block_fails(self):
        c, out = self.judge([{"none": 0.01, "default": 0.01}], ["round 1 option: empty trace"])
        self.assertEqual(verdict(out, "blocks"), "FAIL", out)
        self.assertEqual(verdict(out, "cost"), "FAIL", out)  # no ratio at all

    def test_without_torch_skips(self):
        with tempfile.TemporaryDirectory() as d:
            p = subprocess.run([sys.executable, os.path.join(GPU, "inproc_ab.py"), d,
                                "--option", "pc_sampling", "--cli", "x"],
                               capture_output=True, text=True,
                               env=dict(os.environ, TS_TORCH_STATE="absent"))
        self.assertEqual((p.returncode, last_line(p.stdout)), (0, "0 passed, 0 failed, 3 skipped"),
                         p.stdout + p.stderr)

    def test_block_sets_the_option_env_while_the_capture_starts(self):
        mod = load_gpu_module("inproc_ab")
        seen = []

        class FakeProfile:
            def __init__(self, path, **kwargs):
                seen.append((kwargs, os.environ.get("TS_TEST_KNOB")))

            def __enter__(self):
                return self

            def __exit__(self, *exc):
                with open(path, "w") as f:
                    f.write("x")

        fake_torch = type(sys)("torch")
        fake_torch.cuda = type(sys)("torch.cuda")
        fake_torch.cuda.synchronize = lambda: None
        fake_ts = type(sys)("tracesmith")
        fake_ts.profile = FakeProfile
        with tempfile.TemporaryDirectory() as d, \
                mock.patch.dict(sys.modules, {"torch": fake_torch, "tracesmith": fake_ts}):
            path = os.path.join(d, "t.sbt")
            mod.block(lambda: None, 2, 1, (path, mod.OPTIONS["capture"]), {"TS_TEST_KNOB": "0"})
        self.assertEqual(seen, [({"quiet": True, "overwrite": True, "symbolize": False}, "0")])
        self.assertNotIn("TS_TEST_KNOB", os.environ)  # restored after


def load_gpu_module(name):
    """gpu/NAME.py as a module (gpu/ on the path while it loads, for its `checks` import)."""
    sys.path.insert(0, GPU)
    try:
        spec = importlib.util.spec_from_file_location(name, os.path.join(GPU, name + ".py"))
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
    finally:
        sys.path.remove(GPU)
    return mod


def load_profile_check():
    return load_gpu_module("python_profile_check")


class PythonProfileCheck(unittest.TestCase):
    """gpu/python_profile_check.py with a fake torch (MagicMock) and a fake tracesmith."""

    def setUp(self):
        self.fake = Fake()
        self.addCleanup(self.fake.close)
        self.mod = load_profile_check()
        self.mod.torch = mock.MagicMock()

    def fake_tracesmith(self, refuse=True, replay_raises=True):
        class TraceError(Exception):
            pass

        class Profile:
            def __init__(self, path, **kw):
                self.last_trace = path

            def __enter__(self):
                if refuse:
                    raise TraceError("CUPTI is held by another profiler")
                return self

            def __exit__(self, *exc):
                return False

        def replay(path, **kw):
            raise TraceError("replay failed")

        ts = mock.MagicMock(TraceError=TraceError, profile=Profile,
                            replay=replay if replay_raises else mock.MagicMock())
        main = mock.MagicMock(_find_cli=lambda: self.fake.cli)
        return {"tracesmith": ts, "tracesmith.__main__": main}

    def main(self, argv, modules, **env):
        buf = io.StringIO()
        with mock.patch.dict(sys.modules, modules), \
                mock.patch.dict(os.environ, dict(self.fake.env(), **env)), redirect_stdout(buf):
            rc = self.mod.main(argv)
        return rc, buf.getvalue()

    def test_replay_raising_is_a_fail_even_when_the_cli_also_exits_1(self):
        self.fake.table([[r"^replay ", 1, "", "tracesmith: error: no replay capture\n"]])
        rc, out = self.main(["replay", self.fake.dir], self.fake_tracesmith(refuse=False))
        self.assertEqual(rc, 1, out)
        self.assertEqual(verdict(out, "replay verdicts"), "FAIL")
        self.assertEqual(verdict(out, "replay json"), "SKIP")
        self.assertEqual(last_line(out), "0 passed, 1 failed, 2 skipped")

    def test_taken_not_refused_is_a_fail(self):
        rc, out = self.main(["taken", self.fake.dir], self.fake_tracesmith(refuse=False))
        self.assertEqual((rc, verdict(out, "taken refused")), (1, "FAIL"), out)
        self.assertEqual(verdict(out, "taken program went on"), "PASS")
        rc, out = self.main(["taken", self.fake.dir], self.fake_tracesmith(refuse=True))
        self.assertEqual((rc, last_line(out)), (0, "2 passed, 0 failed, 0 skipped"), out)

    def test_inproc_without_a_trace_is_a_fail(self):
        rc, out = self.main(["inproc", self.fake.dir], self.fake_tracesmith(refuse=False))
        self.assertEqual((rc, verdict(out, "inproc")), (1, "FAIL"), out)

    def test_compare_with_a_missing_trace_is_a_fail(self):
        rc, out = self.main(["compare", self.fake.cli, self.fake.dir], self.fake_tracesmith())
        self.assertEqual((rc, verdict(out, "compare")), (1, "FAIL"), out)
        self.assertIn("missing", out)

    def test_without_torch_every_mode_skips(self):
        self.mod.torch = None
        rc, out = self.main(["replay", self.fake.dir], {})
        self.assertEqual((rc, last_line(out)), (0, "0 passed, 0 failed, 3 skipped"), out)
        self.mod.torch = mock.MagicMock()  # imports, no CUDA, on a machine with a GPU
        rc, out = self.main(["inproc", self.fake.dir], {}, TS_TORCH_STATE="nocuda")
        self.assertEqual((rc, verdict(out, "inproc")), (1, "SKIP"), out)



@unittest.skipUnless(importlib.util.find_spec("numpy"),
                     "numpy is not installed for this Python (gpu/cost_where.py needs it)")
class CostWhere(unittest.TestCase):
    """gpu/cost_where.py: a trace's kernels, launch calls and drain rows (a fake tracesmith)."""

    @staticmethod
    def trace(drains):
        import numpy as np

        class Table:
            def __init__(self, **cols):
                self.__dict__.update({k: np.asarray(v) for k, v in cols.items()})

        class T:
            kinds = ["kernel", "api"] + (["overhead"] if drains else [])
            # two kernels (1-3 us, 2-4 us: busy 3 us of a 3-us span), three launch calls
            kernels = Table(start_ns=[1000, 2000], end_ns=[3000, 4000])
            api = Table(name=["cudaLaunchKernel", "cuLaunchKernel", "cudaMalloc"],
                        start_ns=[0, 10_000, 20_000], end_ns=[500, 2_010_000, 30_000])

            def table(self, kind):
                assert kind == "overhead"
                return Table(overhead_kind=[0x80000001, 7 << 16], start_ns=[1_000_000, 0],
                             end_ns=[3_000_000, 100])
        return T()

    def figures(self, drains):
        fake = mock.MagicMock()
        fake.load = lambda path: self.trace(drains)
        with mock.patch.dict(sys.modules, {"tracesmith": fake}):
            spec = importlib.util.spec_from_file_location("cost_where",
                                                          os.path.join(GPU, "cost_where.py"))
            mod = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(mod)
            return mod.block_figures("x.sbt")

    def test_launch_calls_held_by_drains(self):
        f = self.figures(drains=True)
        self.assertEqual((f["kernels"], f["busy_ns"], f["span_ns"], f["idle_ns"]),
                         (2, 3000, 3000, 0))
        self.assertEqual((f["launches"], f["launch_max_ns"]), (2, 2_000_000))
        self.assertIn("launch 2 of 2", f["launch_max_at"])
        # one drain of 2 ms (CUPTI's own row left out); the 2-ms launch call overlaps it by
        # 1.01 ms, the first call not at all
        self.assertEqual((f["slow"]["drains"], f["slow"]["drain_ns"]), (1, 2_000_000))
        self.assertEqual((f["slow"]["held"], f["slow"]["held_ns"]), (1, 1_010_000))
        self.assertEqual((f["slow"]["n"], f["slow"]["ns"]), (1, 2_000_000))

    def test_without_drain_rows(self):
        f = self.figures(drains=False)
        self.assertEqual((f["slow"]["drains"], f["slow"]["held"]), (0, 0))

if __name__ == "__main__":
    unittest.main()
