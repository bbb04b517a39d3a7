"""Attachments: paths of existing files under the machine's attachment roots.

A path is accepted only when it is absolute, lies under a root as written (after `..` is
resolved lexically), and its real path (every link followed) is a regular file that
also lies under a root. So `..`, a link pointing outside, and a path outside every root
are all refused, before any run is accepted.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable, Sequence
from pathlib import Path

from agentkit.conversations._errors import AttachmentError

__all__ = ["DEFAULT_ATTACHMENT_ROOTS", "check_attachments", "normalise_roots"]

DEFAULT_ATTACHMENT_ROOTS: tuple[str, ...] = ("/space", "/rool-drive")
"""Where attachments may live unless the machine is configured otherwise."""


def normalise_roots(roots: Iterable[str | os.PathLike[str]]) -> tuple[Path, ...]:
    """The roots as absolute paths, each also by its real path (both forms are checked)."""
    found: list[Path] = []
    for root in roots:
        path = Path(os.path.abspath(os.fspath(root)))
        for form in (path, Path(os.path.realpath(path))):
            if form not in found:
                found.append(form)
    if not found:
        raise ValueError("a machine needs at least one attachment root")
    return tuple(found)


def _inside(path: str, roots: Sequence[Path]) -> bool:
    return any(path == str(root) or path.startswith(str(root).rstrip("/") + "/") for root in roots)


def check_attachments(paths: Sequence[str], roots: Sequence[Path]) -> list[str]:
    """The attachments as normalised absolute paths, or `AttachmentError` for the first
    one refused (naming it and why)."""
    shown = ", ".join(str(root) for root in roots)
    checked: list[str] = []
    for raw in paths:
        if not isinstance(raw, str) or not raw or "\0" in raw:
            raise AttachmentError(f"attachment {raw!r} is not a path")
        if not os.path.isabs(raw):
            raise AttachmentError(
                f"attachment {raw!r} is not an absolute path: give the path of a file under {shown}"
            )
        written = os.path.normpath(raw)
        if not _inside(written, roots):
            raise AttachmentError(f"attachment {raw!r} is outside the attachment roots ({shown})")
        real = os.path.realpath(written)
        if not _inside(real, roots):
            raise AttachmentError(
                f"attachment {raw!r} leads outside the attachment roots ({shown}) through a link"
            )
        try:
            mode = os.stat(real).st_mode
        except OSError:
            raise AttachmentError(
                f"attachment {raw!r} does not exist: upload the file first"
            ) from None
        if not stat.S_ISREG(mode):
            raise AttachmentError(f"attachment {raw!r} is not a regular file")
        checked.append(written)
    return checked
