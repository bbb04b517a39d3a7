"""The command line's exit codes, and the error that ends a command with exit code 2."""

from __future__ import annotations

import signal

__all__ = ["EXIT_FAILED", "EXIT_OK", "EXIT_SIGINT", "EXIT_SIGTERM", "EXIT_USAGE", "UsageError"]

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_SIGINT = 128 + signal.SIGINT  # 130, what a shell reports for a Ctrl-C'd program
EXIT_SIGTERM = 128 + signal.SIGTERM  # 143, likewise for `kill`, `timeout`, `docker stop`


class UsageError(Exception):
    """A mistake in how the command was called, or an environment problem (exit 2)."""
