"""The store interface, in three parts a consumer can ask for one at a time: sessions and
their transcripts (`SessionStore`), runs and their event logs (`RunStore`), and rooms
(`RoomStore`). `Store` is all three, with `aclose`: what every backend implements."""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

from agentkit.errors import (
    DelegationStateError,
    RunEndedError,
    SessionBusyError,
    SessionExistsError,
    SessionNotFoundError,
    StoreError,
    StoreUnavailableError,
)
from agentkit.events import AgentMessage
from agentkit.messages import Message
from agentkit.stores._queue import QueueStore
from agentkit.stores._records import (
    AgentRecord,
    ConversationRecord,
    MemberRecord,
    PageKey,
    RecordExistsError,
    RecordNotFoundError,
)
from agentkit.stores._rooms import (
    WIRE_CONFIG,
    DelegationRecord,
    DelegationStatus,
    NewRoomEvent,
    RoomEvent,
    RoomExistsError,
    RoomGrant,
    RoomNotFoundError,
    RoomRecord,
)

__all__ = [
    "MAX_COUNTED_STATUSES",
    "AgentRecord",
    "ConversationRecord",
    "DelegationRecord",
    "DelegationStateError",
    "DelegationStatus",
    "EventEntry",
    "MemberRecord",
    "NewRoomEvent",
    "PageKey",
    "RecordExistsError",
    "RecordNotFoundError",
    "RecordStore",
    "RoomEvent",
    "RoomExistsError",
    "RoomGrant",
    "RoomNotFoundError",
    "RoomRecord",
    "RoomStore",
    "RunEndedError",
    "RunRecord",
    "RunStatus",
    "RunStore",
    "SessionBusyError",
    "SessionExistsError",
    "SessionNotFoundError",
    "SessionRecord",
    "SessionStore",
    "Store",
    "StoreError",
    "StoreUnavailableError",
    "WaitingRecord",
    "counted_statuses",
]

RunStatus = Literal["running", "waiting", "completed", "interrupted", "error"]
"""`waiting`: the run asked a person and holds no process until it is decided (see
docs/human-in-the-loop.md); like `running`, it keeps its session busy."""

_STATUS_NAME = re.compile(r"[a-z][a-z_]{0,31}")
MAX_COUNTED_STATUSES = 16
"""The most statuses one `count_runs` call counts."""


def counted_statuses(statuses: Sequence[str]) -> list[str]:
    """`count_runs`' statuses, each once, checked (`ValueError` for a string, more than
    `MAX_COUNTED_STATUSES`, or a name that is not lowercase letters and underscores): the
    SQL stores write them into their statements as literals, so that PostgreSQL and SQLite
    count the running ones from their partial index."""
    if isinstance(statuses, str):
        raise ValueError("statuses must be a sequence of statuses, not a string")
    wanted = list(dict.fromkeys(statuses))
    if len(wanted) > MAX_COUNTED_STATUSES:
        raise ValueError(f"statuses: at most {MAX_COUNTED_STATUSES}, not {len(wanted)}")
    for status in wanted:
        if not isinstance(status, str) or not _STATUS_NAME.fullmatch(status):
            raise ValueError(f"statuses: {status!r} is not a status name")
    return wanted


@dataclass(frozen=True)
class SessionRecord:
    """A session: the agent it belongs to and free-form metadata (for example the
    definition fingerprint it was started with)."""

    id: str
    agent_id: str
    created_at: float
    updated_at: float
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class RunRecord:
    """One run (one user turn) of a session.

    A running run is owned by the runtime executing it (`owner`, its instance id), which
    renews the run's lease (`heartbeat_at`, `lease_expires_at`) while it runs. A running
    run whose lease has expired (or that has none) belongs to nobody: any runtime sharing
    the store ends it as interrupted (see [Runtime][agentkit.runtime.Runtime]).

    Attributes:
        error: Why the run did not complete, once it has ended that way.
    """

    __pydantic_config__ = WIRE_CONFIG

    id: str
    session_id: str
    agent_id: str
    status: RunStatus
    created_at: float
    finished_at: float | None = None
    owner: str | None = None
    heartbeat_at: float | None = None
    lease_expires_at: float | None = None
    error: str | None = None


