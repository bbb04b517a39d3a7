"""Uploads: files members store on the machine, to attach to their prompts by path.

An upload is stored as `<root>/uploads/<member folder>/<name>`, where `<root>` is the
first of the machine's attachment roots that exists. The body is written to a temporary
file in that folder while it is read (the size limit and the member's quota enforced as
it comes, never trusting a declared length) and renamed to its name only once complete:
an upload that fails, is refused or is cut off leaves nothing behind. An upload never
replaces a file: a name already taken becomes `<stem>-2<ext>`, `<stem>-3<ext>`, ...

The member's folder is a namespace and a quota, not a privacy boundary: every agent of the
machine may read the attachment roots.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import re
import stat
import tempfile
import unicodedata
from collections.abc import AsyncIterable, AsyncIterator, Callable, Sequence
from pathlib import Path
from typing import Any, BinaryIO, TypeVar

import anyio

from agentkit.conversations._access import Access, require_writer
from agentkit.conversations._errors import UploadError, UploadQuotaError, UploadTooLargeError
from agentkit.conversations._models import Member, UploadedFile

__all__ = [
    "DEFAULT_MAX_UPLOAD_BYTES",
    "DEFAULT_UPLOAD_QUOTA_BYTES",
    "MAX_UPLOAD_NAME_BYTES",
    "UPLOADS_FOLDER",
    "UploadService",
    "local_source",
    "member_folder",
    "upload_name",
]

UPLOADS_FOLDER = "uploads"
"""The folder of an attachment root that holds the members' upload folders."""

DEFAULT_MAX_UPLOAD_BYTES = 100 * 1024 * 1024
"""The largest file an upload may store by default (100 MiB)."""

DEFAULT_UPLOAD_QUOTA_BYTES = 1024 * 1024 * 1024
"""What a member's upload folder may hold in all by default (1 GiB)."""

MAX_UPLOAD_NAME_BYTES = 200
"""The longest file name an upload may have, in bytes of UTF-8 (room is left for the
`-2` of a taken name under the usual 255-byte limit of file systems)."""

_TEMP_PREFIX = ".upload-"
_TEMP_SUFFIX = ".part"
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_MAX_TRIES = 10_000
_CHUNK = 256 * 1024

_T = TypeVar("_T")


def member_folder(member: Member) -> str:
    """The name of `member`'s upload folder (under `<root>/uploads/`): its id (32 hex
    digits), which no later member of the same name shares, so a newcomer never finds an
    old member's files or quota in its folder."""
    return member.id


def upload_name(raw: str) -> str:
    """The name an upload asked to be stored as `raw` is stored under: its last path
    segment (a browser may send `C:\\fakepath\\notes.txt`), normalised to NFC.

    Raises:
        UploadError: The name is empty, has a `..` segment, a control character (NUL
            included), starts with `.`, or is over `MAX_UPLOAD_NAME_BYTES`.
    """
    if not isinstance(raw, str):
        raise UploadError(f"the file name must be a string, not {type(raw).__name__}")
    name = unicodedata.normalize("NFC", raw)
    if _CONTROL.search(name):
        raise UploadError(f"the file name {raw!r} has a control character")
    segments = re.split(r"[/\\]", name)
    if ".." in (segment.strip() for segment in segments):
        raise UploadError(f"the file name {raw!r} has a '..' segment")
    base = segments[-1].strip()
    if not base:
        raise UploadError(f"the file name {raw!r} names no file: give one, like notes.txt")
    if base.startswith("."):
        raise UploadError(f"the file name {base!r} starts with '.': give a visible name")
    if len(base.encode("utf-8")) > MAX_UPLOAD_NAME_BYTES:
        raise UploadError(
            f"the file name is over {MAX_UPLOAD_NAME_BYTES} bytes: give a shorter one"
        )
    return base


