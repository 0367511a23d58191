#!/usr/bin/env python3
"""The GPU checks' own verdicts on the CPU, part 2 (issue #44; part 1: test_gpu_checks.py):
the stall check, the in-process capture checks (naming, the A/B cost blocks, the Python
profile check), gpu/cost_where.py and the job check's PC-sampling verdict, fed recorded-style
outputs through a fake `tracesmith` (gpu_check_fakes.py). Standard library only (numpy where
a test says so)."""

import importlib.util
import io
import json
import os
import subprocess
import sys
import tempfile
import unittest
from contextlib import redirect_stdout
from unittest import mock

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gpu_check_fakes import (GPU, Fake, last_line, load_gpu_module, verdict,  # noqa: E402
                             write)


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
    def info(request_max, launch_max, kernels=3000, zeroed=1, probe="",
             first_call="80.0 us (rule 50.0 us, intern 30.0 us)", walks_cut=0):
        return ("Events:      9000\n  kernel             %d\n\nCapture stats:\n"
                "  dropped_records                    0\n"
                "  capture.stacks_walks_deferred 13\n"
                "  capture.stacks_walks_finished_on_thread 0\n"
                "  capture.stacks_walks_cut %d\n"
                "  capture.stacks_walk_copy_bytes_read_max 9000\n"
                "  capture.buffers_zeroed_by_tracesmith %d\n"
                "  capture.buffers_allocated_on_request 0\n\nCapture cost (pid 7):\n"
                "  capture cost: 0.50 us per launch\n"
                "    launch: 1.2 ms in 2000 calls (600 ns each), 0.600 us per launch; one call: "
                "median 400 ns, p99 2.0 us, p99.9 9.0 us, max %s%s\n"
                "    first_time: 1.0 ms in 3 calls (333 us each); the longest 250.0 us; in one "
                "callback at most %s\n"
                "    CUPTI's own work (its overhead rows, inside the program's CUDA calls or the writer's flushes): "
                "activity buffer request 9x, 1.0 ms in all, max %s; resource 4x, 6.7 ms in all, "
                "max 2.4 ms.\n" % (kernels, walks_cut, zeroed, launch_max, probe, first_call, request_max))

    def run_check(self, new_request, new_launch, kernels=3000,
                  classes="3 preempted, 1 unexplained", over=0, floor_over=None,
                  floor_max="150.0", floor_class="unexplained",
                  first_call="80.0 us (rule 50.0 us, intern 30.0 us)", walks_cut=0):
        fake = Fake()
        self.addCleanup(fake.close)
        fake.program("launch_loop")
        if floor_over is not None:  # 2000 sections of 2000 ns a round: 4 ms of busy time
            fake.program("jitter_floor", "#!/bin/sh\necho 'jitter_floor: sections=2000 "
                         "mean_ns=2000 max_us=%s over_100us=%d preempted=0 %s=%d'\n" %
                         (floor_max, floor_over, floor_class, floor_over))
        fake.table([[r"^profile ", 0, "", ""],
                    [r"^info .*ll_zeroed", 0, self.info(
                        new_request, new_launch, kernels,
                        probe=", %d calls of 100 us or more" % over if over else "",
                        first_call=first_call, walks_cut=walks_cut), ""],
                    [r"^info .*ll_cupti-zeroes", 0, self.info("2.0 ms", "40.0 us", 3000, 0), ""],
                    [r"^info .*ll_on-thread", 0, self.info(
                        "13.0 us", "60.0 us", first_call="150.0 us (rule 50.0 us, intern "
                        "100.0 us)"), ""],
                    [r"^info .*ll_probe", 0, self.info(
                        "13.0 us", "245.0 us", probe=", 4 calls of 100 us or more (slow-call "
                        "probe, 4 calls of 100 us or more by exact time: %s)" % classes), ""]])
        out = os.path.join(fake.dir, "run")
        return fake.run([sys.executable, os.path.join(GPU, "stall_check.py"), fake.cli,
                         fake.progs, out, "--launches", "2000"], TS_TORCH_STATE="absent")

    def test_clean_run(self):
        rc, out = self.run_check("13.1 us", "86.8 us")
        self.assertEqual((rc, last_line(out)), (0, "5 passed, 0 failed, 0 skipped"), out)
        self.assertIn("the most first-time work inside one callback per default run: ll 80.0 us "
                      "(rule 50.0 us, intern 30.0 us); ll 80.0 us", out)
        self.assertIn("cupti-zeroes 9x max 2.00 ms", out)  # (fmt: two decimals)
        # The runs that intern on the thread: shown beside it, not judged.
        self.assertIn("stacks interned on the thread (TRACESMITH_DEFER_STACKS=0, not judged): "
                      "ll 150.0 us (rule 50.0 us, intern 100.0 us); ll 150.0 us", out)
        self.assertIn("by what happened to the thread: launch: preempted 3, unexplained 1; "
                      "launch max 245.0 us", out)
        self.assertIn("in 2 probe runs, launch calls of 100 us or more: preempted 6, "
                      "unexplained 2", out)

    def test_slow_launch_calls_as_often_as_the_floor_are_the_machines(self):
        # Over 100 us in a default run (1.2 ms of launch callbacks each): it passes when the
        # floor's busy sections (4 ms a round) are stopped as often per second, no probe
        # class points at the capture, and none is over 1 ms.
        rc, out = self.run_check("13.1 us", "104.0 us", classes="2 interrupted", over=1,
                                 floor_over=1)
        self.assertEqual((rc, verdict(out, "launch callback")), (0, "PASS"), out)
        self.assertIn("2 call(s) of 100 us or more in 2.4 ms of launch callbacks vs the "
                      "floor's 2 section(s) of 100 us or more in 8.0 ms of busy time, 2 of 2 "
                      "rounds (max 150.0 us; unexplained 2): same-rate p = 0.230", out)
        self.assertIn("launch calls of 100 us or more: interrupted 4", out)
        rc, out = self.run_check("13.1 us", "104.0 us", classes="1 interrupted, 1 unexplained",
                                 over=1, floor_over=1)
        self.assertEqual((rc, verdict(out, "launch callback")), (0, "PASS"), out)
        # Unexplained slow calls while the floor's slow sections were all interrupted (or
        # none): a slow path of ours as likely as the machine's charging: not the machine's.
        for floor_over, floor_class in ((1, "interrupted"), (0, "unexplained")):
            rc, out = self.run_check("13.1 us", "104.0 us", classes="1 unexplained", over=1,
                                     floor_over=floor_over, floor_class=floor_class)
            self.assertEqual((rc, verdict(out, "launch callback")), (1, "FAIL"),
                             (floor_over, floor_class, out))
        # Far more often than the floor (8 in 2.4 ms against none in 8 ms): ours.
        rc, out = self.run_check("13.1 us", "104.0 us", classes="2 interrupted", over=4,
                                 floor_over=0)
        self.assertEqual((rc, verdict(out, "launch callback")), (1, "FAIL"), out)
        self.assertIn("same-rate p = 0.000", out)
        # Over 1 ms, when the floor stopped a section for longer in the same rounds.
        rc, out = self.run_check("13.1 us", "1.70 ms", classes="2 interrupted", over=1,
                                 floor_over=4, floor_max="1963.6")
        self.assertEqual((rc, verdict(out, "launch callback")), (0, "PASS"), out)
        # A probe class that is the capture's (switched out, waited, faulted), a callback
        # over 1 ms and the floor's longest, or no floor to compare with: not the machine's.
        for classes, launch, floor_over in (("2 preempted", "104.0 us", 4),
                                            ("1 blocked, 1 interrupted", "104.0 us", 4),
                                            ("2 interrupted", "1.20 ms", 4),
                                            ("2 interrupted", "104.0 us", None)):
            rc, out = self.run_check("13.1 us", launch, classes=classes, over=1,
                                     floor_over=floor_over)
            self.assertEqual((rc, verdict(out, "launch callback")), (1, "FAIL"),
                             (classes, launch, floor_over, out))

    def test_first_time_work_over_100us_in_one_callback_fails(self):
        rc, out = self.run_check("13.1 us", "86.8 us",
                                 first_call="589.1 us (ring 320.0 us, rule 269.1 us)")
        self.assertEqual((rc, verdict(out, "first-time in one callback")), (1, "FAIL"), out)
        self.assertIn("ll 589.1 us (ring 320.0 us, rule 269.1 us)", out)
        # A trace from before the parts were recorded: the total alone.
        rc, out = self.run_check("13.1 us", "86.8 us", first_call="99.0 us")
        self.assertEqual((rc, verdict(out, "first-time in one callback")), (0, "PASS"), out)
        self.assertIn("walks finished by the writer: ll deferred 13, finished_on_thread 0, cut 0, "
                      "most bytes read 9000",
                      out)

    def test_walks_that_lost_their_outer_frames_fail(self):
        # Fast, but a walk finished on the writer ran past its copy of the stack.
        rc, out = self.run_check("13.1 us", "86.8 us", walks_cut=2)
        self.assertEqual((rc, verdict(out, "first-time in one callback")), (1, "FAIL"), out)
        self.assertIn("ll deferred 13, finished_on_thread 0, cut 2", out)

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


