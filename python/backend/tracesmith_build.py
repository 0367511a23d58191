"""The PEP 517 build backend of the tracesmith package (pyproject.toml names it).

Standard library only, so `pip install .` needs no setuptools or wheel, in any
version, and nothing from the network. It checks what the build needs for the
interpreter that runs it (cmake, C and C++ compilers, pybind11, this Python's
headers) and stops at once with one line naming what is missing and the command
that installs it; then CMake builds the extension (tracesmith._core), the
`tracesmith` command-line tool and, with CUDA, the capture's injection library,
and this module writes the wheel itself (a zip with its .dist-info: METADATA,
WHEEL, entry_points.txt, RECORD).

  build directory   $TRACESMITH_PIP_BUILD, else <checkout>/build/pip/<interpreter>
                    (kept: a second install is incremental)
  parallel jobs     $TRACESMITH_BUILD_JOBS, else $CMAKE_BUILD_PARALLEL_LEVEL, else all CPUs
  more CMake args   $TRACESMITH_CMAKE_ARGS (e.g. -DTS_PYBIND11_INCLUDE=DIR -DTS_CUDA=OFF)
  a finished build  $TRACESMITH_PREBUILT=DIR: package DIR's extension, CLI and
                    libraries as they are, without configuring or building
                    (the test command's pip test packages its release build so
                    that CI does not compile the libraries a third time)
"""

import base64
import hashlib
import io
import os
import re
import shlex
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import time
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MIN_PYTHON = (3, 9)
MIN_CMAKE = (3, 22)  # CMakeLists.txt's cmake_minimum_required
DEBIAN_PACKAGES = {"cmake": "cmake", "cc": "gcc", "c++": "g++", "pybind11": "pybind11-dev"}


class BuildError(SystemExit):
    """Ends the hook with one line on stderr and exit status 1 (no traceback)."""

    def __init__(self, line):
        super().__init__("tracesmith: " + line)


# --------------------------------------------------------------------------
# pyproject.toml: tomllib where there is one (3.11+), else the small subset of
# TOML this project's file uses (tables, strings, arrays, inline tables).

def _toml_loads(text):
    try:
        import tomllib  # noqa: PLC0415 (3.11+)
        return tomllib.loads(text)
    except ImportError:
        return _MiniToml(text).parse()


