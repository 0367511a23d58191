"""tracesmith.TraceError (pure Python, so that capture works without the extension)."""


class TraceError(RuntimeError):
    """A TraceSmith operation failed: the message names the file, byte offset or call."""
