"""The machine: one `Runtime` and one store hosting agents and durable conversations.

A conversation is a session of the core and a conversation run is a run of the core:
`prompt()` is `Runtime.start` on the conversation's session, `follow()` replays the run's
log (`Run.entries`, then `Store.read_events`), `cancel()` is `Run.cancel`, and turns are
the session's runs read back from the store. What the Store protocol has no place for
(members, machine agents, a conversation's name, visibility, creator and instructions)
is kept in session metadata.

Why one long module: the `Machine` is the one object every conversation call goes through
(members, agents, conversations, runs), each method a few lines over the core; turns,
follow, watch, attachments and access live in their own modules.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import time
import uuid
from collections.abc import AsyncIterator, Iterable, Sequence
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

import anyio
from anyio.abc import TaskGroup

from agentkit.conversations import _access
from agentkit.conversations._agents import (
    ROOL,
    agent_definition,
    agent_info,
    check_agent_name,
    machine_spec,
    run_spec,
    working_dir,
)
from agentkit.conversations._attachments import (
    DEFAULT_ATTACHMENT_ROOTS,
    check_attachments,
    normalise_roots,
)
from agentkit.conversations._client import (
    StopWatch,
    WatchCallback,
)
from agentkit.conversations._errors import (
    AccessDeniedError,
    AgentExistsError,
    AttachmentError,
    ConversationBusyError,
    ConversationError,
    ConversationNotFoundError,
    MachineAgentNotFoundError,
    RunNotFoundError,
    TurnNotFoundError,
)
from agentkit.conversations._members import Members
from agentkit.conversations._meta import ConversationMeta, RunEntry, is_conversation
from agentkit.conversations._models import (
    AgentDefinition,
    AgentInfo,
    ConversationDetails,
    ConversationSummary,
    FollowEvent,
    Member,
    PromptAccepted,
    Role,
    Turn,
    Visibility,
)
from agentkit.conversations._turns import (
    INTERRUPTED_REASON,
    OutputBuffer,
    build_turns,
    part_of,
    user_turn_id,
)
from agentkit.events import TurnStart
from agentkit.permissions import PermissionHandler
from agentkit.providers import AssistantMessage, Message, Provider, UserMessage
from agentkit.rooms import Rooms
from agentkit.runtime import Run, Runtime, SessionBusyError
from agentkit.spec import AgentSpec, ReasoningEffort, SpecError
from agentkit.stores import RunRecord, SessionExistsError, SessionRecord, Store
from agentkit.tools import ToolRegistry

__all__ = ["Machine", "default_machine_store"]

if TYPE_CHECKING:
    from agentkit.conversations._local import LocalClient
    from agentkit.rooms import LocalRoomsClient

_logger = logging.getLogger("agentkit.conversations")

AGENT_SESSIONS = "agentkit-machine:agent"
"""The reserved agent id of the sessions that hold machine agents."""

_AGENT_KEY = "agentkit.agent"
_CANCEL_TOPIC = "cancel"  # notifications asking the process executing a run to stop it
_LOCKS = 64


def default_machine_store() -> str:
    """Where a machine keeps its data without a `store`: `$AGENTKIT_MACHINE_STORE`, else
    `machine.db` in agentkit's state folder (`$XDG_STATE_HOME/agentkit`)."""
    configured = os.environ.get("AGENTKIT_MACHINE_STORE")
    if configured:
        return configured
    state = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    folder = Path(state) / "agentkit"
    folder.mkdir(parents=True, exist_ok=True)
    return str(folder / "machine.db")


