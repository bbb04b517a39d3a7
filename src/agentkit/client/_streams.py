"""Event streams read straight off their connections, without httpx.

A followed run's stream is a GET answered with a chunked body of small events, each
arriving by itself. Read through httpx, every event goes through httpx's and httpcore's
layers, h11's parser and a new timeout scope: about 170 us of CPU per event, so that a
client following a run of 20 deltas spent more on it than the server did producing it.
Here a stream is one GET written by hand on a kept-alive connection of the client's own
(plain TCP or TLS, through anyio), its head parsed once, its chunks decoded by a few
string operations, with one timeout scope per stream whose deadline moves as data comes.

Only event streams take this path, and only where nothing stands between the client and
the server (no proxy in the environment for the server's address: httpx honours those,
so streams to such a server go through httpx). Every other request goes through httpx.
"""

from __future__ import annotations

import contextlib
import select
import ssl
import time
import urllib.parse
import urllib.request
from collections.abc import AsyncGenerator, AsyncIterator, Mapping
from typing import TYPE_CHECKING

import anyio
import anyio.abc

if TYPE_CHECKING:
    import asyncio
    from collections.abc import Callable

__all__ = ["Connections", "StreamFailed", "StreamHead", "direct"]

_MAX_HEAD = 64 * 1024  # a response head longer than this is not a server's answer
_MAX_IDLE = 20  # kept-alive connections kept for the next streams
_CHUNK = 65536
# A kept-alive connection is used again within 5 s or closed, as httpx does: well before
# the server closes it (15 s by default), so that a request never goes on a connection
# the server is closing.
_IDLE_EXPIRY = 5.0


class StreamFailed(Exception):
    """The connection could not be made, broke, or answered something unreadable."""


def direct(url: str) -> bool:
    """Whether a stream to `url` may be read here: a plain `http` or `https` URL with no
    proxy in the environment that httpx would use for it."""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return False
    proxies = urllib.request.getproxies_environment()
    if not (proxies.get(parts.scheme) or proxies.get("all")):
        return True
    return bool(urllib.request.proxy_bypass(parts.hostname))


class _AsyncioStream:
    """An asyncio stream pair as the part of anyio's `ByteStream` used here. On asyncio
    the connections are asyncio's streams: anyio's socket stream stops and resumes the
    socket's reading around every read (two system calls), its stream reader does not."""

    __slots__ = ("_reader", "_writer")

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._reader = reader
        self._writer = writer

    async def receive(self, max_bytes: int) -> bytes:
        data = await self._reader.read(max_bytes)
        if not data:
            raise anyio.EndOfStream
        return data

    async def send(self, data: bytes) -> None:
        self._writer.write(data)
        await self._writer.drain()

    def closed_by_peer(self) -> bool:
        return self._reader.at_eof() or self._writer.is_closing()

    async def aclose(self) -> None:
        self._writer.close()
        with contextlib.suppress(Exception):
            await self._writer.wait_closed()


class StreamHead:
    """A response's status line and headers (names lower-cased)."""

    __slots__ = ("headers", "status")

    def __init__(self, status: int, headers: dict[str, str]) -> None:
        self.status = status
        self.headers = headers


