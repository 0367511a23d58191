#!/usr/bin/env python3
"""scripts/check-layering.py: fails on a layering violation in a small fake tree, passes on
the real one. Standard library only (unittest; pytest runs it too)."""

import os
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fake_tree import FakeTreeCase  # noqa: E402

SOURCE_DIR = os.environ.get("TS_SOURCE_DIR") or os.path.dirname(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(SOURCE_DIR, "scripts", "check-layering.py")

TABLE = """# Architecture

## Modules and their rules
| folder | owns | may depend on |
|---|---|---|
| base/ | building blocks | std only |
| model/ | the event model | base |
| export/, import/ | conversions (a \\| in a cell) | base, model |
| cli/ | the command | any |

## Next section
"""


def run(root, *args):
    p = subprocess.run([sys.executable, SCRIPT, "--root", root, *args],
                       capture_output=True, text=True, timeout=60)
    return p.returncode, p.stdout, p.stderr


class FakeTree(FakeTreeCase):
    def setUp(self):
        super().setUp()
        self.write("docs/architecture.md", TABLE)
        self.write("include/tracesmith/base/status.h", "#pragma once\n#include <string>\n")
        self.write("include/tracesmith/model/trace.h",
                   '#pragma once\n#include "tracesmith/base/status.h"\n')
        self.write("src/model/trace.cc", '#include "tracesmith/model/trace.h"\n#include "x.h"\n')
        self.write("src/export/export.cc",
                   '#include <tracesmith/model/trace.h>\n#include "tracesmith/base/status.h"\n')
        self.write("src/cli/main.cc", '#include "tracesmith/export/export.h"\n')

    def test_clean_tree_passes(self):
        rc, out, err = run(self.root)
        self.assertEqual(rc, 0, out + err)
        self.assertIn("layering: 5 files, 5 includes checked, 0 violations", out)

    def test_violation_fails(self):
        self.write("src/model/bad.cc",
                   '#include "tracesmith/model/trace.h"\n'
                   '// #include "tracesmith/export/export.h" is a comment\n'
                   '  #  include "tracesmith/export/export.h"\n')
        rc, out, _ = run(self.root)
        self.assertEqual(rc, 1, out)
        self.assertIn("src/model/bad.cc:3: model may not include export (allowed: base)", out)
        self.assertIn("1 violations", out)

    def test_header_and_std_only(self):
        self.write("include/tracesmith/base/bad.h", "#include <tracesmith/model/trace.h>\n")
        rc, out, _ = run(self.root)
        self.assertEqual(rc, 1, out)
        self.assertIn("include/tracesmith/base/bad.h:1: base may not include model "
                      "(allowed: std only)", out)

    def test_relative_include_into_another_module(self):
        self.write("src/import/kineto.cc", '#include "../export/sinks.h"\n')
        rc, out, _ = run(self.root)
        self.assertEqual(rc, 1, out)
        self.assertIn("src/import/kineto.cc:1: import may not include export "
                      "(allowed: base, model)", out)

    def test_module_missing_from_table(self):
        self.write("src/replay/emulator.cc", '#include "tracesmith/model/trace.h"\n')
        rc, out, _ = run(self.root)
        self.assertEqual(rc, 1, out)
        self.assertIn("src/replay/: module replay is not in the table", out)

    def test_unreadable_table(self):
        self.write("docs/architecture.md", TABLE.replace("| base, model |", "| base, gpu |"))
        rc, _, err = run(self.root)
        self.assertEqual(rc, 2)
        self.assertIn("gpu", err)


class RealTree(unittest.TestCase):
    def test_real_tree_passes(self):
        rc, out, err = run(SOURCE_DIR)
        self.assertEqual(rc, 0, out + err)
        self.assertRegex(out, r"layering: \d+ files, \d+ includes checked, 0 violations")

    def test_help(self):
        p = subprocess.run([sys.executable, SCRIPT, "--help"], capture_output=True, text=True)
        self.assertEqual(p.returncode, 0)
        self.assertIn("--root", p.stdout)


if __name__ == "__main__":
    unittest.main()
