"""Event streams and JSON requests on the client's own kept-alive connections, without httpx.

A followed run's stream is a GET answered with a chunked body of small events, each
arriving by itself. Read through httpx, every event goes through httpx's and httpcore's
layers and a new timeout scope: about 170 us of CPU per event, so that a client following
a run of 20 deltas spent more on it than the server did producing it. Here a request goes
on a kept-alive connection of the client's own (plain TCP or TLS, through anyio, or
asyncio's streams on asyncio), with one watchdog task per client instead of a timeout
scope per read, and no retry of a request that may have changed something.

The HTTP/1.1 itself is not parsed here: protocol parsing is an attack surface, better left
to libraries many clients and servers have hardened. Requests are written by h11 (the
sans-IO library under httpcore and uvicorn), which checks the method, target and headers.
Answers (heads, chunked and sized bodies, whether the connection may be used again) are
parsed by httptools (llhttp, Node's parser, in C, as uvicorn uses it) where it installs
(the `server` extra brings it on CPython), else by h11. Measured with bench/client.py
(prompt and follow of 20 deltas): h11 parsing the answers cost about 0.7 ms of CPU more
per run than the hand-written parser this replaced (~190 us per followed stream's answer,
a Python event per chunk), httptools about 4 us. What remains over the hand-written
version (about 0.25 ms per run on asyncio, 0.4 ms on trio, measured beside it) is mostly
h11 writing the two requests (20 to 40 us each, some 200 Python calls) and the calls
from llhttp back into Python: the price of not framing HTTP by hand.

Only requests that nothing stands between (no proxy in the environment for the server's
address: httpx honours those, so requests to such a server go through httpx) take this path.
"""

from __future__ import annotations

import collections
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

    import h11

__all__ = ["Connections", "StreamFailed", "StreamHead", "direct"]

_MAX_HEAD = 64 * 1024  # a response head (or chunk header) longer than this is not an answer
_MAX_BODY = 64 * 1024 * 1024  # a whole answer `fetch` gathers (a JSON page) beyond this is not
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


_END = object()  # a parser's event: the answer ended


def _written(
    http: h11.Connection,
    method: str,
    target: str,
    fields: list[tuple[str, str]],
    body: bytes | None,
) -> bytes:
    """A request's bytes as h11 writes them (checking the method, target and headers)."""
    import h11

    try:
        data = http.send(h11.Request(method=method, target=target, headers=fields)) or b""
        if body:
            data += http.send(h11.Data(data=body)) or b""
        return data + (http.send(h11.EndOfMessage()) or b"")
    except h11.LocalProtocolError as exc:
        raise ValueError(f"a request HTTP/1.1 does not allow: {exc}") from exc


class _H11Parser:
    """HTTP/1.1 by h11 alone: where httptools does not install."""

    __slots__ = ("_http",)

    def __init__(self) -> None:
        import h11

        # h11 checks the bound when a head is still incomplete: a head is refused past
        # _MAX_HEAD plus one read (_CHUNK), a bounded buffer all the same.
        self._http = h11.Connection(h11.CLIENT, max_incomplete_event_size=_MAX_HEAD)

    def request(
        self, method: str, target: str, fields: list[tuple[str, str]], body: bytes | None
    ) -> bytes:
        return _written(self._http, method, target, fields, body)

    def feed(self, data: bytes) -> None:
        self._http.receive_data(data)

    def next(self) -> StreamHead | bytes | object | None:
        """The answer's next part (its head, a piece of its body, `_END`), or `None`
        until more is fed."""
        import h11

        http = self._http
        while True:
            try:
                event = http.next_event()
            except h11.RemoteProtocolError as exc:
                if http.trailing_data[1]:
                    raise StreamFailed("the server closed the connection") from exc
                raise StreamFailed(f"not an HTTP/1.1 answer: {exc}") from exc
            if event is h11.NEED_DATA:
                return None
            if isinstance(event, h11.Data):
                return bytes(event.data)
            if isinstance(event, h11.Response):
                headers = {n.decode("latin-1"): v.decode("latin-1") for n, v in event.headers}
                return StreamHead(event.status_code, headers)
            if isinstance(event, (h11.EndOfMessage, h11.ConnectionClosed)):
                return _END
            if event is h11.PAUSED:  # only after an answer ended, where reading stops
                raise StreamFailed("the server sent more than its answer")
            # An informational answer (100 Continue) comes before the real one.

    def reusable(self) -> bool:
        import h11

        http = self._http
        if http.our_state is h11.DONE and http.their_state is h11.DONE:
            http.start_next_cycle()
            return True
        return False

    def clean(self) -> bool:
        import h11

        return self._http.our_state is h11.IDLE and not any(self._http.trailing_data)


