"""The pip build backend (python/backend/tracesmith_build.py) without a build:
its requirement checks and their one-line message, the pyproject.toml reader,
the wheel and metadata it writes, the source archive. The end-to-end runs of
`pip install .` are pip_install_check.py and pip_refusal_check.py (ctest
python_pip_install, python_pip_refusal)."""

import base64
import csv
import hashlib
import importlib
import io
import os
import subprocess
import sys
import tarfile
import zipfile

import pytest

SOURCE = os.path.abspath(os.environ.get("TS_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", "..")))
BACKEND_DIR = os.path.join(SOURCE, "python", "backend")


@pytest.fixture(scope="module")
def backend():
    sys.path.insert(0, BACKEND_DIR)
    try:
        yield importlib.import_module("tracesmith_build")
    finally:
        sys.path.remove(BACKEND_DIR)


def pyproject():
    with open(os.path.join(SOURCE, "pyproject.toml"), encoding="utf-8") as f:
        return f.read()


def test_pyproject_names_the_in_tree_backend_and_needs_nothing(backend):
    doc = backend._MiniToml(pyproject()).parse()
    assert doc["build-system"] == {"requires": [], "build-backend": "tracesmith_build",
                                   "backend-path": ["python/backend"]}
    assert os.path.isfile(os.path.join(SOURCE, "python", "backend", "tracesmith_build.py"))
    assert not os.path.exists(os.path.join(SOURCE, "setup.py"))


def test_minimal_toml_reader_matches_tomllib(backend):
    tomllib = pytest.importorskip("tomllib")
    sample = pyproject() + '''
[extra]
multi = [
  "a",  # comment
  'b\\c',
]
inline = { x = 1, "y z" = "w\\u00e9\\n", empty = {} }
flag = true
dotted.key = -3
'''
    assert backend._MiniToml(sample).parse() == tomllib.loads(sample)
    assert backend._MiniToml(pyproject()).parse() == tomllib.loads(pyproject())


def test_minimal_toml_reader_names_what_it_cannot_read(backend):
    with pytest.raises(SystemExit) as e:
        backend._MiniToml('[a]\nx = """multi"""\n').parse()
    assert "line 2" in str(e.value) and "multi-line strings" in str(e.value)


def probes(**kw):
    base = dict(python="/usr/bin/python3", which=lambda n: "/usr/bin/" + n, cmake_args=[],
                version=(3, 11, 2), headers=("/usr/include/python3.11", True), pybind11="/usr/lib/cmake/pybind11")
    base.update(kw)
    return base


def test_nothing_missing(backend, monkeypatch):
    monkeypatch.delenv("CC", raising=False)
    monkeypatch.delenv("CXX", raising=False)
    monkeypatch.setattr(backend.subprocess, "run", fake_cmake_version("cmake version 3.25.1"))
    assert backend.missing_requirements(**probes()) == []


def fake_cmake_version(text):
    real = subprocess.run

    def run(cmd, *a, **kw):
        if cmd[-1] == "--version" and "cmake" in cmd[0]:
            return subprocess.CompletedProcess(cmd, 0, stdout=text + "\n")
        return real(cmd, *a, **kw)
    return run


@pytest.mark.parametrize("case,expect,fix", [
    (dict(which=lambda n: None if n == "cmake" else "/usr/bin/" + n), "missing cmake", "apt-get install cmake"),
    (dict(which=lambda n: None if n in ("c++", "g++", "clang++") else "/usr/bin/" + n),
     "a C++ compiler (c++, g++ or clang++)", "apt-get install g++"),
    (dict(which=lambda n: None if n in ("cc", "gcc", "clang") else "/usr/bin/" + n),
     "a C compiler (cc, gcc or clang)", "apt-get install gcc"),
    (dict(pybind11=""), "pybind11", "apt-get install pybind11-dev"),
    (dict(version=(3, 8, 18)), "Python >= 3.9 (this is 3.8.18)", "/usr/bin/python3 -m venv --system-site-packages"),
])
def test_each_missing_requirement_is_one_line_with_its_fix(backend, monkeypatch, case, expect, fix):
    # CC/CXX name the compiler to look for when set (the GPU machine sets them).
    monkeypatch.delenv("CC", raising=False)
    monkeypatch.delenv("CXX", raising=False)
    monkeypatch.setattr(backend.subprocess, "run", fake_cmake_version("cmake version 3.25.1"))
    missing = backend.missing_requirements(**probes(**case))
    assert len(missing) == 1, missing
    line = backend.requirements_line(missing, "/usr/bin/python3")
    assert "\n" not in line and line.startswith("cannot build for /usr/bin/python3: missing ")
    assert expect in line and fix in line


def test_old_cmake_and_several_missing_in_one_line(backend, monkeypatch):
    monkeypatch.setattr(backend.subprocess, "run", fake_cmake_version("cmake version 3.18.4"))
    missing = backend.missing_requirements(**probes(pybind11="", headers=("/opt/py/include/python3.11", False),
                                                    python="/opt/py/bin/python3"))
    line = backend.requirements_line(missing, "/opt/py/bin/python3")
    assert "\n" not in line
    assert "cmake >= 3.22 (found 3.18.4)" in line and "pybind11" in line
    assert "its Python headers (no Python.h in /opt/py/include/python3.11)" in line
    assert "apt-get install cmake pybind11-dev;" in line
    assert "or build with the Debian interpreter: /usr/bin/python3 -m venv" in line


