"""tracesmith.range's fast path (src/python/app_module.c): the `with`
statement's look-ups of __enter__ / __exit__ return the range itself (no
bound-method objects), range objects come from a free list, names' ids from a
table keyed by the str object. These tests check that every form still records
what it should: with and without keyword arguments, through contextlib's
ExitStack (the type's methods called with the range first), with an exception,
nested and interleaved (generators), more distinct names than the table holds,
and the decorator forms; captured by libtracesmith-app-fake.so."""

import json
import textwrap

import pytest

import tracesmith



def test_the_with_statement_makes_no_bound_methods():
    r = tracesmith.range("x", step=1)
    # the look-ups the `with` statement makes give the range itself
    assert r.__enter__ is r and r.__exit__ is r
    assert r.name == "x" and r.args == {"step": 1}
    # on the type they are callables taking the range first (contextlib.ExitStack's way)
    assert type(r).__enter__(r) is r
    assert type(r).__exit__(r, None, None, None) is False
    with pytest.raises(TypeError, match="takes a range"):
        type(r).__enter__(5)
    with pytest.raises(TypeError, match="takes a range and 3 arguments"):
        type(r).__exit__(r)
    with pytest.raises(TypeError, match="decorates one function"):
        r(1, 2)
    with pytest.raises(TypeError, match="1 positional argument"):
        tracesmith.range()
    with pytest.raises(TypeError, match="name must be a str"):
        tracesmith.range(None)


PROGRAM = textwrap.dedent("""
    import contextlib, sys
    sys.path.insert(0, {pythonpath!r})
    import tracesmith
    p = tracesmith.profile({out!r}); p.start()
    assert tracesmith.enabled()
    for i in range(3):
        with tracesmith.range("plain"):
            pass
        with tracesmith.range("kw", step=i):
            pass
    with contextlib.ExitStack() as stack:
        stack.enter_context(tracesmith.range("exitstack"))
    try:
        with tracesmith.range("raised"):
            raise ValueError("x")
    except ValueError:
        pass
    with tracesmith.range("outer"):
        with tracesmith.range("outer"):
            pass
    def gen(name):
        with tracesmith.range(name):
            yield 1
            yield 2
    a, b = gen("gen a"), gen("gen b")
    next(a); next(b); next(a); next(b)   # interleaved on one thread
    for g in (a, b):
        for _ in g:
            pass
    for i in range(600):                 # more names than the id table's 256 slots
        with tracesmith.range("many %d" % i):
            pass
    for i in range(600):                 # the same names again: each its own id
        with tracesmith.range("many %d" % i):
            pass
    @tracesmith.range("deco")
    def f(x):
        return x * 2
    @tracesmith.range("deco kw", level=3)
    def g(x):
        return x + 1
    @tracesmith.range
    def h():
        return 7
    assert f(2) == 4 and g(2) == 3 and h() == 7
    assert f.__name__ == "f" and f.__wrapped__(5) == 10 and h.__qualname__ == "h"
    class C:
        @tracesmith.range("method")
        def m(self, a, *, b=1):
            '''doc of m'''
            return (self, a, b)
    c = C()
    assert c.m(1, b=2) == (c, 1, 2) and C.m(c, 3) == (c, 3, 1) and C.m.__doc__ == "doc of m"
    class BadStr:
        def __str__(self):
            raise RuntimeError("no str")
    @tracesmith.range("bad args", obj=BadStr())
    def still_runs():
        return 11
    assert still_runs() == 11   # its range not recorded (an unraisable error said)
    @tracesmith.range("deco raised")
    def boom():
        raise KeyError("k")
    try:
        boom()
    except KeyError:
        pass
    p.stop()
""")


def test_every_form_records(app_program):
    out, _ = app_program(PROGRAM, "ranges")
    t = tracesmith.load(str(out))
    e = t.app_events
    names, args = list(e["name"]), list(e["args"])
    starts, ends = list(e["start_ns"]), list(e["end_ns"])
    assert names.count("plain") == 3
    kw = [json.loads(a) for n, a in zip(names, args) if n == "kw"]
    assert sorted(k["step"] for k in kw) == [0, 1, 2]
    assert all(not a for n, a in zip(names, args) if n == "plain")
    for n in ("exitstack", "raised", "deco", "deco kw", "h", "gen a", "gen b", "deco raised"):
        assert names.count(n) == 1, (n, names[:20])
    assert names.count("method") == 2  # bound and through the class
    assert "bad args" not in names
    assert names.count("outer") == 2
    outer = sorted((s, en) for n, s, en in zip(names, starts, ends) if n == "outer")
    assert outer[0][0] <= outer[1][0] and outer[1][1] <= outer[0][1]  # nested
    ga = next((s, en) for n, s, en in zip(names, starts, ends) if n == "gen a")
    gb = next((s, en) for n, s, en in zip(names, starts, ends) if n == "gen b")
    assert ga[0] < gb[0] < ga[1] < gb[1]  # each its own start and end
    for i in (0, 255, 256, 599):
        assert names.count("many %d" % i) == 2
    assert sum(1 for n in names if n.startswith("many ")) == 1200
    assert json.loads(next(a for n, a in zip(names, args) if n == "deco kw")) == {"level": 3}
    assert t.stats["capture.app.ranges"] == len(names)
