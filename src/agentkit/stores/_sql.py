"""What the SQL stores share: the whole `Store` interface, over one dialect's operations.

`SQLStore` turns records into parameters and rows back into records, once for both
backends. A backend brings three things:

- `_ops`, its dialect: one synchronous method per operation, each taking a connection
  first and doing one transaction (or one statement);
- `_call(op, *args)`, which runs `op(connection, *args)` the backend's way (inline with a
  retry while SQLite is locked; in a worker thread on a pooled PostgreSQL connection);
- optionally `_wrote(nbytes)`, told how much each write added (SQLite checkpoints by it).

Events travel to the dialects as two lists, their offsets and their wire JSON, checked to
grow before any connection is touched.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any, Protocol, TypeVar

from agentkit.messages import Message
from agentkit.stores._base import (
    EventEntry,
    RunRecord,
    RunStatus,
    SessionNotFoundError,
    SessionRecord,
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

__all__ = [
    "RUN_COLUMNS",
    "SESSION_COLUMNS",
    "Dialect",
    "SQLStore",
    "event_columns",
    "may_finish",
    "run_params",
]

_T = TypeVar("_T")

SESSION_COLUMNS = "id, agent_id, created_at, updated_at, metadata"
RUN_COLUMNS = (
    "id, session_id, agent_id, status, created_at, finished_at, owner, heartbeat_at, "
    "lease_expires_at, error"
)


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


class SQLStore:
    """The `Store` interface over a dialect (see the module's documentation)."""

    _ops: Dialect

    async def _call(self, fn: Callable[..., _T], *args: Any) -> _T:
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
