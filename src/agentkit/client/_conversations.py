"""The remote client: the conversations API of a machine served by `agentkit serve`, over
HTTP (the routes and error codes are in `docs/server.md`).

httpx is an optional dependency (the `server` extra): it is imported when a
`RemoteMachine` is entered, never when this module is.
"""

from __future__ import annotations

import codecs
import contextlib
import functools
import json
import logging
import re
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

import anyio
from pydantic import TypeAdapter, ValidationError

from agentkit._internal.callbacks import call_logged
from agentkit.conversations import (
    ROOL,
    AccessDeniedError,
    AgentDefinition,
    AgentExistsError,
    AgentInfo,
    AttachmentError,
    Conversation,
    ConversationBusyError,
    ConversationClient,
    ConversationDetails,
    ConversationError,
    ConversationNotFoundError,
    ConversationSummary,
    ConversationView,
    FinalEvent,
    FollowEvent,
    MachineAgentNotFoundError,
    Member,
    PromptAccepted,
    RunNotFoundError,
    StopWatch,
    Turn,
    TurnNotFoundError,
    Visibility,
    WatchCallback,
)
from agentkit.spec import ReasoningEffort

if TYPE_CHECKING:
    import ssl

    import httpx
    from anyio.abc import TaskGroup

    from agentkit.client._rooms import RemoteRoomsClient

__all__ = ["RemoteMachine"]

_logger = logging.getLogger("agentkit.conversations")

# The error codes of the HTTP contract, by the exception the in-process client raises.
# Codes not listed (bad_request, not_found, invalid, internal, ...) give ConversationError.
_ERRORS: dict[str, type[ConversationError]] = {
    "unauthorized": AccessDeniedError,
    "access_denied": AccessDeniedError,
    "conversation_not_found": ConversationNotFoundError,
    "run_not_found": RunNotFoundError,
    "turn_not_found": TurnNotFoundError,
    "agent_not_found": MachineAgentNotFoundError,
    "conversation_busy": ConversationBusyError,
    "agent_exists": AgentExistsError,
    "attachment_error": AttachmentError,
}

# Statuses a proxy or a restarting server gives for a moment: a stream retries them.
_TRANSIENT = frozenset({502, 503, 504})

_FIRST_DELAY = 0.1
_MAX_DELAY = 5.0
# A stream is idle at most 15 s between keep-alives (the server's default): three missed
# ones mean it is dead. Should a server keep quiet longer, the stream is only reopened.
_STREAM_READ_TIMEOUT = 45.0

_follow_event: TypeAdapter[FollowEvent] = TypeAdapter(FollowEvent)

ErrorOf = Callable[[int, bytes], Exception]
"""Maps an error answer (status, body) to the exception an in-process client raises."""


