"""Verdicts of the Python GPU checks (gpu/*_check.py), as scripts/lib/checks.sh gives them
to the shell scripts: exactly one line per expectation, PASS, FAIL or SKIP (with the
reason), and one summary line at the end, exactly "N passed, M failed, K skipped".

    c = Checks("JOBCHECK")
    c.check("merge", ok, "detail")      # JOBCHECK merge: detail -> PASS (or -> FAIL)
    c.fail("analyze", "exit 1")         # JOBCHECK analyze: exit 1 -> FAIL
    c.skip("merged ranks", "merge failed")                  # -> SKIP (merge failed)
    c.skip("inproc", "torch imports, no CUDA", expected=True)  # counts toward the exit status
    c.guarded(["a", "b"], fn)           # fn makes checks a, b; if it raises: FAIL, then SKIP
    sys.exit(c.summary())               # 1 when something failed or an expected skip, else 0

have_gpu(): nvidia-smi lists a GPU (TS_HAVE_GPU=1 or 0 says so instead).
torch_state(): "cuda", "nocuda" (imports, no CUDA) or "absent" (TS_TORCH_STATE says so
instead). torch_skip_reason(): None when torch imports with CUDA, else (reason, expected):
a skip is expected on this machine when torch imports but has no CUDA while a GPU is present.
Standard library only (tests/scripts/test_gpu_checks.py runs the checkers on the CPU).
"""
import os
import subprocess


class Checks:
    def __init__(self, prefix):
        self.prefix = prefix
        self.passed = self.failed = self.skipped = self.expected_skips = 0

    def _line(self, name, detail, verdict):
        text = f"{self.prefix} {name}: {detail} -> {verdict}" if detail else \
            f"{self.prefix} {name} -> {verdict}"
        print(text, flush=True)

    def check(self, name, ok, detail=""):
        """PASS when ok is true, else FAIL; returns bool(ok)."""
        ok = bool(ok)
        self._line(name, detail, "PASS" if ok else "FAIL")
        if ok:
            self.passed += 1
        else:
            self.failed += 1
        return ok

    def fail(self, name, detail=""):
        return self.check(name, False, detail)

    def skip(self, name, reason, expected=False):
        tail = "; expected on this machine: counts as a failure" if expected else ""
        self._line(name, "", f"SKIP ({reason}{tail})")
        self.skipped += 1
        self.expected_skips += bool(expected)

    def skip_all(self, names, reason, expected=False):
        for n in names:
            self.skip(n, reason, expected)

    def guarded(self, names, fn):
        """Runs fn(), which makes the checks `names` in that order; an exception (a report
        lacking what a check reads, a command that broke) is the next one's FAIL and the
        rest SKIP, so that every expectation still has its line."""
        before = self.passed + self.failed + self.skipped
        try:
            fn()
        except Exception as e:  # noqa: BLE001
            rest = names[self.passed + self.failed + self.skipped - before:] or \
                ["(after its checks)"]
            self.fail(rest[0], f"raised {type(e).__name__}: {str(e)[:300]}")
            self.skip_all(rest[1:], "not run: an earlier check raised")

    @property
    def ok(self):
        return self.failed == 0 and self.expected_skips == 0

    def summary(self):
        """Prints the summary line; returns the exit status (0 or 1)."""
        if self.expected_skips:
            print(f"({self.expected_skips} of the skips are of sections expected on this "
                  f"machine)")
        print(f"{self.passed} passed, {self.failed} failed, {self.skipped} skipped", flush=True)
        return 0 if self.ok else 1


def have_gpu():
    v = os.environ.get("TS_HAVE_GPU")
    if v in ("0", "1"):
        return v == "1"
    try:
        out = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True).stdout
    except OSError:
        return False
    return any(line.startswith("GPU ") for line in out.splitlines())


def torch_state():
    v = os.environ.get("TS_TORCH_STATE")
    if v:
        return v
    try:
        import torch
    except Exception:  # noqa: BLE001 (a broken install does not import either)
        return "absent"
    return "cuda" if torch.cuda.is_available() else "nocuda"


def torch_skip_reason():
    state = torch_state()
    if state == "cuda":
        return None
    if state == "nocuda":
        return "torch imports but torch.cuda.is_available() is False", have_gpu()
    return "torch does not import", False