class _HttptoolsParser:
    """HTTP/1.1 answers parsed by httptools (llhttp, Node's parser, in C, as uvicorn
    uses it), requests written by h11: about 4 us of CPU per followed stream's answer
    where h11 takes about 190, which was most of the client's CPU over its floor."""

    __slots__ = (
        "_events",
        "_head_size",
        "_headers",
        "_informational",
        "_keep_alive",
        "_parser",
        "_state",
        "_until_close",
    )

    def __init__(self) -> None:
        import httptools

        self._parser = httptools.HttpResponseParser(self)
        self._events: collections.deque[StreamHead | bytes | object] = collections.deque()
        self._headers: dict[str, str] = {}
        self._state = "idle"  # "waiting" (for the head), "body", "done", "broken"
        self._head_size = 0
        self._informational = False
        self._keep_alive = False
        self._until_close = False

    def request(
        self, method: str, target: str, fields: list[tuple[str, str]], body: bytes | None
    ) -> bytes:
        import h11

        if method == "HEAD":  # llhttp cannot know that its answer has no body
            raise ValueError("HEAD requests are not sent on these connections")
        self._state = "waiting"
        self._head_size = 0
        # A throwaway h11 connection per request: it only writes (about 15 us).
        return _written(h11.Connection(h11.CLIENT), method, target, fields, body)

    def feed(self, data: bytes) -> None:
        import httptools

        if not data:  # the server closed
            if self._state == "body" and self._until_close:
                self._events.append(_END)
                self._state = "broken"
                return
            if self._state != "done":
                raise StreamFailed("the server closed the connection")
            self._state = "broken"
            return
        if self._state == "waiting":
            self._head_size += len(data)
            if self._head_size > _MAX_HEAD:
                raise StreamFailed("the response head is too long")
        try:
            self._parser.feed_data(data)
        except (httptools.HttpParserError, httptools.HttpParserUpgrade) as exc:
            if self._state == "done":  # bytes after the answer: the connection is spoilt
                self._state = "broken"
                return
            raise StreamFailed(f"not an HTTP/1.1 answer: {exc}") from exc

    def next(self) -> StreamHead | bytes | object | None:
        return self._events.popleft() if self._events else None

    def reusable(self) -> bool:
        if self._state == "done" and self._keep_alive and not self._events:
            self._state = "idle"
            return True
        return False

    def clean(self) -> bool:
        return self._state == "idle"

    # httptools' callbacks
    def on_message_begin(self) -> None:
        if self._state != "waiting":  # bytes nobody asked for
            self._state = "broken"
        self._headers = {}

    def on_header(self, name: bytes, value: bytes) -> None:
        self._headers[name.decode("latin-1").lower()] = value.decode("latin-1")

    def on_headers_complete(self) -> None:
        status = self._parser.get_status_code()
        self._informational = status < 200
        if self._informational or self._state != "waiting":
            return
        headers = self._headers
        self._until_close = not (
            "content-length" in headers
            or "chunked" in headers.get("transfer-encoding", "").lower()
            or status in (204, 304)
        )
        self._state = "body"
        self._events.append(StreamHead(status, headers))

    def on_body(self, body: bytes) -> None:
        if self._state == "body":
            self._events.append(bytes(body))

    def on_message_complete(self) -> None:
        if self._informational:  # the real answer comes next
            self._informational = False
            self._head_size = 0
            return
        if self._state == "body":
            self._keep_alive = self._parser.should_keep_alive()
            self._events.append(_END)
            self._state = "done"


def _parser() -> _H11Parser | _HttptoolsParser:
    try:
        import httptools  # noqa: F401
    except ImportError:
        return _H11Parser()
    return _HttptoolsParser()


