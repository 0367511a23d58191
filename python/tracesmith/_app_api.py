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
while capturing, a `with` range about 0.14 us (docs/benchmarks.md). Without
that extension (a build without it) they check their arguments and do nothing.
"""

from __future__ import annotations

import functools

try:
    from . import _app
except ImportError:  # the extension was not built: the calls do nothing
    _app = None


def _decorate(r, func):
    """range(name)(func), and @range without a name (the function's __qualname__)."""
    name = r.name if r is not None else getattr(func, "__qualname__", repr(func))
    args = r.args if r is not None else {}
    make = _app.range

    if args:
        @functools.wraps(func)
        def wrapper(*a, **k):
            with make(name, **args):
                return func(*a, **k)
    else:  # no keyword arguments to pass on every call
        @functools.wraps(func)
        def wrapper(*a, **k):
            with make(name):
                return func(*a, **k)

    return wrapper


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
