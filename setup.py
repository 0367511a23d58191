"""Builds tracesmith._core (and the CLI it ships) with CMake for `pip install .`.

Metadata lives in pyproject.toml. The build uses <checkout>/build/pip, so a
second install is incremental. Nothing is downloaded: CMake finds pybind11,
zstd, CLI11, ... from the system (Debian packages).
"""

import os
import shutil
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = os.path.dirname(os.path.abspath(__file__))


class CMakeExtension(Extension):
    def __init__(self, name):
        super().__init__(name, sources=[])


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        build = os.environ.get("TRACESMITH_PIP_BUILD", os.path.join(HERE, "build", "pip"))
        generator = ["-G", "Ninja"] if shutil.which("ninja") else []
        subprocess.check_call(["cmake", "-S", HERE, "-B", build, *generator,
                               "-DCMAKE_BUILD_TYPE=Release", "-DTS_BUILD_TESTS=OFF",
                               "-DTS_PYTHON=ON", f"-DPython3_EXECUTABLE={sys.executable}"])
        targets = ["tracesmith_python", "tracesmith"]
        listing = subprocess.run(["cmake", "--build", build, "--target", "help"],
                                 capture_output=True, text=True).stdout
        if "tracesmith-inject" in listing:  # built with CUDA: `profile` needs it
            targets.append("tracesmith-inject")
        jobs = str(os.cpu_count() or 2)
        subprocess.check_call(["cmake", "--build", build, "-j", jobs, "--target", *targets])

        dest = self.get_ext_fullpath(ext.name)
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        built = os.path.join(build, "python", "tracesmith")
        module = [f for f in os.listdir(built) if f.startswith("_core.") and f.endswith(".so")]
        if len(module) != 1:
            raise RuntimeError(f"expected one _core module in {built}, found {module}")
        shutil.copy2(os.path.join(built, module[0]), dest)
        # The CLI (and the injection library beside it, as <prefix>/bin and
        # <prefix>/lib) for `python -m tracesmith`.
        package = os.path.dirname(dest)
        for sub, name in (("bin", "tracesmith"), ("lib", "libtracesmith-inject.so")):
            src = os.path.join(build, sub, name)
            if os.path.exists(src):
                os.makedirs(os.path.join(package, "_bin", sub), exist_ok=True)
                shutil.copy2(src, os.path.join(package, "_bin", sub, name))


setup(ext_modules=[CMakeExtension("tracesmith._core")], cmdclass={"build_ext": CMakeBuild})
