"""A small filesystem of its own for a test, to fill up: what a full disk does to a store
or a worker, for real (the kernel's ENOSPC, not a mock).

```python
with small_filesystem() as disk:
    store = SQLiteStore(disk.path / "rooms.db")
    ...
    disk.fill()  # every byte taken: the next write that needs a new block fails
    ...
    disk.free()  # room again
```

It mounts a `tmpfs` of `size` bytes on a fresh directory, so the tests need to run as
root (or with `CAP_SYS_ADMIN`): where mounting is not allowed, `small_filesystem` raises
`FullDiskUnavailable` saying so, rather than skipping a test that would then prove
nothing.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

__all__ = ["FullDiskUnavailable", "SmallFilesystem", "small_filesystem"]

_CHUNK = 64 * 1024


class FullDiskUnavailable(RuntimeError):
    """The small filesystem cannot be mounted here (not root, no `mount`, no tmpfs)."""


class SmallFilesystem:
    """A mounted filesystem of a few megabytes at `path`, and a filler file to take all of
    its free space (`fill`) and give it back (`free`)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.filler = path / ".filler"

    def free_bytes(self) -> int:
        """The bytes still free on the filesystem."""
        stats = os.statvfs(self.path)
        return stats.f_bavail * stats.f_frsize

    def fill(self) -> int:
        """Write to the filler file until the filesystem is full (the kernel says ENOSPC);
        returns the bytes written. Writes already on disk stay; nothing else fits."""
        written = 0
        chunk = b"\0" * _CHUNK
        with open(self.filler, "ab", buffering=0) as out:
            size = len(chunk)
            while size:
                try:
                    written += out.write(chunk[:size])
                except OSError as exc:
                    if exc.errno != errno.ENOSPC:
                        raise
                    size //= 2  # the last blocks: down to a single byte
        if self.free_bytes() != 0:
            raise AssertionError(f"{self.path} is not full after filling it")
        return written

    def free(self) -> None:
        """Delete the filler file: the space it took is free again."""
        with contextlib.suppress(FileNotFoundError):
            self.filler.unlink()


@contextlib.contextmanager
def small_filesystem(size: str = "2m") -> Iterator[SmallFilesystem]:
    """A fresh `tmpfs` of `size` (`mount`'s notation: `2m`, `512k`) mounted for the block,
    then unmounted and removed with everything on it.

    Raises:
        FullDiskUnavailable: It cannot be mounted here (the message says why).
    """
    if shutil.which("mount") is None or shutil.which("umount") is None:
        raise FullDiskUnavailable("no mount/umount command: cannot make a small filesystem")
    where = Path(tempfile.mkdtemp(prefix="agentkit-disk-"))
    try:
        done = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={size},mode=0700", "tmpfs", str(where)],
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode != 0:
            raise FullDiskUnavailable(
                f"cannot mount a {size} tmpfs on {where} (tests that fill a disk need root "
                f"or CAP_SYS_ADMIN): {done.stderr.strip() or f'mount exited {done.returncode}'}"
            )
        try:
            yield SmallFilesystem(where)
        finally:
            # Lazily: a file a test left open (a store it did not close) must not keep
            # the mount, nor hide the test's own failure.
            subprocess.run(["umount", "-l", str(where)], capture_output=True, check=False)
    finally:
        with contextlib.suppress(OSError):
            where.rmdir()
