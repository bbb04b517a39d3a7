"""Keep file tools inside the run's working directory.

Every path a tool is given goes through [`Sandbox`][agentkit.tools.Sandbox]. It is refused
with a [`ToolError`][agentkit.tools.ToolError] when it

- contains a NUL byte,
- starts with `~` (no home-directory expansion),
- is absolute and not inside the working directory,
- climbs above the working directory with `..`,
- reaches, through a symbolic link, anything outside the working directory.

How it resists a link swapped in between check and use: nothing is ever opened by its full
path. The sandbox opens the working directory once and walks the path one component at a
time with `os.open(name, O_NOFOLLOW, dir_fd=parent)` (an `openat` walk). A component that is
a symbolic link makes that open fail instead of being followed; the sandbox then reads the
link with `readlink(dir_fd=...)`, checks where it points *logically* (relative to the
working directory), and continues the walk from there, again component by component. So
the file descriptor finally returned was reached only through directories that were opened
inside the working directory, whatever is renamed or swapped meanwhile: a link swapped in
after a check is simply found (and checked) by the next `O_NOFOLLOW` open. `..` is resolved
on the walk's own stack of opened directories and can never pop the working directory
itself.

On platforms without `dir_fd` support (Windows) the sandbox falls back to checking the
resolved real path before use, which does not close the swap race.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from agentkit.tools._base import ToolError

__all__ = ["Sandbox"]

_MAX_LINKS = 40
_O_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_O_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_O_OPEN_FLAGS = _O_NOFOLLOW | _O_CLOEXEC | _O_NONBLOCK  # no blocking on a FIFO
_HAS_DIR_FD = os.open in os.supports_dir_fd and _O_NOFOLLOW != 0


@dataclass(frozen=True)
class Sandbox:
    """Paths and file access confined to one directory.

    Attributes:
        root: The working directory; it must exist.
    """

    root: Path

    def relative(self, path: str) -> str:
        """The lexically normalised path of `path` relative to the root (`"."` for the root).

        Does not touch the file system; links are checked when the path is opened.

        Raises:
            ToolError: The path is refused (see the module documentation).
        """
        return "/".join(self._parts(path)) or "."

    def real_relative(self, path: str) -> str:
        """`path` relative to the root after following links inside the sandbox.

        A missing tail is kept as written. Permission rules match this as well as the
        written path, so a link inside an allowed folder cannot reach a path outside it.

        Raises:
            ToolError: The path is refused.
        """
        parts = self._parts(path)
        if not parts:
            return "."
        if not _HAS_DIR_FD:
            real = self._check_fallback(parts)
            return real.relative_to(os.path.realpath(self.root)).as_posix()
        for _ in range(_MAX_LINKS):
            with self._walk_dirs(parts[:-1], create=False, missing_ok=True) as (dir_fd, st):
                if dir_fd is None:
                    return "/".join([*st, parts[-1]])
                if not _is_link(parts[-1], dir_fd):
                    return "/".join([*st, parts[-1]])
                followed = self._follow(st, parts[-1], dir_fd)
                parts = followed if followed is not None else [*st, parts[-1]]
            if not parts:
                return "."
        raise ToolError(f"{path!r}: too many levels of symbolic links")

    # -- opening ----------------------------------------------------------------------

    def open_file(
        self,
        path: str,
        flags: int = os.O_RDONLY,
        mode: int = 0o644,
        *,
        allow: Callable[[str], bool] | None = None,
    ) -> int:
        """Open a file inside the sandbox and return its descriptor (the caller closes it).

        With `os.O_CREAT` in `flags`, missing parent folders are *not* created; call
        [`make_parents`][agentkit.tools.Sandbox.make_parents] first.

        Args:
            path: The path, relative to the root (or absolute inside it).
            flags: `os.open` flags.
            mode: Permissions of a created file.
            allow: A permission rule, decided on the path that is really opened: the
                folders the walk opened and the final name (links followed), relative to
                the root. It is asked in the same walk, just before the final
                no-follow open, so a link swapped in meanwhile is found and decided on.

        Raises:
            ToolError: The path is refused (by the sandbox or `allow`), missing, or is a
                folder.
        """
        parts = self._parts(path)
        if not parts:
            raise ToolError(f"{path!r} is the working directory, not a file")
        if not _HAS_DIR_FD:
            real = self._check_fallback(parts)
            rel = real.relative_to(os.path.realpath(self.root)).as_posix()
            _check_allowed(allow, path, rel)
            return self._open_fallback(parts, flags, mode)
        for _ in range(_MAX_LINKS):
            with self._walk_dirs(parts[:-1], create=False) as (dir_fd, stack):
                assert dir_fd is not None
                name = parts[-1]
                _check_allowed(allow, path, "/".join([*stack, name]))
                try:
                    fd = os.open(name, flags | _O_OPEN_FLAGS, mode, dir_fd=dir_fd)
                except OSError as exc:
                    if not (exc.errno in (errno.ELOOP, errno.EMLINK) or _is_link(name, dir_fd)):
                        raise self._os_error(path, exc) from None
                    followed = self._follow(stack, name, dir_fd)
                    parts = followed if followed is not None else parts
                    fd = -1
            if fd < 0:
                if not parts:
                    raise ToolError(f"{path!r} is the working directory, not a file")
                continue
            return self._checked_fd(fd, path, flags)
        raise ToolError(f"{path!r}: too many levels of symbolic links")

    def make_parents(self, path: str, *, allow: Callable[[str], bool] | None = None) -> None:
        """Create the missing parent folders of `path` inside the sandbox.

        With `allow`, a folder is created only when the file would then be at a path the
        rule allows (decided on the folders really walked, links followed).
        """
        parts = self._parts(path)
        if not _HAS_DIR_FD:
            real = self._check_fallback(parts[:-1])
            real.mkdir(parents=True, exist_ok=True)
            return

        def creating(where: list[str]) -> None:
            _check_allowed(allow, path, "/".join([*where, parts[-1]]))

        with self._walk_dirs(parts[:-1], create=True, before_create=creating):
            pass

    @contextmanager
    def open_dir(
        self, path: str, *, allow: Callable[[str], bool] | None = None
    ) -> Iterator[int]:
        """Open a folder inside the sandbox; yields its descriptor and closes it after.

        `allow` decides on the folder really opened (links followed), as in
        [`open_file`][agentkit.tools.Sandbox.open_file].
        """
        parts = self._parts(path)
        if not _HAS_DIR_FD:
            real = self._check_fallback(parts)
            _check_allowed(allow, path, real.relative_to(os.path.realpath(self.root)).as_posix())
            fd = os.open(real, os.O_RDONLY | _O_DIRECTORY)
            try:
                yield fd
            finally:
                os.close(fd)
            return
        with self._walk_dirs(parts, create=False) as (dir_fd, stack):
            assert dir_fd is not None
            _check_allowed(allow, path, "/".join(stack))
            yield dir_fd

    def read_bytes(
        self, path: str, limit: int, *, allow: Callable[[str], bool] | None = None
    ) -> bytes:
        """Up to `limit` + 1 bytes of a file (so callers can tell it was longer)."""
        fd = self.open_file(path, allow=allow)
        with os.fdopen(fd, "rb") as handle:
            return handle.read(limit + 1)

    def write_bytes(
        self, path: str, data: bytes, *, allow: Callable[[str], bool] | None = None
    ) -> None:
        """Create or replace a file, creating missing parent folders.

        The file is truncated only after it is known to be a regular file with one link.
        """
        self.make_parents(path, allow=allow)
        fd = self.open_file(path, os.O_WRONLY | os.O_CREAT, allow=allow)
        with os.fdopen(fd, "wb") as handle:
            os.ftruncate(fd, 0)
            handle.write(data)

    def _checked_fd(self, fd: int, path: str, flags: int) -> int:
        """Refuse folders, non-regular files and (for writing) files with several links."""
        info = os.fstat(fd)
        problem = None
        if stat.S_ISDIR(info.st_mode):
            problem = "is a folder, not a file"
        elif not stat.S_ISREG(info.st_mode):
            problem = "is not a regular file"
        elif flags & (os.O_WRONLY | os.O_RDWR) and info.st_nlink > 1:
            problem = "has several hard links; it is not changed"
        if problem is not None:
            os.close(fd)
            raise ToolError(f"{self.relative(path)} {problem}")
        return fd

    # -- internals --------------------------------------------------------------------

    def _parts(self, path: str) -> list[str]:
        if not isinstance(path, str):
            raise ToolError("a path must be a string")
        if "\x00" in path:
            raise ToolError("a path must not contain NUL bytes")
        if path.startswith("~"):
            raise ToolError(f"{path!r}: `~` is not expanded; give a path in the working directory")
        raw = path.replace("\\", "/") if os.sep == "\\" else path
        if os.path.isabs(raw) or raw.startswith("/"):
            raw = self._strip_root(raw, path)
        stack: list[str] = []
        for part in raw.split("/"):
            if part in ("", "."):
                continue
            if part == "..":
                if not stack:
                    raise ToolError(f"{path!r} leaves the working directory")
                stack.pop()
                continue
            stack.append(part)
        return stack

    def _strip_root(self, raw: str, original: str) -> str:
        norm = os.path.normpath(raw)
        for root in {str(self.root), os.path.realpath(self.root)}:
            root = os.path.normpath(root)
            if norm == root:
                return ""
            if norm.startswith(root.rstrip(os.sep) + os.sep):
                return norm[len(root.rstrip(os.sep)) + 1 :]
        raise ToolError(f"{original!r} is outside the working directory")

    @contextmanager
    def _walk_dirs(
        self,
        parts: list[str],
        *,
        create: bool,
        missing_ok: bool = False,
        before_create: Callable[[list[str]], None] | None = None,
    ) -> Iterator[tuple[int | None, list[str]]]:
        """Open the folder `parts` by an O_NOFOLLOW walk; yield (fd, logical parts)."""
        fds: list[int] = [os.open(self.root, os.O_RDONLY | _O_DIRECTORY | _O_CLOEXEC)]
        stack: list[str] = []
        pending = list(parts)
        links = 0
        try:
            while pending:
                name = pending.pop(0)
                if name == "..":
                    if not stack:
                        raise ToolError("a symbolic link leads outside the working directory")
                    stack.pop()
                    os.close(fds.pop())
                    continue
                flags = os.O_RDONLY | _O_DIRECTORY | _O_NOFOLLOW | _O_CLOEXEC
                try:
                    fd = os.open(name, flags, dir_fd=fds[-1])
                except FileNotFoundError:
                    if create:
                        if before_create is not None:
                            before_create([*stack, name, *pending])
                        with contextlib.suppress(FileExistsError):  # made meanwhile
                            os.mkdir(name, 0o755, dir_fd=fds[-1])
                        pending.insert(0, name)
                        continue
                    if missing_ok:
                        yield None, [*stack, name, *pending]
                        return
                    raise ToolError(f"{'/'.join([*stack, name])}: no such folder") from None
                except OSError as exc:
                    if _is_link(name, fds[-1]):
                        links += 1
                        if links > _MAX_LINKS:
                            raise ToolError("too many levels of symbolic links") from None
                        new_parts = self._follow(stack, name, fds[-1])
                        if new_parts is None:
                            pending.insert(0, name)
                            continue
                        # Restart from the root with the link's target in place.
                        for extra in fds[1:]:
                            os.close(extra)
                        del fds[1:]
                        stack = []
                        pending = new_parts + pending
                        continue
                    if exc.errno == errno.ENOTDIR:
                        raise ToolError(f"{'/'.join([*stack, name])} is not a folder") from None
                    raise self._os_error("/".join([*stack, name]), exc) from None
                fds.append(fd)
                stack.append(name)
            yield fds[-1], stack
        finally:
            for fd in fds:
                os.close(fd)

    def _link_target(self, stack: list[str], target: str) -> list[str]:
        """Where a link found at `stack/<link>` points, as components from the root."""
        if os.path.isabs(target):
            try:
                return self._parts(target)
            except ToolError:
                raise ToolError("a symbolic link leads outside the working directory") from None
        result = list(stack)
        for part in target.split("/"):
            if part in ("", "."):
                continue
            if part == "..":
                if not result:
                    raise ToolError("a symbolic link leads outside the working directory")
                result.pop()
            else:
                result.append(part)
        return result

    def _follow(self, stack: list[str], name: str, dir_fd: int) -> list[str] | None:
        """Components of the link `name`'s target; `None` if it is no longer a link."""
        try:
            target = os.readlink(name, dir_fd=dir_fd)
        except OSError:
            return None  # swapped under us: the caller looks again
        return self._link_target(stack, target)

    def _check_fallback(self, parts: list[str]) -> Path:
        root = Path(os.path.realpath(self.root))
        real = Path(os.path.realpath(root.joinpath(*parts)))
        if real != root and root not in real.parents:
            raise ToolError("a symbolic link leads outside the working directory")
        return real

    def _open_fallback(self, parts: list[str], flags: int, mode: int) -> int:
        real = self._check_fallback(parts)
        try:
            fd = os.open(real, flags | _O_NONBLOCK, mode)
        except OSError as exc:
            raise self._os_error("/".join(parts), exc) from None
        return self._checked_fd(fd, "/".join(parts), flags)

    def _os_error(self, path: str, exc: OSError) -> ToolError:
        shown = path if path else "."
        if isinstance(exc, FileNotFoundError):
            return ToolError(f"{shown}: no such file")
        if isinstance(exc, IsADirectoryError):
            return ToolError(f"{shown} is a folder, not a file")
        if isinstance(exc, PermissionError):
            return ToolError(f"{shown}: permission denied")
        return ToolError(f"{shown}: {exc.strerror or exc}")


def _check_allowed(allow: Callable[[str], bool] | None, path: str, opened: str) -> None:
    """Refuse `path` when the permission rule `allow` does not allow where it really leads."""
    opened = opened or "."
    if allow is not None and not allow(opened):
        shown = f"{path!r} leads to {opened}, which" if opened != path.strip("/") else repr(path)
        raise ToolError(f"{shown} is not allowed by the permission rules")


def _is_link(name: str, dir_fd: int) -> bool:
    try:
        return stat.S_ISLNK(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode)
    except OSError:
        return False
