"""What the SQL stores share: the whole `Store` interface, over one dialect's operations.

`SQLStore` turns records into parameters and rows back into records, once for both
backends. A backend brings three things:

- `_ops`, its dialect: one method per operation, each taking a connection first and doing
  one transaction (or one statement): synchronous for SQLite, coroutine functions for
  PostgreSQL (typed as the synchronous `Dialect`; its `_call` awaits them);
- `_call(op, *args)`, which runs `op(connection, *args)` the backend's way (inline with a
  retry while SQLite is locked; on a pooled PostgreSQL connection, see `_pg_connections`);
- optionally `_wrote(nbytes)`, told how much each write added (SQLite checkpoints by it).

Events travel to the dialects as two lists, their offsets and their wire JSON, checked to
grow before any connection is touched. Room events travel as one list per column, their
payloads already JSON: everything that can be refused without the database is refused
before a connection is touched.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Collection, Sequence
from typing import Any, Protocol, TypeVar

from agentkit._internal import observe
from agentkit.messages import Message
from agentkit.stores._base import (
    AgentRecord,
    ConversationRecord,
    DelegationRecord,
    EventEntry,
    MemberRecord,
    NewRoomEvent,
    PageKey,
    RecordNotFoundError,
    RoomEvent,
    RoomGrant,
    RoomNotFoundError,
    RoomRecord,
    RunRecord,
    RunStatus,
    SessionNotFoundError,
    SessionRecord,
    WaitingRecord,
    counted_statuses,
)
from agentkit.stores._codec import (
    check_offsets,
    dump_event,
    dump_message,
    dump_metadata,
    events_from_rows,
    messages_from_rows,
    run_from_row,
    session_from_row,
)
from agentkit.stores._records import (
    agent_from_row,
    check_page,
    conversation_from_row,
    member_from_row,
)
from agentkit.stores._rooms import (
    TypeFilter,
    check_cursor,
    check_delegation,
    check_expect,
    check_statuses,
    delegation_from_row,
    dump_json,
    event_from_row,
    grant_from_row,
    grant_params,
    room_from_row,
    type_filter,
)

__all__ = [
    "AGENT_COLUMNS",
    "CONVERSATION_COLUMNS",
    "DELEGATION_COLUMNS",
    "GRANT_COLUMNS",
    "MEMBER_COLUMNS",
    "ROOM_COLUMNS",
    "ROOM_EVENT_COLUMNS",
    "RUN_COLUMNS",
    "SESSION_COLUMNS",
    "WAITING_COLUMNS",
    "Dialect",
    "RoomEventColumns",
    "SQLStore",
    "agent_params",
    "check_key",
    "check_limit",
    "conversation_params",
    "count_runs_sql",
    "delegation_params",
    "delegation_upsert",
    "delegations_where",
    "event_columns",
    "may_finish",
    "member_params",
    "room_event_columns",
    "room_event_rows",
    "run_params",
    "waiting_from_row",
]

_T = TypeVar("_T")

SESSION_COLUMNS = "id, agent_id, created_at, updated_at, metadata"
RUN_COLUMNS = (
    "id, session_id, agent_id, status, created_at, finished_at, owner, heartbeat_at, "
    "lease_expires_at, error"
)
WAITING_COLUMNS = "id, session_id, agent_id, request_id, pending, deadline"
"""A waiting run's columns, in the order of `WaitingRecord`'s fields (`pending` as JSON)."""

MEMBER_COLUMNS = "id, name, role, token_hash, created_at, removed_at"
AGENT_COLUMNS = "id, name, version, source, created_at, updated_at, definition, deleted_at"
CONVERSATION_COLUMNS = (
    "id, agent_id, creator_id, visibility, name, created_at, updated_at, instructions"
)

ROOM_COLUMNS = "id, name, created_by, created_at, metadata"
ROOM_EVENT_COLUMNS = "pos, id, type, author, payload, created_at, caused_by, run_id"
GRANT_COLUMNS = "participant, read_types, publish_types"
DELEGATION_COLUMNS = (
    "id, room_id, agent, task, status, requested_by, created_at, updated_at, result, error, "
    "deadline, attempts"
)

RoomEventColumns = tuple[
    list[str], list[str], list[str], list[str], list[float], list[int | None], list[str | None]
]
"""New room events as columns: ids, types, authors, payloads (JSON text), times, the
positions that caused them, the runs that produced them."""


def run_params(run: RunRecord) -> tuple[Any, ...]:
    """A run's values in the order of `RUN_COLUMNS`."""
    return (
        run.id,
        run.session_id,
        run.agent_id,
        run.status,
        run.created_at,
        run.finished_at,
        run.owner,
        run.heartbeat_at,
        run.lease_expires_at,
        run.error,
    )


def waiting_from_row(row: Sequence[Any]) -> WaitingRecord:
    """A waiting run from a row of `WAITING_COLUMNS`."""
    return WaitingRecord(row[0], row[1], row[2], row[3], json.loads(row[4]), row[5])


