"""Server-sent events: one ASGI response that writes a stream of events, keeps an idle
connection open with comment lines, and stops its source the moment the client leaves.

Not a `StreamingResponse` over an async generator: the source, the writer (which sends
what has gathered in one write) and the disconnect listener are tasks of one task group,
so a client that goes away cancels the source at once (a follow of a long run must not
linger), and nothing yields from inside a cancel scope.

What a live stream pays per event is what a follower of a streaming model pays per
delta, so the hand-over between the source's task and the writer is a list and an event
made only when the writer waits (not a memory stream, whose every send and receive is a
checkpoint), and the keep-alive is a task of its own that looks at the time of the last
write (not a timeout around every wait of the writer).
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import AsyncGenerator, Mapping

import anyio
from starlette.types import Receive, Scope, Send

from agentkit.client.contract import ENDED_EVENT, encode_comment, encode_event, error_body
from agentkit.server._errors import http_error_of

__all__ = ["EventStream"]

_logger = logging.getLogger("agentkit.server")

_OPENED = encode_comment("stream")
_KEEPALIVE = encode_comment("keep-alive")
_MAX_PENDING = 256  # events gathered for a writer that cannot send (a slow client)


class _Pending:
    """Encoded events between the source's task and the writer's, and their signals."""

    __slots__ = ("chunks", "done", "has_room", "has_some", "last_write")

    def __init__(self) -> None:
        self.chunks: list[bytes] = []
        self.done = False  # the source ended: the writer sends what is left and stops
        self.has_some: anyio.Event | None = None  # the writer waits for chunks
        self.has_room: anyio.Event | None = None  # the source waits for the writer
        self.last_write = time.monotonic()

    def put(self, chunk: bytes) -> None:
        self.chunks.append(chunk)
        waiter = self.has_some
        if waiter is not None:
            self.has_some = None
            waiter.set()

    def finish(self) -> None:
        self.done = True
        waiter = self.has_some
        if waiter is not None:
            self.has_some = None
            waiter.set()

    def take(self) -> list[bytes]:
        chunks, self.chunks = self.chunks, []
        waiter = self.has_room
        if waiter is not None:
            self.has_room = None
            waiter.set()
        return chunks


class EventStream:
    """An ASGI response streaming the encoded events of `source`.

    Args:
        source: Encoded events (see `agentkit.client.contract.encode_event`); the stream
            ends when it does.
        keepalive: Seconds of silence after which a `: keep-alive` comment is written,
            so proxies do not close an idle stream.
        streams: The server's open streams: this one's cancel scope is in it while it
            runs, so that a server shutting down can end it.
        headers: More headers of the answer (a started run's `Location`).
    """

    media_type = "text/event-stream"

    def __init__(
        self,
        source: AsyncGenerator[bytes, None],
        *,
        keepalive: float,
        streams: set[anyio.CancelScope] | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        self._source = source
        self._keepalive = keepalive
        self._streams = streams
        self._headers = [
            (name.lower().encode("latin-1"), value.encode("latin-1"))
            for name, value in (headers or {}).items()
        ]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [
                    (b"content-type", b"text/event-stream; charset=utf-8"),
                    (b"cache-control", b"no-cache"),
                    # nginx buffers responses by default: an event must not wait there.
                    (b"x-accel-buffering", b"no"),
                    *self._headers,
                ],
            }
        )
        client_gone = False
        pending = _Pending()

        async def body(chunk: bytes) -> None:
            pending.last_write = time.monotonic()
            await send({"type": "http.response.body", "body": chunk, "more_body": True})

        async def pump() -> None:
            try:
                async with contextlib.aclosing(self._source) as source:
                    try:
                        async for chunk in source:
                            pending.put(chunk)
                            while len(pending.chunks) >= _MAX_PENDING:
                                # A client that reads slowly holds its source up, not the
                                # server's memory.
                                room = pending.has_room = anyio.Event()
                                await room.wait()
                    except Exception as exc:
                        # The stream ends with an event that says why, never with a cut
                        # body: a reader that lost access is told so (and nothing is
                        # logged); any other failure is logged once and told as `internal`.
                        pending.put(_ended(exc))
            finally:
                pending.finish()

        async def writer(group_scope: anyio.CancelScope) -> None:
            # One writer: what gathered while it was sending goes in one body message
            # (fewer writes when a follower falls behind, or many followers share a run).
            while True:
                if pending.chunks:
                    chunks = pending.take()
                    await body(chunks[0] if len(chunks) == 1 else b"".join(chunks))
                elif pending.done:
                    break
                else:
                    some = pending.has_some = anyio.Event()
                    await some.wait()
            group_scope.cancel()

        async def keepalive() -> None:
            while True:
                await anyio.sleep(max(pending.last_write + self._keepalive - time.monotonic(), 0))
                if time.monotonic() - pending.last_write >= self._keepalive:
                    pending.put(_KEEPALIVE)  # written by the writer: writes never interleave

        async def until_disconnect(group_scope: anyio.CancelScope) -> None:
            nonlocal client_gone
            while True:
                message = await receive()
                if message["type"] == "http.disconnect":
                    client_gone = True
                    group_scope.cancel()
                    return

        # First bytes at once: the client knows the stream is open before any event.
        await body(_OPENED)
        async with anyio.create_task_group() as group:
            if self._streams is not None:
                self._streams.add(group.cancel_scope)
            group.start_soon(pump)
            group.start_soon(writer, group.cancel_scope)
            group.start_soon(keepalive)
            group.start_soon(until_disconnect, group.cancel_scope)
        if self._streams is not None:
            self._streams.discard(group.cancel_scope)
        if not client_gone:
            with contextlib.suppress(OSError):
                await send({"type": "http.response.body", "body": b"", "more_body": False})


def _ended(exc: Exception) -> bytes:
    """The `ended` event of a stream whose source raised `exc`."""
    error = http_error_of(exc)
    if error is None:
        _logger.error("an event stream failed", exc_info=exc)
        return encode_event(ENDED_EVENT, error_body("internal", "the stream failed"))
    return encode_event(ENDED_EVENT, error_body(error.code, error.message, error.field))