class UploadService:
    """The uploads of a machine (`machine.uploads`): owners and editors store files in
    their own folder under an attachment root; viewers cannot.

    Args:
        access: The machine's access checks.
        roots: The attachment roots as configured (absolute); uploads go to the first one
            that exists when the upload starts.
        max_bytes: The largest file an upload may store.
        quota_bytes: What a member's folder may hold in all (its files, read from the
            disk, and the uploads of this process still being written).
    """

    def __init__(
        self, access: Access, roots: Sequence[Path], *, max_bytes: int, quota_bytes: int
    ) -> None:
        for option, value in (("max_upload_bytes", max_bytes), ("upload_quota_bytes", quota_bytes)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{option} must be a number of bytes above 0, not {value!r}")
        self._access = access
        self._roots = tuple(roots)
        self.max_bytes = max_bytes
        """The largest file an upload may store, in bytes."""
        self.quota_bytes = quota_bytes
        """What a member's folder may hold in all, in bytes."""
        self._pending: dict[str, int] = {}
        self._locks: dict[str, anyio.Lock] = {}

    def root(self) -> Path:
        """The attachment root uploads go to: the first that exists.

        Raises:
            UploadError: None of the roots exists.
        """
        for root in self._roots:
            if root.is_dir():
                return root
        shown = ", ".join(str(root) for root in self._roots)
        raise UploadError(
            f"this machine has no attachment root to store uploads in: none of {shown} exists"
        )

    async def save(
        self,
        member: Member,
        filename: str,
        chunks: AsyncIterable[bytes],
        *,
        declared_size: int | None = None,
    ) -> UploadedFile:
        """Store the bytes of `chunks` as `filename` in `member`'s folder; returns where.

        `declared_size`, when the caller knows it (a request's `Content-Length`), lets an
        upload that cannot fit be refused before anything is read; the limits are still
        enforced on the bytes as they come.

        Raises:
            AccessDeniedError: The member is a viewer, or no longer a member.
            UploadError: A bad file name, or no attachment root exists.
            UploadTooLargeError: The file is over `max_bytes`.
            UploadQuotaError: It would take the member's folder over `quota_bytes`.
        """
        current = await self._access.member(member)
        require_writer(current, "upload files")
        name = upload_name(filename)
        root = self.root()
        folder = await anyio.to_thread.run_sync(_member_folder, root, member_folder(current))
        key = str(folder)
        used = await anyio.to_thread.run_sync(_folder_size, folder)
        if declared_size is not None:
            self._check(declared_size, used + self._pending.get(key, 0) + declared_size)
        try:
            fd, temp = tempfile.mkstemp(dir=folder, prefix=_TEMP_PREFIX, suffix=_TEMP_SUFFIX)
        except OSError as exc:
            raise UploadError(f"cannot store the upload in {folder}: {exc.strerror}") from None
        written = 0
        self._pending[key] = self._pending.get(key, 0)
        try:
            with os.fdopen(fd, "wb") as out:
                async for chunk in chunks:
                    if not chunk:
                        continue
                    written += len(chunk)
                    self._pending[key] += len(chunk)
                    self._check(written, used + self._pending[key])
                    await _on_disk(folder, out.write, chunk)
                await _on_disk(folder, _flush, out)
            lock = self._locks.setdefault(key, anyio.Lock())
            async with lock:
                # The folder as it is now: what other uploads stored meanwhile counts.
                now = await anyio.to_thread.run_sync(_folder_size, folder)
                self._check(written, now + written)
                final = await _on_disk(folder, _publish, temp, folder, name)
        except BaseException:  # refused, cut off, failed or cancelled: nothing left behind
            _remove(temp)
            raise
        finally:
            self._pending[key] -= written
            if self._pending[key] <= 0:
                del self._pending[key]
        return UploadedFile(path=str(final), name=final.name, size=written)

    def _check(self, size: int, total: int) -> None:
        if size > self.max_bytes:
            raise UploadTooLargeError(
                f"the file is over the upload limit of {self.max_bytes} bytes"
            )
        if total > self.quota_bytes:
            raise UploadQuotaError(
                f"the upload would take your folder over its quota of {self.quota_bytes} "
                "bytes: delete files from it, or ask the machine's operator for more"
            )


async def _on_disk(folder: Path, call: Callable[..., _T], *args: Any) -> _T:
    """`call(*args)` in a worker thread; a failure of the disk (a full one, say) is an
    `UploadError` that says so."""
    try:
        return await anyio.to_thread.run_sync(call, *args)
    except OSError as exc:
        raise UploadError(f"cannot store the upload in {folder}: {exc.strerror}") from None


def _member_folder(root: Path, name: str) -> Path:
    """`<root>/uploads/<name>`, made if needed; refused when a part of it is a link (an
    agent's tools could have made one, to have uploads written elsewhere)."""
    folder = root
    for part in (UPLOADS_FOLDER, name):
        folder = folder / part
        try:
            folder.mkdir(exist_ok=True)
        except OSError as exc:
            raise UploadError(f"cannot make the upload folder {folder}: {exc.strerror}") from None
        if folder.is_symlink() or not folder.is_dir():
            raise UploadError(f"the upload folder {folder} is not a plain folder")
    return folder


def _folder_size(folder: Path) -> int:
    """The bytes of the regular files under `folder` (links not followed), the
    temporary files of uploads being written left out."""
    total = 0
    for directory, folders, files in os.walk(folder):
        for name in files:
            if name.startswith(_TEMP_PREFIX) and name.endswith(_TEMP_SUFFIX):
                continue
            try:
                info = os.lstat(os.path.join(directory, name))
            except OSError:
                continue  # removed meanwhile
            if stat.S_ISREG(info.st_mode):
                total += info.st_size
        folders[:] = [f for f in folders if not os.path.islink(os.path.join(directory, f))]
    return total


def _flush(out: BinaryIO) -> None:
    out.flush()
    os.fsync(out.fileno())


def _publish(temp: str, folder: Path, name: str) -> Path:
    """Give the complete file `temp` its name in `folder`, or the first free one of
    `<stem>-2<ext>`, ...; an existing file is never replaced."""
    stem, ext = os.path.splitext(name)
    for number in itertools.count(1):
        if number > _MAX_TRIES:
            raise UploadError(f"too many files are named like {name!r}: give another name")
        target = folder / (name if number == 1 else f"{stem}-{number}{ext}")
        try:
            os.link(temp, target)
        except FileExistsError:
            continue
        except OSError:
            # A file system without hard links: reserve the name, then move onto it.
            try:
                fd = os.open(target, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
            except FileExistsError:
                continue
            os.close(fd)
            os.replace(temp, target)
            return target
        _remove(temp)
        return target
    raise AssertionError("unreachable")  # pragma: no cover


def _remove(path: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)


def local_source(
    file: str | os.PathLike[str] | bytes, filename: str | None
) -> tuple[str, int, AsyncIterator[bytes]]:
    """What `client.upload(file, filename=...)` sends: the name, the size and the bytes
    (read as they are sent) of a local file or of bytes.

    Raises:
        UploadError: Bytes without a `filename`, or a file that cannot be read.
    """
    if isinstance(file, (bytes, bytearray, memoryview)):
        if filename is None:
            raise UploadError("give the file's name: upload(data, filename='notes.txt')")
        data = bytes(file)
        return filename, len(data), _once(data)
    if not isinstance(file, (str, os.PathLike)):
        raise UploadError(f"upload takes a file's path or bytes, not {type(file).__name__}")
    path = Path(os.fspath(file)).expanduser()
    try:
        info = path.stat()
    except OSError as exc:
        raise UploadError(f"cannot read {str(path)!r}: {exc.strerror}") from None
    if not stat.S_ISREG(info.st_mode):
        raise UploadError(f"{str(path)!r} is not a file")
    return filename if filename is not None else path.name, info.st_size, _read(path)


async def _once(data: bytes) -> AsyncIterator[bytes]:
    yield data


async def _read(path: Path) -> AsyncIterator[bytes]:
    try:
        async with await anyio.open_file(path, "rb") as source:
            while chunk := await source.read(_CHUNK):
                yield chunk
    except OSError as exc:
        raise UploadError(f"cannot read {str(path)!r}: {exc.strerror}") from None