def may_finish(row: Any, owner: str | None, expired_by: float | None) -> bool:
    """Whether a run in state `row` (status, owner, lease end) may be ended on those terms."""
    status, holder, lease_end = row
    return (
        status == "running"
        and (owner is None or holder == owner)
        and (expired_by is None or lease_end is None or lease_end < expired_by)
    )


def event_columns(run_id: str, entries: Sequence[EventEntry]) -> tuple[list[int], list[str]]:
    """Offsets and JSON of `entries`, checked to grow (their order against the stored
    events is checked in the transaction that appends them)."""
    if not entries:
        return [], []
    check_offsets(run_id, entries[0].offset - 1, entries)
    return [entry.offset for entry in entries], [dump_event(entry) for entry in entries]


def room_event_columns(events: Sequence[NewRoomEvent]) -> RoomEventColumns:
    """`events` as columns in the order of `RoomEventColumns`; `ValueError` when there are
    none, `TypeError` (or `ValueError`) when a payload is not JSON."""
    if not events:
        raise ValueError("append_room_events needs at least one event")
    for event in events:
        caused_by = event.caused_by
        if caused_by is not None and (
            isinstance(caused_by, bool) or not isinstance(caused_by, int) or caused_by < 1
        ):
            raise ValueError(
                f"event {event.id!r}: caused_by must be a position (1 or more), not {caused_by!r}"
            )
        if event.run_id is not None and not isinstance(event.run_id, str):
            raise TypeError(f"event {event.id!r}: run_id must be a string, not {event.run_id!r}")
    return (
        [event.id for event in events],
        [event.type for event in events],
        [event.author for event in events],
        [dump_json(event.payload, f"the payload of event {event.id!r}") for event in events],
        [event.created_at for event in events],
        [event.caused_by for event in events],
        [event.run_id for event in events],
    )


def room_event_rows(first: int, columns: RoomEventColumns) -> list[tuple[Any, ...]]:
    """The events of `columns` as rows of `ROOM_EVENT_COLUMNS`, at positions `first`,
    `first + 1`, ..."""
    return [(first + i, *row) for i, row in enumerate(zip(*columns, strict=True))]


def delegation_upsert(table: str, mark: str) -> str:
    """The statement inserting a delegation (`DELEGATION_COLUMNS`) into `table`, or
    replacing every column of the stored one of the same room and id; `mark` is the
    dialect's parameter."""
    columns = DELEGATION_COLUMNS.split(", ")
    replaced = ", ".join(f"{c} = excluded.{c}" for c in columns if c not in ("id", "room_id"))
    return (
        f"INSERT INTO {table} ({DELEGATION_COLUMNS}) VALUES ({', '.join([mark] * len(columns))}) "
        f"ON CONFLICT (room_id, id) DO UPDATE SET {replaced}"
    )


def delegations_where(
    room_id: str,
    statuses: list[str] | None,
    agent: str | None,
    after: PageKey | None,
    limit: int | None,
    *,
    mark: str,
    id_order: str = "id",
) -> tuple[str, list[Any]]:
    """The `WHERE ... ORDER BY ... LIMIT` of a room's delegations, oldest first by
    `(created_at, id)`, in a dialect whose parameters are `mark` and whose ids sort in
    code point order as `id_order`; and its parameters."""
    where, params = ["room_id = " + mark], list[Any]([room_id])
    if statuses is not None:
        where.append(f"status IN ({', '.join([mark] * len(statuses))})")
        params.extend(statuses)
    if agent is not None:
        where.append("agent = " + mark)
        params.append(agent)
    if after is not None:
        where.append(f"(created_at, {id_order}) > ({mark}, {mark})")
        params.extend(after)
    clause = f"{' AND '.join(where)} ORDER BY created_at, {id_order}"
    if limit is not None:
        clause += " LIMIT " + mark
        params.append(limit)
    return clause, params


def delegation_params(room_id: str, delegation: DelegationRecord) -> tuple[Any, ...]:
    """A delegation's values in the order of `DELEGATION_COLUMNS`, checked to belong to
    `room_id`, `task` and `result` as JSON text."""
    check_delegation(room_id, delegation)
    what = f"delegation {delegation.id!r}"
    return (
        delegation.id,
        delegation.room_id,
        delegation.agent,
        dump_json(delegation.task, f"the task of {what}"),
        delegation.status,
        delegation.requested_by,
        delegation.created_at,
        delegation.updated_at,
        dump_json(delegation.result, f"the result of {what}"),
        delegation.error,
        None if delegation.deadline is None else float(delegation.deadline),
        delegation.attempts,
    )


def member_params(member: MemberRecord) -> tuple[Any, ...]:
    """A member's values in the order of `MEMBER_COLUMNS`."""
    return (
        member.id,
        member.name,
        member.role,
        member.token_hash,
        member.created_at,
        member.removed_at,
    )