@dataclass(frozen=True)
class WaitingRecord:
    """A waiting run's pending request, with what its continuation needs.

    Attributes:
        request_id: The pending request's id (of its `permission_request` or `question`).
        state: The continuation the runtime stored when the run suspended (JSON).
        deadline: When the request is ended as denied (seconds since the epoch), if ever.
    """

    run_id: str
    session_id: str
    agent_id: str
    request_id: str
    state: dict[str, Any]
    deadline: float | None = None


@dataclass(frozen=True, slots=True)
class EventEntry:
    """An event at its offset in a run's log. Offsets count every event the run produced,
    `text_delta` included, so stored offsets keep gaps where deltas were.

    `wire` is the event's wire form as UTF-8 JSON when the writer has it already (the
    runtime does): a store may keep it instead of encoding the event again. It takes no
    part in equality.
    """

    offset: int
    event: AgentMessage
    wire: bytes | None = field(default=None, compare=False, repr=False)


@runtime_checkable
class SessionStore(Protocol):
    """Sessions and their transcripts: the part of a [`Store`][agentkit.stores.Store] that
    code keeping conversations' history needs.

    Deleting a session also deletes its runs and their events, so a backend implements this
    part together with [`RunStore`][agentkit.stores.RunStore].
    """

    async def create_session(
        self, session_id: str, agent_id: str, metadata: dict[str, Any] | None = None
    ) -> SessionRecord:
        """Create a session; `SessionExistsError` when the id is taken."""
        ...

    async def get_session(self, session_id: str) -> SessionRecord | None:
        """The session, or `None`."""
        ...

    async def update_session(self, session_id: str, metadata: dict[str, Any]) -> SessionRecord:
        """Replace a session's metadata; `SessionNotFoundError` when missing."""
        ...

    async def list_sessions(self, agent_id: str | None = None) -> list[SessionRecord]:
        """Sessions, oldest first, optionally of one agent."""
        ...

    async def delete_session(self, session_id: str) -> None:
        """Delete a session with its transcript, runs and events (no error when missing)."""
        ...

    async def load_transcript(self, session_id: str) -> list[Message]:
        """The session's transcript in order; `SessionNotFoundError` when missing."""
        ...

    async def append_transcript(self, session_id: str, messages: Sequence[Message]) -> None:
        """Append messages atomically: all of them or none."""
        ...

    async def truncate_transcript(self, session_id: str, length: int) -> None:
        """Keep only the first `length` messages."""
        ...


