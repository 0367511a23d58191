# The package version; CMake's project() version must be the same (a test checks
# it against `tracesmith version`).
__version__ = "0.1.0"
