"""A store that keeps everything in process memory (tests, short-lived scripts).

It keeps what the SQL stores keep: events and messages in their JSON wire form, records as
plain tuples. So what you read back is always a copy (never an alias of a live event a
caller might still change), every backend returns the same thing for the same input, and a
long history costs the garbage collector nothing: strings and tuples of strings and
numbers are not objects it has to walk, where a pydantic event is several.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from agentkit.errors import OffsetError
from agentkit.messages import Message
from agentkit.stores._base import (
    EventEntry,
    RunEndedError,
    RunRecord,
    RunStatus,
    SessionBusyError,
    SessionExistsError,
    SessionNotFoundError,
    SessionRecord,
    StoreError,
)
from agentkit.stores._codec import (
    dump_metadata,
    event_json,
    load_event,
    load_message,
    message_json,
    session_from_row,
)
from agentkit.stores._sql import may_finish

__all__ = ["MemoryStore"]

# Rows, as the SQL stores have them:
#   session: (id, agent_id, created_at, updated_at, metadata JSON)
#   run:     the fields of a `RunRecord`, in order
#   event:   (offset, event JSON)
# JSON is kept as UTF-8 bytes, as pydantic writes it.
_SessionRow = tuple[str, str, float, float, str]
_RunRow = tuple[Any, ...]


class MemoryStore:
    """Everything in dicts of rows; nothing survives the process."""

    def __init__(self) -> None:
        self._sessions: dict[str, _SessionRow] = {}
        self._transcripts: dict[str, list[bytes]] = {}
        self._runs: dict[str, _RunRow] = {}
        self._running: dict[str, str] = {}  # session id -> its running run's id
        self._events: dict[str, list[tuple[int, bytes]]] = {}

    async def create_session(
        self, session_id: str, agent_id: str, metadata: dict[str, Any] | None = None
    ) -> SessionRecord:
        if session_id in self._sessions:
            raise SessionExistsError(f"session {session_id!r} already exists")
        now = time.time()
        row = (session_id, agent_id, now, now, dump_metadata(metadata))
        self._sessions[session_id] = row
        self._transcripts[session_id] = []
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
        return session_from_row(row)

    async def list_sessions(self, agent_id: str | None = None) -> list[SessionRecord]:
        return [
            session_from_row(row)
            for row in self._sessions.values()
            if agent_id is None or row[1] == agent_id
        ]

    async def delete_session(self, session_id: str) -> None:
        self._sessions.pop(session_id, None)
        self._transcripts.pop(session_id, None)
        for run_id in [row[0] for row in self._runs.values() if row[1] == session_id]:
            del self._runs[run_id]
            self._events.pop(run_id, None)
        self._running.pop(session_id, None)

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

    async def truncate_transcript(self, session_id: str, length: int) -> None:
        self._session(session_id)
        del self._transcripts[session_id][length:]

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
        self._events[run.id] = rows
        if running:
            self._running[run.session_id] = run.id

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
        if self._running.get(row[1]) == run_id:
            del self._running[row[1]]
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
        return [RunRecord(*row) for row in self._runs.values() if row[1] == session_id]

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
        log = self._events.setdefault(run_id, [])
        rows = _rows(run_id, log[-1][0] if log else -1, entries)
        self._transcripts[session_id].extend(encoded)
        self._sessions[session_id] = (old[0], old[1], old[2], time.time(), old[4])
        log.extend(rows)

    async def append_events(self, run_id: str, entries: Sequence[EventEntry]) -> None:
        row = self._runs.get(run_id)
        if row is not None and row[3] != "running":
            raise RunEndedError(f"run {run_id} has ended ({row[3]}): no more events")
        log = self._events.setdefault(run_id, [])
        log.extend(_rows(run_id, log[-1][0] if log else -1, entries))

    async def read_events(self, run_id: str, after: int = -1) -> list[EventEntry]:
        return [
            load_event(offset, data)
            for offset, data in self._events.get(run_id, [])
            if offset > after
        ]

    async def aclose(self) -> None:
        return None


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