class _Connection:
    """One connection: its byte stream and what was read of it but not used yet."""

    __slots__ = ("buffer", "deadline", "expired", "per_read", "stream", "timeout")

    def __init__(self, stream: anyio.abc.ByteStream | _AsyncioStream, *, per_read: bool) -> None:
        self.stream = stream
        self.per_read = per_read  # no watchdog: each read has a timeout scope
        self.buffer = b""
        self.timeout = 0.0  # seconds a read may wait
        self.deadline = float("inf")  # `time.monotonic()` past which the watchdog closes it
        self.expired = False  # closed by the watchdog

    def usable(self) -> bool:
        """Whether a kept-alive connection may carry a request: the server has not
        closed it meanwhile (a socket that is readable while idle has been closed, or
        holds bytes nobody asked for), as httpcore checks its own."""
        stream = self.stream
        if self.buffer:
            return False
        if isinstance(stream, _AsyncioStream):
            return not stream.closed_by_peer()
        try:
            sock = stream.extra(anyio.abc.SocketAttribute.raw_socket)
            return not select.select([sock], [], [], 0)[0]
        except Exception:
            return False

    def wait_at_most(self, timeout: float) -> None:
        self.timeout = timeout
        self.deadline = time.monotonic() + timeout

    async def fill(self) -> None:
        """Read more into the buffer. The time a read may wait is not a timeout scope
        per read (that would cost as much as the rest of the read) but a deadline the
        connections' watchdog enforces by closing the connection.

        Raises:
            StreamFailed: The server closed the connection, or sent nothing in time.
        """
        try:
            if self.per_read:
                with anyio.fail_after(self.timeout):
                    data = await self.stream.receive(_CHUNK)
            else:
                data = await self.stream.receive(_CHUNK)
        except TimeoutError:
            raise StreamFailed(f"nothing came for {self.timeout:g} s") from None
        except (
            anyio.EndOfStream,
            anyio.BrokenResourceError,
            anyio.ClosedResourceError,
            OSError,
            ssl.SSLError,
        ) as exc:
            if self.expired:
                raise StreamFailed(f"nothing came for {self.timeout:g} s") from None
            raise StreamFailed(_closed(exc)) from exc
        self.buffer += data
        self.deadline = time.monotonic() + self.timeout

    async def head(self) -> StreamHead:
        while (end := self.buffer.find(b"\r\n\r\n")) < 0:
            if len(self.buffer) > _MAX_HEAD:
                raise StreamFailed("the response head is too long")
            await self.fill()
        raw, self.buffer = self.buffer[:end].decode("latin-1"), self.buffer[end + 4 :]
        status_line, *lines = raw.split("\r\n")
        version, _, rest = status_line.partition(" ")
        if not version.startswith("HTTP/1.") or not rest[:3].isdigit():
            raise StreamFailed(f"not an HTTP/1.1 response: {status_line[:80]!r}")
        headers: dict[str, str] = {}
        for line in lines:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        return StreamHead(int(rest[:3]), headers)

    async def chunks(self, head: StreamHead) -> AsyncIterator[bytes]:
        """The body's bytes as they come; the connection is reusable once it ends here
        (a chunked body read to its last chunk, or a body of a known length read)."""
        if head.status in (204, 304) or head.status < 200:  # no body, by definition
            return
        if head.headers.get("transfer-encoding", "").lower() == "chunked":
            while True:
                while (end := self.buffer.find(b"\r\n")) < 0:
                    await self.fill()
                size_text = self.buffer[:end].split(b";", 1)[0].strip()
                try:
                    size = int(size_text, 16)
                except ValueError:
                    raise StreamFailed(f"a bad chunk size: {size_text[:20]!r}") from None
                if size == 0:
                    # The last chunk, then the (empty) trailer and its blank line.
                    while (end := self.buffer.find(b"\r\n\r\n", end)) < 0:
                        await self.fill()
                    self.buffer = self.buffer[end + 4 :]
                    return
                start = end + 2
                while len(self.buffer) < start + size + 2:
                    # Hand on what came of the chunk, without waiting for all of it.
                    available = min(len(self.buffer) - start, size)
                    if available > 0:
                        yield self.buffer[start : start + available]
                        size -= available
                        self.buffer = self.buffer[:start] + self.buffer[start + available :]
                    await self.fill()
                chunk, self.buffer = (
                    self.buffer[start : start + size],
                    self.buffer[start + size + 2 :],
                )
                yield chunk
        elif "content-length" in head.headers:
            remaining = int(head.headers["content-length"])
            while remaining > 0:
                if not self.buffer:
                    await self.fill()
                piece, self.buffer = self.buffer[:remaining], self.buffer[remaining:]
                remaining -= len(piece)
                yield piece
        else:  # read until the server closes: the connection is not reused
            while True:
                if self.buffer:
                    piece, self.buffer = self.buffer, b""
                    yield piece
                try:
                    await self.fill()
                except StreamFailed:
                    return