class RemoteMachine(ConversationClient):
    """The conversations API of a remote machine (`agentkit serve`), acting as the member
    whose token it holds.

    It implements [`ConversationClient`][agentkit.conversations.ConversationClient]: the
    same methods, models and exceptions as the in-process client. Use it as an async
    context manager (it owns the HTTP connections and the tasks of its watches); it works
    under asyncio and trio:

    ```python
    async with RemoteMachine("http://127.0.0.1:8765", token) as client:
        conversation = await client.create_conversation(name="Plans")
        accepted = await conversation.prompt("Summarise the plan")
        async for event in conversation.follow(accepted.run_id):
            ...
    ```

    `follow()` and `watch()` reconnect by themselves when their connection drops. The
    machine's rooms are `client.rooms`, over the same connections.

    Args:
        url: The server's base URL (`http://host:port`).
        token: The member's token (`agentkit members add` prints it).
        timeout: Seconds for connecting and for each request's response.
        reconnect_timeout: How long a stream (`follow`, `watch`) keeps trying to reach
            the server again, in total, before it gives up.

    Raises:
        AccessDeniedError: On entering, when the server does not know the token.
        ConversationError: On entering, when the server cannot be reached.
    """

    def __init__(
        self,
        url: str,
        token: str,
        *,
        timeout: float = 30.0,
        reconnect_timeout: float = 60.0,
    ) -> None:
        self._url = url.rstrip("/")
        self._token = token
        self._timeout = timeout
        self._reconnect_timeout = reconnect_timeout
        self._http: httpx.AsyncClient | None = None
        self._group: TaskGroup | None = None
        self._stack: contextlib.AsyncExitStack | None = None
        self._member: Member | None = None
        self._rooms: RemoteRoomsClient | None = None

    def __repr__(self) -> str:
        who = f"{self._member.name} ({self._member.role})" if self._member else "not entered"
        return f"<RemoteMachine {self._url} {who}>"

    async def __aenter__(self) -> RemoteMachine:
        import httpx

        if self._stack is not None:
            raise RuntimeError("a RemoteMachine is entered once")
        async with contextlib.AsyncExitStack() as stack:
            self._http = await stack.enter_async_context(
                httpx.AsyncClient(
                    base_url=self._url,
                    headers={"Authorization": f"Bearer {self._token}"},
                    timeout=httpx.Timeout(self._timeout),
                    verify=_ssl_context(),
                    # Every follow and watch holds a connection for as long as it goes.
                    limits=httpx.Limits(max_connections=None, max_keepalive_connections=20),
                )
            )
            try:
                self._member = Member.model_validate(await self._request("GET", "/v1/me"))
            except AccessDeniedError as exc:
                raise AccessDeniedError(
                    f"the server at {self._url} does not accept this token: {exc}"
                ) from None
            # Entered last, so that no error above comes out wrapped in an exception group.
            self._group = await stack.enter_async_context(anyio.create_task_group())
            # Cancelled first on the way out: the watches end before the connections close.
            stack.callback(self._group.cancel_scope.cancel)
            self._stack = stack.pop_all()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        stack, self._stack = self._stack, None
        if stack is not None:
            await stack.__aexit__(None, None, None)
        self._http = None
        self._group = None

    @property
    def rooms(self) -> RemoteRoomsClient:
        """The rooms API of the machine, acting as this member, over the same connections
        (see [`RemoteRoomsClient`][agentkit.client.RemoteRoomsClient])."""
        if self._rooms is None:
            from agentkit.client._rooms import RemoteRoomsClient

            self._rooms = RemoteRoomsClient(self)
        return self._rooms

    @property
    def member(self) -> Member:
        """The member the token belongs to (known once entered)."""
        if self._member is None:
            raise RuntimeError("use 'async with RemoteMachine(url, token) as client:'")
        return self._member

    # --- agents ---------------------------------------------------------------------

    async def list_agents(self) -> list[AgentInfo]:
        """Every agent of the machine, `rool` first."""
        body = await self._request("GET", "/v1/agents")
        return [AgentInfo.model_validate(agent) for agent in body["agents"]]

    async def create_agent(self, definition: AgentDefinition) -> AgentInfo:
        """Create an agent (owners only); `AgentExistsError` when the name is taken."""
        return await self._put_agent(definition, {"If-None-Match": "*"})

    async def replace_agent(self, definition: AgentDefinition) -> AgentInfo:
        """Replace an agent (owners only); `MachineAgentNotFoundError` when it does not
        exist. Runs accepted from now on use the new definition."""
        return await self._put_agent(definition, {"If-Match": "*"})

    async def _put_agent(self, definition: AgentDefinition, headers: dict[str, str]) -> AgentInfo:
        body = await self._request(
            "PUT",
            f"/v1/agents/{_segment(definition.name)}",
            body=definition.model_dump(mode="json"),
            headers=headers,
        )
        return AgentInfo.model_validate(body)

    async def delete_agent(self, name: str) -> None:
        """Delete an agent (owners only; never `rool`). Its conversations stay readable."""
        await self._request("DELETE", f"/v1/agents/{_segment(name)}")

    # --- conversations --------------------------------------------------------------

    async def create_conversation(
        self,
        *,
        agent: str = ROOL,
        name: str = "",
        visibility: Visibility = "private",
        instructions: str | None = None,
    ) -> Conversation:
        """Create a conversation with `agent` (owners and editors)."""
        body = await self._request(
            "POST",
            "/v1/conversations",
            body={
                "agent": agent,
                "name": name,
                "visibility": visibility,
                "instructions": instructions,
            },
        )
        return self.conversation(ConversationDetails.model_validate(body).id)

    async def list_conversations(self) -> list[ConversationSummary]:
        """Light rows of the conversations this member can see, most recent first."""
        body = await self._request("GET", "/v1/conversations")
        return [ConversationSummary.model_validate(row) for row in body["conversations"]]

    async def get_conversation(self, conversation_id: str) -> ConversationDetails:
        """Metadata and saved turns."""
        body = await self._request(
            "GET", _conversation_path(conversation_id), conversation_id=conversation_id
        )
        return ConversationDetails.model_validate(body)

    async def list_turns(self, conversation_id: str) -> list[Turn]:
        """The saved turns, oldest first."""
        body = await self._request(
            "GET",
            f"{_conversation_path(conversation_id)}/turns",
            conversation_id=conversation_id,
        )
        return [Turn.model_validate(turn) for turn in body["turns"]]

    async def rename_conversation(self, conversation_id: str, name: str) -> None:
        """Change the name (turns do not change)."""
        await self._request(
            "PATCH",
            _conversation_path(conversation_id),
            body={"name": name},
            conversation_id=conversation_id,
        )

    async def set_visibility(self, conversation_id: str, visibility: Visibility) -> None:
        """Make the conversation `private` (to its creator) or `shared`."""
        await self._request(
            "PATCH",
            _conversation_path(conversation_id),
            body={"visibility": visibility},
            conversation_id=conversation_id,
        )

    async def delete_conversation(self, conversation_id: str) -> None:
        """Delete the conversation with its runs and turns (a running run is cancelled)."""
        await self._request(
            "DELETE", _conversation_path(conversation_id), conversation_id=conversation_id
        )

    async def prompt(
        self,
        conversation_id: str,
        text: str,
        *,
        attachments: Sequence[str] = (),
        effort: ReasoningEffort | None = None,
        output_schema: dict[str, Any] | None = None,
        replace_turn: str | None = None,
    ) -> PromptAccepted:
        """Start a run; returns once the server has accepted and stored it. The run
        belongs to the machine: nothing this client does afterwards stops it but `cancel`.

        Raises:
            ConversationBusyError: A run is going already.
            AttachmentError: An attachment is missing or outside the roots.
        """
        if isinstance(attachments, str):
            raise AttachmentError("attachments is a list of paths, not one string")
        payload: dict[str, Any] = {"prompt": text, "attachments": list(attachments)}
        if effort is not None:
            payload["effort"] = effort
        if output_schema is not None:
            payload["output_schema"] = output_schema
        if replace_turn is not None:
            payload["replace_turn"] = replace_turn
        body = await self._request(
            "POST",
            f"{_conversation_path(conversation_id)}/runs",
            body=payload,
            conversation_id=conversation_id,
        )
        return PromptAccepted.model_validate(body)

    def follow(
        self, conversation_id: str, run_id: str, *, after: int | None = None
    ) -> AsyncIterator[FollowEvent]:
        """A run's output parts after offset `after`, then exactly one `FinalEvent`.

        Read from the run's event stream; when the connection drops it reconnects by
        itself, resuming after the last offset it yielded (no gap, no duplicate), for up
        to `reconnect_timeout` seconds without reaching the server.

        Raises:
            ConversationNotFoundError: The conversation is not visible.
            RunNotFoundError: The conversation has no such run.
            ConversationError: The server could not be reached again in time.
        """
        return self._follow(conversation_id, run_id, after)

    async def _follow(
        self, conversation_id: str, run_id: str, after: int | None
    ) -> AsyncIterator[FollowEvent]:
        if after is not None and (not isinstance(after, int) or isinstance(after, bool)):
            raise ConversationError(f"after must be an offset (an integer), not {after!r}")
        if not isinstance(run_id, str) or not run_id:
            await self.get_conversation(conversation_id)  # a hidden one says so first
            raise RunNotFoundError(f"conversation {conversation_id!r} has no run {run_id!r}")
        path = f"{_conversation_path(conversation_id)}/runs/{_segment(run_id)}/events"
        cursor = -1 if after is None else after
        backoff = _Backoff(self._reconnect_timeout)
        first = True
        while True:
            # The first request says where to start in the query (as `follow` was
            # asked); a reconnection with Last-Event-ID, as SSE clients do.
            params = {"after": str(after)} if first and after is not None else {}
            headers = {"Last-Event-ID": str(cursor)} if not first and cursor >= 0 else {}
            first = False
            seen_any = False
            try:
                async with self._stream(path, params, headers, conversation_id) as events:
                    backoff.reached()
                    async for event in events:
                        follow_event = _parse_follow(event)
                        if follow_event is None or follow_event.offset <= cursor:
                            continue  # a keep-alive, an unknown event, or seen already
                        seen_any = True
                        cursor = follow_event.offset
                        backoff.progress()
                        yield follow_event
                        if isinstance(follow_event, FinalEvent):
                            return
                # The server ended the stream without a final event. With nothing new
                # at all, the run ended at or before `cursor` (a follow after its final
                # event is empty) unless it is still going (a server going away).
                if not seen_any and not await self._is_running(conversation_id, run_id):
                    return
            except (_Dropped, _Unreachable) as exc:
                _logger.debug("follow of run %s dropped: %s", run_id, exc)
            await backoff.wait(f"following run {run_id!r}", self._url)

    async def _is_running(self, conversation_id: str, run_id: str) -> bool:
        details = await self.get_conversation(conversation_id)
        return details.active_run_id == run_id

    async def cancel(self, conversation_id: str) -> bool:
        """Stop the running run (provider call and tool processes); returns once it has
        ended, `False` when no run was going. Its output so far is kept, `cancelled`."""
        # One request: the server cancels whichever run is going (and refuses viewers
        # even when none is).
        body = await self._request(
            "POST", f"{_conversation_path(conversation_id)}/cancel", conversation_id=conversation_id
        )
        return bool(body["cancelled"])

    async def watch(self, conversation_id: str, callback: WatchCallback) -> StopWatch:
        """Deliver a `ConversationView` now and after every change, across runs and
        other clients' changes, until the returned function is called.

        The views come from the conversation's watch stream, read by a task of this
        client; it reconnects by itself when the connection drops. While the server
        cannot be reached for `reconnect_timeout` seconds, a view with `error` set says
        so (and it goes on trying). The watch ends when the conversation is deleted or
        no longer visible (after a view with `error` set), or when the client closes.

        Raises:
            ConversationNotFoundError: The conversation is not visible.
        """
        await self.get_conversation(conversation_id)  # raises as the in-process client
        if self._group is None:
            raise RuntimeError("use 'async with RemoteMachine(url, token) as client:'")
        watch = _Watch(self, conversation_id, callback)
        self._group.start_soon(watch.run, name=f"agentkit remote watch {conversation_id}")
        return watch.stop

    # --- HTTP -----------------------------------------------------------------------

    def _client(self) -> httpx.AsyncClient:
        if self._http is None:
            raise RuntimeError("use 'async with RemoteMachine(url, token) as client:'")
        return self._http

    async def _request(
        self,
        method: str,
        path: str,
        *,
        body: Any = None,
        headers: dict[str, str] | None = None,
        conversation_id: str | None = None,
        params: dict[str, str] | None = None,
        errors: ErrorOf | None = None,
    ) -> Any:
        """One JSON request: the decoded body of a 2xx answer (`None` for 204), else the
        in-process client's exception for the error it carries (`errors` maps an error
        answer to it for another API than conversations: the rooms client's)."""
        import httpx

        _check_id(conversation_id)
        try:
            response = await self._client().request(
                method, path, json=body, headers=headers, params=params
            )
        except httpx.TransportError as exc:
            raise _Unreachable(
                f"the server at {self._url} could not be reached: {_describe(exc)}"
            ) from exc
        if response.is_success:
            return None if response.status_code == 204 or not response.content else response.json()
        if errors is not None:
            raise errors(response.status_code, response.content)
        raise _error_of(response.status_code, response.content, conversation_id)

    @contextlib.asynccontextmanager
    async def _stream(
        self,
        path: str,
        params: dict[str, str],
        headers: dict[str, str],
        conversation_id: str | None,
        errors: ErrorOf | None = None,
    ) -> AsyncIterator[AsyncIterator[_SseEvent]]:
        """One connection to an event stream: its events as they come. A connection that
        cannot be made or drops raises `_Dropped` (retry); an error answer raises the
        in-process client's exception."""
        import httpx

        _check_id(conversation_id)
        timeout = httpx.Timeout(self._timeout, read=max(self._timeout, _STREAM_READ_TIMEOUT))
        request = self._client().build_request(
            "GET",
            path,
            params=params,
            headers={"Accept": "text/event-stream", **headers},
            timeout=timeout,
        )
        try:
            response = await self._client().send(request, stream=True)
        except httpx.TransportError as exc:
            raise _Dropped(_describe(exc)) from exc
        try:
            if response.status_code in _TRANSIENT:
                raise _Dropped(f"HTTP {response.status_code}")
            if not response.is_success:
                try:
                    content = await response.aread()
                except httpx.TransportError as exc:
                    raise _Dropped(_describe(exc)) from exc
                if errors is not None:
                    raise errors(response.status_code, content)
                raise _error_of(response.status_code, content, conversation_id)
            events = _events(response)
            try:
                yield events
            finally:
                await events.aclose()
        finally:
            with anyio.CancelScope(shield=True):
                await response.aclose()