class _MiniToml:
    def __init__(self, text):
        self.s, self.i = text, 0

    def error(self, what):
        line = self.s.count("\n", 0, self.i) + 1
        raise BuildError(f"pyproject.toml line {line}: {what} (a TOML form this backend does "
                         "not read without tomllib: use Python 3.11+ or simplify the file)")

    def skip(self, newlines=True):
        while self.i < len(self.s):
            c = self.s[self.i]
            if c == "#":
                while self.i < len(self.s) and self.s[self.i] != "\n":
                    self.i += 1
            elif c in " \t\r" or (newlines and c == "\n"):
                self.i += 1
            else:
                break

    def key(self):
        self.skip(False)
        if self.s[self.i] in "\"'":
            return self.string()
        m = re.compile(r"[A-Za-z0-9_-]+").match(self.s, self.i)
        if not m:
            self.error("expected a key")
        self.i = m.end()
        return m.group()

    def dotted_key(self):
        parts = [self.key()]
        self.skip(False)
        while self.s.startswith(".", self.i):
            self.i += 1
            parts.append(self.key())
            self.skip(False)
        return parts

    def string(self):
        q = self.s[self.i]
        if self.s.startswith(q * 3, self.i):
            self.error("multi-line strings")
        self.i += 1
        out = []
        while self.i < len(self.s) and self.s[self.i] != q:
            c = self.s[self.i]
            if c == "\n":
                self.error("unterminated string")
            if c == "\\" and q == '"':
                self.i += 1
                esc = self.s[self.i]
                simple = {"n": "\n", "t": "\t", "r": "\r", '"': '"', "\\": "\\", "b": "\b", "f": "\f"}
                if esc in simple:
                    out.append(simple[esc])
                elif esc in "uU":
                    n = 4 if esc == "u" else 8
                    out.append(chr(int(self.s[self.i + 1:self.i + 1 + n], 16)))
                    self.i += n
                else:
                    self.error("unknown escape")
            else:
                out.append(c)
            self.i += 1
        self.i += 1
        return "".join(out)

    def value(self):
        self.skip(False)
        c = self.s[self.i] if self.i < len(self.s) else ""
        if c in "\"'":
            return self.string()
        if c == "[":
            self.i += 1
            items = []
            while True:
                self.skip()
                if self.s.startswith("]", self.i):
                    self.i += 1
                    return items
                items.append(self.value())
                self.skip()
                if self.s.startswith(",", self.i):
                    self.i += 1
                elif not self.s.startswith("]", self.i):
                    self.error("expected , or ] in an array")
        if c == "{":
            self.i += 1
            table = {}
            self.skip(False)
            if self.s.startswith("}", self.i):
                self.i += 1
                return table
            while True:
                self.assign(table)
                self.skip(False)
                if self.s.startswith("}", self.i):
                    self.i += 1
                    return table
                if not self.s.startswith(",", self.i):
                    self.error("expected , or } in an inline table")
                self.i += 1
        m = re.compile(r"true|false|[+-]?[0-9][0-9_]*(?![0-9.eE:-])").match(self.s, self.i)
        if not m:
            self.error("a value this backend does not read")
        self.i = m.end()
        word = m.group()
        return word == "true" if word in ("true", "false") else int(word.replace("_", ""))

    def assign(self, table):
        keys = self.dotted_key()
        if not self.s.startswith("=", self.i):
            self.error("expected =")
        self.i += 1
        for k in keys[:-1]:
            table = table.setdefault(k, {})
        table[keys[-1]] = self.value()

    def parse(self):
        doc = current = {}
        while True:
            self.skip()
            if self.i >= len(self.s):
                return doc
            if self.s.startswith("[[", self.i):
                self.error("arrays of tables")
            if self.s[self.i] == "[":
                self.i += 1
                current = doc
                for k in self.dotted_key():
                    current = current.setdefault(k, {})
                if not self.s.startswith("]", self.i):
                    self.error("expected ]")
                self.i += 1
            else:
                self.assign(current)
            self.skip(False)
            if self.i < len(self.s) and self.s[self.i] not in "\n#":
                self.error("expected the end of the line")


def read_project(root=ROOT):
    with open(os.path.join(root, "pyproject.toml"), encoding="utf-8") as f:
        return _toml_loads(f.read())["project"]


# --------------------------------------------------------------------------
# What the build needs, checked before anything is built.

def _version_tuple(text):
    m = re.search(r"(\d+)\.(\d+)(?:\.(\d+))?", text or "")
    return tuple(int(x) for x in m.groups("0")) if m else ()


def _has_pybind11(cmake_args, python):
    """Where CMake's find_package(pybind11 CONFIG) would find pybind11, or ''."""
    for a in cmake_args:
        if a.startswith(("-Dpybind11_DIR=", "-DTS_PYBIND11_INCLUDE=")):
            return a.split("=", 1)[1]
    if os.environ.get("pybind11_DIR"):
        return os.environ["pybind11_DIR"]
    # The pybind11 Python package of this interpreter (-I: its own environment,
    # not the isolated one pip may run this backend in).
    r = subprocess.run([python, "-I", "-c", "import pybind11; print(pybind11.get_cmake_dir())"],
                       stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, universal_newlines=True)
    if r.returncode == 0 and r.stdout.strip():
        return r.stdout.strip()
    prefixes = [p for p in os.environ.get("CMAKE_PREFIX_PATH", "").split(os.pathsep) if p]
    prefixes += [os.path.dirname(p.rstrip("/")) for p in os.environ.get("PATH", "").split(os.pathsep) if p]
    prefixes += ["/usr/local", "/usr", "/opt/homebrew", "/opt/local"]
    arch = sysconfig.get_config_var("MULTIARCH") or ""
    for prefix in dict.fromkeys(prefixes):
        for sub in ("lib/cmake", f"lib/{arch}/cmake" if arch else "", "share/cmake", "lib64/cmake"):
            d = os.path.join(prefix, sub) if sub else ""
            if not d or not os.path.isdir(d):
                continue
            for name in os.listdir(d):
                if name.lower().startswith("pybind11") and any(
                        os.path.isfile(os.path.join(d, name, f))
                        for f in ("pybind11Config.cmake", "pybind11-config.cmake")):
                    return os.path.join(d, name)
    return ""