class JobPcSamples(unittest.TestCase):
    """gpu/job_check.py's `pc samples` verdict (JOB_PC_SAMPLING=1): CUPTI serves PC sampling
    to one process per GPU, so of three ranks on one GPU exactly one samples and the other
    two say the GPU was held elsewhere."""

    def verdict_for(self, ranks):
        """ranks: [(samples, gpus_held_elsewhere, samples of the heaviest kernel)]."""
        fake = Fake()
        self.addCleanup(fake.close)
        mod = load_gpu_module("job_check")
        rows, files = [], []
        for r, (samples, held, top) in enumerate(ranks):
            f = f"job.rank{r}.sbt"
            files.append(f)
            doc = {"kernels": [{"name": "gemm", "share_pct": 90.0},
                               {"name": "tanh", "share_pct": 10.0}],
                   "gpu_samples": {"functions": [{"name": "gemm", "samples": top}]}}
            rows.append([rf"^analyze --json .*/job\.rank{r}\.sbt$", 0, json.dumps(doc), ""])
            rows.append([rf"^info .*/job\.rank{r}\.sbt$", 0,
                         f"  pc_sampling.samples  {samples}\n  pc_sampling.dropped_samples  0\n"
                         f"  pc_sampling.hardware_buffer_full  0\n"
                         f"  pc_sampling.gpus_held_elsewhere  {held}\n", ""])
        fake.table(rows)
        out = io.StringIO()
        with mock.patch.dict(os.environ, {"FAKE_TS_TABLE": fake.table_path}), \
                redirect_stdout(out):
            # job.sbt, the run's stem (torchrun's agent's file), is not a rank
            mod.pc_sampling_checks(mod.Checks("JOBCHECK"), fake.cli, fake.dir, files + ["job.sbt"])
        return verdict(out.getvalue(), "pc samples")

    def test_one_rank_samples_the_others_are_told(self):
        self.assertEqual(self.verdict_for([(17556, 0, 16672), (0, 1, 0), (0, 1, 0)]), "PASS")

    def test_two_ranks_sampling_one_gpu_fail(self):
        self.assertEqual(self.verdict_for([(17556, 0, 16672), (9000, 0, 8000), (0, 1, 0)]),
                         "FAIL")

    def test_a_rank_neither_sampled_nor_told_fails(self):
        self.assertEqual(self.verdict_for([(17556, 0, 16672), (0, 1, 0), (0, 0, 0)]), "FAIL")

    def test_heaviest_kernel_unsampled_fails(self):
        self.assertEqual(self.verdict_for([(17556, 0, 40), (0, 1, 0), (0, 1, 0)]), "FAIL")


if __name__ == "__main__":
    unittest.main()