async def _events(response: httpx.Response) -> AsyncGenerator[_SseEvent, None]:
    import httpx

    parser = _SseParser()
    try:
        async for chunk in response.aiter_raw():
            for event in parser.feed(chunk):
                yield event
    except (httpx.TransportError, httpx.StreamError) as exc:
        raise _Dropped(_describe(exc)) from exc


class _Dropped(Exception):
    """A stream's connection could not be made, or broke: it is tried again."""


class _Unreachable(ConversationError):
    """A request could not reach the server (what the caller of a request sees)."""


class _Backoff:
    """When a stream tries again: after 0.1 s, doubling up to 5 s, until
    `limit` seconds have passed without reaching the server."""

    def __init__(self, limit: float) -> None:
        self._limit = limit
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
        return anyio.current_time() >= self._deadline

    async def wait(self, what: str, url: str) -> None:
        remaining = self._deadline - anyio.current_time()
        if remaining <= 0:
            raise ConversationError(
                f"the server at {url} could not be reached for {self._limit:g} s while {what}"
            )
        await anyio.sleep(min(self._delay, remaining))
        self._delay = min(self._delay * 2, _MAX_DELAY)


class _Watch:
    """One watch: reads the conversation's watch stream and calls back with each new
    view, connecting again after drops, until stopped."""

    def __init__(
        self, client: RemoteMachine, conversation_id: str, callback: WatchCallback
    ) -> None:
        self._client = client
        self._id = conversation_id
        self._callback = callback
        self._scope = anyio.CancelScope()
        self._stopped = False
        self._last: ConversationView | None = None

    def stop(self) -> None:
        """Stop the watch: no view is delivered once this has returned."""
        self._stopped = True
        self._scope.cancel()

    async def run(self) -> None:
        with self._scope:
            try:
                await self._read()
            except Exception as exc:
                # A bug of this client's: said in a view, without taking down the
                # RemoteMachine (and the caller's code inside it) with it.
                _logger.exception("the watch of conversation %s failed", self._id)
                await self._deliver(ConversationView(error=f"{type(exc).__name__}: {exc}"))

    async def _read(self) -> None:
        # The first view, before anything is read, as the in-process watch gives it (the
        # server may send its own `loading` view, or only the newer one it has already).
        await self._deliver(ConversationView(loading=True))
        path = f"{_conversation_path(self._id)}/watch"
        backoff = _Backoff(self._client._reconnect_timeout)
        unreachable_said = False
        while True:
            try:
                async with self._client._stream(path, {}, {}, self._id) as events:
                    backoff.reached()
                    unreachable_said = False
                    async for event in events:
                        view = _parse_view(event)
                        if view is not None:
                            backoff.progress()
                            await self._deliver(view)
            except _Dropped as exc:
                _logger.debug("watch of conversation %s dropped: %s", self._id, exc)
            except ConversationError as exc:
                # Deleted, no longer visible, or the token was removed: said in a
                # view, as the in-process watch does, and the watch is over.
                await self._deliver(ConversationView(error=str(exc)))
                return
            if backoff.expired() and not unreachable_said:
                unreachable_said = True
                last = self._last or ConversationView()
                await self._deliver(
                    ConversationView(
                        turns=last.turns,
                        error=f"the server at {self._client._url} could not be reached",
                    )
                )
                backoff.reached()  # goes on trying, at the longest delay
            with contextlib.suppress(ConversationError):
                await backoff.wait("watching", self._client._url)

    async def _deliver(self, view: ConversationView) -> None:
        # A new connection starts with a fresh (`loading`) view: the callback has seen
        # one already, and views that did not change are not delivered twice.
        if view == self._last or (view.loading and self._last is not None):
            return
        if self._stopped:
            return
        self._last = view
        await call_logged(
            self._callback, view, _logger, "a watch callback of conversation %s failed", self._id
        )