def agent_params(agent: AgentRecord) -> tuple[Any, ...]:
    """An agent's values in the order of `AGENT_COLUMNS`, its definition as JSON text."""
    return (
        agent.id,
        agent.name,
        agent.version,
        agent.source,
        agent.created_at,
        agent.updated_at,
        dump_metadata(agent.definition),
        agent.deleted_at,
    )


def conversation_params(conversation: ConversationRecord) -> tuple[Any, ...]:
    """A conversation's values in the order of `CONVERSATION_COLUMNS`."""
    return (
        conversation.id,
        conversation.agent_id,
        conversation.creator_id,
        conversation.visibility,
        conversation.name,
        conversation.created_at,
        conversation.updated_at,
        conversation.instructions,
    )


def check_limit(limit: int | None) -> None:
    """Raise `ValueError` for a negative `limit`."""
    if limit is not None and limit < 0:
        raise ValueError(f"limit must not be negative, got {limit}")


def check_key(after: PageKey | None) -> PageKey | None:
    """A `(created_at, id)` page key checked, its time as a float (the databases compare
    floats and ints alike, but a driver types its parameters by the Python value)."""
    if after is None:
        return None
    check_page(after, 1)
    return float(after[0]), after[1]


class Dialect(Protocol):
    """One backend's operations; `conn` is its connection."""

    def create_session(self, conn: Any, record: SessionRecord, metadata: str) -> None: ...
    def get_session(self, conn: Any, session_id: str) -> Any: ...
    def update_session(self, conn: Any, session_id: str, metadata: str, now: float) -> Any: ...
    def list_sessions(self, conn: Any, agent_id: str | None) -> list[Any]: ...
    def delete_session(self, conn: Any, session_id: str) -> None: ...
    def load_transcript(self, conn: Any, session_id: str) -> list[Any]: ...
    def append_transcript(
        self, conn: Any, session_id: str, data: list[str], now: float
    ) -> None: ...
    def truncate_transcript(self, conn: Any, session_id: str, length: int) -> None: ...
    def create_run(
        self, conn: Any, run: RunRecord, offsets: list[int], data: list[str]
    ) -> None: ...
    def finish_run(
        self,
        conn: Any,
        run_id: str,
        status: RunStatus,
        finished_at: float,
        offsets: list[int],
        data: list[str],
        error: str | None,
        owner: str | None,
        expired_by: float | None,
    ) -> bool: ...
    def renew_leases(
        self, conn: Any, owner: str, run_ids: list[str], now: float, expires_at: float
    ) -> set[str]: ...
    def expired_runs(self, conn: Any, now: float) -> list[Any]: ...
    def get_run(self, conn: Any, run_id: str) -> Any: ...
    def list_runs(self, conn: Any, session_id: str) -> list[Any]: ...
    def append_events(
        self, conn: Any, run_id: str, offsets: list[int], data: list[str]
    ) -> None: ...
    def append_step(
        self,
        conn: Any,
        session_id: str,
        messages: list[str],
        now: float,
        run_id: str,
        offsets: list[int],
        data: list[str],
    ) -> None: ...
    def read_events(self, conn: Any, run_id: str, after: int) -> list[Any]: ...
    def suspend_run(
        self,
        conn: Any,
        run_id: str,
        owner: str,
        messages: list[str],
        now: float,
        offsets: list[int],
        data: list[str],
        request_id: str,
        state: str,
        deadline: float | None,
    ) -> bool:
        """`Store.suspend_run` in one transaction (`state` as JSON text)."""
        ...

    def resume_run(
        self,
        conn: Any,
        run_id: str,
        request_id: str,
        owner: str,
        now: float,
        lease_expires_at: float,
        offsets: list[int],
        data: list[str],
    ) -> Any:
        """`Store.resume_run` in one transaction: the row of `WAITING_COLUMNS` it resumed
        from, or `None`."""
        ...

    def get_waiting(self, conn: Any, run_id: str) -> Any: ...
    def overdue_requests(self, conn: Any, now: float, limit: int) -> list[Any]: ...
    def count_runs(self, conn: Any, statuses: list[str]) -> list[Any]:
        """`(status, count)` rows of the checked `statuses` (see `count_runs_sql`)."""
        ...

    def create_room(self, conn: Any, room: RoomRecord, metadata: str) -> None: ...
    def get_room(self, conn: Any, room_id: str) -> Any: ...
    def list_rooms(self, conn: Any) -> list[Any]: ...
    def update_room(
        self, conn: Any, room_id: str, name: str | None, metadata: str | None
    ) -> Any: ...
    def delete_room(self, conn: Any, room_id: str) -> None: ...
    def append_room_events(
        self,
        conn: Any,
        room_id: str,
        columns: RoomEventColumns,
        delegation: tuple[Any, ...] | None,
        expect: list[str] | None,
        cursor: tuple[str, int] | None,
    ) -> int:
        """Append the events after the room's head, upsert `delegation` and `cursor`, in
        one transaction; return the new head. `RoomNotFoundError` when the room is
        missing; `DelegationStateError` (nothing written) when `expect` is given and the
        stored delegation is missing or in another status, read under the room's lock."""
        ...

    def read_room_events(
        self, conn: Any, room_id: str, after: int, limit: int | None, types: TypeFilter | None
    ) -> list[Any] | None:
        """Rows of `ROOM_EVENT_COLUMNS`; `None` when the room is missing."""
        ...

    def room_head(self, conn: Any, room_id: str) -> int | None: ...
    def set_grant(
        self, conn: Any, room_id: str, participant: str, read: str, publish: str
    ) -> None: ...
    def delete_grant(self, conn: Any, room_id: str, participant: str) -> None: ...
    def list_grants(self, conn: Any, room_id: str) -> list[Any]: ...
    def get_cursor(self, conn: Any, room_id: str, consumer: str) -> int | None: ...
    def set_cursor(self, conn: Any, room_id: str, consumer: str, position: int) -> None: ...
    def get_delegation(self, conn: Any, room_id: str, delegation_id: str) -> Any: ...
    def list_delegations(
        self,
        conn: Any,
        room_id: str,
        statuses: list[str] | None,
        agent: str | None,
        after: PageKey | None,
        limit: int | None,
    ) -> list[Any]:
        """Rows of `DELEGATION_COLUMNS` (see `delegations_where`)."""
        ...

    def overdue_delegations(self, conn: Any, now: float, limit: int) -> list[Any]:
        """Rows of `DELEGATION_COLUMNS`: open delegations whose deadline is `now` or
        earlier, earliest deadline first (then by room and id)."""
        ...

    def create_member(self, conn: Any, params: tuple[Any, ...]) -> None:
        """Insert a member (`MEMBER_COLUMNS`); `RecordExistsError` on a unique index."""
        ...

    def get_member(self, conn: Any, member_id: str) -> Any: ...
    def find_member(self, conn: Any, name: str) -> Any: ...
    def member_by_token(self, conn: Any, token_hash: str) -> Any: ...
    def update_member(
        self, conn: Any, member_id: str, role: str | None, token_hash: str | None
    ) -> Any:
        """The live member's row after the update, or `None` when there is none;
        `RecordExistsError` when another member has the hash."""
        ...

    def remove_member(self, conn: Any, member_id: str, removed_at: float) -> bool: ...
    def list_members(self, conn: Any, after: PageKey | None, limit: int) -> list[Any]: ...
    def create_agent(self, conn: Any, params: tuple[Any, ...]) -> None:
        """Insert an agent (`AGENT_COLUMNS`); `RecordExistsError` on a unique index."""
        ...

    def get_agent(self, conn: Any, agent_id: str) -> Any: ...
    def find_agent(self, conn: Any, name: str) -> Any: ...
    def replace_agent(
        self, conn: Any, agent_id: str, definition: str, updated_at: float
    ) -> Any: ...
    def delete_agent(self, conn: Any, agent_id: str, deleted_at: float) -> bool: ...
    def list_agents(self, conn: Any, after: PageKey | None, limit: int) -> list[Any]: ...
    def create_conversation(
        self, conn: Any, session: SessionRecord, metadata: str, params: tuple[Any, ...]
    ) -> None:
        """Insert the session and the conversation (`CONVERSATION_COLUMNS`) in one
        transaction; `SessionExistsError` when the id is taken."""
        ...

    def fork_conversation(
        self,
        conn: Any,
        session: SessionRecord,
        metadata: str,
        params: tuple[Any, ...],
        source_id: str,
        runs: list[tuple[str, str]],
        transcript_length: int | None,
    ) -> None:
        """`create_conversation`, then copy the source's first `transcript_length`
        messages (all when `None`) and its ended `runs` (old id, new id) with their
        events, in the same transaction (see `RecordStore.fork_conversation`)."""
        ...

    def get_conversation(self, conn: Any, conversation_id: str) -> Any: ...
    def update_conversation(
        self,
        conn: Any,
        conversation_id: str,
        updated_at: float,
        name: str | None,
        visibility: str | None,
    ) -> Any: ...
    def list_conversations(
        self, conn: Any, viewer_id: str, after: PageKey | None, limit: int
    ) -> list[Any]: ...
    def list_readable_runs(
        self,
        conn: Any,
        viewer_id: str,
        others: bool,
        session_id: str | None,
        after: PageKey | None,
        limit: int,
    ) -> list[Any]: ...
    def running_sessions(self, conn: Any, session_ids: list[str]) -> set[str]: ...