@runtime_checkable
class RunStore(Protocol):
    """Runs, their leases and their event logs: the part of a
    [`Store`][agentkit.stores.Store] that executes runs and replays or follows them.

    Runs belong to sessions (a [`SessionStore`][agentkit.stores.SessionStore] in the same
    backend): creating a run checks its session, and `append_step` writes a model step to
    the session's transcript and the run's log at once. `text_delta` events are never given
    to a store.
    """

    async def create_run(self, run: RunRecord, events: Sequence[EventEntry] = ()) -> None:
        """Record a new run with its first events, atomically.

        `SessionNotFoundError` when its session is missing; `SessionBusyError` when the
        session already has a `running` run (checked atomically with the insert, so it
        holds between processes); `StoreError` when the run id is taken.
        """
        ...

    async def finish_run(
        self,
        run_id: str,
        status: RunStatus,
        finished_at: float,
        *,
        events: Sequence[EventEntry] = (),
        error: str | None = None,
        owner: str | None = None,
        expired_by: float | None = None,
    ) -> bool:
        """End a run that is still `running`: append its last `events` and record its
        status, atomically. Returns whether it did; `False` (and nothing written) when the
        run is missing or has ended already, when `owner` is given and does not own it,
        or when `expired_by` is given and its lease had not expired by then."""
        ...

    async def renew_leases(
        self, owner: str, run_ids: Sequence[str], now: float, expires_at: float
    ) -> set[str]:
        """Renew the leases of `owner`'s running runs among `run_ids` (heartbeat `now`,
        lease until `expires_at`); returns the ids renewed. An id missing from the answer
        is a run that `owner` no longer holds (it ended, or another runtime ended it)."""
        ...

    async def expired_runs(self, now: float) -> list[RunRecord]:
        """Running runs whose lease expired before `now` (or that have none), oldest first."""
        ...

    async def get_run(self, run_id: str) -> RunRecord | None:
        """The run, or `None`."""
        ...

    async def list_runs(self, session_id: str) -> list[RunRecord]:
        """A session's runs, oldest first."""
        ...

    async def append_events(self, run_id: str, entries: Sequence[EventEntry]) -> None:
        """Append events atomically; offsets only grow within a run. `RunEndedError` when
        the run is recorded and no longer `running`."""
        ...

    async def append_step(
        self,
        session_id: str,
        messages: Sequence[Message],
        run_id: str,
        entries: Sequence[EventEntry],
    ) -> None:
        """Append a model step's transcript `messages` to the session and its events to the
        run, in one transaction: both or neither. The errors of `append_transcript` and
        `append_events`."""
        ...

    async def read_events(self, run_id: str, after: int = -1) -> list[EventEntry]:
        """A run's stored events with offset greater than `after`, in order."""
        ...

    async def suspend_run(
        self,
        run_id: str,
        *,
        owner: str,
        messages: Sequence[Message],
        events: Sequence[EventEntry],
        request_id: str,
        state: dict[str, Any],
        deadline: float | None = None,
    ) -> bool:
        """Move a running run that `owner` holds to `waiting`, in one transaction: append
        `messages` to its session's transcript and `events` to its log, clear its lease,
        and keep `request_id`, `state` (JSON) and `deadline` for whoever resumes it.
        Returns whether it did; `False` (nothing written) when the run is missing, not
        running, or not `owner`'s. The session stays busy while the run waits."""
        ...

    async def resume_run(
        self,
        run_id: str,
        request_id: str,
        *,
        owner: str,
        now: float,
        lease_expires_at: float,
        events: Sequence[EventEntry] = (),
    ) -> WaitingRecord | None:
        """Move a run waiting on `request_id` back to `running` under `owner`'s lease and
        append `events` (the decision), in one conditional transaction; returns what the
        run was waiting with. `None` (nothing written) when the run is missing, not
        waiting, or waiting on another request: of two concurrent callers, exactly one
        gets the record."""
        ...

    async def get_waiting(self, run_id: str) -> WaitingRecord | None:
        """The run's pending request while it is `waiting`, else `None`."""
        ...

    async def overdue_requests(self, now: float, limit: int = 100) -> list[WaitingRecord]:
        """Waiting runs whose request's deadline is `now` or earlier, earliest first, at
        most `limit` of them (an indexed read)."""
        ...

    async def count_runs(self, statuses: Sequence[str]) -> dict[str, int]:
        """How many runs of the store are in each of `statuses` now, whichever process
        runs them: every status asked for is a key (0 when no run has it, a status no
        run can have included). `ValueError` for a string, more than 16 statuses, or a
        name that is not lowercase letters and underscores."""
        ...