# --- server-sent events -------------------------------------------------------------------


@dataclass(frozen=True)
class _SseEvent:
    """One dispatched server-sent event."""

    event: str
    data: str
    id: str | None


_LINE_END = re.compile(r"\r\n|\r|\n")


class _SseParser:
    """The event stream format of the HTML standard, fed bytes as they arrive: `data`
    lines joined with newlines, `event` and `id` kept, comments (`:`) and other fields
    ignored, an event dispatched on a blank line; lines end with CRLF, LF or CR."""

    def __init__(self) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._buffer = ""
        self._skip_lf = False  # the last chunk ended with CR: a LF next ends no new line
        self._event = ""
        self._data: list[str] = []
        self._last_id: str | None = None

    def feed(self, chunk: bytes) -> list[_SseEvent]:
        text = self._decoder.decode(chunk)
        if not text:
            return []
        if self._skip_lf and text.startswith("\n"):
            text = text[1:]
        self._skip_lf = text.endswith("\r")
        *lines, self._buffer = _LINE_END.split(self._buffer + text)
        return [event for line in lines if (event := self._line(line)) is not None]

    def _line(self, line: str) -> _SseEvent | None:
        if not line:
            return self._dispatch()
        if line.startswith(":"):
            return None
        name, colon, value = line.partition(":")
        if colon and value.startswith(" "):
            value = value[1:]
        if name == "data":
            self._data.append(value)
        elif name == "event":
            self._event = value
        elif name == "id" and "\0" not in value:
            self._last_id = value
        return None

    def _dispatch(self) -> _SseEvent | None:
        data, event = self._data, self._event
        self._data, self._event = [], ""
        if not data:
            return None
        return _SseEvent(event=event or "message", data="\n".join(data), id=self._last_id)