class _Connection:
    """One connection: its byte stream and the parser of the HTTP/1.1 exchanges on it."""

    __slots__ = ("answered", "deadline", "expired", "parser", "per_read", "stream", "timeout")

    def __init__(self, stream: anyio.abc.ByteStream | _AsyncioStream, *, per_read: bool) -> None:
        self.stream = stream
        self.parser = _parser()
        self.per_read = per_read  # no watchdog: each read has a timeout scope
        self.answered = False  # some byte of the current request's answer came
        self.timeout = 0.0  # seconds a read may wait
        self.deadline = float("inf")  # `time.monotonic()` past which the watchdog closes it
        self.expired = False  # closed by the watchdog

    def usable(self) -> bool:
        """Whether a kept-alive connection may carry a request: the server has not
        closed it meanwhile (a socket that is readable while idle has been closed, or
        holds bytes nobody asked for), as httpcore checks its own."""
        if not self.parser.clean():
            return False
        stream = self.stream
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

    async def _fill(self) -> None:
        """Feed the parser what comes next (an empty read when the server closed). The
        time a read may wait is not a timeout scope per read (that would cost as much
        as the rest of the read) but a deadline the connections' watchdog enforces by
        closing the connection.

        Raises:
            StreamFailed: The connection broke, or nothing came in time.
        """
        try:
            if self.per_read:
                with anyio.fail_after(self.timeout):
                    data = await self.stream.receive(_CHUNK)
            else:
                data = await self.stream.receive(_CHUNK)
        except TimeoutError:
            raise StreamFailed(f"nothing came for {self.timeout:g} s") from None
        except anyio.EndOfStream:
            if self.expired:
                raise StreamFailed(f"nothing came for {self.timeout:g} s") from None
            data = b""  # the parser decides whether the answer was complete
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError, ssl.SSLError) as exc:
            if self.expired:
                raise StreamFailed(f"nothing came for {self.timeout:g} s") from None
            raise StreamFailed(str(exc) or type(exc).__name__) from exc
        if data:
            self.answered = True
        self.parser.feed(data)
        self.deadline = time.monotonic() + self.timeout

    async def next_event(self) -> StreamHead | bytes | object:
        """The answer's next part (head, piece of body, `_END`), read as needed.

        Raises:
            StreamFailed: As `_fill`, or the answer was not HTTP/1.1 the parser accepts
                (a head too long, a body cut short by the server closing).
        """
        while (event := self.parser.next()) is None:
            await self._fill()
        return event

    async def send(self, request: bytes) -> None:
        try:
            await self.stream.send(request)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError) as exc:
            raise StreamFailed(str(exc) or type(exc).__name__) from exc

    async def head(self) -> StreamHead:
        event = await self.next_event()
        if not isinstance(event, StreamHead):  # the server closed before answering
            raise StreamFailed("the server closed the connection")
        return event

    async def chunks(self) -> AsyncIterator[bytes]:
        """The body's bytes as they come, to its end (the parser knows from the head,
        and h11 from the request's method too, whether there is a body and how it ends)."""
        while (event := await self.next_event()) is not _END:
            yield event  # type: ignore[misc]


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
        self._fixed = [("Host", host_header), *headers.items()]
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
            StreamFailed: As `get`, or the answer is longer than 64 MiB.
        """
        async with self.get(
            path, params, headers, method=method, body=body, timeout=self._connect_timeout
        ) as (head, chunks):
            pieces: list[bytes] = []
            size = 0
            async for piece in chunks:
                size += len(piece)
                if size > _MAX_BODY:
                    raise StreamFailed(f"the answer is longer than {_MAX_BODY} bytes")
                pieces.append(piece)
            return head, b"".join(pieces)

    def _request(
        self,
        connection: _Connection,
        method: str,
        path: str,
        params: Mapping[str, str] | None,
        headers: Mapping[str, str],
        body: bytes | None,
    ) -> bytes:
        """The request's bytes (checking every header)."""
        target = urllib.parse.quote(self._prefix + path, safe="/:@!$&'()*+,;=-._~%")
        if params:
            target += "?" + urllib.parse.urlencode(params)
        fields = [*self._fixed, *headers.items()]
        if body is not None or method in ("POST", "PUT", "PATCH"):
            fields.append(("Content-Length", str(len(body or b""))))
        return connection.parser.request(method, target, fields, body)

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
        # Sent again on a new connection only if it is safe to: a request that changes
        # nothing, or none at all when the server may have acted on it.
        connection, head = await self._open(
            method, path, params, headers, body, retry=method == "GET"
        )
        connection.wait_at_most(self._read_timeout if timeout is None else timeout)
        done = False

        async def read_body() -> AsyncGenerator[bytes, None]:
            nonlocal done
            async for piece in connection.chunks():
                yield piece
            done = True

        chunks = read_body()
        try:
            yield head, chunks
        finally:
            await chunks.aclose()
            self._busy.discard(connection)
            connection.deadline = float("inf")
            if (
                done
                and not connection.expired
                and len(self._idle) < _MAX_IDLE
                and connection.parser.reusable()
            ):
                connection.deadline = time.monotonic() + _IDLE_EXPIRY
                self._idle.append(connection)
            else:
                with anyio.CancelScope(shield=True):
                    await connection.stream.aclose()

    async def _open(
        self,
        method: str,
        path: str,
        params: Mapping[str, str] | None,
        headers: Mapping[str, str],
        body: bytes | None,
        *,
        retry: bool,
    ) -> tuple[_Connection, StreamHead]:
        """Send the request on a kept-alive connection, or a new one, and read the head.
        A kept-alive connection the server closed meanwhile fails before any byte of an
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
            connection.answered = False
            try:
                request = self._request(connection, method, path, params, headers, body)
                connection.wait_at_most(self._connect_timeout)
                await connection.send(request)
                head = await connection.head()
            except StreamFailed:
                self._busy.discard(connection)
                with anyio.CancelScope(shield=True):
                    await connection.stream.aclose()
                if retry and reused and not connection.expired and not connection.answered:
                    continue
                raise
            except BaseException:
                self._busy.discard(connection)
                with anyio.CancelScope(shield=True):
                    await connection.stream.aclose()
                raise
            return connection, head