@runtime_checkable
class RoomStore(Protocol):
    """Rooms: their ordered event logs, grants, consumer cursors and delegations, the part of
    a [`Store`][agentkit.stores.Store] that room hosts need. Rooms share nothing with
    sessions and runs."""

    async def create_room(self, room: RoomRecord) -> None:
        """Record a new, empty room (head 0); `RoomExistsError` when the id is taken
        (nothing changes)."""
        ...

    async def get_room(self, room_id: str) -> RoomRecord | None:
        """The room, or `None`."""
        ...

    async def list_rooms(self) -> list[RoomRecord]:
        """Every room, oldest (first created) first."""
        ...

    async def update_room(
        self, room_id: str, name: str | None = None, metadata: dict[str, Any] | None = None
    ) -> RoomRecord:
        """Replace the room's name and/or metadata (each left as it is when `None`) and
        return the room; `RoomNotFoundError` when missing."""
        ...

    async def delete_room(self, room_id: str) -> None:
        """Delete a room with its events, grants, cursors and delegations (no error when
        missing). A room created again with the same id starts empty, at head 0."""
        ...

    async def append_room_events(
        self,
        room_id: str,
        events: Sequence[NewRoomEvent],
        *,
        delegation: DelegationRecord | None = None,
        expect: Collection[str] | None = None,
        cursor: tuple[str, int] | None = None,
    ) -> list[RoomEvent]:
        """Append `events` to the room's log in one transaction and return them at their
        positions: the room's head + 1, head + 2, ... (each with its `caused_by` and
        `run_id` as given).

        All or nothing: when any event cannot be stored (its payload is not JSON, its id
        is already in the room or repeated in the batch), nothing is written and the head
        does not move, so the next append continues at head + 1. Appends to one room take
        turns across every process sharing the store: positions form one total order
        with no gap and no duplicate, and a reader sees each batch whole or not at all.

        `delegation`, when given, is upserted (inserted, or replacing the stored
        delegation of that id) in the same transaction: that is how a `delegation.*`
        event and the delegation's status change together.

        `expect`, only with a `delegation`, makes the write conditional: it happens only
        when the stored delegation of that id exists and its status is one of `expect`
        (`expect=("running",)` to end a running one). The check is made in the append's
        transaction, under the room's lock, so of two processes moving one delegation
        from the same status, exactly one succeeds; the other gets
        `DelegationStateError` and nothing of its call is written.

        `cursor`, `(consumer, position)`, is recorded in the same transaction as
        `set_cursor` would: a consumer that publishes what it made of an event moves past
        it in the same step.

        Raises:
            ValueError: `events` is empty; `delegation` belongs to another room or has
                an unknown status, a deadline that is not finite or negative attempts;
                `expect` is given without a `delegation`, is a string or names an
                unknown status; an event's `caused_by` is not a position (1 or more).
            TypeError: A payload (or the delegation's task or result) is not a JSON value
                (`ValueError` for NaN and infinities); `cursor` is not a
                `(str, int)` pair.
            RoomNotFoundError: The room is missing.
            DelegationStateError: `expect` is given and the stored delegation is missing
                (`status` `None`) or in another status (its `status`).
            StoreUnavailableError: The storage failed (a full disk, a lost connection);
                nothing was written.
            StoreError: An event's id is already in the room, or repeated in the batch.
        """
        ...

    async def read_room_events(
        self,
        room_id: str,
        after: int = 0,
        limit: int | None = None,
        types: Sequence[str] | None = None,
    ) -> list[RoomEvent]:
        """The room's events with position greater than `after`, in order, at most
        `limit` of them, of the given `types` only (all types when `None`).

        `types` holds exact type names and prefix patterns: `chat.*` keeps the types
        starting with `chat.`, `*` keeps everything; `%` and `_` are ordinary characters,
        and an empty `types` keeps nothing. `RoomNotFoundError` when the room is missing;
        `ValueError` for another use of `*` or a negative `limit`.
        """
        ...

    async def room_head(self, room_id: str) -> int:
        """The position of the room's last event (0 while it has none);
        `RoomNotFoundError` when missing."""
        ...

    async def set_grant(self, room_id: str, grant: RoomGrant) -> None:
        """Record a participant's grant, replacing any it had; `RoomNotFoundError` when
        the room is missing."""
        ...

    async def delete_grant(self, room_id: str, participant: str) -> None:
        """Remove a participant's grant (no error when it has none)."""
        ...

    async def list_grants(self, room_id: str) -> list[RoomGrant]:
        """The room's grants, ordered by participant (code point order); empty for a
        missing room."""
        ...

    async def get_cursor(self, room_id: str, consumer: str) -> int | None:
        """The last position `consumer` recorded as handled in the room, or `None`."""
        ...

    async def set_cursor(self, room_id: str, consumer: str, position: int) -> None:
        """Record `position` as `consumer`'s cursor in the room, replacing the previous
        one (it may move back); `RoomNotFoundError` when the room is missing."""
        ...

    async def get_delegation(self, room_id: str, delegation_id: str) -> DelegationRecord | None:
        """The room's delegation with this id, or `None`."""
        ...

    async def list_delegations(
        self,
        room_id: str,
        *,
        statuses: Sequence[str] | None = None,
        agent: str | None = None,
        after: PageKey | None = None,
        limit: int | None = None,
    ) -> list[DelegationRecord]:
        """The room's delegations, oldest first by `(created_at, id)` (ids in code point
        order); empty for a missing room.

        Only those whose status is one of `statuses` (every status when `None`, none when
        empty) and whose agent is `agent` (any when `None`); only those after the key
        `after`, the `(created_at, id)` of the last delegation of the previous page; at
        most `limit` of them (all when `None`).

        Raises:
            ValueError: `statuses` is a string or names an unknown status; `limit` is
                negative; `after` is not a `(finite time, str)` key.
        """
        ...

    async def overdue_delegations(self, now: float, limit: int = 100) -> list[DelegationRecord]:
        """The delegations of every room that are still under way (`pending` or
        `running`) and whose `deadline` is `now` or earlier, earliest deadline first
        (then by room and id), at most `limit` of them: what an expiry sweep ends as
        `expired` (with `append_room_events(..., expect=("pending", "running"))`, so a
        delegation that ended meanwhile is left alone). An indexed read, however many
        delegations have ended. `ValueError` for a negative `limit`."""
        ...


