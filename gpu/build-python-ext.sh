#!/usr/bin/env bash
# Builds the tracesmith Python package's extensions (_core, _app) on a machine that
# has a Python interpreter with its headers and pybind11's headers (its own
# pybind11 package, or the copy PyTorch ships in torch/include) but not the
# build's other dependencies: the TraceSmith libraries and the static zstd and
# sqlite3 come prebuilt from the development build (scripts/make-gpu-carry.sh
# puts them in CARRY/pyext). Used by scripts/gpu-check.sh (GPU_CHECK=python)
# to run the package's tests under the GPU machine's Python 3.12 + PyTorch.
#   gpu/build-python-ext.sh CARRY OUT [PYTHON=python3]
# leaves OUT/tracesmith (importable with PYTHONPATH=OUT).
set -eu
CARRY=$1
OUT=$2
PY=${3:-python3}
L=$CARRY/pyext
[ -f "$L/libtracesmith_format.a" ] || { echo "no prebuilt libraries in $L" >&2; exit 1; }
PYINC=$("$PY" -c 'import sysconfig; print(sysconfig.get_paths()["include"])')
SUFFIX=$("$PY" -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))')
PYBIND=$("$PY" -c 'import pybind11; print(pybind11.get_include())' 2>/dev/null ||
         { [ -f /usr/include/pybind11/pybind11.h ] && echo /usr/include; } ||
         "$PY" -c 'import os, torch; print(os.path.join(os.path.dirname(torch.__file__), "include"))')
[ -f "$PYINC/Python.h" ] || { echo "no Python.h under $PYINC" >&2; exit 1; }
[ -f "$PYBIND/pybind11/pybind11.h" ] || { echo "no pybind11 headers (pip pybind11 or torch)" >&2; exit 1; }
# (the system include folder is searched anyway; naming it breaks #include_next)
PYBIND_FLAG=$([ "$PYBIND" = /usr/include ] || echo "-isystem $PYBIND")
mkdir -p "$OUT/tracesmith"
cp python/tracesmith/*.py python/tracesmith/*.pyi python/tracesmith/py.typed "$OUT/tracesmith/"
VERSION=$(sed -n 's/^project(TraceSmith VERSION \([0-9.]*\).*/\1/p' CMakeLists.txt)
ZLIB=$(ls /usr/lib/x86_64-linux-gnu/libz.so* /lib/x86_64-linux-gnu/libz.so* 2>/dev/null | head -1)
set -x
${CXX:-g++} -O2 -fPIC -fvisibility=hidden -std=c++20 -shared -DTS_VERSION="\"${VERSION:-dev}\"" \
  -Iinclude -isystem "$PYINC" ${PYBIND_FLAG} src/python/core_module.cc src/python/read_columns.cc src/python/column_buffer.cc src/python/write_tables.cc \
  -o "$OUT/tracesmith/_core$SUFFIX" \
  "$L/libtracesmith_cluster.a" "$L/libtracesmith_format.a" "$L/libtracesmith_export.a" "$L/libtracesmith_import.a" \
  "$L/libtracesmith_job.a" "$L/libtracesmith_memory.a" "$L/libtracesmith_analysis.a" "$L/libtracesmith_timeline.a" "$L/libtracesmith_session_common.a" "$L/libtracesmith_capture_common.a" "$L/libtracesmith_format.a" \
  "$L/libzstd.a" "$L/libsqlite3.a" "$L/libtracesmith_model.a" "$L/libtracesmith_base.a" \
  ${ZLIB:+"$ZLIB"} -ldl -lpthread -lm -Wl,--exclude-libs,ALL
# The program's own events (_app, issue #42): plain C, the capture library
# found at run time.
${CC:-gcc} -O2 -fPIC -shared -Iinclude -isystem "$PYINC" src/python/app_module.c \
  -o "$OUT/tracesmith/_app$SUFFIX" -ldl