def test_debian_interpreter_without_headers_names_its_dev_package(backend, monkeypatch):
    if not (os.path.realpath("/usr/bin/python3").startswith("/usr/bin/python3.")
            and os.path.isfile("/etc/debian_version")):
        pytest.skip("not a Debian /usr/bin/python3")
    assert backend._debian_python_package("/usr/bin/python3") == "python3-dev"
    missing = [("its Python headers (no Python.h in /usr/include/python3.11)",
                backend._debian_python_package("/usr/bin/python3"))]
    line = backend.requirements_line(missing, "/usr/bin/python3")
    assert line.endswith("Fix: apt-get install python3-dev")


def test_this_interpreter_has_what_the_cmake_build_found(backend):
    # ctest runs this suite only when CMake found pybind11 and this Python's
    # headers (tests/python/CMakeLists.txt): the backend's probes must agree.
    assert backend.missing_requirements() == []


def test_pybind11_given_to_cmake_counts(backend):
    assert backend._has_pybind11(["-DTS_PYBIND11_INCLUDE=/x/include"], sys.executable) == "/x/include"


def test_first_cmake_error_is_one_line(backend):
    log = ("-- The C compiler identification is GNU 12.2.0\n"
           "CMake Error at src/python/CMakeLists.txt:25 (message):\n"
           "  TS_PYTHON=ON but pybind11 or the Python headers were not found (apt-get\n"
           "  install pybind11-dev python3-dev)\n\n\n-- Configuring incomplete, errors occurred!\n")
    assert backend._first_cmake_error(log) == ("TS_PYTHON=ON but pybind11 or the Python headers were not "
                                               "found (apt-get install pybind11-dev python3-dev)")


def test_wheel_has_metadata_record_and_modes(backend, tmp_path):
    project = backend.read_project(SOURCE)
    files = [("tracesmith/__init__.py", b"x = 1\n", False), ("tracesmith/_bin/bin/tracesmith", b"\x7fELF", True)]
    name = backend.write_wheel(str(tmp_path), files, project, "cp311-cp311-linux_x86_64")
    assert name == "tracesmith-0.1.0-cp311-cp311-linux_x86_64.whl"
    with zipfile.ZipFile(tmp_path / name) as z:
        names = z.namelist()
        info = "tracesmith-0.1.0.dist-info/"
        assert set(names) == {"tracesmith/__init__.py", "tracesmith/_bin/bin/tracesmith", info + "METADATA",
                              info + "WHEEL", info + "entry_points.txt", info + "RECORD"}
        assert (z.getinfo("tracesmith/_bin/bin/tracesmith").external_attr >> 16) & 0o111
        assert not (z.getinfo("tracesmith/__init__.py").external_attr >> 16) & 0o111
        rows = list(csv.reader(io.StringIO(z.read(info + "RECORD").decode())))
        assert rows[-1] == [info + "RECORD", "", ""]
        for path, digest, size in rows[:-1]:
            data = z.read(path)
            assert int(size) == len(data)
            assert digest == "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        meta = z.read(info + "METADATA").decode()
        for line in ("Metadata-Version: 2.1", "Name: tracesmith", "Version: 0.1.0", "Requires-Python: >=3.9",
                     "Requires-Dist: numpy", "Provides-Extra: pandas", 'Requires-Dist: pandas; extra == "pandas"',
                     "Description-Content-Type: text/markdown"):
            assert line + "\n" in meta
        assert "# TraceSmith" in meta  # the README as the description
        wheel = z.read(info + "WHEEL").decode()
        assert "Root-Is-Purelib: false\n" in wheel and "Tag: cp311-cp311-linux_x86_64\n" in wheel
        assert "tracesmith-py = tracesmith.__main__:main" in z.read(info + "entry_points.txt").decode()


def test_wheel_tag_matches_this_interpreter(backend):
    tag = backend.wheel_tag()
    if sys.implementation.name == "cpython":
        v = "%d%d" % sys.version_info[:2]
        assert tag.startswith(f"cp{v}-cp{v}")
    assert tag.count("-") == 2 and "." not in tag


def test_prepare_metadata(backend, tmp_path):
    name = backend.prepare_metadata_for_build_wheel(str(tmp_path))
    assert name == "tracesmith-0.1.0.dist-info"
    assert "Name: tracesmith" in (tmp_path / name / "METADATA").read_text()


def test_sdist_holds_the_sources_and_no_build_output(backend, tmp_path):
    name = backend.build_sdist(str(tmp_path))
    assert name == "tracesmith-0.1.0.tar.gz"
    with tarfile.open(tmp_path / name) as tar:
        names = tar.getnames()
    for want in ("PKG-INFO", "pyproject.toml", "CMakeLists.txt", "python/backend/tracesmith_build.py",
                 "python/tracesmith/__init__.py", "src/python/core_module.cc"):
        assert "tracesmith-0.1.0/" + want in names
    assert not any(n.startswith("tracesmith-0.1.0/build/") or "/.git/" in n for n in names)


def test_hook_without_cmake_exits_with_one_line(tmp_path):
    """The hook pip calls first, in a process whose PATH has compilers but no cmake."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    for tool in ("cc", "c++", "gcc", "g++"):
        real = subprocess.run(["sh", "-c", f"command -v {tool}"], stdout=subprocess.PIPE,
                              universal_newlines=True).stdout.strip()
        if real:
            os.symlink(real, bindir / tool)
    env = dict(os.environ, PATH=str(bindir), PYTHONPATH=BACKEND_DIR)
    r = subprocess.run([sys.executable, "-c", "import tracesmith_build as b; b.get_requires_for_build_wheel()"],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, env=env)
    assert r.returncode == 1
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith("tracesmith: cannot build for ") and "missing cmake" in lines[0]
    assert "Fix: apt-get install cmake" in lines[0]
