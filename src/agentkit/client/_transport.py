"""The HTTP transport under both remote clients: one connection pool to a server, JSON
requests whose error answers become the caller's exceptions, and event streams that the
clients reconnect with a backoff.

httpx is an optional dependency (the `server` extra): it is imported when a transport is
opened, never when this module is.
"""

from __future__ import annotations

import contextlib
import functools
import json
from collections.abc import AsyncGenerator, AsyncIterable, AsyncIterator, Callable, Mapping
from typing import TYPE_CHECKING, Any

import anyio

from agentkit._internal import aio as _aio
from agentkit.client._streams import Connections, StreamFailed, direct
from agentkit.client.contract import Operation, SseEvent, SseParser
from agentkit.conversations import ConversationError
from agentkit.errors import InvalidPageError
from agentkit.paging import check_limit

if TYPE_CHECKING:
    import ssl

    import httpx

__all__ = ["Backoff", "Dropped", "ErrorOf", "Transport", "Unreachable", "page_query"]

# Statuses a proxy or a restarting server gives for a moment: a stream retries them.
_TRANSIENT = frozenset({502, 503, 504})

_FIRST_DELAY = 0.1
_MAX_DELAY = 5.0
# A stream is idle at most 15 s between keep-alives (the server's default): three missed
# ones mean it is dead. Should a server keep quiet longer, the stream is only reopened.
_STREAM_READ_TIMEOUT = 45.0
# How long the end of a stream whose last event was read may take to come before its
# connection is closed instead of reused (a server ends a follow stream right after its
# final event).
_DRAIN_TIMEOUT = 0.25

ErrorOf = Callable[[int, bytes], Exception]
"""Maps an error answer (status, body) to the exception an in-process client raises."""


class Dropped(Exception):
    """A stream's connection could not be made, or broke: it is tried again."""


class Unreachable(ConversationError):
    """A request could not reach the server (what the caller of a request sees)."""


