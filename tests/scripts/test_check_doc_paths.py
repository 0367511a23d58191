#!/usr/bin/env python3
"""scripts/check-doc-paths.py: passes on the real tree, fails on a small fake tree whose
documents name missing paths (each listed as doc:line: path), and leaves alone what it does
not check. Standard library only (unittest; pytest runs it too)."""

import os
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fake_tree import FakeTreeCase  # noqa: E402

SOURCE_DIR = os.environ.get("TS_SOURCE_DIR") or os.path.dirname(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(SOURCE_DIR, "scripts", "check-doc-paths.py")

FILES = {
    "src/format/replay_graph.cc": "",
    "src/replay/gpu/graph_replayer.cc": "",
    "include/tracesmith/analysis/rank_summary.h": "",
    "fuzz/sbt_reader_fuzzer.cc": "",
    "gpu/job_check.py": "",
    "gpu/memory_check.py": "",
    "docs/testing.md": "",
}

# Every name here exists or is not checked.
GOOD_README = """# Fake
`src/format/replay_graph.cc`, src/format/ and docs/testing.md; see [testing](docs/testing.md#x).
Shorter: `format/replay_graph.cc`, analysis/rank_summary.h, `replay_graph.cc`, testing.md.
Globs: `gpu/*_check.py`, `gpu/{job,memory}_check.py`; a program: fuzz/sbt_reader_fuzzer.
Not checked: `src/<module>/`, build/release/bin/tracesmith, `tracesmith.sbt`, out.json,
https://example.com/src/nothing.cc, /usr/include/cuda.h, `torch/nn/modules/linear.py`,
`CLI/CLI.hpp`, `build/runs/v20.sh`, `v21.sh`, `src/replay/...`.
"""

GOOD_MODULE_README = """# replay
`gpu/graph_replayer.cc` is relative to this folder; so is [the other](../format/README.md).
"""


def run(root):
    p = subprocess.run([sys.executable, SCRIPT, "--root", root], capture_output=True, text=True,
                       timeout=60)
    return p.returncode, p.stdout + p.stderr


class FakeTree(FakeTreeCase):
    def setUp(self):
        super().setUp()
        for rel, text in FILES.items():
            self.write(rel, text)
        self.write("README.md", GOOD_README)
        self.write("src/replay/README.md", GOOD_MODULE_README)
        self.write("src/format/README.md", "# format\n")

    def test_existing_paths_pass(self):
        rc, out = run(self.root)
        self.assertEqual(rc, 0, out)
        self.assertIn("all exist", out)

    def test_each_missing_path_is_listed(self):
        self.write("docs/capture.md", "\n".join([
            "# Capture",
            "The cost is measured in `src/capture/self_cost.h`.",  # line 2
            "See [building](building.md) and gpu-machine.md.",  # line 3
            "Codec: `replay/payload.cc`; loader: `gpu_loader.cc`.",  # line 4
            "Checks: gpu/*_probe.py, bench/capture_overhead.sh.",  # line 5
        ]) + "\n")
        rc, out = run(self.root)
        self.assertEqual(rc, 1, out)
        for expected in ("docs/capture.md:2: src/capture/self_cost.h:",
                         "docs/capture.md:3: building.md:",
                         "docs/capture.md:3: gpu-machine.md:",
                         "docs/capture.md:4: replay/payload.cc:",
                         "docs/capture.md:4: gpu_loader.cc:",
                         "docs/capture.md:5: gpu/*_probe.py:",
                         "docs/capture.md:5: bench/capture_overhead.sh:"):
            self.assertIn(expected, out)
        self.assertIn("7 missing paths", out)

    def test_a_module_readme_missing_path_relative_to_its_folder(self):
        self.write("src/replay/README.md", "`gpu/replayer_gone.cc`\n")
        rc, out = run(self.root)
        self.assertEqual(rc, 1, out)
        self.assertIn("src/replay/README.md:1: gpu/replayer_gone.cc:", out)


class RealTree(unittest.TestCase):
    def test_passes_quickly(self):
        start = time.monotonic()
        rc, out = run(SOURCE_DIR)
        self.assertEqual(rc, 0, out)
        self.assertLess(time.monotonic() - start, 5.0, "the check must stay well under 5 s")


if __name__ == "__main__":
    unittest.main()
