"""`python -m tracesmith ...`: runs the tracesmith command-line tool."""

import os
import shutil
import signal
import sys


def _find_cli() -> str:
    here = os.path.dirname(os.path.abspath(__file__))
    candidates = [
        os.environ.get("TRACESMITH_CLI", ""),
        os.path.join(here, "_bin", "bin", "tracesmith"),  # installed by pip
        os.path.join(here, "..", "..", "bin", "tracesmith"),  # <build>/python/tracesmith
    ]
    for c in candidates:
        if c and os.path.isfile(c) and os.access(c, os.X_OK):
            return os.path.realpath(c)
    found = shutil.which("tracesmith")
    if found:
        return found
    sys.exit("tracesmith: error: the tracesmith command-line tool was not found beside the "
             "package, in the build tree or on PATH (set TRACESMITH_CLI to its path)")


def main() -> None:
    cli = _find_cli()
    # Python ignores SIGPIPE and an exec'd program inherits that: restore the
    # default so `python -m tracesmith analyze X | head` ends quietly, as the
    # tool does when run directly.
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    os.execv(cli, [cli] + sys.argv[1:])


if __name__ == "__main__":
    main()