def _python_headers():
    """This interpreter's include directory, and whether Python.h is in it."""
    include = sysconfig.get_paths()["include"]
    return include, os.path.isfile(os.path.join(include, "Python.h"))


def _debian_python_package(python):
    """The Debian package with this interpreter's headers, or '' when it is not Debian's."""
    real = os.path.realpath(python)
    m = re.fullmatch(r"/usr/bin/python(3\.\d+)", real)
    if not m or not os.path.isfile("/etc/debian_version"):
        return ""
    default = os.path.realpath("/usr/bin/python3")
    return "python3-dev" if default == real else f"python{m.group(1)}-dev"


def missing_requirements(python=None, which=shutil.which, cmake_args=None, version=None,
                         headers=None, pybind11=None):
    """[(what is missing, Debian package or '' when there is none)] for building with
    `python`. The keyword arguments replace the probes (tests)."""
    python = python or sys.executable
    version = version or sys.version_info[:3]
    cmake_args = cmake_args if cmake_args is not None else _extra_cmake_args()
    missing = []
    if tuple(version[:2]) < MIN_PYTHON:
        missing.append((f"Python >= 3.9 (this is {'.'.join(map(str, version))})", ""))
    cmake = which("cmake")
    if not cmake:
        missing.append(("cmake", "cmake"))
    else:
        out = subprocess.run([cmake, "--version"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                             universal_newlines=True).stdout
        if _version_tuple(out) < MIN_CMAKE:
            missing.append((f"cmake >= 3.22 (found {'.'.join(map(str, _version_tuple(out))) or '?'})",
                            "cmake"))
    for lang, env, names in (("c++", "CXX", ("c++", "g++", "clang++")), ("cc", "CC", ("cc", "gcc", "clang"))):
        given = shlex.split(os.environ.get(env, ""))[:1]
        if not any(which(n) for n in (given or list(names))):
            what = f"a C++ compiler ({env}={given[0]})" if given and lang == "c++" else (
                f"a C compiler ({env}={given[0]})" if given else
                ("a C++ compiler (c++, g++ or clang++)" if lang == "c++" else "a C compiler (cc, gcc or clang)"))
            missing.append((what, DEBIAN_PACKAGES[lang]))
    include, ok = headers if headers is not None else _python_headers()
    if not ok:
        missing.append((f"its Python headers (no Python.h in {include})",
                        _debian_python_package(python)))
    found = pybind11 if pybind11 is not None else _has_pybind11(cmake_args, python)
    if not found:
        missing.append(("pybind11 (no pybind11Config.cmake and no pybind11 module for this Python)",
                        "pybind11-dev"))
    return missing


def requirements_line(missing, python=None):
    """The one line that says what is missing and what fixes it."""
    python = python or sys.executable
    what = "; ".join(m for m, _ in missing)
    packages = [p for _, p in missing if p]
    fixes = []
    if packages:
        fixes.append("apt-get install " + " ".join(dict.fromkeys(packages)))
    if any(not p for _, p in missing) or not os.path.realpath(python).startswith("/usr/bin/"):
        fixes.append("build with the Debian interpreter: /usr/bin/python3 -m venv "
                     "--system-site-packages .venv && .venv/bin/pip install --no-build-isolation .")
    return f"cannot build for {python}: missing {what}. Fix: {'; or '.join(fixes)}"


def check_requirements():
    missing = missing_requirements()
    if missing:
        raise BuildError(requirements_line(missing))


# --------------------------------------------------------------------------
# The CMake build.

def _extra_cmake_args():
    return shlex.split(os.environ.get("TRACESMITH_CMAKE_ARGS", ""))


def build_dir():
    given = os.environ.get("TRACESMITH_PIP_BUILD")
    if given:
        return os.path.abspath(given)
    base = os.path.realpath(getattr(sys, "_base_executable", "") or sys.executable)
    tag = "%s-%s" % (sys.implementation.cache_tag,
                     hashlib.sha256((base + sys.base_prefix).encode()).hexdigest()[:8])
    return os.path.join(ROOT, "build", "pip", tag)


def _jobs():
    for var in ("TRACESMITH_BUILD_JOBS", "CMAKE_BUILD_PARALLEL_LEVEL"):
        if os.environ.get(var, "").isdigit():
            return os.environ[var]
    return str(os.cpu_count() or 2)


def _first_cmake_error(log):
    """The first `CMake Error` of a configure log, on one line."""
    lines = log.splitlines()
    for n, line in enumerate(lines):
        if line.startswith("CMake Error"):
            body = []
            for more in lines[n + 1:]:
                if more.strip() and not more.startswith(" "):
                    break
                body.append(more.strip())
            text = " ".join(b for b in body if b) or line.rstrip(":")
            return text[:400]
    return lines[-1].strip() if lines else "(no output)"


def cmake_build():
    """Configures and builds; returns the build directory."""
    prebuilt = os.environ.get("TRACESMITH_PREBUILT")
    if prebuilt:
        prebuilt = os.path.abspath(prebuilt)
        if not os.path.isfile(os.path.join(prebuilt, "bin", "tracesmith")):
            raise BuildError(f"TRACESMITH_PREBUILT={prebuilt} holds no bin/tracesmith: build it "
                             "first (cmake --build --preset release)")
        print(f"tracesmith: packaging the finished build in {prebuilt}", flush=True)
        return prebuilt
    check_requirements()
    build = build_dir()
    os.makedirs(build, exist_ok=True)
    generator = ["-G", "Ninja"] if shutil.which("ninja") and not os.path.isfile(
        os.path.join(build, "Makefile")) else []
    configure = ["cmake", "-S", ROOT, "-B", build, *generator, "-DCMAKE_BUILD_TYPE=Release",
                 "-DTS_BUILD_TESTS=OFF", "-DTS_PYTHON=ON", f"-DPython3_EXECUTABLE={sys.executable}",
                 *_extra_cmake_args()]
    log_path = os.path.join(build, "tracesmith-configure.log")
    r = subprocess.run(configure, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       universal_newlines=True)
    with open(log_path, "w", encoding="utf-8") as f:
        f.write(r.stdout)
    if r.returncode != 0:
        raise BuildError(f"CMake configure failed: {_first_cmake_error(r.stdout)} (log: {log_path}; "
                         "scripts/install-deps.sh installs every build dependency)")
    listing = subprocess.run(["cmake", "--build", build, "--target", "help"], stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, universal_newlines=True).stdout
    targets = ["tracesmith_python", "tracesmith"]
    if "tracesmith-inject" in listing:  # built with CUDA: `profile` needs it
        targets.append("tracesmith-inject")
    print(f"tracesmith: building {', '.join(targets)} in {build} ({_jobs()} jobs)", flush=True)
    t0 = time.monotonic()
    if subprocess.run(["cmake", "--build", build, "-j", _jobs(), "--target", *targets]).returncode:
        raise BuildError(f"the build failed (compiler output above; build directory {build})")
    print(f"tracesmith: built in {time.monotonic() - t0:.0f} s", flush=True)
    return build


# --------------------------------------------------------------------------
# Metadata and the wheel.

def _dist_name(project):
    return re.sub(r"[-_.]+", "_", project["name"]).lower()


def _dist_info(project):
    return f"{_dist_name(project)}-{project['version']}.dist-info"


def metadata_text(project, root=ROOT):
    lines = ["Metadata-Version: 2.1", f"Name: {project['name']}", f"Version: {project['version']}"]
    if project.get("description"):
        lines.append(f"Summary: {project['description']}")
    lic = project.get("license")
    if isinstance(lic, dict) and lic.get("text"):
        lines.append(f"License: {lic['text']}")
    if project.get("requires-python"):
        lines.append(f"Requires-Python: {project['requires-python']}")
    lines += [f"Requires-Dist: {d}" for d in project.get("dependencies", [])]
    for extra, deps in project.get("optional-dependencies", {}).items():
        lines.append(f"Provides-Extra: {extra}")
        lines += [f'Requires-Dist: {d}; extra == "{extra}"' for d in deps]
    body = ""
    readme = project.get("readme")
    if isinstance(readme, str):
        with open(os.path.join(root, readme), encoding="utf-8") as f:
            body = f.read()
        lines.append("Description-Content-Type: text/markdown" if readme.endswith(".md")
                     else "Description-Content-Type: text/plain")
    return "\n".join(lines) + "\n\n" + body


def entry_points_text(project):
    scripts = project.get("scripts", {})
    if not scripts:
        return ""
    return "[console_scripts]\n" + "".join(f"{k} = {v}\n" for k, v in scripts.items()) + "\n"


def wheel_tag():
    impl = {"cpython": "cp", "pypy": "pp"}.get(sys.implementation.name, sys.implementation.name)
    ver = f"{sys.version_info[0]}{sys.version_info[1]}"
    if impl == "cp":
        abi = f"cp{ver}{getattr(sys, 'abiflags', '')}"
    else:
        soabi = sysconfig.get_config_var("SOABI") or "none"
        abi = "_".join(soabi.split("-")[:2]).replace(".", "_")
    plat = sysconfig.get_platform().replace("-", "_").replace(".", "_")
    return f"{impl}{ver}-{abi}-{plat}"


def _record_hash(data):
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def write_wheel(directory, files, project, tag):
    """files: [(path in the wheel, bytes, executable)]. Returns the wheel's file name."""
    info = _dist_info(project)
    meta = [(f"{info}/METADATA", metadata_text(project).encode(), False),
            (f"{info}/WHEEL", ("Wheel-Version: 1.0\nGenerator: tracesmith_build\n"
                               f"Root-Is-Purelib: false\nTag: {tag}\n").encode(), False)]
    ep = entry_points_text(project)
    if ep:
        meta.append((f"{info}/entry_points.txt", ep.encode(), False))
    name = f"{_dist_name(project)}-{project['version']}-{tag}.whl"
    record = []
    path = os.path.join(directory, name)
    with zipfile.ZipFile(path + ".part", "w", zipfile.ZIP_DEFLATED) as z:
        for arc, data, executable in list(files) + meta:
            zi = zipfile.ZipInfo(arc, date_time=(2020, 1, 1, 0, 0, 0))
            zi.external_attr = (0o100755 if executable else 0o100644) << 16
            zi.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(zi, data)
            record.append(f"{arc},{_record_hash(data)},{len(data)}")
        record.append(f"{info}/RECORD,,")
        zi = zipfile.ZipInfo(f"{info}/RECORD", date_time=(2020, 1, 1, 0, 0, 0))
        zi.external_attr = 0o100644 << 16
        z.writestr(zi, "\n".join(record) + "\n")
    os.replace(path + ".part", path)
    return name


def _read(path):
    with open(path, "rb") as f:
        return f.read()


def _check_module(package_root, path):
    """Imports the built extension in this interpreter (a child process, from the
    build tree's package): a module that cannot load (no PyInit__core, an
    undefined symbol) is refused now, not at the user's first import. A missing
    numpy is not the module's fault."""
    code = ("import sys\nsys.path.insert(0, sys.argv[1])\n"
            "try:\n    import tracesmith._core\n"
            "except ImportError as e:\n"
            "    if 'numpy' not in str(e): sys.exit(f'{type(e).__name__}: {e}')\n")
    r = subprocess.run([sys.executable, "-I", "-c", code, package_root], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, universal_newlines=True, cwd=package_root)
    if r.returncode:
        why = (r.stderr.strip().splitlines() or ["?"])[-1]
        raise BuildError(f"the built extension {path} does not load in this Python: {why}")


def package_files(build):
    """The installed package: python/tracesmith's sources, the extension, _bin/."""
    files = []
    src = os.path.join(ROOT, "python", "tracesmith")
    for name in sorted(os.listdir(src)):
        if name.endswith((".py", ".pyi")) or name == "py.typed":
            files.append((f"tracesmith/{name}", _read(os.path.join(src, name)), False))
    built = os.path.join(build, "python", "tracesmith")
    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    module = os.path.join(built, "_core" + suffix)
    if not os.path.isfile(module):
        found = [f for f in os.listdir(built) if f.startswith("_core.")] if os.path.isdir(built) else []
        raise BuildError(f"the build made no _core{suffix} for this Python in {built} (found: "
                         f"{', '.join(found) or 'nothing'}); remove {build} and retry")
    _check_module(os.path.join(build, "python"), module)
    files.append((f"tracesmith/_core{suffix}", _read(module), True))
    # tracesmith.counter / instant / range's fast path (src/python/app_module.c).
    app = os.path.join(built, "_app" + suffix)
    if os.path.isfile(app):
        files.append((f"tracesmith/_app{suffix}", _read(app), True))
    # The CLI and, with CUDA, the libraries it loads from ../lib (the capture's
    # injection library, the GPU replayer) for `python -m tracesmith`.
    for sub, name in (("bin", "tracesmith"), ("lib", "libtracesmith-inject.so"),
                      ("lib", "libtracesmith-replay-gpu.so")):
        p = os.path.join(build, sub, name)
        if os.path.isfile(p):
            files.append((f"tracesmith/_bin/{sub}/{name}", _read(p), True))
    return files


# --------------------------------------------------------------------------
# PEP 517 / PEP 660 hooks.

def get_requires_for_build_wheel(config_settings=None):
    check_requirements()  # before anything else: what is missing, at once
    return []


def get_requires_for_build_editable(config_settings=None):
    return get_requires_for_build_wheel(config_settings)


def get_requires_for_build_sdist(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    project = read_project()
    info = os.path.join(metadata_directory, _dist_info(project))
    os.makedirs(info, exist_ok=True)
    with open(os.path.join(info, "METADATA"), "w", encoding="utf-8") as f:
        f.write(metadata_text(project))
    ep = entry_points_text(project)
    if ep:
        with open(os.path.join(info, "entry_points.txt"), "w", encoding="utf-8") as f:
            f.write(ep)
    return os.path.basename(info)


prepare_metadata_for_build_editable = prepare_metadata_for_build_wheel


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    build = cmake_build()
    return write_wheel(wheel_directory, package_files(build), read_project(), wheel_tag())


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    """The build tree's package (<build>/python: the extension beside copies of
    python/tracesmith, refreshed by a rebuild) on sys.path through a .pth file."""
    build = cmake_build()
    pth = (os.path.join(build, "python") + "\n").encode()
    return write_wheel(wheel_directory, [("tracesmith_build_tree.pth", pth, False)], read_project(),
                       wheel_tag())


def _sdist_files():
    try:
        out = subprocess.run(["git", "-C", ROOT, "ls-files", "-z", "--cached", "--others",
                              "--exclude-standard"], stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, check=True).stdout
        names = [n for n in out.decode().split("\0") if n]
    except (OSError, subprocess.CalledProcessError):
        names = []
        for d, dirs, fs in os.walk(ROOT):
            rel = os.path.relpath(d, ROOT)
            dirs[:] = [x for x in dirs if not (x.startswith(".") or x == "__pycache__" or
                                              (rel == "." and x.startswith("build")))]
            names += [os.path.normpath(os.path.join(rel, f)) for f in fs]
    return sorted(n for n in names if os.path.isfile(os.path.join(ROOT, n)))


def build_sdist(sdist_directory, config_settings=None):
    project = read_project()
    base = f"{_dist_name(project)}-{project['version']}"
    path = os.path.join(sdist_directory, base + ".tar.gz")
    with tarfile.open(path, "w:gz", format=tarfile.PAX_FORMAT) as tar:
        for name in _sdist_files():
            tar.add(os.path.join(ROOT, name), arcname=f"{base}/{name}", recursive=False)
        data = metadata_text(project).encode()
        ti = tarfile.TarInfo(f"{base}/PKG-INFO")
        ti.size, ti.mode, ti.mtime = len(data), 0o644, int(time.time())
        tar.addfile(ti, io.BytesIO(data))
    return os.path.basename(path)