def _closed(exc: BaseException) -> str:
    if isinstance(exc, anyio.EndOfStream):
        return "the server closed the connection"
    return str(exc) or type(exc).__name__


class Connections:
    """The kept-alive connections of one client's event streams to one server.

    Args:
        url: The server's base URL (`http://host:port`, `https://...`, with a path prefix
            or not).
        headers: Sent with every request (the member's token).
        connect_timeout: Seconds for connecting, and for the response head to come.
        read_timeout: Seconds a stream may stay silent before it counts as broken.
        ssl_context: For `https` URLs.
    """

    def __init__(
        self,
        url: str,
        headers: Mapping[str, str],
        *,
        connect_timeout: float,
        read_timeout: float,
        ssl_context: Callable[[], ssl.SSLContext],
    ) -> None:
        parts = urllib.parse.urlsplit(url)
        self._tls = parts.scheme == "https"
        self._host = parts.hostname or ""
        self._port = parts.port or (443 if self._tls else 80)
        self._prefix = parts.path.rstrip("/")
        host_header = f"[{self._host}]" if ":" in self._host else self._host
        if parts.port is not None:
            host_header += f":{parts.port}"
        self._fixed = "".join(f"{k}: {v}\r\n" for k, v in {"Host": host_header, **headers}.items())
        self._connect_timeout = connect_timeout
        self._read_timeout = read_timeout
        self._ssl_context = ssl_context
        self._idle: list[_Connection] = []
        self._busy: set[_Connection] = set()
        self.watched = False
        """Whether a task runs `watch`; else each read has its own timeout."""

    async def aclose(self) -> None:
        """Close the kept-alive connections."""
        idle, self._idle = self._idle, []
        for connection in idle:
            with contextlib.suppress(Exception):
                await connection.stream.aclose()

    async def watch(self) -> None:
        """Close every connection in use that has waited past its deadline, until
        cancelled: run by a task of the client's for as long as it is open."""
        interval = min(1.0, self._connect_timeout / 4, self._read_timeout / 4)
        while True:
            await anyio.sleep(interval)
            now = time.monotonic()
            for connection in [c for c in self._busy if c.deadline < now]:
                connection.expired = True
                self._busy.discard(connection)
                with contextlib.suppress(Exception):
                    await connection.stream.aclose()

    async def _connect(self) -> _Connection:
        try:
            with anyio.fail_after(self._connect_timeout):
                if self.watched:  # on asyncio
                    import asyncio

                    reader, writer = await asyncio.open_connection(
                        self._host,
                        self._port,
                        ssl=self._ssl_context() if self._tls else None,
                        limit=_MAX_HEAD * 4,
                    )
                    return _Connection(_AsyncioStream(reader, writer), per_read=False)
                if self._tls:
                    stream: anyio.abc.ByteStream = await anyio.connect_tcp(
                        self._host,
                        self._port,
                        ssl_context=self._ssl_context(),
                        tls_standard_compatible=False,
                    )
                else:
                    stream = await anyio.connect_tcp(self._host, self._port)
        except TimeoutError:
            raise StreamFailed(f"connecting timed out after {self._connect_timeout:g} s") from None
        except (OSError, ssl.SSLError) as exc:
            raise StreamFailed(str(exc) or type(exc).__name__) from exc
        return _Connection(stream, per_read=True)

    async def fetch(
        self,
        method: str,
        path: str,
        params: Mapping[str, str] | None,
        headers: Mapping[str, str],
        body: bytes | None,
    ) -> tuple[StreamHead, bytes]:
        """One request and its whole answer (each read waiting at most the connect
        timeout, as httpx's `timeout` does).

        Raises:
            StreamFailed: As `get`.
        """
        async with self.get(
            path, params, headers, method=method, body=body, timeout=self._connect_timeout
        ) as (head, chunks):
            return head, b"".join([piece async for piece in chunks])

    @contextlib.asynccontextmanager
    async def get(
        self,
        path: str,
        params: Mapping[str, str] | None,
        headers: Mapping[str, str],
        *,
        method: str = "GET",
        body: bytes | None = None,
        timeout: float | None = None,  # noqa: ASYNC109 (a wait per read, not one deadline)
    ) -> AsyncIterator[tuple[StreamHead, AsyncIterator[bytes]]]:
        """GET `path` (or `method`, with `body`): its response head and its body as it
        comes, each read waiting at most `timeout` (the read timeout by default). The
        connection goes back to the pool when the body was read to its end, else it is
        closed.

        Raises:
            StreamFailed: The connection could not be made, broke, timed out, or did not
                answer HTTP/1.1.
        """
        target = urllib.parse.quote(self._prefix + path, safe="/:@!$&'()*+,;=-._~%")
        if params:
            target += "?" + urllib.parse.urlencode(params)
        lines = f"{method} {target} HTTP/1.1\r\n{self._fixed}" + "".join(
            f"{k}: {v}\r\n" for k, v in headers.items()
        )
        if body is not None or method in ("POST", "PUT", "PATCH"):
            lines += f"Content-Length: {len(body or b'')}\r\n"
        request = (lines + "\r\n").encode("latin-1") + (body or b"")
        # Sent again on a new connection only if it is safe to: a request that changes
        # nothing, or none at all when the server may have acted on it.
        connection, head = await self._open(request, retry=method == "GET")
        reusable = head.headers.get("connection", "").lower() != "close" and (
            # A body that ends when the connection closes leaves nothing to reuse.
            "content-length" in head.headers
            or head.headers.get("transfer-encoding", "").lower() == "chunked"
            or head.status in (204, 304)
        )
        connection.wait_at_most(self._read_timeout if timeout is None else timeout)
        done = False

        async def read_body() -> AsyncGenerator[bytes, None]:
            nonlocal done
            async for piece in connection.chunks(head):
                yield piece
            done = True

        chunks = read_body()
        try:
            yield head, chunks
        finally:
            await chunks.aclose()
            self._busy.discard(connection)
            connection.deadline = float("inf")
            if done and reusable and not connection.expired and len(self._idle) < _MAX_IDLE:
                connection.deadline = time.monotonic() + _IDLE_EXPIRY
                self._idle.append(connection)
            else:
                with anyio.CancelScope(shield=True):
                    await connection.stream.aclose()

    async def _open(self, request: bytes, *, retry: bool) -> tuple[_Connection, StreamHead]:
        """Send `request` on a kept-alive connection, or a new one, and read the head. A
        kept-alive connection the server closed meanwhile fails before any byte of an
        answer: with `retry`, the request is then sent again on a new one."""
        while True:
            now = time.monotonic()
            if self._idle and self._idle[0].deadline < now:  # idle too long: closed
                stale = [c for c in self._idle if c.deadline < now]
                self._idle = [c for c in self._idle if c.deadline >= now]
                for old in stale:
                    with contextlib.suppress(Exception):
                        await old.stream.aclose()
            connection = None
            while self._idle:
                candidate = self._idle.pop()
                if candidate.usable():
                    connection = candidate
                    break
                with contextlib.suppress(Exception):
                    await candidate.stream.aclose()
            reused = connection is not None
            if connection is None:
                connection = await self._connect()
            self._busy.add(connection)
            try:
                try:
                    connection.wait_at_most(self._connect_timeout)
                    await connection.stream.send(request)
                    head = await connection.head()
                except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError) as exc:
                    raise StreamFailed(_closed(exc)) from exc
            except StreamFailed:
                self._busy.discard(connection)
                with anyio.CancelScope(shield=True):
                    await connection.stream.aclose()
                if retry and reused and not connection.buffer and not connection.expired:
                    continue
                raise
            except BaseException:
                self._busy.discard(connection)
                with anyio.CancelScope(shield=True):
                    await connection.stream.aclose()
                raise
            return connection, head