def _parse_follow(event: _SseEvent) -> FollowEvent | None:
    """The follow event an SSE event carries; `None` for one of another kind."""
    payload = _json_object(event)
    if payload is None:
        return None
    _raise_carried(payload)
    if payload.get("type") not in ("output", "final"):
        return None
    try:
        return _follow_event.validate_python(payload)
    except ValidationError as exc:
        raise ConversationError(
            f"the server sent a follow event this client cannot read: {exc}"
        ) from None


def _parse_view(event: _SseEvent) -> ConversationView | None:
    """The view a watch stream's `view` event carries; `None` for another event."""
    if event.event != "view":
        return None
    payload = _json_object(event)
    if payload is None:
        return None
    try:
        return ConversationView.model_validate(payload)
    except ValidationError as exc:
        raise ConversationError(f"the server sent a view this client cannot read: {exc}") from None


def _json_object(event: _SseEvent) -> dict[str, Any] | None:
    try:
        payload = json.loads(event.data)
    except ValueError:
        return None
    return payload if isinstance(payload, dict) else None


def _raise_carried(payload: dict[str, Any]) -> None:
    """An error sent inside a stream (`{"error": {"code", "message"}}`) is raised."""
    error = payload.get("error")
    if isinstance(error, dict) and "code" in error:
        raise _exception(str(error["code"]), str(error.get("message", "")), None)


