#!/usr/bin/env python3
"""`pip install .` as the README says, then the README's Python commands (ctest
python_pip_install; labels pip, slow).

A venv from the Debian interpreter (/usr/bin/python3 -m venv
--system-site-packages), `pip install --no-build-isolation .` offline
(--no-index: numpy and pandas come from Debian), which builds the extension and
the CLI with CMake (a few minutes from scratch on two cores; incremental when
$TRACESMITH_PIP_BUILD is kept, as ctest's build tree keeps it); then, in an empty
directory holding the shipped transformer trace as run.sbt, the README's Python
block verbatim, `python -m tracesmith info run.sbt` and the `tracesmith-py`
entry point, all from the installed package (not the checkout or a build tree).
Standard library only; run with the interpreter the README names.
"""

import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

SOURCE = os.path.abspath(os.environ.get("TS_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", "..")))
DEBIAN_PYTHON = "/usr/bin/python3"


def fail(msg):
    print(f"FAIL: {msg}", flush=True)
    sys.exit(1)


def readme_blocks():
    with open(os.path.join(SOURCE, "README.md"), encoding="utf-8") as f:
        text = f.read()
    section = text.split("## From Python", 1)
    if len(section) != 2:
        fail("README.md has no '## From Python' section")
    section = section[1].split("\n## ", 1)[0]
    sh = re.findall(r"```sh\n(.*?)```", section, re.S)
    py = re.findall(r"```python\n(.*?)```", section, re.S)
    if not sh or not py:
        fail("README.md's Python section lacks its ```sh or ```python block")
    return sh[0], py[0]


def run(cmd, **kw):
    t0 = time.monotonic()
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True, **kw)
    return r, time.monotonic() - t0


def main():
    if not os.access(DEBIAN_PYTHON, os.X_OK):
        print(f"SKIP: no {DEBIAN_PYTHON}")
        return 0
    sh, py = readme_blocks()
    # The README's two set-up lines, checked so that what runs below is what it says.
    for want in ("/usr/bin/python3 -m venv --system-site-packages .venv", "pip install --no-build-isolation ."):
        if want not in sh:
            fail(f"README.md's install commands no longer say `{want}`:\n{sh}")
    tmp = tempfile.mkdtemp(prefix="ts-pip-install-")
    try:
        venv = os.path.join(tmp, ".venv")
        r, secs = run([DEBIAN_PYTHON, "-m", "venv", "--system-site-packages", venv])
        if r.returncode:
            fail(f"venv creation failed:\n{r.stdout}")
        print(f"venv from {DEBIAN_PYTHON}: {secs:.1f} s", flush=True)
        python = os.path.join(venv, "bin", "python")
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
        env.update(VIRTUAL_ENV=venv, PATH=os.path.join(venv, "bin") + os.pathsep + env.get("PATH", ""),
                   PIP_NO_INDEX="1", PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_NO_INPUT="1")
        r, secs = run([python, "-m", "pip", "install", "--no-build-isolation", "--no-index", "."], cwd=SOURCE, env=env)
        print(f"pip install --no-build-isolation --no-index . : exit {r.returncode}, {secs:.0f} s "
              f"(build directory {os.environ.get('TRACESMITH_PIP_BUILD', 'build/pip/<interpreter>')})", flush=True)
        if r.returncode:
            fail(f"pip install failed:\n{r.stdout[-6000:]}")

        work = os.path.join(tmp, "work")
        os.makedirs(work)
        shutil.copy(os.path.join(SOURCE, "examples", "traces", "transformer_train.sbt"), os.path.join(work, "run.sbt"))
        # Installed, not picked up from the checkout or a build tree.
        r, _ = run([python, "-c", "import tracesmith, os; print(os.path.realpath(tracesmith.__file__))"], cwd=work, env=env)
        where = r.stdout.strip()
        if r.returncode or not where.startswith(os.path.realpath(venv)):
            fail(f"tracesmith is not imported from the venv: {r.stdout}")
        script = py + ("\nassert len(k) > 0 and len(top) > 0, 'no kernels'"
                       "\nassert report['findings'] is not None and 'memory' in mem"
                       "\nimport os; assert os.path.getsize('run.pftrace') > 1000"
                       "\nprint('README block: OK', len(k), 'kernels')\n")
        r, secs = run([python, "-c", script], cwd=work, env=env)
        print(f"README's Python block: exit {r.returncode}, {secs:.1f} s", flush=True)
        if r.returncode:
            fail(f"the README's Python block failed:\n{py}\n---\n{r.stdout[-4000:]}")
        r, _ = run([python, "-m", "tracesmith", "info", "run.sbt"], cwd=work, env=env)
        if r.returncode or "kernel" not in r.stdout:
            fail(f"python -m tracesmith info failed (the CLI inside the wheel):\n{r.stdout[-3000:]}")
        r, _ = run([os.path.join(venv, "bin", "tracesmith-py"), "version"], cwd=work, env=env)
        if r.returncode or "tracesmith" not in r.stdout.lower():
            fail(f"the tracesmith-py entry point failed:\n{r.stdout}")
        # A CLI built with CUDA loads its libraries from ../lib: the wheel carries them.
        if "CUDA capture: built in" in r.stdout:
            lib = os.path.join(os.path.dirname(where), "_bin", "lib")
            for name in ("libtracesmith-inject.so", "libtracesmith-replay-gpu.so"):
                if not os.path.isfile(os.path.join(lib, name)):
                    fail(f"the CLI was built with CUDA but the install lacks {name} in {lib}")
        print("OK: pip install . with the Debian interpreter, then the README's Python commands")
        return 0
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
