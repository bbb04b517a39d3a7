"""The remote client: the conversations API of a machine served by `agentkit serve`, over
HTTP (the routes and error codes are in `docs/server.md`, and in `agentkit.client.contract`).

httpx is an optional dependency (the `server` extra): it is imported when a
`RemoteMachine` is entered, never when this module is.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import anyio
from pydantic import TypeAdapter, ValidationError

from agentkit._internal.callbacks import call_logged
from agentkit.client._transport import Dropped, Transport, Unreachable, page_query
from agentkit.client.contract import (
    ANSWER_REQUEST,
    CANCEL_CONVERSATION,
    CANCEL_QUEUED,
    CONVERSATION_ID_HEADER,
    CREATE_CONVERSATION,
    CREATE_RUN,
    DECIDE_REQUEST,
    DELETE_AGENT,
    DELETE_CONVERSATION,
    FOLLOW_RUN,
    FORK_CONVERSATION,
    GET_CONVERSATION,
    GET_ME,
    LIST_AGENTS,
    LIST_CONVERSATIONS,
    LIST_TURNS,
    PUT_AGENT,
    RUN_ID_HEADER,
    START_RUN,
    UPDATE_CONVERSATION,
    UPLOAD_FILE,
    VIEW_EVENT,
    WATCH_CONVERSATION,
    Operation,
    SseEvent,
    carried_error,
    conversations_exception,
    read_error,
)
from agentkit.conversations import (
    ROOL,
    AccessDeniedError,
    AgentDefinition,
    AgentInfo,
    AttachmentError,
    Conversation,
    ConversationClient,
    ConversationDetails,
    ConversationError,
    ConversationNotFoundError,
    ConversationSummary,
    ConversationView,
    FinalEvent,
    FollowEvent,
    IfBusy,
    Member,
    PromptAccepted,
    QueuedPromptNotFoundError,
    RunNotFoundError,
    RunResult,
    RunStream,
    StopWatch,
    Turn,
    UploadedFile,
    Visibility,
    WatchCallback,
    local_source,
)
from agentkit.errors import StoreUnavailableError
from agentkit.paging import Page
from agentkit.spec import ReasoningEffort

if TYPE_CHECKING:
    from anyio.abc import TaskGroup

    from agentkit.client._rooms import RemoteRoomsClient

__all__ = ["RemoteMachine"]

_logger = logging.getLogger("agentkit.conversations")

_follow_event: TypeAdapter[FollowEvent] = TypeAdapter(FollowEvent)


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
        self._transport = Transport(
            url, token, timeout=timeout, reconnect_timeout=reconnect_timeout
        )
        self._group: TaskGroup | None = None
        self._stack: contextlib.AsyncExitStack | None = None
        self._member: Member | None = None
        self._rooms: RemoteRoomsClient | None = None

    def __repr__(self) -> str:
        who = f"{self._member.name} ({self._member.role})" if self._member else "not entered"
        return f"<RemoteMachine {self._transport.url} {who}>"

    async def __aenter__(self) -> RemoteMachine:
        if self._stack is not None:
            raise RuntimeError("a RemoteMachine is entered once")
        async with contextlib.AsyncExitStack() as stack:
            await stack.enter_async_context(self._transport.open())
            try:
                self._member = Member.model_validate(await self._request(GET_ME))
            except AccessDeniedError as exc:
                raise AccessDeniedError(
                    f"the server at {self._transport.url} does not accept this token: {exc}"
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
        self._group = None

    @property
    def rooms(self) -> RemoteRoomsClient:
        """The rooms API of the machine, acting as this member, over the same connections
        (see [`RemoteRoomsClient`][agentkit.client.RemoteRoomsClient])."""
        if self._rooms is None:
            from agentkit.client._rooms import RemoteRoomsClient

            self._rooms = RemoteRoomsClient(self, self._transport)
        return self._rooms

    @property
    def member(self) -> Member:
        """The member the token belongs to (known once entered)."""
        if self._member is None:
            raise RuntimeError("use 'async with RemoteMachine(url, token) as client:'")
        return self._member

    # --- agents ---------------------------------------------------------------------

    async def list_agents(
        self, *, limit: int | None = None, cursor: str | None = None
    ) -> Page[AgentInfo]:
        """A page of the agents of the machine, oldest first (`rool` first): `limit`
        (1..1000, 100 by default) and `cursor`, the `next` of the page before."""
        body = await self._request(LIST_AGENTS, params=page_query(limit, cursor))
        return Page([AgentInfo.model_validate(a) for a in body["agents"]], body.get("next"))

    async def create_agent(self, definition: AgentDefinition) -> AgentInfo:
        """Create an agent (owners only); `AgentExistsError` when the name is taken."""
        return await self._put_agent(definition, {"If-None-Match": "*"})

    async def replace_agent(self, definition: AgentDefinition) -> AgentInfo:
        """Replace an agent (owners only); `MachineAgentNotFoundError` when it does not
        exist. Runs accepted from now on use the new definition."""
        return await self._put_agent(definition, {"If-Match": "*"})

    async def _put_agent(self, definition: AgentDefinition, headers: dict[str, str]) -> AgentInfo:
        body = await self._request(
            PUT_AGENT,
            {"name": definition.name},
            body=definition.model_dump(mode="json", by_alias=True),
            headers=headers,
        )
        return AgentInfo.model_validate(body)

    async def delete_agent(self, name: str) -> None:
        """Delete an agent (owners only; never `rool`). Its conversations stay readable."""
        await self._request(DELETE_AGENT, {"name": name})

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
            CREATE_CONVERSATION,
            body={
                "agent": agent,
                "name": name,
                "visibility": visibility,
                "instructions": instructions,
            },
        )
        return self.conversation(ConversationDetails.model_validate(body).id)

    async def list_conversations(
        self, *, limit: int | None = None, cursor: str | None = None
    ) -> Page[ConversationSummary]:
        """A page of light rows of the conversations this member can see, newest first."""
        body = await self._request(LIST_CONVERSATIONS, params=page_query(limit, cursor))
        rows = [ConversationSummary.model_validate(row) for row in body["conversations"]]
        return Page(rows, body.get("next"))

    async def get_conversation(self, conversation_id: str) -> ConversationDetails:
        """Metadata and saved turns."""
        body = await self._request(GET_CONVERSATION, conversation_id=conversation_id)
        return ConversationDetails.model_validate(body)

    async def fork(
        self, conversation_id: str, *, turn: int | None = None, name: str | None = None
    ) -> ConversationDetails:
        """Fork the conversation: a new private conversation holding its first `turn`
        ended turns (see
        [`ConversationClient.fork`][agentkit.conversations.ConversationClient.fork])."""
        fields = {"turn": turn, "name": name}
        body = await self._request(
            FORK_CONVERSATION,
            conversation_id=conversation_id,
            body={key: value for key, value in fields.items() if value is not None},
        )
        return ConversationDetails.model_validate(body)

    async def list_turns(
        self, conversation_id: str, *, limit: int | None = None, cursor: str | None = None
    ) -> Page[Turn]:
        """A page of the saved turns, oldest first."""
        body = await self._request(
            LIST_TURNS, conversation_id=conversation_id, params=page_query(limit, cursor)
        )
        return Page([Turn.model_validate(turn) for turn in body["turns"]], body.get("next"))

    async def rename_conversation(self, conversation_id: str, name: str) -> None:
        """Change the name (turns do not change)."""
        await self._request(
            UPDATE_CONVERSATION,
            body={"name": name},
            conversation_id=conversation_id,
        )

    async def set_visibility(self, conversation_id: str, visibility: Visibility) -> None:
        """Make the conversation `private` (to its creator) or `shared`."""
        await self._request(
            UPDATE_CONVERSATION,
            body={"visibility": visibility},
            conversation_id=conversation_id,
        )

    async def delete_conversation(self, conversation_id: str) -> None:
        """Delete the conversation with its runs and turns (a running run is cancelled)."""
        await self._request(DELETE_CONVERSATION, conversation_id=conversation_id)

    async def prompt(
        self,
        conversation_id: str,
        text: str,
        *,
        attachments: Sequence[str] = (),
        effort: ReasoningEffort | None = None,
        output_schema: dict[str, Any] | None = None,
        replace_turn: str | None = None,
        wait: float | None = None,
        if_busy: IfBusy = "reject",
    ) -> PromptAccepted:
        """Start a run; returns once the server has accepted and stored it. The run
        belongs to the machine: nothing this client does afterwards stops it but `cancel`.
        With `wait`, one request answers the ended run (a `RunResult`) when it ends
        within `wait` seconds (see
        [`ConversationClient.prompt`][agentkit.conversations.ConversationClient.prompt]).

        `if_busy`: what happens when a run is going (see
        [`ConversationClient.prompt`][agentkit.conversations.ConversationClient.prompt]).

        Raises:
            ConversationBusyError: A run is going already (`reject`), or the queue is
                full (`enqueue`).
            AttachmentError: An attachment is missing or outside the roots.
        """
        payload = _prompt_body(text, attachments, effort, output_schema)
        if replace_turn is not None:
            payload["replaceTurn"] = replace_turn
        if if_busy != "reject":
            payload["ifBusy"] = if_busy
        body = await self._request(
            START_RUN,
            body=payload,
            conversation_id=conversation_id,
            params=_wait_query(wait),
        )
        return _accepted(body)

    async def stream(
        self,
        conversation_id: str,
        text: str,
        *,
        attachments: Sequence[str] = (),
        effort: ReasoningEffort | None = None,
        output_schema: dict[str, Any] | None = None,
        replace_turn: str | None = None,
    ) -> RunStream:
        """Start a run and read it from its first event, in one request (the run's
        stream on create): every live text delta, then the final event. A connection that
        drops is resumed on the run's events route, as `follow` does (see
        [`ConversationClient.stream`][agentkit.conversations.ConversationClient.stream]).

        Raises:
            ConversationBusyError: A run is going already.
            AttachmentError: An attachment is missing or outside the roots.
        """
        _check_id(conversation_id)
        payload = _prompt_body(text, attachments, effort, output_schema)
        if replace_turn is not None:
            payload["replaceTurn"] = replace_turn
        return await self._start_stream(
            START_RUN, {"id": conversation_id}, payload, conversation_id
        )

    async def run(
        self,
        agent: str,
        text: str,
        *,
        attachments: Sequence[str] = (),
        effort: ReasoningEffort | None = None,
        output_schema: dict[str, Any] | None = None,
        wait: float | None = None,
    ) -> PromptAccepted:
        """Start a run of `agent` in a new private conversation, in one request (see
        [`ConversationClient.run`][agentkit.conversations.ConversationClient.run])."""
        payload = {"agent": agent, **_prompt_body(text, attachments, effort, output_schema)}
        return _accepted(await self._request(CREATE_RUN, body=payload, params=_wait_query(wait)))

    async def stream_run(
        self,
        agent: str,
        text: str,
        *,
        attachments: Sequence[str] = (),
        effort: ReasoningEffort | None = None,
        output_schema: dict[str, Any] | None = None,
    ) -> RunStream:
        """`run` and `stream` in one request: a new private conversation with `agent`, its
        run, and the run's events from its first one."""
        payload = {"agent": agent, **_prompt_body(text, attachments, effort, output_schema)}
        return await self._start_stream(CREATE_RUN, {}, payload, None)

    async def _start_stream(
        self,
        operation: Operation,
        path: dict[str, str],
        payload: dict[str, Any],
        conversation_id: str | None,
    ) -> RunStream:
        """Send the request that starts a run and answers its stream; once the answer's
        head says which run it started, the stream is read as `follow` reads the run's
        events route (and resumed there when it drops)."""
        errors = functools.partial(_error_of, conversation_id=conversation_id)
        stack = contextlib.AsyncExitStack()
        try:
            headers, events = await stack.enter_async_context(
                self._transport.start_stream(operation, path, errors, body=payload, params={})
            )
            accepted = _started(headers)
        except BaseException:
            await stack.aclose()
            raise

        @contextlib.asynccontextmanager
        async def opened() -> AsyncIterator[AsyncIterator[SseEvent]]:
            async with stack:
                yield events

        reader = self._follow(accepted.conversation_id, accepted.run_id, None, opened())
        return RunStream(accepted, reader, close=stack.aclose)

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
        self,
        conversation_id: str,
        run_id: str,
        after: int | None,
        opened: contextlib.AbstractAsyncContextManager[AsyncIterator[SseEvent]] | None = None,
    ) -> AsyncIterator[FollowEvent]:
        """`follow`; with `opened`, its first connection is that stream (one a request
        that started the run answered), from the run's first event."""
        if after is not None and (not isinstance(after, int) or isinstance(after, bool)):
            raise ConversationError(f"after must be an offset (an integer), not {after!r}")
        if not isinstance(run_id, str) or not run_id:
            await self.get_conversation(conversation_id)  # a hidden one says so first
            raise RunNotFoundError(f"conversation {conversation_id!r} has no run {run_id!r}")
        _check_id(conversation_id)
        path = {"id": conversation_id, "run_id": run_id}
        errors = functools.partial(_error_of, conversation_id=conversation_id)
        cursor = -1 if after is None else after
        backoff = self._transport.backoff()
        first = True
        while True:
            # The first request says where to start in the query (as `follow` was
            # asked); a reconnection with Last-Event-ID, as SSE clients do.
            params = {"after": str(after)} if first and after is not None else {}
            headers = {"Last-Event-ID": str(cursor)} if not first and cursor >= 0 else {}
            first = False
            seen_any = False
            final: FinalEvent | None = None
            connection = opened or self._transport.stream(
                FOLLOW_RUN, path, errors, params=params, headers=headers
            )
            opened = None
            try:
                async with connection as events:
                    backoff.reached()
                    async for event in events:
                        follow_event = _parse_follow(event)
                        if follow_event is None or follow_event.offset <= cursor:
                            continue  # a keep-alive, an unknown event, or seen already
                        seen_any = True
                        cursor = follow_event.offset
                        backoff.progress()
                        if isinstance(follow_event, FinalEvent):
                            final = follow_event
                            break
                        yield follow_event
                if final is not None:
                    # Given once the stream is closed: its connection is back in the
                    # pool, whether or not the caller goes on iterating after it.
                    yield final
                    return
                # The server ended the stream without a final event. With nothing new
                # at all, the run ended at or before `cursor` (a follow after its final
                # event is empty) unless it is still going (a server going away).
                if not seen_any and not await self._is_running(conversation_id, run_id):
                    return
            except (Dropped, Unreachable) as exc:
                _logger.debug("follow of run %s dropped: %s", run_id, exc)
            await backoff.wait(f"following run {run_id!r}")

    async def _is_running(self, conversation_id: str, run_id: str) -> bool:
        details = await self.get_conversation(conversation_id)
        return details.active_run_id == run_id

    async def cancel(self, conversation_id: str) -> bool:
        """Stop the running run (provider call and tool processes); returns once it has
        ended, `False` when no run was going. Its output so far is kept, `cancelled`."""
        # One request: the server cancels whichever run is going (and refuses viewers
        # even when none is).
        body = await self._request(CANCEL_CONVERSATION, conversation_id=conversation_id)
        return bool(body["cancelled"])

    async def cancel_queued(self, conversation_id: str, queued_id: str) -> None:
        """Remove a queued prompt (its `run_id`) from the conversation's queue, or a
        dropped one from its list.

        Raises:
            QueuedPromptNotFoundError: The conversation has no such queued prompt.
            QueuedPromptStartedError: It has started: cancel its run instead.
        """
        if not isinstance(queued_id, str) or not queued_id or len(queued_id) > 200:
            await self.get_conversation(conversation_id)  # a hidden one says so first
            raise QueuedPromptNotFoundError(
                f"conversation {conversation_id!r} has no queued prompt {str(queued_id)[:200]!r}"
            )
        await self._request(
            CANCEL_QUEUED, {"queued_id": queued_id}, conversation_id=conversation_id
        )

    async def decide(
        self,
        conversation_id: str,
        run_id: str,
        request_id: str,
        *,
        allow: bool,
        message: str | None = None,
        updated_input: dict[str, Any] | None = None,
        remember: bool = False,
    ) -> None:
        """Decide a waiting run's permission request (see
        [`ConversationClient.decide`][agentkit.conversations.ConversationClient.decide]):
        one request; its errors are the in-process client's."""
        if not isinstance(allow, bool):
            raise ConversationError("allow: must be True or False")
        body: dict[str, Any] = {"requestId": request_id, "decision": "allow" if allow else "deny"}
        if message is not None:
            body["message"] = message
        if updated_input is not None:
            body["updatedInput"] = updated_input
        if remember:
            body["remember"] = remember
        await self._request(
            DECIDE_REQUEST,
            await self._run_path(conversation_id, run_id),
            conversation_id=conversation_id,
            body=body,
        )

    async def answer(
        self, conversation_id: str, run_id: str, request_id: str, answers: Any
    ) -> None:
        """Answer a waiting run's question (see
        [`ConversationClient.answer`][agentkit.conversations.ConversationClient.answer])."""
        await self._request(
            ANSWER_REQUEST,
            await self._run_path(conversation_id, run_id),
            conversation_id=conversation_id,
            body={"requestId": request_id, "answers": answers},
        )

    async def _run_path(self, conversation_id: str, run_id: str) -> dict[str, str]:
        """The path values naming run `run_id` (an id no route holds: no such run)."""
        if not isinstance(run_id, str) or not run_id or len(run_id) > 200:
            await self.get_conversation(conversation_id)  # a hidden one says so first
            raise RunNotFoundError(
                f"conversation {conversation_id!r} has no run {str(run_id)[:200]!r}"
            )
        return {"run_id": run_id}

    async def upload(
        self, file: str | os.PathLike[str] | bytes, *, filename: str | None = None
    ) -> UploadedFile:
        """Store a file on the machine, in this member's upload folder (owners and
        editors); returns where, to attach to a prompt. A local file's bytes are streamed
        from the disk as they are sent (see
        [`ConversationClient.upload`][agentkit.conversations.ConversationClient.upload]).

        Raises:
            AccessDeniedError: The member is a viewer.
            UploadError: A bad file name, or a local file that cannot be read.
            UploadTooLargeError: The file is over the server's upload limit.
            UploadQuotaError: It would take the member's folder over its quota.
        """
        # The name, the size and the bytes, read as they are sent: the same source the
        # in-process client stores from. The size goes first, so that a server refuses a
        # file that cannot fit before it is sent.
        name, size, content = await anyio.to_thread.run_sync(local_source, file, filename)
        headers = {"Content-Type": "application/octet-stream", "Content-Length": str(size)}
        body = await self._transport.request(
            UPLOAD_FILE,
            {},
            functools.partial(_error_of, conversation_id=None),
            content=content,
            params={"filename": name},
            headers=headers,
        )
        return UploadedFile.model_validate(body)

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
        watch = _Watch(self._transport, conversation_id, callback)
        self._group.start_soon(watch.run, name=f"agentkit remote watch {conversation_id}")
        return watch.stop

    # --- HTTP -----------------------------------------------------------------------

    async def _request(
        self,
        operation: Operation,
        path: dict[str, str] | None = None,
        *,
        body: Any = None,
        headers: dict[str, str] | None = None,
        conversation_id: str | None = None,
        params: dict[str, str] | None = None,
    ) -> Any:
        """One JSON request (`conversation_id` fills the path's `id`): the decoded body of
        a 2xx answer, else the in-process client's exception for the error it carries."""
        _check_id(conversation_id)
        values = dict(path or {})
        if conversation_id is not None:
            values["id"] = conversation_id
        errors = functools.partial(_error_of, conversation_id=conversation_id)
        return await self._transport.request(
            operation, values, errors, body=body, headers=headers, params=params
        )