# --- helpers -------------------------------------------------------------------------------


@functools.cache
def _ssl_context() -> ssl.SSLContext:
    # httpx builds a context (loading every CA certificate) per client, a tenth of a
    # second each: one per process is enough, as the certificates do not change.
    import httpx

    return httpx.create_ssl_context()


# --- errors and paths -----------------------------------------------------------------------


def _error_of(status: int, content: bytes, conversation_id: str | None) -> ConversationError:
    """The in-process client's exception for an error answer of the server."""
    try:
        error = json.loads(content)["error"]
        code, message = str(error["code"]), str(error["message"])
    except (ValueError, KeyError, TypeError):
        text = content.decode("utf-8", "replace").strip()[:200]
        return ConversationError(f"the server answered HTTP {status}: {text or 'no body'}")
    if code == "not_found" and conversation_id is not None:
        # No route for this id (one with a '/' in it, say): no such conversation.
        return ConversationNotFoundError(conversation_id)
    return _exception(code, message, conversation_id)


def _exception(code: str, message: str, conversation_id: str | None) -> ConversationError:
    cls = _ERRORS.get(code, ConversationError)
    if cls is ConversationNotFoundError:
        error = ConversationNotFoundError(conversation_id or "")
        error.args = (message,)  # the server's words, exactly (they name the id)
        return error
    return cls(message)


def _check_id(conversation_id: str | None) -> None:
    # An empty id has no route of its own: it names no conversation, as in process.
    if conversation_id is not None and (
        not isinstance(conversation_id, str) or not conversation_id
    ):
        raise ConversationNotFoundError(str(conversation_id))


def _segment(value: str) -> str:
    return quote(str(value), safe="")


def _conversation_path(conversation_id: str) -> str:
    return f"/v1/conversations/{_segment(conversation_id)}"


def _describe(exc: BaseException) -> str:
    return str(exc) or type(exc).__name__
