"""The library's log records as one-line errors on the command line's stderr."""

from __future__ import annotations

import contextlib
import logging
import sys
from collections.abc import Iterator

__all__ = ["OneLineLog", "library_log"]


class OneLineLog(logging.Handler):
    """Prints the library's log records as `agentkit: error: ...` lines, without the
    traceback Python's last-resort handler would print (a store that fails to save the
    end of a run is an environment problem, not a bug to debug), and remembers whether a
    store failed so that the exit code can say so."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.store_failed = False

    def emit(self, record: logging.LogRecord) -> None:
        """Print the record as one `agentkit: error|warning: ...` line."""
        from agentkit.stores import StoreError

        level = "error" if record.levelno >= logging.ERROR else "warning"
        line = record.getMessage()
        cause = getattr(record, "cause", None)  # named in the message already
        if record.exc_info and record.exc_info[1] is not None:
            cause = record.exc_info[1]
            line += f": {type(cause).__name__}: {cause}"
        if isinstance(cause, StoreError | OSError):
            self.store_failed = True
        # When stderr is gone there is nothing better to do with a log line.
        with contextlib.suppress(OSError, ValueError):
            print(f"agentkit: {level}: {line}", file=sys.stderr, flush=True)


@contextlib.contextmanager
def library_log() -> Iterator[OneLineLog]:
    """Library log records as one-line errors on stderr while the block runs."""
    logger = logging.getLogger("agentkit")
    handler = OneLineLog()
    logger.addHandler(handler)
    try:
        yield handler
    finally:
        logger.removeHandler(handler)
