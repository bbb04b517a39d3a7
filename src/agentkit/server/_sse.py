"""Server-sent events: one ASGI response that writes a stream of events, keeps an idle
connection open with comment lines, and stops its source the moment the client leaves.

Not a `StreamingResponse` over an async generator: the source, the writer (which sends
what is queued in one write, and a keep-alive comment after a silence) and the disconnect
listener are three tasks of one task group, so a client that goes away cancels the source
at once (a follow of a long run must not linger), and nothing yields from inside a cancel
scope.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncGenerator

import anyio
from starlette.types import Receive, Scope, Send

from agentkit.client.contract import ENDED_EVENT, encode_comment, encode_event, error_body
from agentkit.server._errors import http_error_of

__all__ = ["EventStream"]

_logger = logging.getLogger("agentkit.server")

_OPENED = encode_comment("stream")
_KEEPALIVE = encode_comment("keep-alive")


class EventStream:
    """An ASGI response streaming the encoded events of `source`.

    Args:
        source: Encoded events (see `agentkit.client.contract.encode_event`); the stream
            ends when it does.
        keepalive: Seconds of silence after which a `: keep-alive` comment is written,
            so proxies do not close an idle stream.
        streams: The server's open streams: this one's cancel scope is in it while it
            runs, so that a server shutting down can end it.
    """

    media_type = "text/event-stream"

    def __init__(
        self,
        source: AsyncGenerator[bytes, None],
        *,
        keepalive: float,
        streams: set[anyio.CancelScope] | None = None,
    ) -> None:
        self._source = source
        self._keepalive = keepalive
        self._streams = streams

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
                ],
            }
        )
        client_gone = False
        # One writer: the source's task queues its events, the writer sends what is
        # queued in one body message (fewer writes when a follower falls behind, or many
        # followers share a run) and a keep-alive comment after a silence.
        queue_in, queue_out = anyio.create_memory_object_stream[bytes](max_buffer_size=256)

        async def body(chunk: bytes) -> None:
            await send({"type": "http.response.body", "body": chunk, "more_body": True})

        async def pump() -> None:
            async with queue_in, contextlib.aclosing(self._source) as source:
                try:
                    async for chunk in source:
                        await queue_in.send(chunk)
                except Exception as exc:
                    # The stream ends with an event that says why, never with a cut body:
                    # a reader that lost access is told so (and nothing is logged); any
                    # other failure is logged once and told as `internal`.
                    await queue_in.send(_ended(exc))

        async def writer(group_scope: anyio.CancelScope) -> None:
            async with queue_out:
                while True:
                    with anyio.move_on_after(self._keepalive) as idle:
                        try:
                            batch = [await queue_out.receive()]
                        except anyio.EndOfStream:
                            break
                    if idle.cancelled_caught:
                        await body(_KEEPALIVE)
                        continue
                    while len(batch) < 256:
                        try:
                            batch.append(queue_out.receive_nowait())
                        except (anyio.WouldBlock, anyio.EndOfStream):
                            break
                    await body(b"".join(batch))
            group_scope.cancel()

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
