"""The HTTP transport under both remote clients: one connection pool to a server, JSON
requests whose error answers become the caller's exceptions, and event streams that the
clients reconnect with a backoff.

httpx is an optional dependency (the `server` extra): it is imported when a transport is
opened, never when this module is.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Mapping
from typing import TYPE_CHECKING, Any

import anyio

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

    @contextlib.asynccontextmanager
    async def open(self) -> AsyncIterator[None]:
        """The connection pool, open while the context is."""
        import httpx

        async with httpx.AsyncClient(
            base_url=self.url,
            headers={"Authorization": f"Bearer {self._token}"},
            timeout=httpx.Timeout(self._timeout),
            verify=_ssl_context(),
            # Every follow and watch holds a connection for as long as it goes.
            limits=httpx.Limits(max_connections=None, max_keepalive_connections=20),
        ) as http:
            self._http = http
            try:
                yield
            finally:
                self._http = None

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
    ) -> Any:
        """One JSON request to `operation` (its path parameters filled from `path`): the
        decoded body of a 2xx answer (`None` for 204), else the exception `errors` gives
        for the error answer.

        Raises:
            Unreachable: The server could not be reached.
        """
        import httpx

        try:
            response = await self._client().request(
                operation.method, operation.url(**path), json=body, headers=headers, params=params
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
            events = _events(response)
            try:
                yield events
            finally:
                await events.aclose()
        finally:
            with anyio.CancelScope(shield=True):
                await response.aclose()


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

    def reached(self) -> None:
        """The server answered: the time to give up starts again."""
        self._deadline = anyio.current_time() + self._limit

    def progress(self) -> None:
        """An event came: the next failure is tried again quickly."""
        self.reached()
        self._delay = _FIRST_DELAY

    def expired(self) -> bool:
        """Whether the server has not been reached for `limit` seconds."""
        return anyio.current_time() >= self._deadline

    async def wait(self, what: str) -> None:
        """Sleep before the next try.

        Raises:
            ConversationError: The server has not been reached for `limit` seconds
                (`what` says what the stream was doing).
        """
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
