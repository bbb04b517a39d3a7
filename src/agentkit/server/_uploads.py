"""`POST /v1/files`: a file into the caller's upload folder (`machine.uploads`), sent as
the raw request body with `?filename=`, or as the one file of a `multipart/form-data` body
(what an HTML form or `curl -F file=@notes.txt` sends).

Nothing is held in memory: the body is streamed to the upload's temporary file as it
comes, the multipart one through a small parser of its own (no dependency), with the
machine's limits enforced on the bytes read, never on a declared length alone.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from email.message import Message
from email.parser import HeaderParser

from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response

from agentkit.client.contract import UPLOAD_FILE
from agentkit.conversations import Member, UploadError
from agentkit.server._errors import HTTPError
from agentkit.server._http import json_response, state_of

__all__ = ["MultipartFile", "upload_file"]

_HEADERS_LIMIT = 16 * 1024
"""The longest header block of a part."""
_FIELD_LIMIT = 64 * 1024
"""The most bytes read of anything around the file: the preamble, another field."""


async def upload_file(request: Request, member: Member) -> Response:
    uploads = state_of(request).machine.uploads
    content_type = request.headers.get("content-type", "")
    media = content_type.partition(";")[0].strip().lower()
    named = request.query_params.get("filename")
    try:
        if media == "multipart/form-data":
            parts = MultipartFile(request.stream(), _boundary(content_type))
            sent = await parts.start()
            filename = named if named is not None else sent
            stored = await uploads.save(member, filename, parts.body())
        else:
            if named is None:
                raise UploadError(
                    f"give the file's name: {UPLOAD_FILE.method} {UPLOAD_FILE.path}"
                    "?filename=notes.txt with the file as the body, or send it as "
                    "multipart/form-data"
                )
            stored = await uploads.save(
                member, named, request.stream(), declared_size=_declared(request)
            )
    except ClientDisconnect:
        # The client went away mid-body: nothing was stored, and nobody reads this.
        return Response(status_code=400)
    return json_response(stored, 201)


def _declared(request: Request) -> int | None:
    raw = request.headers.get("content-length", "").strip()
    return int(raw) if raw.isdigit() else None


def _boundary(content_type: str) -> bytes:
    header = Message()
    header["content-type"] = content_type
    boundary = header.get_param("boundary")
    if not isinstance(boundary, str) or not 1 <= len(boundary) <= 70 or not boundary.isascii():
        raise HTTPError(
            "bad_request", "a multipart/form-data body needs a boundary (1-70 characters)"
        )
    return boundary.encode("ascii")


def _malformed(why: str) -> HTTPError:
    return HTTPError("bad_request", f"the multipart/form-data body is malformed: {why}")


class MultipartFile:
    """The one file of a `multipart/form-data` body, read as it streams.

    `start()` reads up to the file part's body (skipping the fields before it) and
    returns the file's name; `body()` then yields the file's bytes and, once they end,
    reads the rest of the body: fields are skipped, a second file is refused, and a body
    cut short raises (so that the upload stores nothing).

    Args:
        stream: The request body's chunks.
        boundary: The boundary the `Content-Type` names.
    """

    def __init__(self, stream: AsyncIterator[bytes], boundary: bytes) -> None:
        self._stream = stream
        self._delimiter = b"\r\n--" + boundary
        # A CRLF before the body: the first delimiter then looks like every other one.
        self._buffer = b"\r\n"

    async def _more(self) -> bool:
        try:
            chunk = await anext(self._stream)
        except StopAsyncIteration:
            return False
        self._buffer += chunk
        return True

    async def _until(self, marker: bytes, limit: int, what: str) -> bytes:
        """The bytes before `marker`, consumed with it (at most `limit` of them)."""
        while (index := self._buffer.find(marker)) < 0:
            if len(self._buffer) > limit + len(marker):
                raise _malformed(f"{what} is over {limit} bytes")
            if not await self._more():
                raise _malformed(f"the body ended in {what}")
        found = self._buffer[:index]
        self._buffer = self._buffer[index + len(marker) :]
        return found

    async def _after_delimiter(self) -> bool:
        """After a delimiter: `True` when a part follows, `False` at the closing one."""
        while len(self._buffer) < 2:
            if not await self._more():
                raise _malformed("the body ended after a boundary")
        mark, self._buffer = self._buffer[:2], self._buffer[2:]
        if mark == b"--":
            return False
        if mark != b"\r\n":
            raise _malformed("a boundary is followed by neither CRLF nor '--'")
        return True

    async def _part_filename(self) -> str | None:
        """A part's headers: the `filename` of its `Content-Disposition`, if any."""
        if self._buffer.startswith(b"\r\n"):
            self._buffer = self._buffer[2:]
            return None  # a part without headers
        raw = await self._until(b"\r\n\r\n", _HEADERS_LIMIT, "a part's headers")
        headers = HeaderParser().parsestr(raw.decode("utf-8", "replace"))
        if headers.get("content-disposition") is None:
            return None
        filename = headers.get_filename()
        return filename if isinstance(filename, str) else None

    async def start(self) -> str:
        """Read up to the file's bytes; returns the name the body gives it.

        Raises:
            HTTPError: The body is malformed (`bad_request`).
            UploadError: The body has no file.
        """
        await self._until(self._delimiter, _FIELD_LIMIT, "the preamble")
        while await self._after_delimiter():
            filename = await self._part_filename()
            if filename is not None:
                return filename
            await self._until(self._delimiter, _FIELD_LIMIT, "a field")
        raise UploadError("the multipart/form-data body has no file (a part with a filename)")

    async def body(self) -> AsyncIterator[bytes]:
        """The file's bytes as they come; then the rest of the body is checked."""
        keep = len(self._delimiter) - 1
        while (index := self._buffer.find(self._delimiter)) < 0:
            if len(self._buffer) > keep:
                # All but what could be the start of the delimiter.
                chunk, self._buffer = self._buffer[:-keep], self._buffer[-keep:]
                yield chunk
            if not await self._more():
                raise _malformed("the body ended inside the file")
        if index:
            yield self._buffer[:index]
        self._buffer = self._buffer[index + len(self._delimiter) :]
        while await self._after_delimiter():
            if await self._part_filename() is not None:
                raise UploadError("a multipart/form-data upload carries one file")
            await self._until(self._delimiter, _FIELD_LIMIT, "a field")