class Transport:
    """The connections of one client to one server, as one member (its token).

    Args:
        url: The server's base URL (`http://host:port`).
        token: The member's token, sent with every request.
        timeout: Seconds for connecting and for each request's response.
        reconnect_timeout: How long a stream keeps trying to reach the server again, in
            total, before it gives up (see `backoff`).
    """

    def __init__(self, url: str, token: str, *, timeout: float, reconnect_timeout: float) -> None:
        self.url = url.rstrip("/")
        self._token = token
        self._timeout = timeout
        self._reconnect_timeout = reconnect_timeout
        self._http: httpx.AsyncClient | None = None
        self._streams: Connections | None = None

    @contextlib.asynccontextmanager
    async def open(self) -> AsyncIterator[None]:
        """The connection pool, open while the context is."""
        import httpx

        if direct(self.url):  # event streams read off their connections (`_streams`)
            self._streams = Connections(
                self.url,
                {"Authorization": f"Bearer {self._token}"},
                connect_timeout=self._timeout,
                read_timeout=max(self._timeout, _STREAM_READ_TIMEOUT),
                ssl_context=_ssl_context,
            )
        async with httpx.AsyncClient(
            base_url=self.url,
            headers={"Authorization": f"Bearer {self._token}"},
            timeout=httpx.Timeout(self._timeout),
            verify=_ssl_context(),
            # Every follow and watch holds a connection for as long as it goes.
            limits=httpx.Limits(max_connections=None, max_keepalive_connections=20),
        ) as http:
            self._http = http
            watchdog = None
            if self._streams is not None and _aio.on_asyncio():
                # A plain task (a task group would wrap the caller's exceptions in groups);
                # on trio each read has its own timeout instead.
                watchdog = _aio.create_task(self._streams.watch())
                self._streams.watched = True
            try:
                yield
            finally:
                if watchdog is not None:
                    with anyio.CancelScope(shield=True):
                        await _aio.cancel_and_wait(watchdog)
                self._http = None
                streams, self._streams = self._streams, None
                if streams is not None:
                    with anyio.CancelScope(shield=True):
                        await streams.aclose()

    def backoff(self) -> Backoff:
        """A new backoff for reconnecting one stream."""
        return Backoff(self._reconnect_timeout, self.url)

    def _client(self) -> httpx.AsyncClient:
        if self._http is None:
            raise RuntimeError("use 'async with RemoteMachine(url, token) as client:'")
        return self._http

    async def request(
        self,
        operation: Operation,
        path: Mapping[str, str],
        errors: ErrorOf,
        *,
        body: Any = None,
        headers: dict[str, str] | None = None,
        params: dict[str, str] | None = None,
        content: bytes | AsyncIterable[bytes] | None = None,
    ) -> Any:
        """One request to `operation` (its path parameters filled from `path`) with a
        JSON `body` or raw `content`: the decoded JSON body of a 2xx answer (`None` for
        204), else the exception `errors` gives for the error answer.

        Raises:
            Unreachable: The server could not be reached.
        """
        if self._streams is not None and content is None:
            return await self._direct_request(
                self._streams, operation, path, errors, body, headers, params
            )
        import httpx

        try:
            response = await self._client().request(
                operation.method,
                operation.url(**path),
                json=body,
                content=content,
                headers=headers,
                params=params,
            )
        except httpx.TransportError as exc:
            raise Unreachable(
                f"the server at {self.url} could not be reached: {_describe(exc)}"
            ) from exc
        if response.is_success:
            return None if response.status_code == 204 or not response.content else response.json()
        raise errors(response.status_code, response.content)

    @contextlib.asynccontextmanager
    async def stream(
        self,
        operation: Operation,
        path: Mapping[str, str],
        errors: ErrorOf,
        *,
        params: dict[str, str],
        headers: dict[str, str],
    ) -> AsyncIterator[AsyncIterator[SseEvent]]:
        """One connection to an event stream: its events as they come. A connection that
        cannot be made or drops raises `Dropped` (retry); an error answer raises what
        `errors` gives for it."""
        if self._streams is not None:
            async with self._direct_stream(
                self._streams, operation, path, errors, params=params, headers=headers
            ) as events:
                yield events
            return
        import httpx

        timeout = httpx.Timeout(self._timeout, read=max(self._timeout, _STREAM_READ_TIMEOUT))
        request = self._client().build_request(
            operation.method,
            operation.url(**path),
            params=params,
            headers={"Accept": "text/event-stream", **headers},
            timeout=timeout,
        )
        try:
            response = await self._client().send(request, stream=True)
        except httpx.TransportError as exc:
            raise Dropped(_describe(exc)) from exc
        try:
            if response.status_code in _TRANSIENT:
                raise Dropped(f"HTTP {response.status_code}")
            if not response.is_success:
                try:
                    content = await response.aread()
                except httpx.TransportError as exc:
                    raise Dropped(_describe(exc)) from exc
                raise errors(response.status_code, content)
            async with _drained(_events(response)) as events:
                yield events
        finally:
            with anyio.CancelScope(shield=True):
                await response.aclose()

    @contextlib.asynccontextmanager
    async def start_stream(
        self,
        operation: Operation,
        path: Mapping[str, str],
        errors: ErrorOf,
        *,
        body: Any,
        params: dict[str, str],
    ) -> AsyncIterator[tuple[Mapping[str, str], AsyncIterator[SseEvent]]]:
        """A request that starts something (a run) and answers with its event stream:
        the answer's headers, then its events as they come. Never sent twice: a server
        that cannot be reached raises `Unreachable`; a connection that breaks once the
        answer has begun raises `Dropped` (what was started goes on; the caller reads the
        rest elsewhere); an error answer raises what `errors` gives for it."""
        payload = json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode()
        headers = {"Accept": "text/event-stream", "Content-Type": "application/json"}
        url = operation.url(**path)
        if self._streams is not None:
            self._client()  # raises outside `open`, as the httpx path does
            answered = False
            try:
                async with self._streams.get(
                    url, params, headers, method=operation.method, body=payload
                ) as (head, chunks):
                    answered = True
                    if not 200 <= head.status < 300:
                        raise errors(head.status, b"".join([piece async for piece in chunks]))
                    async with _drained(_parsed(chunks)) as events:
                        yield head.headers, events
            except StreamFailed as exc:
                if answered:
                    raise Dropped(str(exc)) from exc
                raise Unreachable(f"the server at {self.url} could not be reached: {exc}") from exc
            return
        import httpx

        timeout = httpx.Timeout(self._timeout, read=max(self._timeout, _STREAM_READ_TIMEOUT))
        request = self._client().build_request(
            operation.method, url, params=params, headers=headers, content=payload, timeout=timeout
        )
        try:
            response = await self._client().send(request, stream=True)
        except httpx.TransportError as exc:
            raise Unreachable(
                f"the server at {self.url} could not be reached: {_describe(exc)}"
            ) from exc
        try:
            if not response.is_success:
                try:
                    content = await response.aread()
                except httpx.TransportError as exc:
                    raise Unreachable(f"the answer of {self.url} broke: {_describe(exc)}") from exc
                raise errors(response.status_code, content)
            async with _drained(_events(response)) as events:
                yield response.headers, events
        finally:
            with anyio.CancelScope(shield=True):
                await response.aclose()

    async def _direct_request(
        self,
        streams: Connections,
        operation: Operation,
        path: Mapping[str, str],
        errors: ErrorOf,
        body: Any,
        headers: dict[str, str] | None,
        params: dict[str, str] | None,
    ) -> Any:
        """`request` with a JSON body (or none), on a connection of `streams`: httpx
        spends about a millisecond of CPU on a request, several times the exchange."""
        self._client()  # raises outside `open`, as the httpx path does
        sent = dict(headers or {})
        payload = None
        if body is not None:
            payload = json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode()
            sent.setdefault("Content-Type", "application/json")
        try:
            head, content = await streams.fetch(
                operation.method, operation.url(**path), params, sent, payload
            )
        except StreamFailed as exc:
            raise Unreachable(f"the server at {self.url} could not be reached: {exc}") from exc
        if 200 <= head.status < 300:
            return None if head.status == 204 or not content else json.loads(content)
        raise errors(head.status, content)

    @contextlib.asynccontextmanager
    async def _direct_stream(
        self,
        streams: Connections,
        operation: Operation,
        path: Mapping[str, str],
        errors: ErrorOf,
        *,
        params: dict[str, str],
        headers: dict[str, str],
    ) -> AsyncIterator[AsyncIterator[SseEvent]]:
        """`stream`, read off a connection of `streams` rather than through httpx."""
        self._client()  # raises outside `open`, as the httpx path does
        try:
            async with streams.get(
                operation.url(**path), params, {"Accept": "text/event-stream", **headers}
            ) as (head, body):
                if head.status in _TRANSIENT:
                    raise Dropped(f"HTTP {head.status}")
                if not 200 <= head.status < 300:
                    raise errors(head.status, b"".join([piece async for piece in body]))
                async with _drained(_parsed(body)) as events:
                    yield events
        except StreamFailed as exc:
            raise Dropped(str(exc)) from exc


