"""The client API, once: a protocol every client implements (the in-process one and the
remote HTTP one), and the `Conversation` handle both share."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Any, Protocol, runtime_checkable

from agentkit.conversations._errors import RunNotFoundError
from agentkit.conversations._models import (
    AgentDefinition,
    AgentInfo,
    ConversationDetails,
    ConversationSummary,
    ConversationView,
    FollowEvent,
    IfBusy,
    Member,
    PromptAccepted,
    Turn,
    UploadedFile,
    Visibility,
)
from agentkit.conversations._stream import RunStream
from agentkit.paging import Page
from agentkit.spec import ReasoningEffort

__all__ = [
    "Conversation",
    "ConversationClient",
    "StopWatch",
    "WatchCallback",
]


WatchCallback = Callable[[ConversationView], "Awaitable[None] | None"]
"""Called with each view a watch delivers (a plain function or a coroutine function)."""

StopWatch = Callable[[], None]
"""Stops a watch: no callback follows once it returns."""


@runtime_checkable
class ConversationClient(Protocol):
    """The conversations API acting as one member of a machine.

    Every call is authorised by the member's role and the conversation's visibility. A
    conversation the member cannot see raises
    [`ConversationNotFoundError`][agentkit.conversations.ConversationNotFoundError],
    exactly as a missing id does, on every path. The in-process client comes from
    [`Machine.client`][agentkit.conversations.Machine.client]; the conformance suite in
    `agentkit.testing` checks any implementation.
    """

    @property
    def member(self) -> Member:
        """The member this client acts as."""
        ...

    # --- agents ---------------------------------------------------------------------

    async def list_agents(
        self, *, limit: int | None = None, cursor: str | None = None
    ) -> Page[AgentInfo]:
        """A page of the agents of the machine, oldest first (`rool` first): `limit`
        (1..1000, 100 by default) and `cursor`, the `next` of the page before (see
        `agentkit.paging`)."""
        ...

    async def create_agent(self, definition: AgentDefinition) -> AgentInfo:
        """Create an agent (owners only); `AgentExistsError` when the name is taken."""
        ...

    async def replace_agent(self, definition: AgentDefinition) -> AgentInfo:
        """Replace an agent (owners only). Existing turns do not change; runs accepted
        from now on use the new definition."""
        ...

    async def delete_agent(self, name: str) -> None:
        """Delete an agent (owners only; never `rool`). Its conversations stay readable and
        answer `AgentDeletedError` to a prompt, whatever is created later under its name."""
        ...

    # --- conversations --------------------------------------------------------------

    async def create_conversation(
        self,
        *,
        agent: str = "rool",
        name: str = "",
        visibility: Visibility = "private",
        instructions: str | None = None,
    ) -> Conversation:
        """Create a conversation with `agent` (owners and editors)."""
        ...

    async def list_conversations(
        self, *, limit: int | None = None, cursor: str | None = None
    ) -> Page[ConversationSummary]:
        """A page of light rows of the conversations this member can see, newest first
        (see `list_agents` for `limit` and `cursor`)."""
        ...

    async def get_conversation(self, conversation_id: str) -> ConversationDetails:
        """Metadata and saved turns."""
        ...

    async def list_turns(
        self, conversation_id: str, *, limit: int | None = None, cursor: str | None = None
    ) -> Page[Turn]:
        """A page of the saved turns, oldest first (see `list_agents` for `limit` and
        `cursor`)."""
        ...

    async def rename_conversation(self, conversation_id: str, name: str) -> None:
        """Change the name (turns do not change)."""
        ...

    async def fork(
        self, conversation_id: str, *, turn: int | None = None, name: str | None = None
    ) -> ConversationDetails:
        """Fork the conversation: a new conversation, private to this member, of the same
        agent and instructions, holding a copy of its first `turn` ended turns; returns
        the new conversation's details. The original does not change.

        `turn` counts prompts, each kept with its answer, oldest first: `turn=2` keeps the
        first two prompts and their answers, `0` none; by default every ended turn (a run
        still going is not copied). The fork's model sees exactly those turns next. Its
        name is `name`, by default the original's with " (fork)".

        Any member who sees the conversation and may create conversations (owners and
        editors) may fork it.

        Raises:
            ConversationNotFoundError: The conversation is not visible to this member.
            AccessDeniedError: The member is a viewer.
            AgentDeletedError: The conversation's agent was deleted.
            ConversationError: `turn` is out of range (or not an integer), or `name` is
                not a name.
        """
        ...

    async def set_visibility(self, conversation_id: str, visibility: Visibility) -> None:
        """Make the conversation `private` (to its creator) or `shared`."""
        ...

    async def delete_conversation(self, conversation_id: str) -> None:
        """Delete the conversation with its runs and turns (a running run is cancelled)."""
        ...

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
        """Start a run; returns once it is accepted and stored. The run belongs to the
        machine: nothing the client does afterwards stops it but `cancel`.

        With `wait` (seconds, above 0 and at most 300), returns once the run has ended
        instead: a [`RunResult`][agentkit.conversations.RunResult] (a `PromptAccepted`
        with the status, text, structured output, accounting and error), or the plain
        `PromptAccepted` when the run is still going after `wait` seconds:

        ```python
        answer = await client.prompt(conversation.id, "Summarise it", wait=60)
        if isinstance(answer, RunResult):
            print(answer.status, answer.text)
        ```

        `if_busy` says what happens when a run is going: `reject` raises
        `ConversationBusyError`; `enqueue` stores the prompt in the conversation's queue
        (`status="queued"`; `run_id` is the id its run gets when it starts, after the
        prompts queued before it, whatever way the running run ends; it survives a
        restart; `cancel_queued` removes it); `interrupt` cancels the running run (it
        ends `cancelled`) and starts this one.

        Raises:
            ConversationBusyError: A run is going already (`reject`), or the queue is
                full (`enqueue`).
            AttachmentError: An attachment is missing or outside the roots.
            ConversationError: `wait` is out of its bounds.
        """
        ...

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
        """Start a run and read it from its first event, every live text delta
        included: `prompt` and `follow` at once (one request on a remote machine). Raises
        what `prompt` raises; once it returns, the run's ids are known
        (`stream.run_id`) and its events come as `follow` gives them."""
        ...

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
        """Start a run of `agent` without a conversation: a new private conversation of
        this member's with `agent`, and its run, at once (`prompt` for `wait` and the
        answer). A prompt that is refused leaves no conversation behind.

        Raises:
            AccessDeniedError: The member is a viewer.
            MachineAgentNotFoundError: There is no such agent.
            AttachmentError: An attachment is missing or outside the roots.
        """
        ...

    async def stream_run(
        self,
        agent: str,
        text: str,
        *,
        attachments: Sequence[str] = (),
        effort: ReasoningEffort | None = None,
        output_schema: dict[str, Any] | None = None,
    ) -> RunStream:
        """`run` and `stream` at once: a new private conversation with `agent`, its run,
        and the run's events from its first one."""
        ...

    async def cancel_queued(self, conversation_id: str, queued_id: str) -> None:
        """Remove a queued prompt (its `run_id`) from the conversation's queue, or a
        dropped one from its list; anyone who may prompt the conversation may.

        Raises:
            QueuedPromptNotFoundError: The conversation has no such queued prompt.
            QueuedPromptStartedError: It has started: cancel its run instead.
        """
        ...

    def follow(
        self, conversation_id: str, run_id: str, *, after: int | None = None
    ) -> AsyncIterator[FollowEvent]:
        """A run's output parts after offset `after`, then exactly one `FinalEvent`;
        resuming with `after=<last offset seen>` gives no gap and no duplicate."""
        ...

    async def cancel(self, conversation_id: str) -> bool:
        """Stop the running run (provider call and tool processes); returns once it has
        ended, `False` when no run was going. Its output so far is kept, `cancelled`."""
        ...

    async def watch(self, conversation_id: str, callback: WatchCallback) -> StopWatch:
        """Deliver a `ConversationView` now and after every change, across runs and
        other clients' changes, until the returned function is called."""
        ...

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
        """Decide a waiting run's permission request (`view.pending_requests`, or a
        `permission_request` part); anyone who may prompt the conversation may. Returns
        once the decision is stored; the run goes on (follow it). See
        docs/human-in-the-loop.md.

        Args:
            allow: Whether the call may run; denied, the model is told
                `permission denied: <message>`.
            message: Why it is denied (at most 10,000 characters).
            updated_input: With `allow`, the input the call runs with instead.
            remember: With `allow`, allow later calls matching this one in the
                conversation without asking.

        Raises:
            AccessDeniedError: The member is a viewer.
            ConversationNotFoundError: No such conversation (or not visible).
            RunNotFoundError: The conversation has no such run.
            RequestAlreadyDecidedError: It was decided already (by anyone, anywhere, or
                by its deadline).
            RequestNotFoundError: The run waits on no such permission request.
            ConversationError: A field is not valid (the message names it).
        """
        ...

    async def answer(
        self, conversation_id: str, run_id: str, request_id: str, answers: Any
    ) -> None:
        """Answer a waiting run's question (a `question` part, or
        `view.pending_requests`): `answers` (any JSON, usually `{question id: answer}`,
        at most 1 MB) become the questionnaire tool's result. Errors as `decide`."""
        ...

    # --- uploads --------------------------------------------------------------------

    async def upload(
        self, file: str | os.PathLike[str] | bytes, *, filename: str | None = None
    ) -> UploadedFile:
        """Store a file on the machine, in this member's upload folder under an
        attachment root (owners and editors); returns where, to attach to a prompt:

        ```python
        stored = await client.upload("report.pdf")
        await conversation.prompt("Summarise it", attachments=[stored.path])
        ```

        Args:
            file: The path of a local file (read by this client; over HTTP its bytes are
                sent), or the file's bytes.
            filename: Its name on the machine: by default the local file's name; needed
                with bytes. Directories are stripped; a name already taken becomes
                `<stem>-2<ext>`, `<stem>-3<ext>`, ... (a file is never replaced).

        Raises:
            AccessDeniedError: The member is a viewer.
            UploadError: A bad file name, a local file that cannot be read, or no
                attachment root on the machine.
            UploadTooLargeError: The file is over the machine's upload limit.
            UploadQuotaError: It would take the member's folder over its quota.
        """
        ...

    def conversation(self, conversation_id: str) -> Conversation:
        """A handle on one conversation (no I/O until it is used)."""
        return Conversation(self, conversation_id)