class Machine:
    """Hosts agents and durable conversations over one `Runtime` and one store.

    Use it as an async context manager; `client(member)` gives the API acting as a
    member:

    ```python
    async with Machine(store="machine.db", provider=provider) as machine:
        token = await machine.add_member("ada", "owner")
        client = machine.client(await machine.authenticate(token))
        conversation = await client.create_conversation(name="Notes")
        accepted = await conversation.prompt("Hello")
    ```

    Args:
        store: A `Store`, or a location [`open_store`][agentkit.stores.open_store] accepts
            (a SQLite file path, `postgresql://...`); by default a SQLite file (see
            [`default_machine_store`][agentkit.conversations.default_machine_store]).
        provider: The model provider (a provider, a registered name, or `None` for the
            environment's).
        attachment_roots: The folders attachments must be under (default `/space` and
            `/rool-drive`); machine agents' default file tools are confined to them.
        agents: Configured agents (specs from Markdown definitions or app folders, see
            `definitions` and `apps`), usable in conversations by their id; read-only.
        definitions: Markdown definition files to load as configured agents.
        apps: App folders whose agents to load as configured agents.
        rool_instructions: Instructions appended to the built-in context of `rool`.
        tools: Tools added to the built-in ones (see `Runtime`'s `tools`).
        permission_handler: Decides calls that need consent.
        heartbeat_interval: Seconds between two renewals of the leases of running runs.
        lease_duration: Seconds a run's lease lasts: a run whose process died is ended as
            interrupted once it expires (when the machine reopens, or by another machine
            sharing the store).
        poll_interval: Seconds between two reads of the store when following or watching
            work this process does not execute (a run of a process that died or of
            another process sharing the store).

    Leaving the `async with` block stops the watches and cancels the runs still going
    (they end `cancelled`, with what they had produced).
    """

    def __init__(
        self,
        *,
        store: Store | str | os.PathLike[str] | None = None,
        provider: Provider | str | None = None,
        attachment_roots: Sequence[str | os.PathLike[str]] = DEFAULT_ATTACHMENT_ROOTS,
        agents: Iterable[AgentSpec] = (),
        definitions: Iterable[str | os.PathLike[str]] = (),
        apps: Iterable[str | os.PathLike[str]] = (),
        rool_instructions: str = "",
        tools: ToolRegistry | None = None,
        permission_handler: PermissionHandler | None = None,
        heartbeat_interval: float = 5.0,
        lease_duration: float = 30.0,
        poll_interval: float = 1.0,
    ) -> None:
        self.attachment_roots = normalise_roots(attachment_roots)
        """The attachment roots, absolute (each also by its real path)."""
        self._configured: dict[str, AgentSpec] = {}
        loaded = _load_definitions(definitions, tools)
        for spec in [*agents, *loaded, *_load_apps(apps)]:
            if spec.id == ROOL or spec.id in self._configured:
                raise ValueError(f"two configured agents are named {spec.id!r}")
            self._configured[spec.id] = spec
        self._rool = AgentDefinition(
            name=ROOL,
            description="The machine's general agent.",
            instructions=rool_instructions,
        )
        if store is None:
            store = default_machine_store()
        self.runtime = Runtime(
            provider=provider,
            store=os.fspath(store) if isinstance(store, os.PathLike) else store,
            tools=tools,
            permission_handler=permission_handler,
            working_dir=working_dir(self.attachment_roots),
            heartbeat_interval=heartbeat_interval,
            lease_duration=lease_duration,
        )
        """The runtime every conversation run runs in."""
        self.poll_interval = poll_interval
        self._members = Members(self.runtime.store)
        self._group: TaskGroup | None = None
        self._locks: list[anyio.Lock] = []
        self._changes: dict[str, anyio.Event] = {}
        self._runs: dict[str, Run] = {}  # the runs this machine started, until seen ended
        self._stopping: set[str] = set()  # runs another process asked to stop
        self._specs: dict[str, tuple[AgentDefinition, AgentSpec]] = {}
        self.rooms = Rooms(
            runtime=self.runtime, poll_interval=poll_interval, role_of=self._role_of
        )
        """The machine's rooms: same store, runtime and members (`rooms_client`)."""

    @property
    def store(self) -> Store:
        """The store everything is kept in."""
        return self.runtime.store

    # --- lifecycle --------------------------------------------------------------------

    async def __aenter__(self) -> Machine:
        await self.runtime.__aenter__()
        try:
            self._locks = [anyio.Lock() for _ in range(_LOCKS)]
            self._group = anyio.create_task_group()
            await self._group.__aenter__()
            if self.runtime.notifications.shared:
                self._group.start_soon(self._serve_cancels)
            await self.rooms.__aenter__()
        except BaseException as exc:
            await self.runtime.__aexit__(type(exc), exc, exc.__traceback__)
            raise
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        group, self._group = self._group, None
        try:
            if group is not None:
                # Room agents first: their handlers in flight end (bounded) while the
                # runtime their LLM runs need is still open.
                await self.rooms.__aexit__(None, None, None)
                group.cancel_scope.cancel()  # the watches
                await group.__aexit__(None, None, None)
            # The runs still going are stopped (they end `cancelled`), not awaited: a
            # machine that closes does not wait for a model that may never answer.
            for run in list(self._runs.values()):
                run.cancel()
            self._runs.clear()
        finally:
            handled = await self.runtime.__aexit__(exc_type, exc, tb)
        return handled

    # --- members ----------------------------------------------------------------------

    async def add_member(self, name: str, role: Role) -> str:
        """Add a member; returns its secret token (only its SHA-256 hash is stored).

        Raises:
            MemberError: The name is taken or not valid, or the role is unknown.
        """
        return await self._members.add(name, role)

    async def get_member(self, name: str) -> Member | None:
        """The member with this name, or `None`."""
        return await self._members.get(name)

    async def list_members(self) -> list[Member]:
        """Every member, oldest first."""
        return await self._members.list()

    async def set_role(self, name: str, role: Role) -> Member:
        """Change a member's role; it applies to the member's next call."""
        return await self._members.set_role(name, role)

    async def remove_member(self, name: str) -> None:
        """Remove a member: its clients are refused from their next call (its
        conversations stay, private ones visible to nobody)."""
        await self._members.remove(name)

    async def authenticate(self, token: str) -> Member:
        """The member a token belongs to (`MemberError` when none)."""
        return await self._members.authenticate(token)

    def rooms_client(self, member: Member) -> LocalRoomsClient:
        """The rooms API acting as `member` (its current role checked on every call)."""
        return self.rooms.client(member.name, role=member.role)

    async def _role_of(self, name: str) -> Role | None:
        current = await self._members.get(name)
        return None if current is None else current.role

    def client(self, member: Member) -> LocalClient:
        """The client API acting as `member` (authorised by its current role)."""
        from agentkit.conversations._local import LocalClient

        return LocalClient(self, member)

    # --- internals shared by clients --------------------------------------------------

    @contextlib.asynccontextmanager
    async def _lock(self, conversation_id: str) -> AsyncIterator[None]:
        """The conversation's changes take turns: in this process, then (PostgreSQL)
        with every other process on the store, so that two prompts through two servers
        never both pass the check that no run is going, nor both repair a transcript."""
        if not self._locks:
            raise RuntimeError("use the machine inside 'async with Machine(...) as machine:'")
        shared = self.runtime.notifications.lock(f"conversation {conversation_id}")
        async with self._locks[hash(conversation_id) % _LOCKS], shared:
            yield

    def _changed(self, conversation_id: str) -> None:
        event = self._changes.pop(conversation_id, None)
        if event is not None:
            event.set()

    def _change_signal(self, conversation_id: str) -> anyio.Event:
        event = self._changes.get(conversation_id)
        if event is None:
            event = self._changes[conversation_id] = anyio.Event()
        return event

    async def _member(self, member: Member) -> Member:
        if self._group is None:
            raise RuntimeError("use the machine inside 'async with Machine(...) as machine:'")
        current = await self._members.get(member.name)
        if current is None:
            raise AccessDeniedError(f"{member.name!r} is not a member of this machine")
        return current

    async def _visible(
        self, member: Member, conversation_id: str
    ) -> tuple[Member, SessionRecord, ConversationMeta]:
        current = await self._member(member)
        session = (
            await self.store.get_session(conversation_id)
            if isinstance(conversation_id, str)
            else None
        )
        if session is None or not is_conversation(session.metadata):
            raise ConversationNotFoundError(str(conversation_id))
        meta = ConversationMeta.from_metadata(session.metadata)
        if not _access.can_see(current, meta):
            raise ConversationNotFoundError(conversation_id)
        return current, session, meta

    async def _writable(
        self, member: Member, conversation_id: str, what: str
    ) -> tuple[Member, SessionRecord, ConversationMeta]:
        current, session, meta = await self._visible(member, conversation_id)
        _access.require_writer(current, what)
        return current, session, meta

    async def _save(self, session: SessionRecord, meta: ConversationMeta) -> None:
        await self.store.update_session(session.id, {**session.metadata, **meta.to_metadata()})

    # --- agents -----------------------------------------------------------------------

    async def _stored_agent(self, name: str) -> tuple[AgentDefinition, float] | None:
        session = await self.store.get_session(f"agentkit-agent:{name}")
        if session is None or session.agent_id != AGENT_SESSIONS:
            return None
        return agent_definition(session.metadata[_AGENT_KEY]), session.updated_at

    async def _agent_spec(self, name: str) -> AgentSpec:
        """The agent as it is now. Specs are reused while the agent is unchanged, so the
        runtime's per-spec caches keep working across runs."""
        if name in self._configured:
            return self._configured[name]
        if name == ROOL:
            definition = self._rool
        else:
            stored = await self._stored_agent(name)
            if stored is None:
                raise MachineAgentNotFoundError(f"the machine has no agent {name!r}")
            definition = stored[0]
        cached = self._specs.get(name)
        if cached is None or cached[0] != definition:
            if len(self._specs) >= 256:
                self._specs.clear()
            spec = machine_spec(definition, self.attachment_roots)
            cached = self._specs[name] = (definition, spec)
        return cached[1]

    async def _list_agents(self, member: Member) -> list[AgentInfo]:
        await self._member(member)
        roots = self.attachment_roots
        found = [agent_info(self._rool, roots, "builtin", None)]
        for spec in self._configured.values():
            found.append(
                AgentInfo(
                    name=spec.id,
                    description=spec.description,
                    tools=spec.tools,
                    source="configured",
                )
            )
        for session in await self.store.list_sessions(AGENT_SESSIONS):
            definition = agent_definition(session.metadata[_AGENT_KEY])
            found.append(agent_info(definition, roots, "machine", session.updated_at))
        return found

    def _check_editable(self, name: str) -> None:
        if name == ROOL:
            raise ConversationError("the agent 'rool' is built in: it cannot be changed")
        if name in self._configured:
            raise ConversationError(
                f"the agent {name!r} is configured (a definition file or an app): change "
                "it there"
            )

    async def _put_agent(
        self, member: Member, definition: AgentDefinition, replace: bool
    ) -> AgentInfo:
        _access.require_owner(await self._member(member), "manage agents")
        check_agent_name(definition.name)
        self._check_editable(definition.name)
        try:
            machine_spec(definition, self.attachment_roots)  # refuse what could not run
        except SpecError as exc:
            raise ConversationError(f"agent {definition.name!r}: {exc}") from None
        record = {_AGENT_KEY: {"definition": definition.model_dump(mode="json")}}
        session_id = f"agentkit-agent:{definition.name}"
        if replace:
            if await self._stored_agent(definition.name) is None:
                raise MachineAgentNotFoundError(f"the machine has no agent {definition.name!r}")
            session = await self.store.update_session(session_id, record)
        else:
            try:
                session = await self.store.create_session(session_id, AGENT_SESSIONS, record)
            except SessionExistsError:
                raise AgentExistsError(
                    f"the agent {definition.name!r} exists already: replace it instead"
                ) from None
        return agent_info(definition, self.attachment_roots, "machine", session.updated_at)

    async def _delete_agent(self, member: Member, name: str) -> None:
        _access.require_owner(await self._member(member), "manage agents")
        self._check_editable(name)
        if not isinstance(name, str) or await self._stored_agent(name) is None:
            raise MachineAgentNotFoundError(f"the machine has no agent {name!r}")
        await self.store.delete_session(f"agentkit-agent:{name}")

    # --- conversations ----------------------------------------------------------------

    async def _create(
        self,
        member: Member,
        agent: str,
        name: str,
        visibility: Visibility,
        instructions: str | None,
    ) -> str:
        current = await self._member(member)
        _access.require_writer(current, "create conversations")
        if visibility not in ("private", "shared"):
            raise ConversationError(f"visibility {visibility!r} is not 'private' or 'shared'")
        await self._agent_spec(agent)  # the agent must exist
        conversation_id = str(uuid.uuid4())
        meta = ConversationMeta(
            name=_name(name),
            visibility=visibility,
            creator=current.name,
            instructions=instructions or None,
            created_at=time.time(),
        )
        await self.store.create_session(conversation_id, agent, meta.to_metadata())
        return conversation_id

    async def _active(self, conversation_id: str) -> RunRecord | None:
        runs = await self.store.list_runs(conversation_id)
        return next((run for run in reversed(runs) if run.status == "running"), None)

    async def _list(self, member: Member) -> list[ConversationSummary]:
        current = await self._member(member)
        rows = []
        for session in await self.store.list_sessions():
            if not is_conversation(session.metadata):
                continue
            meta = ConversationMeta.from_metadata(session.metadata)
            if not _access.can_see(current, meta):
                continue
            rows.append(
                ConversationSummary(
                    id=session.id,
                    name=meta.name,
                    agent=session.agent_id,
                    visibility=meta.visibility,
                    updated_at=session.updated_at,
                    is_running=await self._active(session.id) is not None,
                )
            )
        rows.sort(key=lambda row: row.updated_at, reverse=True)
        return rows

    async def _details(self, member: Member, conversation_id: str) -> ConversationDetails:
        _, session, meta = await self._visible(member, conversation_id)
        turns, active = await build_turns(self.store, conversation_id, meta)
        return ConversationDetails(
            id=session.id,
            name=meta.name,
            agent=session.agent_id,
            visibility=meta.visibility,
            creator=meta.creator,
            instructions=meta.instructions,
            created_at=meta.created_at,
            updated_at=session.updated_at,
            is_running=active is not None,
            active_run_id=active,
            turns=tuple(turns),
        )

    async def _turns(self, member: Member, conversation_id: str) -> list[Turn]:
        _, _, meta = await self._visible(member, conversation_id)
        turns, _ = await build_turns(self.store, conversation_id, meta)
        return turns

    async def _update(
        self,
        member: Member,
        conversation_id: str,
        *,
        name: str | None = None,
        visibility: Visibility | None = None,
    ) -> None:
        if visibility is not None and visibility not in ("private", "shared"):
            raise ConversationError(f"visibility {visibility!r} is not 'private' or 'shared'")
        async with self._lock(conversation_id):
            _, session, meta = await self._writable(member, conversation_id, "change conversations")
            if name is not None:
                meta.name = _name(name)
            if visibility is not None:
                meta.visibility = visibility
            await self._save(session, meta)
        self._changed(conversation_id)

    async def _delete(self, member: Member, conversation_id: str) -> None:
        async with self._lock(conversation_id):  # no prompt starts a run meanwhile
            await self._writable(member, conversation_id, "delete conversations")
            active = await self._active(conversation_id)
            run = self.runtime.get_run(active.id) if active is not None else None
            if run is not None:
                run.cancel()
                await run.wait()
            await self.store.delete_session(conversation_id)
        self._changed(conversation_id)

    # --- runs -------------------------------------------------------------------------

    async def _prompt(
        self,
        member: Member,
        conversation_id: str,
        text: str,
        attachments: Sequence[str],
        effort: ReasoningEffort | None,
        output_schema: dict[str, Any] | None,
        replace_turn: str | None,
    ) -> PromptAccepted:
        if not isinstance(text, str):
            raise ConversationError("a prompt's text must be a string")
        if isinstance(attachments, str):
            raise AttachmentError("attachments is a list of paths, not one string")
        async with self._lock(conversation_id):
            _, session, meta = await self._writable(member, conversation_id, "prompt")
            paths = check_attachments(list(attachments), self.attachment_roots)
            if not text.strip() and not paths:
                raise ConversationError("a prompt needs text or an attachment")
            try:
                spec = run_spec(await self._agent_spec(session.agent_id), effort, output_schema)
            except SpecError as exc:
                raise ConversationError(f"the prompt's options are not valid: {exc}") from None
            runs = [
                run
                for run in await self.store.list_runs(conversation_id)
                if run.id not in meta.dropped
            ]
            if any(run.status == "running" for run in runs):
                raise _busy(conversation_id)
            transcript = await self.store.load_transcript(conversation_id)
            if replace_turn is not None:
                length = await self._drop_from(conversation_id, meta, runs, replace_turn)
            else:
                length = len(transcript)
                length += await self._repair(conversation_id, meta, runs, transcript)
            try:
                run = await self.runtime.start(
                    spec,
                    text,
                    session_id=conversation_id,
                    context_suffix=meta.instructions,
                    thread_context={"attachments": paths} if paths else None,
                )
            except SessionBusyError:
                raise _busy(conversation_id) from None
            except ValueError as exc:  # text that is not valid Unicode
                raise ConversationError(str(exc)) from None
            self._keep(run)
            meta.runs[run.id] = RunEntry(run.id, length, tuple(paths))
            await self._save(session, meta)
        self._changed(conversation_id)
        return PromptAccepted(
            conversation_id=conversation_id, run_id=run.id, turn_id=user_turn_id(run.id)
        )

    def _keep(self, run: Run) -> None:
        if len(self._runs) >= 64:
            for run_id in [key for key, kept in self._runs.items() if kept.done]:
                del self._runs[run_id]
        self._runs[run.id] = run

    async def _drop_from(
        self,
        conversation_id: str,
        meta: ConversationMeta,
        runs: list[RunRecord],
        replace_turn: str,
    ) -> int:
        """Drop the user turn `replace_turn` and every turn after it; returns the length
        the transcript is cut to."""
        index = next(
            (i for i, run in enumerate(runs) if user_turn_id(run.id) == replace_turn), None
        )
        entry = meta.runs.get(runs[index].id) if index is not None else None
        if index is None or entry is None:
            raise TurnNotFoundError(
                f"conversation {conversation_id!r} has no user turn {replace_turn!r}"
            )
        await self.store.truncate_transcript(conversation_id, entry.transcript_start)
        for run in runs[index:]:
            meta.dropped.append(run.id)
            meta.runs.pop(run.id, None)
            meta.partials.pop(run.id, None)
        return entry.transcript_start

    async def _repair(
        self,
        conversation_id: str,
        meta: ConversationMeta,
        runs: list[RunRecord],
        transcript: list[Message],
    ) -> int:
        """Make the transcript show what the last run's turns show when it did not
        complete (the engine saves a step only once it has finished): its prompt, and
        what it had streamed. Returns how many messages were appended."""
        if not runs or runs[-1].status == "completed":
            return 0
        last = runs[-1]
        entry = meta.runs.get(last.id)
        if entry is None:
            return 0
        partial = meta.partials.get(last.id, "")
        added: list[Message] = []
        if len(transcript) == entry.transcript_start:
            events = await self.store.read_events(last.id, -1)
            prompt = ""
            if events and isinstance(events[0].event, TurnStart):
                prompt = events[0].event.user_prompt
            if entry.attachments:
                shown = json.dumps({"attachments": list(entry.attachments)}, ensure_ascii=False)
                prompt = f"<thread_context>\n{shown}\n</thread_context>\n\n{prompt}"
            if last.status == "interrupted":
                why = "the run was cancelled"
            elif last.error == INTERRUPTED_REASON:
                why = "the run was interrupted"
            else:
                why = f"the run failed: {last.error or 'unknown error'}"
            added = [
                UserMessage(content=prompt),
                AssistantMessage(text=partial or f"(no answer: {why})"),
            ]
        elif partial and not isinstance(transcript[-1], AssistantMessage):
            added = [AssistantMessage(text=partial)]
        if added:
            await self.store.append_transcript(conversation_id, added)
        return len(added)

    async def _cancel(
        self, member: Member, conversation_id: str, run_id: str | None = None
    ) -> bool:
        await self._writable(member, conversation_id, "cancel runs")
        if run_id is not None:
            await self._run_record(member, conversation_id, run_id)
        active = await self._active(conversation_id)
        if active is None or (run_id is not None and active.id != run_id):
            return False
        run = self.runtime.get_run(active.id)
        if run is None:
            # Executed by another process sharing the store, or by one that died.
            return await self._cancel_elsewhere(active.id)
        await self._stop(run)
        return True

    async def _cancel_elsewhere(self, run_id: str) -> bool:
        """Ask the process executing a run to stop it, and wait for its end.

        The request goes through the store's notifications, again every poll interval
        until the run has ended (a notification may be lost); a process that died no
        longer answers, and its run ends when its lease expires, which bounds the wait.
        Without shared notifications (SQLite) no other process can be reached: `False`.
        """
        notifications = self.runtime.notifications
        if not notifications.shared:
            return False
        bound = self.runtime.lease_duration + 2 * self.runtime.heartbeat_interval
        ended_seen = False
        stopped = f"stopped:{run_id}"
        with await notifications.subscribe(f"run:{run_id}", stopped) as changes:
            with anyio.move_on_after(bound):
                while stopped not in changes.notified:
                    changes.take()
                    await notifications.publish([f"{_CANCEL_TOPIC}\n{run_id}"])
                    record = await self.store.get_run(run_id)
                    if record is None or record.status != "running":
                        # Ended: the owner says so once it has kept what the run
                        # streamed; a run ended otherwise (its process died) gets one
                        # more look.
                        if ended_seen:
                            break
                        ended_seen = True
                    await changes.wait(self.poll_interval)
        record = await self.store.get_run(run_id)
        if record is not None:
            self._changed(record.session_id)
        return record is None or record.status != "running"

    async def _serve_cancels(self) -> None:
        """Stop the runs this machine executes when another process asks (see
        `_cancel_elsewhere`); the asker checked the member's rights."""
        notifications = self.runtime.notifications
        with await notifications.subscribe(_CANCEL_TOPIC) as requests:
            while True:
                await requests.wait(3600.0)
                _, run_ids = requests.take()
                for run_id in run_ids:
                    run = self._runs.get(run_id)
                    if run is not None and not run.done and run_id not in self._stopping:
                        self._stopping.add(run_id)
                        assert self._group is not None
                        self._group.start_soon(self._stop_for_another, run)

    async def _stop_for_another(self, run: Run) -> None:
        try:
            await self._stop(run)
            await self.runtime.notifications.publish([f"stopped:{run.id}"])
        finally:
            self._stopping.discard(run.id)

    async def _stop(self, run: Run, reason: str | None = None) -> None:
        """Stop a run this machine executes and wait for its end; the text it had
        streamed since its last complete part is kept with the conversation."""
        run.cancel(reason=reason)
        outcome = await run.wait()
        partial = await _streamed(run)
        stopped = outcome.status == "interrupted" or outcome.error == INTERRUPTED_REASON
        if partial and stopped:
            async with self._lock(run.session_id):
                session = await self.store.get_session(run.session_id)
                if session is not None and is_conversation(session.metadata):
                    meta = ConversationMeta.from_metadata(session.metadata)
                    meta.partials[run.id] = partial
                    await self._save(session, meta)
        self._changed(run.session_id)

    async def interrupt_runs(self) -> None:
        """End every run this machine executes as a crash would, but at once: `error`
        with the reason `INTERRUPTED_REASON` (their turns show `interrupted`), what they
        had streamed kept. For a host that shuts down (`agentkit serve` on SIGTERM);
        returns once every one has ended and been stored."""
        running = [run for run in self._runs.values() if not run.done]
        async with anyio.create_task_group() as group:
            for run in running:
                group.start_soon(self._stop, run, INTERRUPTED_REASON)

    async def _run_record(
        self, member: Member, conversation_id: str, run_id: str
    ) -> RunRecord:
        _, _, meta = await self._visible(member, conversation_id)
        record = await self.store.get_run(run_id) if isinstance(run_id, str) else None
        if record is None or record.session_id != conversation_id or run_id in meta.dropped:
            raise RunNotFoundError(f"conversation {conversation_id!r} has no run {run_id!r}")
        return record

    async def follow_checked(
        self, member: Member, conversation_id: str, run_id: str, *, after: int | None = None
    ) -> AsyncIterator[FollowEvent]:
        """`client(member).follow(...)`, with the access and the run checked before it
        returns (a server answers 404 before it starts a stream, not inside it)."""
        await self._run_record(member, conversation_id, run_id)
        return self._follow(member, conversation_id, run_id, after)

    async def cancel_run(self, member: Member, conversation_id: str, run_id: str) -> bool:
        """Cancel run `run_id` of a conversation as `member`, if it is the running one;
        returns once it has ended (`False` when it was not running)."""
        return await self._cancel(member, conversation_id, run_id)

    def _follow(
        self, member: Member, conversation_id: str, run_id: str, after: int | None
    ) -> AsyncIterator[FollowEvent]:
        from agentkit.conversations._follow import follow_run

        return follow_run(self, member, conversation_id, run_id, after)

    async def _watch(
        self, member: Member, conversation_id: str, callback: WatchCallback
    ) -> StopWatch:
        await self._visible(member, conversation_id)
        if self._group is None:
            raise RuntimeError("use the machine inside 'async with Machine(...) as machine:'")
        from agentkit.conversations._watch import Watch

        watch = Watch(self, member, conversation_id, callback)
        self._group.start_soon(watch.run, name=f"agentkit watch {conversation_id}")
        return watch.stop