def count_runs_sql(table: str, statuses: list[str]) -> str:
    """One count a status, each `WHERE status = '<literal>'` (checked names: see
    `counted_statuses`), so that the running runs are counted from their partial index."""
    return " UNION ALL ".join(
        f"SELECT '{status}', count(*) FROM {table} WHERE status = '{status}'" for status in statuses
    )


class SQLStore:
    """The `Store` interface over a dialect (see the module's documentation)."""

    _ops: Dialect

    async def _call(self, fn: Callable[..., _T], *args: Any) -> _T:
        """`fn(connection, *args)` through the backend's `_execute`, timed for the
        process's observer when there is one (`agentkit._internal.observe`)."""
        observer = observe.current()
        if observer is None:
            return await self._execute(fn, *args)
        started = time.perf_counter()
        try:
            return await self._execute(fn, *args)
        finally:
            observer.store_operation(fn.__name__, time.perf_counter() - started)

    async def _execute(self, fn: Callable[..., _T], *args: Any) -> _T:
        raise NotImplementedError

    def _wrote(self, nbytes: int) -> None:
        """Told how many bytes of data a write added."""

    # --- sessions ---------------------------------------------------------------------

    async def create_session(
        self, session_id: str, agent_id: str, metadata: dict[str, Any] | None = None
    ) -> SessionRecord:
        """Create a session; `SessionExistsError` when the id is taken."""
        now = time.time()
        record = SessionRecord(session_id, agent_id, now, now, dict(metadata or {}))
        await self._call(self._ops.create_session, record, dump_metadata(metadata))
        return record

    async def get_session(self, session_id: str) -> SessionRecord | None:
        """The session, or `None`."""
        row = await self._call(self._ops.get_session, session_id)
        return None if row is None else session_from_row(row)

    async def update_session(self, session_id: str, metadata: dict[str, Any]) -> SessionRecord:
        """Replace a session's metadata; `SessionNotFoundError` when missing."""
        row = await self._call(
            self._ops.update_session, session_id, dump_metadata(metadata), time.time()
        )
        if row is None:
            raise SessionNotFoundError(f"no session {session_id!r}")
        return session_from_row(row)

    async def list_sessions(self, agent_id: str | None = None) -> list[SessionRecord]:
        """Sessions, oldest first, optionally of one agent."""
        rows = await self._call(self._ops.list_sessions, agent_id)
        return [session_from_row(row) for row in rows]

    async def delete_session(self, session_id: str) -> None:
        """Delete a session with its transcript, runs and events (no error when missing)."""
        await self._call(self._ops.delete_session, session_id)

    # --- transcripts ------------------------------------------------------------------

    async def load_transcript(self, session_id: str) -> list[Message]:
        """The session's transcript in order; `SessionNotFoundError` when missing."""
        return messages_from_rows(await self._call(self._ops.load_transcript, session_id))

    async def append_transcript(self, session_id: str, messages: Sequence[Message]) -> None:
        """Append messages atomically: all of them or none."""
        data = [dump_message(message) for message in messages]
        await self._call(self._ops.append_transcript, session_id, data, time.time())
        self._wrote(sum(map(len, data)))

    async def truncate_transcript(self, session_id: str, length: int) -> None:
        """Keep only the first `length` messages."""
        await self._call(self._ops.truncate_transcript, session_id, length)

    # --- runs -------------------------------------------------------------------------

    async def create_run(self, run: RunRecord, events: Sequence[EventEntry] = ()) -> None:
        """Record a new run with its first events in one transaction;
        `SessionBusyError` while the session has a running run (in any process)."""
        offsets, data = event_columns(run.id, events)
        await self._call(self._ops.create_run, run, offsets, data)
        self._wrote(sum(map(len, data)))

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
        """End a running run with its last events, in one transaction (see
        [`Store.finish_run`][agentkit.stores.Store.finish_run])."""
        offsets, data = event_columns(run_id, events)
        done = await self._call(
            self._ops.finish_run,
            run_id,
            status,
            finished_at,
            offsets,
            data,
            error,
            owner,
            expired_by,
        )
        self._wrote(sum(map(len, data)))
        return done

    async def renew_leases(
        self, owner: str, run_ids: Sequence[str], now: float, expires_at: float
    ) -> set[str]:
        """Renew `owner`'s leases on those of `run_ids` that are still running."""
        if not run_ids:
            return set()
        return await self._call(self._ops.renew_leases, owner, list(run_ids), now, expires_at)

    async def expired_runs(self, now: float) -> list[RunRecord]:
        """Running runs whose lease expired before `now` (or that have none), oldest first."""
        return [run_from_row(row) for row in await self._call(self._ops.expired_runs, now)]

    async def get_run(self, run_id: str) -> RunRecord | None:
        """The run, or `None`."""
        row = await self._call(self._ops.get_run, run_id)
        return None if row is None else run_from_row(row)

    async def list_runs(self, session_id: str) -> list[RunRecord]:
        """A session's runs, oldest first."""
        return [run_from_row(row) for row in await self._call(self._ops.list_runs, session_id)]

    # --- events -----------------------------------------------------------------------

    async def append_events(self, run_id: str, entries: Sequence[EventEntry]) -> None:
        """Append events in one transaction; offsets must grow past the stored ones."""
        if not entries:
            return
        offsets, data = event_columns(run_id, entries)
        await self._call(self._ops.append_events, run_id, offsets, data)
        self._wrote(sum(map(len, data)))

    async def append_step(
        self,
        session_id: str,
        messages: Sequence[Message],
        run_id: str,
        entries: Sequence[EventEntry],
    ) -> None:
        """Append a model step's transcript messages and its events in one transaction."""
        data = [dump_message(message) for message in messages]
        offsets, events = event_columns(run_id, entries)
        await self._call(
            self._ops.append_step, session_id, data, time.time(), run_id, offsets, events
        )
        self._wrote(sum(map(len, data)) + sum(map(len, events)))

    async def read_events(self, run_id: str, after: int = -1) -> list[EventEntry]:
        """A run's stored events with offset greater than `after`, in order."""
        return events_from_rows(await self._call(self._ops.read_events, run_id, after))

    # --- waiting runs -----------------------------------------------------------------

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
        """Move `owner`'s running run to `waiting` with its step, in one transaction (see
        [`Store.suspend_run`][agentkit.stores.Store.suspend_run])."""
        data = [dump_message(message) for message in messages]
        offsets, encoded = event_columns(run_id, events)
        done = await self._call(
            self._ops.suspend_run,
            run_id,
            owner,
            data,
            time.time(),
            offsets,
            encoded,
            request_id,
            dump_metadata(state),
            None if deadline is None else float(deadline),
        )
        self._wrote(sum(map(len, data)) + sum(map(len, encoded)))
        return done

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
        """Move a run waiting on `request_id` back to `running`, in one conditional
        transaction (see [`Store.resume_run`][agentkit.stores.Store.resume_run])."""
        offsets, data = event_columns(run_id, events)
        row = await self._call(
            self._ops.resume_run, run_id, request_id, owner, now, lease_expires_at, offsets, data
        )
        return None if row is None else waiting_from_row(row)

    async def get_waiting(self, run_id: str) -> WaitingRecord | None:
        """The run's pending request while it waits, else `None`."""
        row = await self._call(self._ops.get_waiting, run_id)
        return None if row is None else waiting_from_row(row)

    async def overdue_requests(self, now: float, limit: int = 100) -> list[WaitingRecord]:
        """Waiting runs whose deadline is `now` or earlier, earliest first."""
        check_limit(limit)
        if limit == 0:
            return []
        rows = await self._call(self._ops.overdue_requests, float(now), limit)
        return [waiting_from_row(row) for row in rows]

    async def count_runs(self, statuses: Sequence[str]) -> dict[str, int]:
        """How many runs are in each of `statuses` now."""
        counts = dict.fromkeys(counted_statuses(statuses), 0)
        if counts:
            for status, count in await self._call(self._ops.count_runs, list(counts)):
                counts[status] = int(count)
        return counts

    # --- rooms ------------------------------------------------------------------------

    async def create_room(self, room: RoomRecord) -> None:
        """Record a new, empty room; `RoomExistsError` when the id is taken."""
        await self._call(self._ops.create_room, room, dump_metadata(room.metadata))

    async def get_room(self, room_id: str) -> RoomRecord | None:
        """The room, or `None`."""
        row = await self._call(self._ops.get_room, room_id)
        return None if row is None else room_from_row(row)

    async def list_rooms(self) -> list[RoomRecord]:
        """Every room, oldest first."""
        return [room_from_row(row) for row in await self._call(self._ops.list_rooms)]

    async def update_room(
        self, room_id: str, name: str | None = None, metadata: dict[str, Any] | None = None
    ) -> RoomRecord:
        """Replace the room's name and/or metadata; `RoomNotFoundError` when missing."""
        data = None if metadata is None else dump_metadata(metadata)
        row = await self._call(self._ops.update_room, room_id, name, data)
        if row is None:
            raise RoomNotFoundError(f"no room {room_id!r}")
        return room_from_row(row)

    async def delete_room(self, room_id: str) -> None:
        """Delete a room with everything it holds (no error when missing)."""
        await self._call(self._ops.delete_room, room_id)

    async def append_room_events(
        self,
        room_id: str,
        events: Sequence[NewRoomEvent],
        *,
        delegation: DelegationRecord | None = None,
        expect: Collection[str] | None = None,
        cursor: tuple[str, int] | None = None,
    ) -> list[RoomEvent]:
        """Append events at the room's next positions, in one transaction (see
        [`Store.append_room_events`][agentkit.stores.Store.append_room_events])."""
        columns = room_event_columns(events)
        upsert = None if delegation is None else delegation_params(room_id, delegation)
        expected = check_expect(delegation, expect)
        moved = check_cursor(cursor)
        head = await self._call(
            self._ops.append_room_events, room_id, columns, upsert, expected, moved
        )
        self._wrote(sum(map(len, columns[3])))
        rows = room_event_rows(head - len(events) + 1, columns)
        return [event_from_row(room_id, row) for row in rows]

    async def read_room_events(
        self,
        room_id: str,
        after: int = 0,
        limit: int | None = None,
        types: Sequence[str] | None = None,
    ) -> list[RoomEvent]:
        """The room's events after position `after`, in order, at most `limit`, of `types`."""
        check_limit(limit)
        wanted = type_filter(types)
        if limit == 0 or (wanted is not None and not wanted.exact and not wanted.prefixes):
            rows: list[Any] | None = [] if await self.get_room(room_id) is not None else None
        else:
            rows = await self._call(self._ops.read_room_events, room_id, after, limit, wanted)
        if rows is None:
            raise RoomNotFoundError(f"no room {room_id!r}")
        return [event_from_row(room_id, row) for row in rows]

    async def room_head(self, room_id: str) -> int:
        """The position of the room's last event (0 when it has none)."""
        head = await self._call(self._ops.room_head, room_id)
        if head is None:
            raise RoomNotFoundError(f"no room {room_id!r}")
        return head

    async def set_grant(self, room_id: str, grant: RoomGrant) -> None:
        """Record a participant's grant, replacing any it had."""
        await self._call(self._ops.set_grant, room_id, *grant_params(grant))

    async def delete_grant(self, room_id: str, participant: str) -> None:
        """Remove a participant's grant (no error when it has none)."""
        await self._call(self._ops.delete_grant, room_id, participant)

    async def list_grants(self, room_id: str) -> list[RoomGrant]:
        """The room's grants by participant."""
        return [grant_from_row(row) for row in await self._call(self._ops.list_grants, room_id)]

    async def get_cursor(self, room_id: str, consumer: str) -> int | None:
        """The consumer's last handled position in the room, or `None`."""
        return await self._call(self._ops.get_cursor, room_id, consumer)

    async def set_cursor(self, room_id: str, consumer: str, position: int) -> None:
        """Record the consumer's last handled position in the room."""
        await self._call(self._ops.set_cursor, room_id, consumer, position)

    async def get_delegation(self, room_id: str, delegation_id: str) -> DelegationRecord | None:
        """The room's delegation with this id, or `None`."""
        row = await self._call(self._ops.get_delegation, room_id, delegation_id)
        return None if row is None else delegation_from_row(row)

    async def list_delegations(
        self,
        room_id: str,
        *,
        statuses: Sequence[str] | None = None,
        agent: str | None = None,
        after: PageKey | None = None,
        limit: int | None = None,
    ) -> list[DelegationRecord]:
        """The room's delegations, oldest first by `(created_at, id)` (see
        [`Store.list_delegations`][agentkit.stores.Store.list_delegations])."""
        wanted = None if statuses is None else check_statuses(statuses, "statuses")
        check_limit(limit)
        key = check_key(after)
        if limit == 0 or wanted == []:
            return []
        rows = await self._call(self._ops.list_delegations, room_id, wanted, agent, key, limit)
        return [delegation_from_row(row) for row in rows]

    async def overdue_delegations(self, now: float, limit: int = 100) -> list[DelegationRecord]:
        """Pending and running delegations of every room whose deadline is `now` or
        earlier, earliest deadline first."""
        check_limit(limit)
        if limit == 0:
            return []
        rows = await self._call(self._ops.overdue_delegations, float(now), limit)
        return [delegation_from_row(row) for row in rows]

    # --- records ----------------------------------------------------------------------

    async def create_member(self, member: MemberRecord) -> None:
        """Record a new member; `RecordExistsError` when a live member has its name, or any
        member its id or token hash."""
        await self._call(self._ops.create_member, member_params(member))

    async def get_member(self, member_id: str) -> MemberRecord | None:
        """The member with this id, removed or not, or `None`."""
        row = await self._call(self._ops.get_member, member_id)
        return None if row is None else member_from_row(row)

    async def find_member(self, name: str) -> MemberRecord | None:
        """The live member with this name, or `None`."""
        row = await self._call(self._ops.find_member, name)
        return None if row is None else member_from_row(row)

    async def member_by_token(self, token_hash: str) -> MemberRecord | None:
        """The live member whose token has this hash (one index lookup), or `None`."""
        row = await self._call(self._ops.member_by_token, token_hash)
        return None if row is None else member_from_row(row)

    async def update_member(
        self, member_id: str, *, role: str | None = None, token_hash: str | None = None
    ) -> MemberRecord:
        """Change a live member's role and/or token hash."""
        row = await self._call(self._ops.update_member, member_id, role, token_hash)
        if row is None:
            raise RecordNotFoundError(f"no member {member_id!r}")
        return member_from_row(row)

    async def remove_member(self, member_id: str, removed_at: float) -> None:
        """Mark a live member removed (its row and id stay)."""
        if not await self._call(self._ops.remove_member, member_id, removed_at):
            raise RecordNotFoundError(f"no member {member_id!r}")

    async def list_members(
        self, after: PageKey | None = None, limit: int = 1001
    ) -> list[MemberRecord]:
        """Live members, oldest first, a page at a time."""
        check_page(after, limit)
        rows = await self._call(self._ops.list_members, _key(after), limit)
        return [member_from_row(row) for row in rows]

    async def create_agent(self, agent: AgentRecord) -> None:
        """Record a new agent; `RecordExistsError` when a live agent has its name or any
        agent its id."""
        await self._call(self._ops.create_agent, agent_params(agent))

    async def get_agent(self, agent_id: str) -> AgentRecord | None:
        """The agent with this id, deleted or not, or `None`."""
        row = await self._call(self._ops.get_agent, agent_id)
        return None if row is None else agent_from_row(row)

    async def find_agent(self, name: str) -> AgentRecord | None:
        """The live agent with this name, or `None`."""
        row = await self._call(self._ops.find_agent, name)
        return None if row is None else agent_from_row(row)

    async def replace_agent(
        self, agent_id: str, definition: dict[str, Any], updated_at: float
    ) -> AgentRecord:
        """Give a live agent a new definition: its version grows by one, its id stays."""
        data = dump_metadata(definition)
        row = await self._call(self._ops.replace_agent, agent_id, data, updated_at)
        if row is None:
            raise RecordNotFoundError(f"no agent {agent_id!r}")
        return agent_from_row(row)

    async def delete_agent(self, agent_id: str, deleted_at: float) -> None:
        """Mark a live agent deleted (its row and id stay)."""
        if not await self._call(self._ops.delete_agent, agent_id, deleted_at):
            raise RecordNotFoundError(f"no agent {agent_id!r}")

    async def list_agents(
        self, after: PageKey | None = None, limit: int = 1001
    ) -> list[AgentRecord]:
        """Live agents, oldest first, a page at a time."""
        check_page(after, limit)
        rows = await self._call(self._ops.list_agents, _key(after), limit)
        return [agent_from_row(row) for row in rows]

    async def create_conversation(
        self,
        conversation: ConversationRecord,
        session_agent: str,
        metadata: dict[str, Any] | None = None,
    ) -> SessionRecord:
        """Create a conversation and its session in one transaction;
        `SessionExistsError` when the id is taken."""
        now = time.time()
        session = SessionRecord(conversation.id, session_agent, now, now, dict(metadata or {}))
        await self._call(
            self._ops.create_conversation,
            session,
            dump_metadata(metadata),
            conversation_params(conversation),
        )
        return session

    async def fork_conversation(
        self,
        source_id: str,
        conversation: ConversationRecord,
        session_agent: str,
        metadata: dict[str, Any],
        runs: Sequence[tuple[str, str]],
        transcript_length: int | None = None,
    ) -> SessionRecord:
        """A new conversation holding a copy of part of session `source_id`, in one
        transaction (see `RecordStore.fork_conversation`)."""
        if transcript_length is not None and (
            isinstance(transcript_length, bool) or transcript_length < 0
        ):
            raise ValueError(f"transcript_length must be 0 or more, not {transcript_length!r}")
        now = time.time()
        session = SessionRecord(conversation.id, session_agent, now, now, dict(metadata))
        await self._call(
            self._ops.fork_conversation,
            session,
            dump_metadata(metadata),
            conversation_params(conversation),
            source_id,
            [(str(old), str(new)) for old, new in runs],
            transcript_length,
        )
        return session

    async def get_conversation(self, conversation_id: str) -> ConversationRecord | None:
        """The conversation, or `None`."""
        row = await self._call(self._ops.get_conversation, conversation_id)
        return None if row is None else conversation_from_row(row)

    async def update_conversation(
        self,
        conversation_id: str,
        *,
        updated_at: float,
        name: str | None = None,
        visibility: str | None = None,
    ) -> ConversationRecord:
        """Rename a conversation and/or change its visibility."""
        row = await self._call(
            self._ops.update_conversation, conversation_id, updated_at, name, visibility
        )
        if row is None:
            raise RecordNotFoundError(f"no conversation {conversation_id!r}")
        return conversation_from_row(row)

    async def list_conversations(
        self, viewer_id: str, after: PageKey | None = None, limit: int = 1001
    ) -> list[ConversationRecord]:
        """The shared conversations and `viewer_id`'s private ones, newest first: two
        index ranges, so a page costs the same however many conversations there are."""
        check_page(after, limit)
        rows = await self._call(self._ops.list_conversations, viewer_id, _key(after), limit)
        return [conversation_from_row(row) for row in rows]

    async def list_readable_runs(
        self,
        viewer_id: str,
        *,
        others: bool,
        session_id: str | None = None,
        after: PageKey | None = None,
        limit: int = 1001,
    ) -> list[RunRecord]:
        """Runs `viewer_id` may read, newest first (see
        [`Store.list_readable_runs`][agentkit.stores.Store.list_readable_runs])."""
        check_page(after, limit)
        rows = await self._call(
            self._ops.list_readable_runs, viewer_id, others, session_id, _key(after), limit
        )
        return [run_from_row(row) for row in rows]

    async def running_sessions(self, session_ids: Sequence[str]) -> set[str]:
        """The sessions among `session_ids` that have a `running` run."""
        wanted = list(dict.fromkeys(session_ids))
        if not wanted:
            return set()
        return await self._call(self._ops.running_sessions, wanted)


def _key(after: PageKey | None) -> PageKey | None:
    """A page key with its time as a float (the databases compare floats and ints alike,
    but a driver types its parameters by the Python value)."""
    return None if after is None else (float(after[0]), after[1])
