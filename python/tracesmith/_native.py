"""The C++ extension (tracesmith._core), imported when first needed.

Loading and analysing traces need it; capture (tracesmith.profile) does not:
it calls the injection library through ctypes, whatever the Python version.
"""

import sys

_module = None


def core():
    global _module
    if _module is None:
        try:
            from . import _core
        except ImportError as e:
            raise ImportError(
                f"tracesmith._core is not built for this Python ({sys.version.split()[0]}): "
                "build the package with this interpreter (pip install --no-build-isolation ., "
                "or cmake -DPython3_EXECUTABLE=...). tracesmith.profile() works without it."
            ) from e
        _module = _core
    return _module
