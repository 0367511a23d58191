"""Python frames captured inside a real python3 process (see py_probe.cc).

Usage: python3 python_probe.py PATH/libts_stacks_pyprobe.so
Checks, for calls with the GIL held (PyDLL) and released (CDLL, as Triton
launchers do), on the main thread and on a threading.Thread: the Python
frames appear in order with the right lines; in mixed mode after the native
frames inside the call (the stack's outermost frames), in full mode between
native frames.
"""
import ctypes
import sys
import threading

if not (3, 11) <= sys.version_info[:2] <= (3, 13):
    print("SKIP: Python %s frame layout is not supported (3.11-3.13 are)" %
          sys.version.split()[0])
    sys.exit(77)

lib_path = sys.argv[1]
held = ctypes.PyDLL(lib_path)
released = ctypes.CDLL(lib_path)
held.TsProbeCapture.restype = ctypes.c_uint
released.TsProbeCapture.restype = ctypes.c_uint


def describe(stack_id):
    buf = ctypes.create_string_buffer(1 << 16)
    n = held.TsProbeDescribe(stack_id, buf, len(buf))
    assert n >= 0, "describe buffer too small"
    return buf.value.decode().splitlines()


def launch(fn):
    return fn()  # LAUNCH_LINE


def model_forward(fn):
    return launch(fn)  # FORWARD_LINE


def line_of(marker):
    with open(__file__) as f:
        for i, text in enumerate(f, 1):
            if text.rstrip().endswith(marker) and "def line_of" not in text:
                return i
    raise AssertionError(marker)


failures = []


def check(stack_id, what, mode):
    frames = describe(stack_id)
    py = [(i, f[2:].split("|")) for i, f in enumerate(frames) if f.startswith("P ")]
    names = [p[1][0] for p in py]
    if names[:2] != ["launch", "model_forward"]:
        failures.append(f"{what}: python frames {names}")
        return
    if int(py[0][1][2]) != line_of("# LAUNCH_LINE") or int(py[1][1][2]) != line_of(
            "# FORWARD_LINE"):
        failures.append(f"{what}: lines {py[0][1][2]}, {py[1][1][2]}")
    if not py[0][1][1].endswith("python_probe.py"):
        failures.append(f"{what}: file {py[0][1][1]}")
    first, last = py[0][0], py[-1][0]
    if first == 0:
        failures.append(f"{what}: no native frames inside the call: {frames}")
    if mode == "mixed" and (last != len(frames) - 1 or len(py) != last - first + 1):
        failures.append(f"{what}: mixed: python frames are not the outermost: {frames}")
    if mode == "full" and last == len(frames) - 1:
        failures.append(f"{what}: full: no native frames outside the python frames: {frames}")
    return first


def recurse(n, fn):
    return fn() if n == 0 else recurse(n - 1, fn)


released.TsProbeTime.restype = ctypes.c_double
native_inside = {}
for mode, number in (("mixed", 3), ("full", 4)):
    held.TsProbeInit(number)
    ids = {}
    # Released first: the layout check must not need the GIL.
    ids["released"] = model_forward(released.TsProbeCapture)
    ids["held"] = model_forward(held.TsProbeCapture)
    result = {}
    t = threading.Thread(target=lambda: result.update(
        thread=model_forward(released.TsProbeCapture)))
    t.start()
    t.join()
    ids["thread released"] = result["thread"]
    for what, stack_id in ids.items():
        if stack_id == 0:
            failures.append(f"{mode} {what}: no stack")
        else:
            native_inside[(mode, what)] = check(stack_id, f"{mode} {what}", mode)
    # Informational: capture cost from Python, GIL released, deep stack.
    depth = 20
    ns = recurse(depth, lambda: released.TsProbeTime(200000))
    frames = describe(recurse(depth, released.TsProbeCapture))
    n_py = sum(1 for f in frames if f.startswith("P "))
    print("%s capture: %d frames (%d Python) %.0f ns per stack" % (mode, len(frames), n_py, ns))

# Both modes walk the same native frames inside the call.
for what in ("released", "held", "thread released"):
    if native_inside.get(("mixed", what)) != native_inside.get(("full", what)):
        failures.append(f"{what}: native frames inside: mixed {native_inside.get(('mixed', what))}"
                        f" full {native_inside.get(('full', what))}")

if failures:
    print("FAIL (Python %s):" % sys.version.split()[0])
    for f in failures:
        print("  " + f)
    sys.exit(1)
print("PASS: Python %s frames merged (mixed and full; GIL held, released, other thread)" %
      sys.version.split()[0])
