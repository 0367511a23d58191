"""The fakes the GPU checks' CPU tests share (test_gpu_checks.py,
test_gpu_checks_inproc.py): a fake `tracesmith` answering from a table of canned outputs,
a temporary build folder with fake programs, and the readers of a checker's verdict lines.
Standard library only."""

import importlib.util
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True  # (gpu/*.py are imported: no __pycache__ in the tree)
SOURCE_DIR = os.environ.get("TS_SOURCE_DIR") or os.path.dirname(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CHECKS_SH = os.path.join(SOURCE_DIR, "scripts", "lib", "checks.sh")
GPU = os.path.join(SOURCE_DIR, "gpu")
SUMMARY = r"(?m)^\d+ passed, \d+ failed, \d+ skipped$"

# The fake tracesmith (bash: it starts fast): the first row of the table in
# $FAKE_TS_TABLE (files N.re, N.code, N.out, N.err) whose extended regex matches its
# arguments answers; on exit 0 it writes the file after -o ("fake trace", or the row's
# N.file when it has one).
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
      for a in "$@"; do
        if [ "$prev" = -o ]; then
          if [ -e "${re%.re}.file" ]; then cp "${re%.re}.file" "$a"; else echo "fake trace" > "$a"; fi
        fi
        prev=$a
      done
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
        """rows: [extended regex over the arguments, exit status, stdout, stderr[, the text
        of the file after -o]]."""
        shutil.rmtree(self.table_path, ignore_errors=True)
        os.makedirs(self.table_path)
        for i, (pattern, code, out, err, *file) in enumerate(rows):
            for ext, text in (("re", pattern + "\n"), ("code", f"{code}\n"), ("out", out),
                              ("err", err)) + ((("file", file[0]),) if file else ()):
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