class _Watch:
    """One watch: reads the conversation's watch stream and calls back with each new
    view, connecting again after drops, until stopped."""

    def __init__(self, transport: Transport, conversation_id: str, callback: WatchCallback) -> None:
        self._transport = transport
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
        path = {"id": self._id}
        errors = functools.partial(_error_of, conversation_id=self._id)
        backoff = self._transport.backoff()
        unreachable_said = False
        while True:
            try:
                async with self._transport.stream(
                    WATCH_CONVERSATION, path, errors, params={}, headers={}
                ) as events:
                    backoff.reached()
                    unreachable_said = False
                    async for event in events:
                        view = _parse_view(event)
                        if view is not None:
                            backoff.progress()
                            await self._deliver(view)
            except Dropped as exc:
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
                        error=f"the server at {self._transport.url} could not be reached",
                    )
                )
                backoff.reached()  # goes on trying, at the longest delay
            with contextlib.suppress(ConversationError):
                await backoff.wait("watching")

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


# --- the streams' events ------------------------------------------------------------------


def _parse_follow(event: SseEvent) -> FollowEvent | None:
    """The follow event an SSE event carries; `None` for one of another kind."""
    payload = event.json_object()
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


def _prompt_body(
    text: str,
    attachments: Sequence[str],
    effort: ReasoningEffort | None,
    output_schema: dict[str, Any] | None,
) -> dict[str, Any]:
    """The prompt's fields of a body that starts a run."""
    if isinstance(attachments, str):
        raise AttachmentError("attachments is a list of paths, not one string")
    payload: dict[str, Any] = {"prompt": text, "attachments": list(attachments)}
    if effort is not None:
        payload["effort"] = effort
    if output_schema is not None:
        payload["outputSchema"] = output_schema
    return payload


