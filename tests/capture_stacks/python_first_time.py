"""First-time work of cold stacks through the interpreter (docs/benchmarks.md,
"First-time work"): a fresh python3 process captures full stacks (every native
frame walked) from many different native paths through the interpreter and its
extension modules (sorted, map, re.sub, json hooks, dict hashing, threads...),
each a stack never seen, and prints the first-time work of each capture.

Usage: python3 python_first_time.py PATH/libts_stacks_pyprobe.so [--prepare]
  --prepare: TsProbePrepare first (what the capture's writer does at start).
Not a test: figures to compare.
"""
import ctypes
import functools
import itertools
import json
import re
import statistics
import sys
import threading

lib = ctypes.PyDLL(sys.argv[1])
lib.TsProbeCapture.restype = ctypes.c_uint
lib.TsProbeFirstTimeTicks.restype = ctypes.c_ulonglong
lib.TsProbeNsPerTick.restype = ctypes.c_double
lib.TsProbeInit(4)  # full: every native frame, Python frames between
ns_per_tick = lib.TsProbeNsPerTick()
if "--prepare" in sys.argv:
    lib.TsProbePrepare()
local = threading.local()
costs = []


def capture(*_args, **_kw):
    t0 = lib.TsProbeFirstTimeTicks()
    lib.TsProbeCapture()
    costs.append((lib.TsProbeFirstTimeTicks() - t0) * ns_per_tick / 1e3)
    return 0


class Hashed:
    def __hash__(self):
        capture()
        return 1

    def __eq__(self, other):
        capture()
        return True

    def __lt__(self, other):
        capture()
        return False

    def __getattr__(self, name):
        capture()
        return 0

    def __iter__(self):
        capture()
        return iter(())

    def __len__(self):
        capture()
        return 0

    def __repr__(self):
        capture()
        return "h"


def paths():
    h = Hashed()
    yield lambda: sorted([1, 2], key=capture)
    yield lambda: list(map(capture, [1]))
    yield lambda: functools.reduce(lambda a, b: capture(), [1, 2])
    yield lambda: re.sub("a", lambda m: str(capture()), "a")
    yield lambda: json.loads('{"a": 1}', object_hook=capture)
    yield lambda: {h: 1}
    yield lambda: [h].index(h)
    yield lambda: sorted([h, Hashed()])
    yield lambda: h.missing
    yield lambda: list(h)
    yield lambda: len(h)
    yield lambda: repr([h])
    yield lambda: list(itertools.starmap(capture, [(1,)]))
    yield lambda: list(filter(capture, [1]))
    yield lambda: min([1, 2], key=capture)
    yield lambda: max([1, 2], key=capture)
    yield lambda: any(capture() for _ in [1])
    yield lambda: dict.fromkeys([h])
    yield lambda: set([h])
    yield lambda: str.format("{}", h)
    yield lambda: f"{h!r}"
    yield lambda: list(zip(h, h))
    yield lambda: exec("capture()", {"capture": capture})
    yield lambda: eval("capture()", {"capture": capture})
    yield lambda: functools.partial(capture, 1)()
    yield lambda: functools.lru_cache(None)(capture)(1)
    yield lambda: threading.Thread(target=capture).start()


for fn in paths():
    fn()
for t in threading.enumerate():
    if t is not threading.main_thread():
        t.join()
order = list(costs)
costs.sort()
print(f"{len(costs)} captures from new paths: first-time work per capture median "
      f"{statistics.median(costs):.1f} us, max {costs[-1]:.1f} us, "
      f"sum {sum(costs):.0f} us ({'prepared' if '--prepare' in sys.argv else 'not prepared'})")
print("in capture order (us):", " ".join(f"{c:.0f}" for c in order))
