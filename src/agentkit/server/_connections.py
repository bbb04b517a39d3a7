"""The bounds of the server's connections, on top of uvicorn's HTTP/1.1 protocol
(httptools where it is installed, else h11).

uvicorn closes a kept-alive connection that stays idle after a response
(`timeout_keep_alive`), but it sets no deadline on a request head: a client that connects
and sends nothing, or sends half a head and then trickles (or nothing), holds its
connection for ever. And its own concurrency limit answers a plain-text 503. The protocol
here adds

- a deadline for every request head, counted from the connection's opening, or from the
  first byte after a response, and not renewed by more bytes: past it, a connection that
  sent part of a head gets `408` and is closed, one that sent nothing is closed;
- a bound on a request head's size (16 KiB, h11's, on httptools too): past it, `400` and
  the connection is closed;
- a limit on the client's silence in the middle of a request body: a connection whose
  body stops coming for `idle_timeout` seconds (uvicorn's keep-alive timeout, the same
  silence allowed between requests) gets `408` and is closed;
- a limit on open connections: a connection opened while as many are open is answered
  `503` (the API's JSON error `unavailable`, `Retry-After: 1`, `Connection: close`) for its
  first request and closed.

Once its body is in, a request is no longer timed: an event stream may stay open for hours.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
from typing import TYPE_CHECKING, Any

from agentkit.server._errors import HTTPError, error_response

if TYPE_CHECKING:
    from starlette.types import Receive, Scope, Send

__all__ = [
    "DEFAULT_HEADER_TIMEOUT",
    "DEFAULT_IDLE_TIMEOUT",
    "DEFAULT_MAX_CONNECTIONS",
    "http_protocol",
    "protocol_class",
    "raise_open_files_limit",
]

DEFAULT_HEADER_TIMEOUT = 10.0
"""Seconds a request head has to arrive in full."""
DEFAULT_IDLE_TIMEOUT = 15.0
"""Seconds a connection may wait on its client, for its next request or in the middle of
a body: longer than the 5 s after which httpx, the Python client's HTTP library, stops
reusing an idle connection, so that a client never sends on one the server is closing."""
DEFAULT_MAX_CONNECTIONS = 1000
"""Open connections at most, event streams included."""


def _timed_out(reason: bytes) -> bytes:
    return (
        b"HTTP/1.1 408 Request Timeout\r\ncontent-type: text/plain; charset=utf-8\r\n"
        b"content-length: %d\r\nconnection: close\r\n\r\n%s" % (len(reason), reason)
    )


_HEAD_TOO_SLOW = _timed_out(b"the request head came too slowly")
MAX_HEAD_BYTES = 16 * 1024
"""The largest request head (request line and headers): h11's own bound, applied to
httptools too, which has none (a client could grow a head in memory until the deadline)."""
_HEAD_TOO_LARGE_REASON = b"the request head is over 16 KiB"
_HEAD_TOO_LARGE = (
    b"HTTP/1.1 400 Bad Request\r\ncontent-type: text/plain; charset=utf-8\r\n"
    b"content-length: %d\r\nconnection: close\r\n\r\n%s"
    % (len(_HEAD_TOO_LARGE_REASON), _HEAD_TOO_LARGE_REASON)
)
_BODY_STOPPED = _timed_out(b"the request body stopped coming")


async def _at_limit(scope: Scope, receive: Receive, send: Send) -> None:
    """The answer to a request on a connection beyond the limit."""
    error = HTTPError("unavailable", "the server has as many connections as it accepts; retry")
    response = error_response(error, headers={"Retry-After": "1", "Connection": "close"})
    await response(scope, receive, send)


def http_protocol(http: str = "auto") -> type[Any]:
    """uvicorn's HTTP/1.1 protocol: `httptools` (its C parser) or `h11` (pure Python);
    `auto` is httptools when it is installed (the `server` extra installs it where it
    has wheels), else h11."""
    if http not in ("auto", "httptools", "h11"):
        raise ValueError(f"http must be 'auto', 'httptools' or 'h11', not {http!r}")
    if http != "h11":
        try:
            from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
        except ImportError:
            if http == "httptools":
                raise
        else:
            return HttpToolsProtocol
    from uvicorn.protocols.http.h11_impl import H11Protocol

    return H11Protocol


def protocol_class(
    *, header_timeout: float, max_connections: int, http: str = "auto"
) -> type[asyncio.Protocol]:
    """uvicorn's HTTP/1.1 protocol (`http_protocol(http)`) with a deadline on request
    heads, a limit on silence in a request body (uvicorn's `timeout_keep_alive`) and a
    limit on connections, for `uvicorn.Config(http=...)` (one class per server: the limit
    counts its own connections, which uvicorn's server state holds). Both of uvicorn's
    protocols keep the state used here the same way (`cycle`, `flow`, `connections`)."""
    base = http_protocol(http)

    class BoundedProtocol(base):  # type: ignore[misc,valid-type]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self._head_timer: asyncio.TimerHandle | None = None
            self._head_started = False  # bytes of the awaited head arrived
            self._head_bytes = 0  # how many, while it is awaited
            self._body_timer: asyncio.TimerHandle | None = None

        def _awaits_head(self) -> bool:
            return self.cycle is None or self.cycle.response_complete

        def _awaits_body(self) -> bool:
            cycle = self.cycle
            return not (cycle is None or cycle.response_started or cycle.response_complete) and (
                cycle.more_body and not cycle.disconnected
            )

        def _watch_body(self) -> None:
            """(Re)starts the body's silence timer while a body is awaited."""
            if self._body_timer is not None:
                self._body_timer.cancel()
                self._body_timer = None
            if self._awaits_body():
                self._body_timer = self.loop.call_later(self.timeout_keep_alive, self._body_stopped)

        def _arm(self) -> None:
            if self._head_timer is None:
                self._head_timer = self.loop.call_later(header_timeout, self._head_too_slow)

        def _disarm(self) -> None:
            if self._head_timer is not None:
                self._head_timer.cancel()
                self._head_timer = None
            self._head_started = False
            self._head_bytes = 0

        def connection_made(self, transport: asyncio.Transport) -> None:
            # (uvicorn's own signature: its transports are `asyncio.Transport`s.)
            super().connection_made(transport)
            # uvicorn's set holds this one already: it is refused when it makes one too many.
            if len(self.connections) > max_connections:
                self.app = _at_limit
            self._arm()

        def _reads_head(self) -> bool:
            """Whether the bytes coming are a request head's: not the rest of a body
            the app answered before reading it all (an upload refused early)."""
            cycle = self.cycle
            return cycle is None or (cycle.response_complete and not cycle.more_body)

        def data_received(self, data: bytes) -> None:
            if self._awaits_head():
                self._arm()  # after a response: the next head's deadline starts now
                self._head_started = True
                if self._reads_head():
                    self._head_bytes += len(data)
            super().data_received(data)
            if not self._awaits_head():
                self._disarm()
            elif self._head_bytes > MAX_HEAD_BYTES and not self.transport.is_closing():
                self.transport.write(_HEAD_TOO_LARGE)
                self.transport.close()
                return
            self._watch_body()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            if not self._awaits_head():  # a pipelined request that was waiting began
                self._disarm()
            self._watch_body()

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            if self._body_timer is not None:
                self._body_timer.cancel()
                self._body_timer = None
            super().connection_lost(exc)

        def _head_too_slow(self) -> None:
            self._head_timer = None
            if self.transport.is_closing() or not self._awaits_head():
                return
            if self._head_started:
                self.transport.write(_HEAD_TOO_SLOW)
            self.transport.close()

        def _body_stopped(self) -> None:
            self._body_timer = None
            if self.transport.is_closing() or not self._awaits_body():
                return
            if self.flow.read_paused:  # the app is behind, not the client: wait on
                self._watch_body()
                return
            self.transport.write(_BODY_STOPPED)
            self.transport.close()

    return BoundedProtocol


def raise_open_files_limit(needed: int) -> None:
    """Raise this process's soft limit of open files towards `needed` (within the hard
    limit), so that the connections the server accepts do not run out of descriptors
    first: Linux's usual soft limit is 1024."""
    if sys.platform == "win32":
        return
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY or soft >= needed:
        return
    target = needed if hard == resource.RLIM_INFINITY else min(needed, hard)
    with contextlib.suppress(ValueError, OSError):  # not allowed: the limit stays as it was
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