def _wait_query(wait: float | None) -> dict[str, str] | None:
    """`?wait=` of a prompt (its bounds are the server's to check, as in process)."""
    if wait is None:
        return None
    if isinstance(wait, bool) or not isinstance(wait, int | float):
        raise ConversationError(f"wait must be a number of seconds, not {wait!r}")
    return {"wait": repr(float(wait))}


def _accepted(body: Any) -> PromptAccepted:
    """A started run's answer: the ended run (with `wait`, when it ended), else the
    accepted one."""
    if isinstance(body, dict) and body.get("status") not in (None, "running", "queued"):
        return RunResult.model_validate(body)  # it ended: its final status
    return PromptAccepted.model_validate(body)


def _started(headers: Mapping[str, str]) -> PromptAccepted:
    """The run a stream-on-create answer started, from its head (names lower-cased)."""
    conversation_id = headers.get(CONVERSATION_ID_HEADER.lower())
    run_id = headers.get(RUN_ID_HEADER.lower())
    if not conversation_id or not run_id:
        raise ConversationError("the server's stream did not say which run it started")
    return PromptAccepted(conversation_id=conversation_id, run_id=run_id, turn_id=f"u-{run_id}")


def _parse_view(event: SseEvent) -> ConversationView | None:
    """The view a watch stream's `view` event carries; `None` for another event."""
    if event.event != VIEW_EVENT:
        return None
    payload = event.json_object()
    if payload is None:
        return None
    try:
        return ConversationView.model_validate(payload)
    except ValidationError as exc:
        raise ConversationError(f"the server sent a view this client cannot read: {exc}") from None


def _raise_carried(payload: dict[str, Any]) -> None:
    """An error sent inside a stream (`{"error": {"code", "message"}}`) is raised."""
    carried = carried_error(payload)
    if carried is not None:
        raise _exception(*carried, None)


# --- errors ---------------------------------------------------------------------------------


def _error_of(
    status: int, content: bytes, conversation_id: str | None
) -> ConversationError | StoreUnavailableError:
    """The in-process client's exception for an error answer of the server."""
    error = read_error(content)
    if error is None:
        text = content.decode("utf-8", "replace").strip()[:200]
        return ConversationError(f"the server answered HTTP {status}: {text or 'no body'}")
    code, message = error
    if code == "not_found" and conversation_id is not None:
        # No route for this id (one with a '/' in it, say): no such conversation.
        return ConversationNotFoundError(conversation_id)
    return _exception(code, message, conversation_id)


def _exception(
    code: str, message: str, conversation_id: str | None
) -> ConversationError | StoreUnavailableError:
    cls = conversations_exception(code)
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