@runtime_checkable
class RecordStore(Protocol):
    """A machine's members, agents and conversations as records with ids that are never
    reused (see `agentkit.stores` records). Lists are read a page at a time: at most
    `limit` records after the `(created_at, id)` key of the previous page's last record;
    `ValueError` for a `limit` outside 1..1001. Conversations are sessions too (the
    session of the same id holds the transcript and runs): deleting the session deletes
    the record.
    """

    async def create_member(self, member: MemberRecord) -> None:
        """Record a new member; `RecordExistsError` when a live member has its name, or any
        member its id or token hash (nothing written)."""
        ...

    async def get_member(self, member_id: str) -> MemberRecord | None:
        """The member with this id, removed or not, or `None`."""
        ...

    async def find_member(self, name: str) -> MemberRecord | None:
        """The live member with this name, or `None`."""
        ...

    async def member_by_token(self, token_hash: str) -> MemberRecord | None:
        """The live member whose token has this hash (one indexed lookup), or `None`."""
        ...

    async def update_member(
        self, member_id: str, *, role: str | None = None, token_hash: str | None = None
    ) -> MemberRecord:
        """Change a live member's role and/or token hash; `RecordNotFoundError` when it is
        missing or removed, `RecordExistsError` when another member has the hash."""
        ...

    async def remove_member(self, member_id: str, removed_at: float) -> None:
        """Mark a live member removed (its row stays, so its id is never reused);
        `RecordNotFoundError` when it is missing or removed already."""
        ...

    async def list_members(
        self, after: PageKey | None = None, limit: int = 1001
    ) -> list[MemberRecord]:
        """Live members, oldest first."""
        ...

    async def create_agent(self, agent: AgentRecord) -> None:
        """Record a new agent; `RecordExistsError` when a live agent has its name or any
        agent its id."""
        ...

    async def get_agent(self, agent_id: str) -> AgentRecord | None:
        """The agent with this id, deleted or not, or `None`."""
        ...

    async def find_agent(self, name: str) -> AgentRecord | None:
        """The live agent with this name, or `None`."""
        ...

    async def replace_agent(
        self, agent_id: str, definition: dict[str, Any], updated_at: float
    ) -> AgentRecord:
        """Give a live agent a new definition (its version grows by one, its id stays);
        `RecordNotFoundError` when it is missing or deleted."""
        ...

    async def delete_agent(self, agent_id: str, deleted_at: float) -> None:
        """Mark a live agent deleted (its row stays); `RecordNotFoundError` when missing
        or deleted already."""
        ...

    async def list_agents(
        self, after: PageKey | None = None, limit: int = 1001
    ) -> list[AgentRecord]:
        """Live agents, oldest first."""
        ...

    async def create_conversation(
        self,
        conversation: ConversationRecord,
        session_agent: str,
        metadata: dict[str, Any] | None = None,
    ) -> SessionRecord:
        """Create a conversation and its session (of agent id `session_agent`, the spec id
        its runs use, with `metadata`) in one transaction; `SessionExistsError` when the
        id is taken."""
        ...

    async def get_conversation(self, conversation_id: str) -> ConversationRecord | None:
        """The conversation, or `None`."""
        ...

    async def fork_conversation(
        self,
        source_id: str,
        conversation: ConversationRecord,
        session_agent: str,
        metadata: dict[str, Any],
        runs: Sequence[tuple[str, str]],
        transcript_length: int | None = None,
    ) -> SessionRecord:
        """Create `conversation` and its session (of agent id `session_agent`, with
        `metadata`) as a copy of part of session `source_id`, in one transaction: all of
        it or nothing.

        The copy holds the source's first `transcript_length` transcript messages (all of
        them, as they are when the transaction runs, when `None`), and
        its ended runs `runs`, pairs `(source run id, new run id)` in order: each new run
        has the source run's fields (status, times, error) and its stored events at their
        offsets, under its new id and in the new session. The source does not change.
        The SQL stores copy inside the database (`INSERT ... SELECT`): no message or
        event passes through the process.

        Raises:
            SessionNotFoundError: The source session is missing.
            SessionExistsError: The conversation's id is taken.
            StoreError: A run of `runs` is not an ended run of the source, a new run id
                is taken, or the source's transcript is shorter than `transcript_length`.
        """
        ...

    async def update_conversation(
        self,
        conversation_id: str,
        *,
        updated_at: float,
        name: str | None = None,
        visibility: str | None = None,
    ) -> ConversationRecord:
        """Rename a conversation and/or change its visibility (each left as it is when
        `None`); `RecordNotFoundError` when missing."""
        ...

    async def list_conversations(
        self, viewer_id: str, after: PageKey | None = None, limit: int = 1001
    ) -> list[ConversationRecord]:
        """The shared conversations and `viewer_id`'s private ones, newest first
        (descending `(created_at, id)`: `after` is the key of the previous page's last)."""
        ...

    async def list_readable_runs(
        self,
        viewer_id: str,
        *,
        others: bool,
        session_id: str | None = None,
        after: PageKey | None = None,
        limit: int = 1001,
    ) -> list[RunRecord]:
        """Runs `viewer_id` may read, newest first (descending `(created_at, id)`): those
        of shared conversations and of its private ones, and with `others` those of
        sessions that are no conversation. Only session `session_id`'s when given."""
        ...

    async def running_sessions(self, session_ids: Sequence[str]) -> set[str]:
        """The sessions among `session_ids` that have a `running` run."""
        ...


@runtime_checkable
class Store(SessionStore, RunStore, RoomStore, RecordStore, QueueStore, Protocol):
    """Where sessions, transcripts, run events and rooms live: a
    [`SessionStore`][agentkit.stores.SessionStore], a [`RunStore`][agentkit.stores.RunStore]
    and a [`RoomStore`][agentkit.stores.RoomStore] in one backend, which its owner closes.

    Every backend passes the conformance suite in
    `agentkit.testing` (the store conformance suite). `text_delta`
    events are never given to a store.
    """

    async def aclose(self) -> None:
        """Release connections and files."""
        ...
