#!/usr/bin/env python3
"""`pip install .` with an interpreter that lacks the build requirements stops at
once with one line naming what is missing and the command that installs it
(ctest python_pip_refusal; label pip).

1. A venv from /usr/bin/python3 *without* system site packages, setuptools
   uninstalled (so no setuptools, no wheel, no numpy, no pybind11 module), on a
   PATH with compilers but no cmake; `pip install --no-index .` with pip's
   default build isolation.
2. A real CPython without its headers: the same interpreter binary copied into a
   prefix whose lib/python3.X is the system's standard library and which has no
   include/ (as a Python installed without its -dev files); a venv from it and
   `pip install --no-index .`.

Each must end in under 60 s with a non-zero status, print exactly one line
`tracesmith: cannot build for ...: missing ... Fix: ...`, no traceback, and
build nothing. Standard library only.
"""

import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time

SOURCE = os.path.abspath(os.environ.get("TS_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", "..")))
DEBIAN_PYTHON = "/usr/bin/python3"
FAILURES = []


def run(cmd, **kw):
    t0 = time.monotonic()
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True, **kw)
    return r, time.monotonic() - t0


def base_env(venv, path):
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    env.update(VIRTUAL_ENV=venv, PATH=path, PIP_NO_INDEX="1", PIP_DISABLE_PIP_VERSION_CHECK="1",
               PIP_NO_INPUT="1", TRACESMITH_PIP_BUILD=os.path.join(os.path.dirname(venv), "must-not-exist"))
    return env


def expect_refusal(name, python, env, want):
    r, secs = run([python, "-m", "pip", "install", "--no-index", "."], cwd=SOURCE, env=env)
    lines = [l.strip() for l in r.stdout.splitlines() if l.strip().startswith("tracesmith: ")]
    print(f"--- {name}: exit {r.returncode} in {secs:.1f} s")
    for l in lines:
        print(f"    {l}")
    problems = []
    if r.returncode == 0:
        problems.append("pip install succeeded")
    if secs > 60:
        problems.append(f"took {secs:.0f} s (not at once)")
    if len(lines) != 1:
        problems.append(f"{len(lines)} 'tracesmith:' lines, not one")
    elif not lines[0].startswith("tracesmith: cannot build for ") or " Fix: " not in lines[0]:
        problems.append("the line does not say what is missing and the fix")
    else:
        problems += [f"the line lacks {w!r}" for w in want if w not in lines[0]]
    for bad in ("Traceback", "bdist_wheel"):
        if bad in r.stdout:
            problems.append(f"the output has {bad!r}")
    if os.path.exists(env["TRACESMITH_PIP_BUILD"]):
        problems.append("a build directory was made")
    if problems:
        FAILURES.append(name)
        print(f"FAIL {name}: " + "; ".join(problems) + "\n" + r.stdout[-3000:])


def case_no_cmake(tmp):
    venv = os.path.join(tmp, "bare")
    r, _ = run([DEBIAN_PYTHON, "-m", "venv", venv])
    if r.returncode:
        FAILURES.append("venv")
        print(f"FAIL: venv: {r.stdout}")
        return
    python = os.path.join(venv, "bin", "python")
    run([python, "-m", "pip", "uninstall", "-y", "setuptools", "wheel"],
        env=base_env(venv, os.path.join(venv, "bin") + os.pathsep + os.environ["PATH"]))
    r, _ = run([python, "-c", "import importlib.util as u; print([m for m in ('setuptools', 'wheel', 'numpy') "
                "if u.find_spec(m)])"])
    print(f"bare venv: importable build/runtime packages: {r.stdout.strip()}")
    tools = os.path.join(tmp, "tools")  # compilers, but no cmake
    os.makedirs(tools)
    for tool in ("cc", "c++", "gcc", "g++"):
        real = shutil.which(tool)
        if real:
            os.symlink(real, os.path.join(tools, tool))
    env = base_env(venv, os.path.join(venv, "bin") + os.pathsep + tools)
    expect_refusal("venv without site packages or setuptools, no cmake", python, env,
                   ["missing cmake", "Fix: apt-get install cmake"])


def case_no_headers(tmp):
    real = os.path.realpath(DEBIAN_PYTHON)
    ver = subprocess.run([real, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                         stdout=subprocess.PIPE, universal_newlines=True).stdout.strip()
    stdlib = subprocess.run([real, "-c", "import sysconfig; print(sysconfig.get_paths()['stdlib'])"],
                            stdout=subprocess.PIPE, universal_newlines=True).stdout.strip()
    prefix = os.path.join(tmp, "headerless")
    os.makedirs(os.path.join(prefix, "bin"))
    os.makedirs(os.path.join(prefix, "lib"))
    shutil.copy2(real, os.path.join(prefix, "bin", f"python{ver}"))
    os.symlink(stdlib, os.path.join(prefix, "lib", f"python{ver}"))
    interp = os.path.join(prefix, "bin", f"python{ver}")
    r, _ = run([interp, "-c", "import sysconfig, os; i = sysconfig.get_paths()['include']; "
                "print(i, os.path.isfile(os.path.join(i, 'Python.h')))"])
    if r.returncode or not r.stdout.strip().endswith("False"):
        print(f"SKIP headerless interpreter: the copy does not run apart from its headers ({r.stdout.strip()})")
        return
    venv = os.path.join(tmp, "headerless-venv")
    r, _ = run([interp, "-m", "venv", venv])
    if r.returncode:
        print(f"SKIP headerless interpreter: no venv with pip from the copy ({r.stdout.strip()[-300:]})")
        return
    python = os.path.join(venv, "bin", "python")
    env = base_env(venv, os.path.join(venv, "bin") + os.pathsep + os.environ["PATH"])
    expect_refusal("a CPython without its headers", python, env,
                   [f"its Python headers (no Python.h in {prefix}/include/python{ver})",
                    "build with the Debian interpreter: /usr/bin/python3 -m venv"])


def main():
    if not os.access(DEBIAN_PYTHON, os.X_OK):
        print(f"SKIP: no {DEBIAN_PYTHON}")
        return 0
    tmp = tempfile.mkdtemp(prefix="ts-pip-refusal-")
    try:
        case_no_cmake(tmp)
        case_no_headers(tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if FAILURES:
        print("FAILED: " + ", ".join(FAILURES))
        return 1
    print("OK: each refusal was one line naming what is missing and its fix")
    return 0


if __name__ == "__main__":
    sys.exit(main())
