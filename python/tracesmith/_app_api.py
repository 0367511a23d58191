"""The program's own events on the capture's timeline: tracesmith.counter,
tracesmith.instant and tracesmith.range (docs/python.md "Your own counters
and ranges").

    tracesmith.counter("loss", loss.item())        # a value per step, as a counter track
    tracesmith.instant("checkpoint", epoch=3)      # a point in time, with arguments
    with tracesmith.range("eval"):                 # a range on this thread
        evaluate()
    @tracesmith.range("data")                      # ... or every call of a function
    def load_batch(): ...

They are recorded by the capture running in this process — `tracesmith
profile -- python ...` (the injection library) or tracesmith.profile() — with
the calling thread, and do nothing when nothing captures. The calls are the C
functions of tracesmith._app (src/python/app_module.c): about 0.1 us each
while capturing, a `with` range or a decorated call about 0.14 us (docs/benchmarks.md). Without
that extension (a build without it) they check their arguments and do nothing.
"""

from __future__ import annotations

import functools

try:
    from . import _app
except ImportError:  # the extension was not built: the calls do nothing
    _app = None


def _decorate(r, func):
    """range(name)(func), and @range without a name (the function's __qualname__): a C
    object whose every call is a range (tracesmith._app._ranged: no Python frame of its
    own per call), with the function's name, doc and __wrapped__."""
    if r is None:
        r = _app.range(getattr(func, "__qualname__", None) or repr(func))
    return functools.update_wrapper(_app._ranged(func, r), func)


if _app is not None:
    counter = _app.counter
    instant = _app.instant
    range = _app.range  # noqa: A001 (tracesmith.range, as torch.profiler.record_function)
    enabled = _app.enabled
    _app._set_decorate(_decorate)

    def attach(path: str) -> bool:
        return _app.attach(path)
else:
    def counter(name, value):
        if not isinstance(name, str):
            raise TypeError(f"tracesmith.counter: the name must be a str, not {type(name).__name__}")
        float(value)

    def instant(name, **args):
        if not isinstance(name, str):
            raise TypeError(f"tracesmith.instant: the name must be a str, not {type(name).__name__}")

    class range:  # noqa: A001
        def __init__(self, name, **args):
            self.name, self.args = name, args

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

        def __call__(self, func):
            return func

    def enabled() -> bool:
        return False

    def attach(path: str) -> bool:
        return False