class Conversation:
    """One conversation, through a client: `await conversation.prompt("...")`.

    Attributes:
        id: The conversation's id.
        client: The client acting for a member.
    """

    def __init__(self, client: ConversationClient, conversation_id: str) -> None:
        self.client = client
        self.id = conversation_id

    def __repr__(self) -> str:
        return f"<Conversation {self.id} as {self.client.member.name}>"

    async def get(self) -> ConversationDetails:
        """Metadata and saved turns."""
        return await self.client.get_conversation(self.id)

    async def list_turns(
        self, *, limit: int | None = None, cursor: str | None = None
    ) -> Page[Turn]:
        """A page of the saved turns, oldest first (see `agentkit.paging`)."""
        return await self.client.list_turns(self.id, limit=limit, cursor=cursor)

    async def prompt(
        self,
        text: str,
        *,
        attachments: Sequence[str] = (),
        effort: ReasoningEffort | None = None,
        output_schema: dict[str, Any] | None = None,
        replace_turn: str | None = None,
        wait: float | None = None,
        if_busy: IfBusy = "reject",
    ) -> PromptAccepted:
        """Start a run (see
        [`ConversationClient.prompt`][agentkit.conversations.ConversationClient.prompt])."""
        return await self.client.prompt(
            self.id,
            text,
            attachments=attachments,
            effort=effort,
            output_schema=output_schema,
            replace_turn=replace_turn,
            wait=wait,
            if_busy=if_busy,
        )

    async def stream(
        self,
        text: str,
        *,
        attachments: Sequence[str] = (),
        effort: ReasoningEffort | None = None,
        output_schema: dict[str, Any] | None = None,
        replace_turn: str | None = None,
    ) -> RunStream:
        """Start a run and read it from its first event (see
        [`ConversationClient.stream`][agentkit.conversations.ConversationClient.stream])."""
        return await self.client.stream(
            self.id,
            text,
            attachments=attachments,
            effort=effort,
            output_schema=output_schema,
            replace_turn=replace_turn,
        )

    async def cancel_queued(self, queued_id: str) -> None:
        """Remove a queued prompt (see
        [`ConversationClient.cancel_queued`][agentkit.conversations.ConversationClient.cancel_queued])."""
        await self.client.cancel_queued(self.id, queued_id)

    async def follow(
        self, run_id: str | None = None, *, after: int | None = None
    ) -> AsyncIterator[FollowEvent]:
        """Follow a run: by default the running one, else the latest."""
        if run_id is None:
            details = await self.get()
            run_id = details.active_run_id or (details.turns[-1].run_id if details.turns else None)
            if run_id is None:
                raise RunNotFoundError(f"conversation {self.id!r} has no run to follow")
        async for event in self.client.follow(self.id, run_id, after=after):
            yield event

    async def cancel(self) -> bool:
        """Stop the running run; `False` when none was going."""
        return await self.client.cancel(self.id)

    async def watch(self, callback: WatchCallback) -> StopWatch:
        """Watch the conversation (see
        [`ConversationClient.watch`][agentkit.conversations.ConversationClient.watch])."""
        return await self.client.watch(self.id, callback)

    async def decide(
        self,
        run_id: str,
        request_id: str,
        *,
        allow: bool,
        message: str | None = None,
        updated_input: dict[str, Any] | None = None,
        remember: bool = False,
    ) -> None:
        """Decide a waiting run's permission request (see
        [`ConversationClient.decide`][agentkit.conversations.ConversationClient.decide])."""
        await self.client.decide(
            self.id,
            run_id,
            request_id,
            allow=allow,
            message=message,
            updated_input=updated_input,
            remember=remember,
        )

    async def answer(self, run_id: str, request_id: str, answers: Any) -> None:
        """Answer a waiting run's question (see
        [`ConversationClient.answer`][agentkit.conversations.ConversationClient.answer])."""
        await self.client.answer(self.id, run_id, request_id, answers)

    async def fork(
        self, *, turn: int | None = None, name: str | None = None
    ) -> ConversationDetails:
        """Fork it: a new private conversation holding its first `turn` ended turns (see
        [`ConversationClient.fork`][agentkit.conversations.ConversationClient.fork])."""
        return await self.client.fork(self.id, turn=turn, name=name)

    async def rename(self, name: str) -> None:
        """Change the name."""
        await self.client.rename_conversation(self.id, name)

    async def set_visibility(self, visibility: Visibility) -> None:
        """Make it `private` or `shared`."""
        await self.client.set_visibility(self.id, visibility)

    async def delete(self) -> None:
        """Delete it with its runs and turns."""
        await self.client.delete_conversation(self.id)
