"""A store that keeps everything in process memory, up to a bound (tests, scripts, and
services that need not keep history).

It keeps what the SQL stores keep: events and messages in their JSON wire form, records as
plain tuples. So what you read back is always a copy (never an alias of a live event a
caller might still change), every backend returns the same thing for the same input, and a
long history costs the garbage collector nothing: strings and tuples of strings and
numbers are not objects it has to walk, where a pydantic event is several.

It is bounded, so that a runtime left running for days does not grow without end: past
`max_sessions` sessions the least recently active idle session goes (with its transcript,
runs and logs), past `max_finished_runs` ended runs the one that ended first goes (its
record and log). Work in progress is never evicted. Every eviction is O(1): the store keeps
its idle sessions and its ended runs in two `OrderedDict`s, in eviction order.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Collection, Iterable, Sequence
from typing import Any

from agentkit.errors import OffsetError
from agentkit.messages import Message
from agentkit.stores._base import (
    ConversationRecord,
    DelegationRecord,
    EventEntry,
    NewRoomEvent,
    PageKey,
    RoomEvent,
    RoomExistsError,
    RoomGrant,
    RoomNotFoundError,
    RoomRecord,
    RunEndedError,
    RunRecord,
    RunStatus,
    SessionBusyError,
    SessionExistsError,
    SessionNotFoundError,
    SessionRecord,
    StoreError,
    WaitingRecord,
    counted_statuses,
)
from agentkit.stores._codec import (
    dump_metadata,
    event_json,
    load_event,
    load_message,
    load_metadata,
    message_json,
    session_from_row,
)
from agentkit.stores._memory_records import MemoryRecords
from agentkit.stores._queue import MemoryQueue
from agentkit.stores._rooms import (
    DELEGATION_OPEN,
    check_cursor,
    check_expect,
    check_statuses,
    delegation_from_row,
    event_from_row,
    grant_from_row,
    grant_params,
    room_from_row,
    state_error,
    type_filter,
)
from agentkit.stores._sql import (
    check_key,
    check_limit,
    delegation_params,
    may_finish,
    room_event_columns,
    room_event_rows,
)

__all__ = ["DEFAULT_MAX_FINISHED_RUNS", "DEFAULT_MAX_SESSIONS", "MemoryStore"]

DEFAULT_MAX_SESSIONS = 10_000
"""Sessions a `MemoryStore` keeps by default (see `MemoryStore`)."""
DEFAULT_MAX_FINISHED_RUNS = 10_000
"""Ended runs whose record and event log a `MemoryStore` keeps by default."""

# Rows, as the SQL stores have them:
#   session: (id, agent_id, created_at, updated_at, metadata JSON)
#   run:     the fields of a `RunRecord`, in order
#   event:   (offset, event JSON)
#   room:    (id, name, created_by, created_at, metadata JSON)
#   room event: (position, id, type, author, payload JSON, created_at, caused_by, run_id)
#   grant:   (participant, read patterns JSON, publish patterns JSON)
#   delegation: the columns of `DELEGATION_COLUMNS` (task and result as JSON)
# JSON is kept as UTF-8 bytes, as pydantic writes it (room JSON as text, as `json` does).
_SessionRow = tuple[str, str, float, float, str]
_RunRow = tuple[Any, ...]
_RoomRow = tuple[str, str, str, float, str]
_RoomEventRow = tuple[int, str, str, str, str, float]


class _Room:
    """A room's row and everything it holds. Positions are 1, 2, ...: the event at
    position `p` is `events[p - 1]`."""

    __slots__ = ("cursors", "delegations", "event_ids", "events", "grants", "row")

    def __init__(self, row: _RoomRow) -> None:
        self.row = row
        self.events: list[_RoomEventRow] = []
        self.event_ids: set[str] = set()
        self.grants: dict[str, tuple[str, str, str]] = {}
        self.cursors: dict[str, int] = {}
        self.delegations: dict[str, tuple[Any, ...]] = {}


class MemoryStore(MemoryRecords, MemoryQueue):
    """Everything in dicts of rows, up to a bound; nothing survives the process.

    Args:
        max_sessions: Sessions kept. Creating one more first evicts the least recently
            active idle session (created, written to, or a run of it started or ended
            longest ago) with its transcript, its runs and their event logs; a session
            becoming idle while the store is over the bound evicts likewise. A session
            with a running run is never evicted, so while more than `max_sessions`
            sessions have a run going the store holds them all. `None`: no bound.
        max_finished_runs: Ended runs kept (with their event logs). One more run ending
            evicts the run that ended first: its record and its log. A running run is
            never evicted. `None`: no bound.

    What was evicted reads as missing, as if deleted: `get_session` and `get_run` return
    `None`, `read_events` returns `[]`, `list_runs` and `list_sessions` leave it out, and
    resuming or writing to an evicted session raises `SessionNotFoundError`. Rooms, and one
    session's transcript, are not bounded. For history that must be kept, or a transcript
    that grows for days, use `SQLiteStore` or `PostgresStore`.
    """

    def __init__(
        self,
        *,
        max_sessions: int | None = DEFAULT_MAX_SESSIONS,
        max_finished_runs: int | None = DEFAULT_MAX_FINISHED_RUNS,
    ) -> None:
        for name, bound in (
            ("max_sessions", max_sessions),
            ("max_finished_runs", max_finished_runs),
        ):
            if bound is not None and (type(bound) is not int or bound < 1):
                raise ValueError(f"{name} must be a positive int or None (no bound), not {bound!r}")
        self.max_sessions = max_sessions
        """How many sessions are kept (`None`: all)."""
        self.max_finished_runs = max_finished_runs
        """How many ended runs' records and logs are kept (`None`: all)."""
        self._sessions: dict[str, _SessionRow] = {}
        self._transcripts: dict[str, list[bytes]] = {}
        self._session_runs: dict[str, dict[str, None]] = {}  # session id -> its run ids
        self._runs: dict[str, _RunRow] = {}
        self._running: dict[str, str] = {}  # session id -> its running (or waiting) run's id
        # Waiting runs: run id -> (request id, continuation JSON, deadline); and the last
        # request each run was resumed from.
        self._waiting: dict[str, tuple[str, str, float | None]] = {}
        self._events: dict[str, list[tuple[int, bytes]]] = {}
        # Eviction order, oldest first: the sessions without a running run, by last
        # activity; the ended runs by ending (and the logs of run ids without a record).
        self._idle: OrderedDict[str, None] = OrderedDict()
        self._ended: OrderedDict[str, None] = OrderedDict()
        self._rooms: dict[str, _Room] = {}
        self._init_records()

    def _session_ids(self) -> Iterable[str]:
        return self._sessions.keys()

    def _all_runs(self) -> Iterable[RunRecord]:
        return (RunRecord(*row) for row in self._runs.values())

    def _has_running(self, session_id: str) -> bool:
        # `_running` also holds a waiting run (it keeps its session busy); this asks for
        # a running one, as the SQL stores' `running_sessions` does.
        run_id = self._running.get(session_id)
        return run_id is not None and self._runs[run_id][3] == "running"

    # --- bounds -----------------------------------------------------------------------

    def _touch(self, session_id: str) -> None:
        """Mark an idle session as the most recently active."""
        if session_id in self._idle:
            self._idle.move_to_end(session_id)

    def _trim_sessions(self, room: int = 0) -> None:
        """Evict idle sessions, least recently active first, until `room` more fit."""
        bound = self.max_sessions
        if bound is None:
            return
        sessions, idle = self._sessions, self._idle
        while idle and len(sessions) + room > bound:
            session_id, _ = idle.popitem(last=False)
            self._drop_session(session_id)

    def _trim_runs(self) -> None:
        """Evict ended runs, the first ended first, down to the bound."""
        bound = self.max_finished_runs
        if bound is None:
            return
        ended = self._ended
        while len(ended) > bound:
            run_id, _ = ended.popitem(last=False)
            row = self._runs.pop(run_id, None)
            self._events.pop(run_id, None)
            if row is not None:
                runs = self._session_runs.get(row[1])
                if runs is not None:
                    runs.pop(run_id, None)

    def _drop_session(self, session_id: str) -> None:
        """Remove a session with its transcript, runs and logs (not from `_idle`)."""
        self._sessions.pop(session_id, None)
        self._transcripts.pop(session_id, None)
        self._running.pop(session_id, None)
        for run_id in self._session_runs.pop(session_id, ()):
            self._runs.pop(run_id, None)
            self._events.pop(run_id, None)
            self._ended.pop(run_id, None)
            self._waiting.pop(run_id, None)

    def _new_log(self, run_id: str, rows: list[tuple[int, bytes]]) -> None:
        """Start the log of a run id the store has no log for, hence no record: it is
        kept like an ended run's (the SQL stores accept such events too)."""
        self._events[run_id] = rows
        self._ended[run_id] = None
        self._trim_runs()

    # --- sessions, transcripts, runs and events ---------------------------------------

    async def create_session(
        self, session_id: str, agent_id: str, metadata: dict[str, Any] | None = None
    ) -> SessionRecord:
        if session_id in self._sessions:
            raise SessionExistsError(f"session {session_id!r} already exists")
        now = time.time()
        row = (session_id, agent_id, now, now, dump_metadata(metadata))
        self._trim_sessions(room=1)  # before adding: never the new session
        self._sessions[session_id] = row
        self._transcripts[session_id] = []
        self._session_runs[session_id] = {}
        self._idle[session_id] = None
        return session_from_row(row)

    async def get_session(self, session_id: str) -> SessionRecord | None:
        row = self._sessions.get(session_id)
        return None if row is None else session_from_row(row)

    def _session(self, session_id: str) -> _SessionRow:
        try:
            return self._sessions[session_id]
        except KeyError:
            raise SessionNotFoundError(f"no session {session_id!r}") from None

    async def update_session(self, session_id: str, metadata: dict[str, Any]) -> SessionRecord:
        old = self._session(session_id)
        row = (old[0], old[1], old[2], time.time(), dump_metadata(metadata))
        self._sessions[session_id] = row
        self._touch(session_id)
        return session_from_row(row)

    async def list_sessions(self, agent_id: str | None = None) -> list[SessionRecord]:
        return [
            session_from_row(row)
            for row in self._sessions.values()
            if agent_id is None or row[1] == agent_id
        ]

    async def delete_session(self, session_id: str) -> None:
        self._idle.pop(session_id, None)
        self._drop_session(session_id)

    async def load_transcript(self, session_id: str) -> list[Message]:
        self._session(session_id)
        return [load_message(data) for data in self._transcripts[session_id]]

    async def append_transcript(self, session_id: str, messages: Sequence[Message]) -> None:
        old = self._session(session_id)
        # Encode everything before changing anything: a message that cannot be encoded
        # leaves the transcript as it was.
        encoded = [message_json(message) for message in messages]
        self._transcripts[session_id].extend(encoded)
        self._sessions[session_id] = (old[0], old[1], old[2], time.time(), old[4])
        self._touch(session_id)

    async def truncate_transcript(self, session_id: str, length: int) -> None:
        self._session(session_id)
        del self._transcripts[session_id][length:]
        self._touch(session_id)

    async def create_run(self, run: RunRecord, events: Sequence[EventEntry] = ()) -> None:
        self._session(run.session_id)
        if run.id in self._runs:
            raise StoreError(f"run {run.id!r} already exists")
        running = run.status == "running"
        if running and run.session_id in self._running:
            raise SessionBusyError(f"session {run.session_id!r} already has a run going")
        rows = _rows(run.id, -1, events)  # before any change: all or nothing
        self._runs[run.id] = (
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
        self._events[run.id] = rows  # replaces a log written before the record, if any
        self._session_runs[run.session_id][run.id] = None
        if running:
            self._running[run.session_id] = run.id
            self._idle.pop(run.session_id, None)
            self._ended.pop(run.id, None)
        else:
            self._touch(run.session_id)
            self._ended[run.id] = None
            self._ended.move_to_end(run.id)
            self._trim_runs()

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
        row = self._runs.get(run_id)
        if row is None or not may_finish((row[3], row[6], row[8]), owner, expired_by):
            return False
        log = self._events.setdefault(run_id, [])
        log.extend(_rows(run_id, log[-1][0] if log else -1, events))
        self._runs[run_id] = (*row[:3], status, row[4], finished_at, *row[6:9], error)
        session_id = row[1]
        if self._running.get(session_id) == run_id:
            del self._running[session_id]
            self._idle[session_id] = None  # idle again, the most recently active
        else:
            self._touch(session_id)
        self._ended[run_id] = None
        self._trim_runs()
        self._trim_sessions()
        return True

    async def renew_leases(
        self, owner: str, run_ids: Sequence[str], now: float, expires_at: float
    ) -> set[str]:
        renewed = set()
        for run_id in run_ids:
            row = self._runs.get(run_id)
            if row is not None and row[6] == owner and row[3] == "running":
                self._runs[run_id] = (*row[:7], now, expires_at, row[9])
                renewed.add(run_id)
        return renewed

    async def expired_runs(self, now: float) -> list[RunRecord]:
        return [
            RunRecord(*row)
            for row in self._runs.values()
            if row[3] == "running" and (row[8] is None or row[8] < now)
        ]

    async def get_run(self, run_id: str) -> RunRecord | None:
        row = self._runs.get(run_id)
        return None if row is None else RunRecord(*row)

    async def list_runs(self, session_id: str) -> list[RunRecord]:
        runs = self._runs
        return [RunRecord(*runs[run_id]) for run_id in self._session_runs.get(session_id, ())]

    async def count_runs(self, statuses: Sequence[str]) -> dict[str, int]:
        counts = dict.fromkeys(counted_statuses(statuses), 0)
        for row in self._runs.values():
            if row[3] in counts:
                counts[row[3]] += 1
        return counts

    async def append_step(
        self,
        session_id: str,
        messages: Sequence[Message],
        run_id: str,
        entries: Sequence[EventEntry],
    ) -> None:
        old = self._session(session_id)
        row = self._runs.get(run_id)
        if row is not None and row[3] != "running":
            raise RunEndedError(f"run {run_id} has ended ({row[3]}): no more events")
        # Everything is encoded and checked before anything changes: both or neither.
        encoded = [message_json(message) for message in messages]
        log = self._events.get(run_id)
        rows = _rows(run_id, log[-1][0] if log else -1, entries)
        self._transcripts[session_id].extend(encoded)
        self._sessions[session_id] = (old[0], old[1], old[2], time.time(), old[4])
        self._touch(session_id)
        if log is not None:
            log.extend(rows)
        elif rows:
            self._new_log(run_id, rows)

    async def append_events(self, run_id: str, entries: Sequence[EventEntry]) -> None:
        row = self._runs.get(run_id)
        if row is not None and row[3] != "running":
            raise RunEndedError(f"run {run_id} has ended ({row[3]}): no more events")
        log = self._events.get(run_id)
        rows = _rows(run_id, log[-1][0] if log else -1, entries)
        if log is not None:
            log.extend(rows)
        elif rows:
            self._new_log(run_id, rows)

    async def read_events(self, run_id: str, after: int = -1) -> list[EventEntry]:
        return [
            load_event(offset, data)
            for offset, data in self._events.get(run_id, [])
            if offset > after
        ]

    async def fork_conversation(
        self,
        source_id: str,
        conversation: ConversationRecord,
        session_agent: str,
        metadata: dict[str, Any],
        runs: Sequence[tuple[str, str]],
        transcript_length: int | None = None,
    ) -> SessionRecord:
        # Everything is checked before anything changes, and nothing awaits: atomic.
        if transcript_length is not None and (
            isinstance(transcript_length, bool) or transcript_length < 0
        ):
            raise ValueError(f"transcript_length must be 0 or more, not {transcript_length!r}")
        self._session(source_id)
        transcript = self._transcripts[source_id]
        if transcript_length is not None and len(transcript) < transcript_length:
            raise StoreError(
                f"session {source_id!r} has fewer than {transcript_length} transcript messages"
            )
        copies: list[tuple[_RunRow, list[tuple[int, bytes]]]] = []
        for old, new in runs:
            row = self._runs.get(old)
            if row is None or row[1] != source_id or row[3] in ("running", "waiting"):
                raise StoreError(f"session {source_id!r} has no ended run {old!r}")
            if new in self._runs or any(copy[0][0] == new for copy in copies):
                raise StoreError(f"run {new!r} already exists")
            copies.append(((new, conversation.id, *row[2:]), list(self._events.get(old, ()))))
        if conversation.id in self._sessions or conversation.id in self._conversations:
            raise SessionExistsError(f"session {conversation.id!r} already exists")
        self._touch(source_id)  # the source is not the session evicted to make room
        session = await self.create_conversation(conversation, session_agent, metadata)
        self._transcripts[conversation.id] = transcript[:transcript_length]
        for row, log in copies:
            self._runs[row[0]] = row
            self._events[row[0]] = log
            self._session_runs[conversation.id][row[0]] = None
            self._ended[row[0]] = None
        self._trim_runs()
        return session

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
        row = self._runs.get(run_id)
        if row is None or row[3] != "running" or row[6] != owner:
            return False
        session_id = row[1]
        old = self._session(session_id)
        # Everything is encoded and checked before anything changes: all or nothing.
        encoded = [message_json(message) for message in messages]
        log = self._events.setdefault(run_id, [])
        rows = _rows(run_id, log[-1][0] if log else -1, events)
        pending = (request_id, dump_metadata(state), None if deadline is None else float(deadline))
        self._transcripts[session_id].extend(encoded)
        self._sessions[session_id] = (old[0], old[1], old[2], time.time(), old[4])
        log.extend(rows)
        self._runs[run_id] = (*row[:3], "waiting", row[4], row[5], None, None, None, row[9])
        self._waiting[run_id] = pending
        return True

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
        row = self._runs.get(run_id)
        pending = self._waiting.get(run_id)
        if row is None or row[3] != "waiting" or pending is None or pending[0] != request_id:
            return None
        log = self._events.setdefault(run_id, [])
        log.extend(_rows(run_id, log[-1][0] if log else -1, events))
        self._runs[run_id] = (
            *row[:3],
            "running",
            row[4],
            row[5],
            owner,
            now,
            lease_expires_at,
            row[9],
        )
        del self._waiting[run_id]
        return WaitingRecord(run_id, row[1], row[2], *_loaded(pending))

    async def get_waiting(self, run_id: str) -> WaitingRecord | None:
        row = self._runs.get(run_id)
        pending = self._waiting.get(run_id)
        if row is None or pending is None:
            return None
        return WaitingRecord(run_id, row[1], row[2], *_loaded(pending))

    async def overdue_requests(self, now: float, limit: int = 100) -> list[WaitingRecord]:
        check_limit(limit)
        due = sorted(
            (pending[2], run_id)
            for run_id, pending in self._waiting.items()
            if pending[2] is not None and pending[2] <= now
        )
        found = [await self.get_waiting(run_id) for _, run_id in due[:limit]]
        return [record for record in found if record is not None]

    # --- rooms ------------------------------------------------------------------------
    # Every method runs without awaiting: each is atomic against the others.

    def _room(self, room_id: str) -> _Room:
        try:
            return self._rooms[room_id]
        except KeyError:
            raise RoomNotFoundError(f"no room {room_id!r}") from None

    async def create_room(self, room: RoomRecord) -> None:
        if room.id in self._rooms:
            raise RoomExistsError(f"room {room.id!r} already exists")
        metadata = dump_metadata(room.metadata)
        self._rooms[room.id] = _Room(
            (room.id, room.name, room.created_by, room.created_at, metadata)
        )

    async def get_room(self, room_id: str) -> RoomRecord | None:
        room = self._rooms.get(room_id)
        return None if room is None else room_from_row(room.row)

    async def list_rooms(self) -> list[RoomRecord]:
        return [room_from_row(room.row) for room in self._rooms.values()]

    async def update_room(
        self, room_id: str, name: str | None = None, metadata: dict[str, Any] | None = None
    ) -> RoomRecord:
        room = self._room(room_id)
        old = room.row
        room.row = (
            old[0],
            old[1] if name is None else name,
            old[2],
            old[3],
            old[4] if metadata is None else dump_metadata(metadata),
        )
        return room_from_row(room.row)

    async def delete_room(self, room_id: str) -> None:
        self._rooms.pop(room_id, None)

    async def append_room_events(
        self,
        room_id: str,
        events: Sequence[NewRoomEvent],
        *,
        delegation: DelegationRecord | None = None,
        expect: Collection[str] | None = None,
        cursor: tuple[str, int] | None = None,
    ) -> list[RoomEvent]:
        # Everything is encoded and checked before anything changes: all or nothing.
        columns = room_event_columns(events)
        upsert = None if delegation is None else delegation_params(room_id, delegation)
        expected = check_expect(delegation, expect)
        moved = check_cursor(cursor)
        room = self._room(room_id)
        if upsert is not None and expected is not None:
            stored = room.delegations.get(upsert[0])
            status = None if stored is None else stored[4]
            if status not in expected:
                raise state_error(upsert[0], status, expected)
        ids = columns[0]
        fresh = set(ids)
        if len(fresh) < len(ids) or not fresh.isdisjoint(room.event_ids):
            raise StoreError(
                f"room {room_id!r}: an event id of the batch is already in the room or "
                "repeated in the batch; nothing was appended"
            )
        rows = room_event_rows(len(room.events) + 1, columns)
        room.events.extend(rows)
        room.event_ids.update(fresh)
        if upsert is not None:
            room.delegations[upsert[0]] = upsert
        if moved is not None:
            room.cursors[moved[0]] = moved[1]
        return [event_from_row(room_id, row) for row in rows]

    async def read_room_events(
        self,
        room_id: str,
        after: int = 0,
        limit: int | None = None,
        types: Sequence[str] | None = None,
    ) -> list[RoomEvent]:
        check_limit(limit)
        wanted = type_filter(types)
        room = self._room(room_id)
        tail = room.events[max(after, 0) :]
        if wanted is not None:
            tail = [row for row in tail if wanted.matches(row[2])]
        if limit is not None:
            tail = tail[:limit]
        return [event_from_row(room_id, row) for row in tail]

    async def room_head(self, room_id: str) -> int:
        return len(self._room(room_id).events)

    async def set_grant(self, room_id: str, grant: RoomGrant) -> None:
        row = grant_params(grant)
        self._room(room_id).grants[grant.participant] = row

    async def delete_grant(self, room_id: str, participant: str) -> None:
        room = self._rooms.get(room_id)
        if room is not None:
            room.grants.pop(participant, None)

    async def list_grants(self, room_id: str) -> list[RoomGrant]:
        room = self._rooms.get(room_id)
        if room is None:
            return []
        return [grant_from_row(room.grants[p]) for p in sorted(room.grants)]

    async def get_cursor(self, room_id: str, consumer: str) -> int | None:
        room = self._rooms.get(room_id)
        return None if room is None else room.cursors.get(consumer)

    async def set_cursor(self, room_id: str, consumer: str, position: int) -> None:
        self._room(room_id).cursors[consumer] = position

    async def get_delegation(self, room_id: str, delegation_id: str) -> DelegationRecord | None:
        room = self._rooms.get(room_id)
        row = None if room is None else room.delegations.get(delegation_id)
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
        wanted = None if statuses is None else set(check_statuses(statuses, "statuses"))
        check_limit(limit)
        key = check_key(after)
        room = self._rooms.get(room_id)
        if room is None:
            return []
        rows = sorted(
            (
                row
                for row in room.delegations.values()
                if (wanted is None or row[4] in wanted)
                and (agent is None or row[2] == agent)
                and (key is None or (row[6], row[0]) > key)
            ),
            key=lambda row: (row[6], row[0]),
        )
        return [delegation_from_row(row) for row in rows[:limit]]

    async def overdue_delegations(self, now: float, limit: int = 100) -> list[DelegationRecord]:
        check_limit(limit)
        rows = sorted(
            (
                row
                for room in self._rooms.values()
                for row in room.delegations.values()
                if row[4] in DELEGATION_OPEN and row[10] is not None and row[10] <= now
            ),
            key=lambda row: (row[10], row[1], row[0]),
        )
        return [delegation_from_row(row) for row in rows[:limit]]

    async def aclose(self) -> None:
        return None


def _loaded(pending: tuple[str, str, float | None]) -> tuple[str, dict[str, Any], float | None]:
    return pending[0], load_metadata(pending[1]), pending[2]


def _rows(run_id: str, last: int, entries: Sequence[EventEntry]) -> list[tuple[int, bytes]]:
    """`entries` as stored rows, checked to follow offset `last` and to grow."""
    rows = []
    # `check_offsets` and `entry_json` in one pass: this runs after every model call.
    for entry in entries:
        offset = entry.offset
        if offset <= last:
            raise OffsetError(f"offset {offset} does not follow {last} in run {run_id}")
        last = offset
        wire = entry.wire
        rows.append((offset, wire if wire is not None else event_json(entry.event)))
    return rows
