"""Limits on the files users give agentkit (app YAML, agent YAML, Markdown definitions), and
reading such a file without trusting what it is.

A definition or app file is small: these limits are far above any real one and far below
what makes a loader slow. They are documented in docs/security.md.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

__all__ = [
    "MAX_FILE_BYTES",
    "MAX_NESTING",
    "MAX_NODES",
    "MAX_NUMBER_CHARS",
    "InputFileError",
    "read_input_file",
]

MAX_FILE_BYTES = 1024 * 1024
"""Largest app, agent or definition file accepted (1 MiB)."""
MAX_NESTING = 64
"""Deepest nesting of mappings and lists in a YAML file."""
MAX_NODES = 20_000
"""Most nodes in one YAML file: every mapping, list, key, value and list item counts."""
MAX_NUMBER_CHARS = 100
"""Longest unquoted number in a YAML file (Python refuses to convert ints over 4,300
digits, and no field needs more than a few)."""

_O_NONBLOCK = getattr(os, "O_NONBLOCK", 0)  # opening a FIFO must not wait for a writer
_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


class InputFileError(Exception):
    """The file cannot be used at all; the message says why (no position)."""


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a named pipe (FIFO)"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def file_problem(path: Path) -> str | None:
    """Why `path` (links followed) is not a regular file, or `None` when it is one."""
    try:
        info = os.stat(path)
    except FileNotFoundError:
        return "no such file"
    except OSError as exc:
        return f"cannot read file: {exc.strerror or exc}"
    if stat.S_ISREG(info.st_mode):
        return None
    return f"is {_kind(info.st_mode)}, not a regular file"


def read_input_file(path: Path, limit: int = MAX_FILE_BYTES) -> bytes:
    """The bytes of the regular file `path`, at most `limit` of them.

    The file is opened without blocking and checked on the opened descriptor, so a FIFO, a
    device (a link to `/dev/zero`) or a file swapped in meanwhile is refused, never read.

    Raises:
        InputFileError: the file is missing, unreadable, not a regular file or too large.
    """
    try:
        fd = os.open(path, os.O_RDONLY | _O_NONBLOCK | _O_CLOEXEC)
    except FileNotFoundError:
        raise InputFileError("no such file") from None
    except OSError as exc:
        raise InputFileError(f"cannot read file: {exc.strerror or exc}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise InputFileError(f"is {_kind(info.st_mode)}, not a regular file")
        too_large = (
            f"the file is larger than {limit:,} bytes ({limit // 1024} KiB), the limit "
            "for an app, agent or definition file"
        )
        if info.st_size > limit:
            raise InputFileError(too_large)
        chunks: list[bytes] = []
        size = 0
        while size <= limit:  # the size may have changed since fstat
            chunk = os.read(fd, limit + 1 - size)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        if size > limit:
            raise InputFileError(too_large)
        return b"".join(chunks)
    except OSError as exc:
        raise InputFileError(f"cannot read file: {exc.strerror or exc}") from None
    finally:
        os.close(fd)
