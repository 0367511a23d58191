#!/usr/bin/env python3
"""The GPU checks' own verdicts, on the CPU (issue #44): scripts/lib/checks.sh,
scripts/gpu-replay-check.sh, scripts/gpu-check.sh and gpu/*_check.py fed recorded-style
outputs through a fake `tracesmith` (a script that prints canned output for the command
lines it is given), fake gtest binaries and fake programs. A planted failure (a DIFFERENT
line, 0 bytes compared, a missing section or program, a claim the output does not back)
must read FAIL or SKIP and make the exit status non-zero; a clean run ends with the
summary line "N passed, 0 failed, K skipped" and exit 0. Standard library only."""

import json
import os
import shutil
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gpu_check_fakes import (GPU, SOURCE_DIR, SUMMARY, Fake, last_line, launch,  # noqa: E402
                             report, sh, verdict, write)

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
def job_report(ranks, collectives, ops=(), stragglers=(), bandwidth=(), bound=300, payload=0,
               group=2):
    """`payload`: collectives per rank whose size NCCL's payload gave (group size `group`)."""
    return json.dumps({"ranks": {
        "ranks": [{"rank": r, "clock_method": "monotonic anchors", "clock_aligned": True,
                   "clock_bound_ns": bound, "collectives": collectives, "matched": collectives,
                   "collectives_with_payload": payload}
                  for r in ranks],
        "collectives": [{"op": op, "bytes": 4096 if payload else None,
                         "group_size": group if payload else None,
                         "nccl_comm": 77 if payload else None} for op in ops],
        "stragglers": list(stragglers),
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

    def nccl_table(self, world=2, ddp_flows=None, ddp_bound=373, ar_code=0, held=0,
                   sass="LDG.E R2, [R4]", busbw=100.0, b2b=95.0, b2b_count=18, payload=60,
                   mix_ag=None,
                   host_excess=15_525_000, site="ddp (nccl_job_check.py:109) > Linear.forward",
                   pace=1.0, kineto_group=None, grouped_bytes=3 << 20):
        """Recorded-style outputs of the five runs on `world` ranks; `busbw` the transfer's
        bus bandwidth, `b2b` the back-to-back one (the program measured 95 GB/s; a dict:
        by size, 95 for the others), of `b2b_count` all-reduces per size."""
        ranks = list(range(world))
        by_size = b2b if isinstance(b2b, dict) else {}

        def row(b):
            x = by_size.get(b, 95.0) if by_size else b2b
            return {"op": "all_reduce", "bytes": b, "busbw_gbps": busbw, "count": 20,
                    "median_ns": 52_000 * 95.0 / busbw, "back_to_back": b2b_count if x else 0,
                    "back_to_back_mean_ns": x and 52_000 * 95.0 / x,
                    "back_to_back_busbw_gbps": x}
        ar = job_report(ranks, 60, ["all_reduce"] * 60, payload=payload, group=world,
                        bandwidth=[row(b) for b in (1 << 20, 16 << 20, 64 << 20)])
        # The loop's collectives back to back, 52 us apart per size (the events' mean x pace).
        doc = json.loads(ar)
        doc["ranks"]["collectives"] = [
            {"op": "all_reduce", "bytes": b, "group_size": world, "nccl_comm": 77, "comm": 0,
             "seq": 20 * i + k, "first_arrival_ns": 10**9 * i + int(k * 52_000 * pace),
             "end_ns": 10**9 * i + int(k * 52_000 * pace) + 50_000}
            for i, b in enumerate((1 << 20, 16 << 20, 64 << 20)) for k in range(20)]
        ar = json.dumps(doc)
        write(os.path.join(self.out, "ar_measured.json"), json.dumps(
            {str(b): {"mean_ns": 52_000.0, "busbw_gbps": 95.0}
             for b in (1 << 20, 16 << 20, 64 << 20)}))
        st = {"rank": 1, "last_count": 42, "of": 44, "median_late_ns": 921_405,
              "step_late_ns": 17_771_000, "steps": 19, "clock_bound_ns": ddp_bound,
              "host_time": {"excess_ns": host_excess, "call_site": site}}
        ddp = job_report(ranks, 44, ["all_reduce"] * 44, stragglers=[st], bound=ddp_bound)
        mix_ag = (16 << 20) * world if mix_ag is None else mix_ag
        mix = job_report(ranks, 60, ["broadcast", "all_gather", "reduce_scatter"] * 20,
                         payload=60, group=world, bandwidth=[
                             {"op": op, "bytes": b, "busbw_gbps": 50.0, "count": 20}
                             for op, b in (("broadcast", 16 << 20), ("all_gather", mix_ag),
                                           ("reduce_scatter", (16 << 20) * world))])
        page = json.dumps({"name": "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgs)",
                           "samples": 5000, "sites": [
                               {"site": "allreduce (nccl_job_check.py:68) > all_reduce (d.py:1)",
                                "samples": 5000}],
                           "lines": [{"instructions": [{"sass": sass, "samples": 5000},
                                                      {"sass": "", "samples": 0}]}]})
        info = (f"  pc_sampling.samples  9000\n  pc_sampling.dropped_samples  0\n"
                f"  pc_sampling.gpus_held_elsewhere  {held}\n")
        # The mix's Kineto export: each rank's NCCL kernels with their collective args.
        for rank in ranks:
            write(os.path.join(self.out, "mix_kineto", f"rank-{rank}.json"), json.dumps(
                {"traceEvents": [{"cat": "kernel", "name": "nccl", "args": {
                    "Collective name": name, "Message size [bytes]": 16 << 20,
                    "Group size": world if kineto_group is None else kineto_group}}
                    for name in ("broadcast", "allgather", "reduce_scatter")
                    for _ in range(20)] + [{"cat": "kernel", "name": "gemm", "args": {}}]}))
        # The grouped calls: 1 + 20 all-reduces (the 20 coalesced pairs summed), 20 send/recv.
        grp = json.loads(job_report(ranks, 41, payload=41, group=world))
        grp["ranks"]["collectives"] = [
            {"op": op, "bytes": b, "group_size": world, "nccl_comm": 77}
            for op, b, n in (("all_reduce", 1 << 20, 1), ("all_reduce", grouped_bytes, 20),
                             ("send_recv", 1 << 20, 20)) for _ in range(n)]
        return [[r"^analyze --json [^ ]*/ar\.sbt$", ar_code, ar, ""],
                [r"^analyze --json [^ ]*/grp\.sbt$", 0, json.dumps(grp), ""],
                [r"^export -f kineto --force -o [^ ]*/mix_kineto/ [^ ]*/mix\.sbt$", 0, "", ""],
                [r"^analyze --json [^ ]*/arpc\.sbt$", 0, ar, ""],
                [r"^kernel --json --single -q [^ ]*/arpc\.rank[0-9]+\.sbt AllReduce$", 0, page, ""],
                [r"^info [^ ]*/arpc\.rank[0-9]+\.sbt$", 0, info, ""],
                [r"^analyze --json [^ ]*/ddp\.sbt$", 0, ddp, ""],
                [r"^analyze --json [^ ]*/mix\.sbt$", 0, mix, ""],
                [r"ddp\.pftrace", 0, "", flows(44 * world if ddp_flows is None else ddp_flows)],
                [r"^export -f perfetto", 0, "", flows(60 * world)]]

    def test_nccl_check(self):
        self.fake.table(self.nccl_table())
        rc, out = self.checker("nccl_job_check.py", "20", "20", "15")
        self.assertEqual((rc, last_line(out)), (0, "25 passed, 0 failed, 0 skipped"), out)
        # A grouped kernel sized by one of its calls only (2 MiB, not the group's 3 MiB).
        self.fake.table(self.nccl_table(grouped_bytes=2 << 20))
        rc, out = self.checker("nccl_job_check.py", "20", "20", "15")
        self.assertEqual((rc, verdict(out, "group all_reduce bytes"), verdict(out, "group counts"),
                          verdict(out, "group send_recv bytes")), (1, "FAIL", "PASS", "PASS"), out)
        # Bandwidth: the back-to-back bus bandwidth is judged against the program's own
        # (95 GB/s: 100 is +5.3%, 106 is +11.6%; none is a FAIL); the transfer's is shown,
        # not judged (130: +37%).
        # Judged at every size, over the 18 all-reduces the program timed (of 20).
        for kw, want in (({"busbw": 130.0}, "PASS"), ({"b2b": 100.0}, "PASS"),
                         ({"b2b": 106.0}, "FAIL"), ({"b2b": 84.0}, "FAIL"), ({"b2b": None}, "FAIL"),
                         ({"b2b": {16 << 20: 106.4}}, "FAIL"), ({"b2b": {64 << 20: 84.0}}, "FAIL"),
                         ({"b2b_count": 17}, "FAIL"), ({"b2b_count": 1}, "FAIL")):
            self.fake.table(self.nccl_table(**kw))
            rc, out = self.checker("nccl_job_check.py", "20", "20", "15")
            self.assertEqual((rc, verdict(out, "allreduce bandwidth")),
                             (0 if want == "PASS" else 1, want), (kw, out))
        # Without the program's own measure (or a broken one) there is nothing to judge
        # against: FAIL, and the timing too, the other verdicts still given.
        for text in (None, "[1, 2]"):
            self.fake.table(self.nccl_table())
            path = os.path.join(self.out, "ar_measured.json")
            os.remove(path) if text is None else write(path, text)
            rc, out = self.checker("nccl_job_check.py", "20", "20", "15")
            self.assertEqual((rc, verdict(out, "allreduce bandwidth"),
                              verdict(out, "allreduce timing"), verdict(out, "allreduce perfetto")),
                             (1, "FAIL", "FAIL", "PASS"), (text, out))
        # Sizes from NCCL's payloads: a rank without them, the trace's time per all-reduce
        # over the program's window 12% slower, the all-gather's size not times the ranks;
        # the straggler's host time at another line.
        for bad, name in (({"payload": 0}, "allreduce payload"), ({"pace": 1.12},
                          "allreduce timing"), ({"mix_ag": 16 << 20}, "mix bytes"),
                          ({"host_excess": 12_000_000}, "ddp straggler"),
                          ({"site": "ddp (other.py:3)"}, "ddp straggler"),
                          ({"kineto_group": 0}, "mix kineto")):
            self.fake.table(self.nccl_table(**bad))
            rc, out = self.checker("nccl_job_check.py", "20", "20", "15")
            self.assertEqual((rc, verdict(out, name)), (1, "FAIL"), (bad, out))
        # Under --pc-sampling: a rank whose GPU was held elsewhere, an instruction without SASS.
        for bad in ({"held": 1}, {"sass": " "}):
            self.fake.table(self.nccl_table(**bad))
            rc, out = self.checker("nccl_job_check.py", "20", "20", "15")
            self.assertEqual((rc, verdict(out, "arpc samples")), (1, "FAIL"), (bad, out))
        # Flows: one per rank per matched collective, not "> 0"; the clock bound is tested.
        self.fake.table(self.nccl_table(ddp_flows=1, ddp_bound=60_000))
        rc, out = self.checker("nccl_job_check.py", "20", "20", "15")
        self.assertEqual((rc, verdict(out, "ddp perfetto")), (1, "FAIL"), out)
        self.assertEqual(verdict(out, "ddp clocks"), "FAIL")
        self.assertEqual(last_line(out), "23 passed, 2 failed, 0 skipped")
        self.fake.table(self.nccl_table(ar_code=1))
        rc, out = self.checker("nccl_job_check.py", "20", "20", "15")
        self.assertEqual((rc, verdict(out, "allreduce analyze")), (1, "FAIL"), out)
        self.assertEqual(verdict(out, "allreduce counts"), "SKIP")

    def test_nccl_check_on_four_ranks(self):
        """WORLD 4 (nvidia-h200-x4): every expectation in the ranks' number; a 4-rank run
        checked as a 2-rank one fails its ranks, group sizes, sizes and flows."""
        self.fake.table(self.nccl_table(world=4))
        rc, out = self.checker("nccl_job_check.py", "20", "20", "15", "4")
        self.assertEqual((rc, last_line(out)), (0, "25 passed, 0 failed, 0 skipped"), out)
        rc, out = self.checker("nccl_job_check.py", "20", "20", "15")
        self.assertEqual(rc, 1, out)
        for name in ("allreduce ranks", "allreduce payload", "ddp ranks", "mix bytes",
                     "mix kineto", "arpc counts"):
            self.assertEqual(verdict(out, name), "FAIL", (name, out))
        # Two ranks' data checked as four.
        self.fake.table(self.nccl_table())
        rc, out = self.checker("nccl_job_check.py", "20", "20", "15", "4")
        self.assertEqual((rc, verdict(out, "allreduce ranks"), verdict(out, "mix bytes")),
                         (1, "FAIL", "FAIL"), out)
        # A WORLD that is not a number of ranks: said, no traceback.
        rc, out = self.checker("nccl_job_check.py", "20", "20", "15", "four")
        self.assertEqual(rc, 1, out)
        self.assertIn("WORLD must be a number of ranks", out)
        self.assertNotIn("Traceback", out)

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


class ReplayMetricsTolerance(unittest.TestCase):
    """gpu/replay_metrics_check.py's agreement with ncu: DRAM bytes of a kernel that moves
    nothing agree within the noise floor (0.1% of peak over its time, the peak from ncu's copy);
    a real difference still fails."""

    def test_floor(self):
        sys.path.insert(0, os.path.join(SOURCE_DIR, "gpu"))
        import replay_metrics_check as r
        c = r.COMPARED
        copy = {c["duration"]: 2.654e5, c["DRAM bytes read"]: 5.369e8,
                c["DRAM bytes written"]: 5.152e8, c["DRAM throughput"]: 82.39}
        fma = {c["duration"]: 3.181e5, c["DRAM bytes read"]: 4096, c["DRAM bytes written"]: 90110,
               c["DRAM throughput"]: 0.01, c["occupancy"]: 60, c["SM throughput"]: 94.02}
        ours = {"values": dict(fma)}
        ours["values"][c["DRAM bytes written"]] = 3072
        floor = r.dram_floor(copy, fma)
        self.assertTrue(1.4e6 < floor < 1.7e6, floor)
        self.assertFalse(r.compare(ours, fma, (), "", 65536)[0])
        self.assertTrue(r.compare(ours, fma, (), "", floor)[0])
        ours["values"][c["DRAM bytes written"]] = 5e6
        self.assertFalse(r.compare(ours, fma, (), "", floor)[0])
        self.assertEqual(r.dram_floor(None, fma), 65536.0)


class CompiledLinesCheck(unittest.TestCase):
    """gpu/compiled_lines_check.py (issue #41 item 1) with a fake tracesmith: the verdicts from
    profile's line and analyze's call sites; the visible skip without torch."""

    def run_check(self, sites, said="tracesmith: x.sbt: torch.compile: model lines for 30 and "
                  "graph nodes for 0 of 33 generated lines\n", state="cuda", graph_ns=80,
                  folded="model;forward (/p/inductor_lines.py.model:17);k 75\nmain;k 25\n"):
        fake = Fake()
        self.addCleanup(fake.close)
        # One analyze answer for both runs (plain and reduce-overhead).
        fake.table([[r"^profile ", 0, "", said], [r"^export -f folded ", 0, "", "", folded],
                    [r"^analyze --json ", 0, json.dumps({
                        "call_sites": [{"name": n, "share_pct": p} for n, p in sites],
                        "kernel_ns": 100, "graph_launches": 12,
                        "graphs": [{"graph_id": 1, "kernel_ns": graph_ns}]}), ""]])
        return fake.run([sys.executable, os.path.join(GPU, "compiled_lines_check.py"), fake.cli,
                         os.path.join(fake.dir, "run")], TS_TORCH_STATE=state)

    def test_verdicts(self):
        m = "model (probe.py:20) > forward (inductor_lines.py.model:%d)"
        good = [(m % 17, 40.0), (m % 15, 20.0), (m % 14, 10.0), (m % 13, 5.0),
                ("AdamW.step (torch/optim/adamw.py:1)", 24.5),
                ("Runner.call (torchinductor_root/o5/co5m.py:686)", 0.5)]
        rc, out = self.run_check(good)
        self.assertEqual((rc, last_line(out)), (0, "11 passed, 0 failed, 0 skipped"), out)
        # The flame graph not naming the model lines analyze names: FAIL.
        rc, out = self.run_check(good, folded="main;k 75\nmain;k 25\n")
        self.assertEqual((rc, verdict(out, "graphs flame")), (1, "FAIL"), out)
        # Too little GPU time replayed from CUDA graphs: the graph run tested nothing.
        rc, out = self.run_check(good, graph_ns=30)
        self.assertEqual((rc, verdict(out, "graphs replayed")), (1, "FAIL"), out)
        self.assertEqual(verdict(out, "graphs model lines"), "PASS")
        # Generated lines over 1%, too few model lines, or no line from profile: FAIL.
        rc, out = self.run_check(good[:2] + [("Runner.call (torchinductor_root/o5/c.py:9)", 38.0)])
        self.assertEqual((rc, verdict(out, "no generated line")), (1, "FAIL"), out)
        self.assertEqual(verdict(out, "model lines"), "FAIL")
        self.assertEqual(verdict(out, "graphs model lines"), "FAIL")
        rc, out = self.run_check(good, said="tracesmith: command exited with code 0\n")
        self.assertEqual((rc, verdict(out, "run")), (1, "FAIL"), out)
        rc, out = self.run_check(good, state="absent")
        self.assertEqual((rc, last_line(out)), (0, "0 passed, 0 failed, 11 skipped"), out)


if __name__ == "__main__":
    unittest.main()