@contextlib.asynccontextmanager
async def _drained(
    events: AsyncGenerator[SseEvent, None],
) -> AsyncIterator[AsyncGenerator[SseEvent, None]]:
    """`events` for the caller; once it is done, having read the stream's last event, the
    little that follows (the end of the chunked body) is read, so that the connection goes
    back to the pool: closed unread, it would be dropped, and the next request would open
    (and the server accept) a new one."""
    try:
        yield events
        with anyio.move_on_after(_DRAIN_TIMEOUT):
            async for _ in events:
                pass
    finally:
        await events.aclose()


async def _parsed(body: AsyncIterator[bytes]) -> AsyncGenerator[SseEvent, None]:
    parser = SseParser()
    async for chunk in body:
        for event in parser.feed(chunk):
            yield event


async def _events(response: httpx.Response) -> AsyncGenerator[SseEvent, None]:
    import httpx

    parser = SseParser()
    try:
        async for chunk in response.aiter_raw():
            for event in parser.feed(chunk):
                yield event
    except (httpx.TransportError, httpx.StreamError) as exc:
        raise Dropped(_describe(exc)) from exc


class Backoff:
    """When a stream tries again: after 0.1 s, doubling up to 5 s, until `limit` seconds
    have passed without reaching the server at `url`."""

    def __init__(self, limit: float, url: str) -> None:
        self._limit = limit
        self._url = url
        self._delay = _FIRST_DELAY
        self._deadline = anyio.current_time() + limit
        self._progressed = False

    def reached(self) -> None:
        """The server answered: the time to give up starts again."""
        self._deadline = anyio.current_time() + self._limit

    def progress(self) -> None:
        """An event came: the next failure is tried again quickly, and the time to give
        up starts again. Called for every event, so it only takes note: the clock is
        read when the stream has broken, a moment after its last event."""
        self._progressed = True

    def _settle(self) -> None:
        if self._progressed:
            self._progressed = False
            self.reached()
            self._delay = _FIRST_DELAY

    def expired(self) -> bool:
        """Whether the server has not been reached for `limit` seconds."""
        self._settle()
        return anyio.current_time() >= self._deadline

    async def wait(self, what: str) -> None:
        """Sleep before the next try.

        Raises:
            ConversationError: The server has not been reached for `limit` seconds
                (`what` says what the stream was doing).
        """
        self._settle()
        remaining = self._deadline - anyio.current_time()
        if remaining <= 0:
            raise ConversationError(
                f"the server at {self._url} could not be reached for {self._limit:g} s while {what}"
            )
        await anyio.sleep(min(self._delay, remaining))
        self._delay = min(self._delay * 2, _MAX_DELAY)


@functools.cache
def _ssl_context() -> ssl.SSLContext:
    # httpx builds a context (loading every CA certificate) per client, a tenth of a
    # second each: one per process is enough, as the certificates do not change.
    import httpx

    return httpx.create_ssl_context()


def _describe(exc: BaseException) -> str:
    return str(exc) or type(exc).__name__


def page_query(limit: int | None, cursor: str | None) -> dict[str, str]:
    """A list request's `limit` and `cursor` query parameters, checked here as the server
    checks them, so that a bad `limit` raises the same `InvalidPageError` as in process."""
    params: dict[str, str] = {}
    if limit is not None:
        params["limit"] = str(check_limit(limit))
    if cursor is not None:
        if not isinstance(cursor, str):
            raise InvalidPageError("cursor is not one this list gave")
        params["cursor"] = cursor
    return params
