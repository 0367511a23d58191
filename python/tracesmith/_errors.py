"""tracesmith.TraceError and TraceChangedError (pure Python, so that capture works
without the extension)."""


class TraceError(RuntimeError):
    """A TraceSmith operation failed: the message names the file, byte offset or call."""


class TraceChangedError(TraceError):
    """A lazily loaded trace's file changed, was replaced or is gone since
    tracesmith.load() read it: rows it has not read yet are not read from
    another file's contents (they would not match what was loaded). Load it
    again."""