def _busy(conversation_id: str) -> ConversationBusyError:
    return ConversationBusyError(
        f"conversation {conversation_id!r} has a run going: wait for it to end or cancel it"
    )


def _name(name: str) -> str:
    if not isinstance(name, str):
        raise ConversationError("a conversation's name must be a string")
    name = name.strip()
    if len(name) > 200:
        raise ConversationError("a conversation's name is at most 200 characters")
    return name or "New conversation"


async def _streamed(run: Run) -> str:
    """The text a run had streamed since its last complete part (its log is in memory)."""
    buffer = OutputBuffer()
    async for entry in run.entries():
        part = part_of(entry.event)
        if part is not None:
            buffer.add(part)
    return buffer.streamed


def _load_definitions(
    paths: Iterable[str | os.PathLike[str]], tools: ToolRegistry | None
) -> list[AgentSpec]:
    """Markdown definitions bound to the tools the machine's runtime offers."""
    paths = list(paths)
    if not paths:
        return []
    from agentkit.formats import load_agents
    from agentkit.tools import builtin_tools

    # The machine's runtime has the built-in tools, and `tools`.
    names = [*builtin_tools().names(), *(tools.names() if tools is not None else ())]
    return [spec for path in paths for spec in load_agents(path, format_name="defs", tools=names)]


def _load_apps(paths: Iterable[str | os.PathLike[str]]) -> list[AgentSpec]:
    """The agents of app folders (without their Python actions)."""
    from agentkit.formats import load_agents

    return [spec for path in paths for spec in load_agents(path, format_name="apps")]
