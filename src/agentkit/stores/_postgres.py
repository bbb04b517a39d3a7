"""The scale-out store: PostgreSQL, shared by any number of processes and hosts.

psycopg is imported only when a store first connects (extra `typed-agentkit[postgres]`).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import anyio

from agentkit.providers._base import Message
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
    check_offsets,
    dump_event,
    dump_message,
    dump_metadata,
    events_from_rows,
    messages_from_rows,
    run_from_row,
    session_from_row,
)
from agentkit.stores._migrations import MIGRATIONS, SCHEMA_VERSION, newer_database_message

if TYPE_CHECKING:
    import psycopg

__all__ = ["SCHEMA_VERSION", "PostgresStore"]

_T = TypeVar("_T")


def _quote(identifier: str) -> str:
    return '"' + identifier.replace('"', '""') + '"'


class _SQL:
    """Every statement, with table names qualified by the store's schema."""

    def __init__(self, schema: str | None) -> None:
        p = f"{_quote(schema)}." if schema else ""
        sessions, transcript = f"{p}agentkit_sessions", f"{p}agentkit_transcript"
        runs, events = f"{p}agentkit_runs", f"{p}agentkit_events"
        version = f"{p}agentkit_schema_version"
        session_cols = "id, agent_id, created_at, updated_at, metadata"
        run_cols = (
            "id, session_id, agent_id, status, created_at, finished_at, owner, heartbeat_at, "
            "lease_expires_at, error"
        )
        self.create_schema = f"CREATE SCHEMA IF NOT EXISTS {_quote(schema)}" if schema else None
        self.create_version = f"CREATE TABLE IF NOT EXISTS {version} (version integer NOT NULL)"
        self.migrations = [
            (m.version, [statement.format(p=p) for statement in m.postgres]) for m in MIGRATIONS
        ]
        self.get_version = f"SELECT max(version) FROM {version}"
        self.set_version = f"INSERT INTO {version} VALUES (%s)"
        self.insert_session = (
            f"INSERT INTO {sessions} ({session_cols}) VALUES (%s, %s, %s, %s, %s)"
        )
        self.get_session = f"SELECT {session_cols} FROM {sessions} WHERE id = %s"
        self.has_session = f"SELECT 1 FROM {sessions} WHERE id = %s"
        self.lock_session = f"SELECT 1 FROM {sessions} WHERE id = %s FOR UPDATE"
        self.update_session = (
            f"UPDATE {sessions} SET metadata = %s, updated_at = %s WHERE id = %s "
            f"RETURNING {session_cols}"
        )
        self.touch_session = f"UPDATE {sessions} SET updated_at = %s WHERE id = %s"
        self.list_sessions = f"SELECT {session_cols} FROM {sessions} ORDER BY seq"
        self.list_agent_sessions = (
            f"SELECT {session_cols} FROM {sessions} WHERE agent_id = %s ORDER BY seq"
        )
        self.delete_events_of_session = (
            f"DELETE FROM {events} WHERE run_id IN (SELECT id FROM {runs} WHERE session_id = %s)"
        )
        self.delete_session = f"DELETE FROM {sessions} WHERE id = %s"
        self.load_transcript = (
            f"SELECT data FROM {transcript} WHERE session_id = %s ORDER BY pos"
        )
        self.transcript_end = (
            f"SELECT coalesce(max(pos) + 1, 0) FROM {transcript} WHERE session_id = %s"
        )
        self.append_transcript = (
            f"INSERT INTO {transcript} (session_id, pos, data) "
            "SELECT %s, %s + n - 1, d FROM unnest(%s::text[]) WITH ORDINALITY AS u (d, n)"
        )
        self.truncate_transcript = (
            f"DELETE FROM {transcript} WHERE session_id = %s AND pos >= %s"
        )
        self.insert_run = (
            f"INSERT INTO {runs} ({run_cols}) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)"
        )
        self.running_in_session = (
            f"SELECT 1 FROM {runs} WHERE session_id = %s AND status = 'running' LIMIT 1"
        )
        self.lock_run = (
            f"SELECT status, owner, lease_expires_at FROM {runs} WHERE id = %s FOR UPDATE"
        )
        # Shared with other appends, exclusive with `lock_run`: no event lands after the end.
        self.run_status = f"SELECT status FROM {runs} WHERE id = %s FOR SHARE"
        self.finish_run = (
            f"UPDATE {runs} SET status = %s, finished_at = %s, error = %s WHERE id = %s"
        )
        self.renew_leases = (
            f"UPDATE {runs} SET heartbeat_at = %s, lease_expires_at = %s "
            "WHERE owner = %s AND status = 'running' AND id = ANY(%s) RETURNING id"
        )
        self.expired_runs = (
            f"SELECT {run_cols} FROM {runs} WHERE status = 'running' "
            "AND (lease_expires_at IS NULL OR lease_expires_at < %s) ORDER BY seq"
        )
        self.get_run = f"SELECT {run_cols} FROM {runs} WHERE id = %s"
        self.list_runs = f"SELECT {run_cols} FROM {runs} WHERE session_id = %s ORDER BY seq"
        self.events_end = f"SELECT coalesce(max(pos), -1) FROM {events} WHERE run_id = %s"
        self.append_events = (
            f"INSERT INTO {events} (run_id, pos, data) "
            "SELECT %s, p, d FROM unnest(%s::bigint[], %s::text[]) AS u (p, d)"
        )
        self.read_events = (
            f"SELECT pos, data FROM {events} WHERE run_id = %s AND pos > %s ORDER BY pos"
        )


class PostgresStore:
    """Sessions, transcripts, runs and events in PostgreSQL.

    Args:
        dsn: A libpq connection string or URL, e.g. `postgresql://user@host:5432/db`.
        schema: The schema holding the tables (created when missing); by default the first
            schema of the connection's `search_path` (usually `public`). Tables are named
            `agentkit_sessions`, `agentkit_transcript`, `agentkit_runs`, `agentkit_events`
            and `agentkit_schema_version`, and are created on first use.
        max_connections: Size of the store's own small connection pool.

    Each call runs psycopg's synchronous API in a worker thread (anyio), so the store works
    under asyncio and trio alike; at most `max_connections` calls run at once, each on a
    connection of its own, reused afterwards. Every append is one transaction; appends to
    one transcript or one run log are serialised across processes by row and advisory
    locks, so any number of processes and hosts can share the database.
    Needs the `postgres` extra (`pip install 'typed-agentkit[postgres]'`).
    """

    def __init__(self, dsn: str, *, schema: str | None = None, max_connections: int = 4):
        if max_connections < 1:
            raise ValueError("max_connections must be at least 1")
        self.dsn = dsn
        self.schema = schema
        self._sql = _SQL(schema)
        self._limiter = anyio.CapacityLimiter(max_connections)
        self._idle: list[psycopg.Connection[Any]] = []
        self._ready = False
        self._ready_lock = threading.Lock()
        self._closed = False

    def __repr__(self) -> str:
        schema = f", schema={self.schema!r}" if self.schema else ""
        return f"PostgresStore(<dsn>{schema})"

    # --- plumbing ---------------------------------------------------------------------

    def _connect(self) -> psycopg.Connection[Any]:
        """A new autocommit connection; the first one also creates the tables."""
        import psycopg  # present: `_work` checked

        conn = psycopg.connect(self.dsn, autocommit=True)
        try:
            with self._ready_lock:
                if not self._ready:
                    self._create_schema(conn)
                    self._ready = True
        except BaseException:
            conn.close()
            raise
        return conn

    def _create_schema(self, conn: psycopg.Connection[Any]) -> None:
        """Bring the layout up to `SCHEMA_VERSION`, in one transaction."""
        with conn.transaction():
            # Processes opening the same database take turns: each migration runs once.
            conn.execute("SELECT pg_advisory_xact_lock(hashtext('agentkit.schema'))")
            if self._sql.create_schema is not None:
                conn.execute(self._sql.create_schema)
            conn.execute(self._sql.create_version)
            row = conn.execute(self._sql.get_version).fetchone()
            version = (None if row is None else row[0]) or 0
            if version > SCHEMA_VERSION:
                raise StoreError(newer_database_message("PostgreSQL", version))
            for number, statements in self._sql.migrations:
                if number > version:
                    for statement in statements:
                        conn.execute(statement)
                    conn.execute(self._sql.set_version, (number,))

    async def _call(self, fn: Callable[..., _T], *args: Any) -> _T:
        """Run `fn(connection, sql, *args)` in a worker thread on a pooled connection."""
        if self._closed:
            raise StoreError(f"{self!r} is closed")
        async with self._limiter:
            slot: list[psycopg.Connection[Any] | None] = [self._idle.pop() if self._idle else None]
            try:
                return await anyio.to_thread.run_sync(self._work, slot, fn, args)
            finally:
                conn = slot[0]
                if conn is not None:
                    if self._closed or conn.closed or conn.broken:
                        conn.close()
                    else:
                        self._idle.append(conn)

    def _work(
        self, slot: list[psycopg.Connection[Any] | None], fn: Callable[..., _T], args: Any
    ) -> _T:
        try:
            import psycopg
        except ImportError:  # without the extra: say what to install, not a traceback
            raise StoreError(
                "PostgresStore needs psycopg: pip install 'typed-agentkit[postgres]'"
            ) from None
        try:
            conn = slot[0]
            if conn is None or conn.closed or conn.broken:
                conn = slot[0] = self._connect()
            return fn(conn, self._sql, *args)
        except psycopg.Error as exc:
            raise StoreError(f"PostgreSQL: {exc}") from exc

    # --- sessions ---------------------------------------------------------------------

    async def create_session(
        self, session_id: str, agent_id: str, metadata: dict[str, Any] | None = None
    ) -> SessionRecord:
        """Create a session; `SessionExistsError` when the id is taken."""
        now = time.time()
        record = SessionRecord(session_id, agent_id, now, now, dict(metadata or {}))
        await self._call(_create_session, record, dump_metadata(metadata))
        return record

    async def get_session(self, session_id: str) -> SessionRecord | None:
        """The session, or `None`."""
        row = await self._call(_fetchone, "get_session", (session_id,))
        return None if row is None else session_from_row(row)

    async def update_session(self, session_id: str, metadata: dict[str, Any]) -> SessionRecord:
        """Replace a session's metadata; `SessionNotFoundError` when missing."""
        params = (dump_metadata(metadata), time.time(), session_id)
        row = await self._call(_fetchone, "update_session", params)
        if row is None:
            raise SessionNotFoundError(f"no session {session_id!r}")
        return session_from_row(row)

    async def list_sessions(self, agent_id: str | None = None) -> list[SessionRecord]:
        """Sessions, oldest first, optionally of one agent."""
        if agent_id is None:
            rows = await self._call(_fetchall, "list_sessions", ())
        else:
            rows = await self._call(_fetchall, "list_agent_sessions", (agent_id,))
        return [session_from_row(row) for row in rows]

    async def delete_session(self, session_id: str) -> None:
        """Delete a session with its transcript, runs and events (no error when missing)."""
        await self._call(_delete_session, session_id)

    # --- transcripts ------------------------------------------------------------------

    async def load_transcript(self, session_id: str) -> list[Message]:
        """The session's transcript in order; `SessionNotFoundError` when missing."""
        rows = await self._call(_load_transcript, session_id)
        return messages_from_rows(rows)

    async def append_transcript(self, session_id: str, messages: Sequence[Message]) -> None:
        """Append messages atomically: all of them or none."""
        data = [dump_message(message) for message in messages]
        await self._call(_append_transcript, session_id, data, time.time())

    async def truncate_transcript(self, session_id: str, length: int) -> None:
        """Keep only the first `length` messages."""
        await self._call(_truncate_transcript, session_id, length)

    # --- runs -------------------------------------------------------------------------

    async def create_run(self, run: RunRecord, events: Sequence[EventEntry] = ()) -> None:
        """Record a new run with its first events in one transaction;
        `SessionBusyError` while the session has a running run (in any process)."""
        await self._call(_create_run, run, *_event_columns(run.id, events))

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
        offsets, data = _event_columns(run_id, events)
        return await self._call(
            _finish_run, run_id, status, finished_at, offsets, data, error, owner, expired_by
        )

    async def renew_leases(
        self, owner: str, run_ids: Sequence[str], now: float, expires_at: float
    ) -> set[str]:
        """Renew `owner`'s leases on those of `run_ids` that are still running."""
        if not run_ids:
            return set()
        rows = await self._call(
            _fetchall, "renew_leases", (now, expires_at, owner, list(run_ids))
        )
        return {row[0] for row in rows}

    async def expired_runs(self, now: float) -> list[RunRecord]:
        """Running runs whose lease expired before `now` (or that have none)."""
        rows = await self._call(_fetchall, "expired_runs", (now,))
        return [run_from_row(row) for row in rows]

    async def get_run(self, run_id: str) -> RunRecord | None:
        """The run, or `None`."""
        row = await self._call(_fetchone, "get_run", (run_id,))
        return None if row is None else run_from_row(row)

    async def list_runs(self, session_id: str) -> list[RunRecord]:
        """A session's runs, oldest first."""
        rows = await self._call(_fetchall, "list_runs", (session_id,))
        return [run_from_row(row) for row in rows]

    # --- events -----------------------------------------------------------------------

    async def append_events(self, run_id: str, entries: Sequence[EventEntry]) -> None:
        """Append events in one transaction; offsets must grow past the stored ones."""
        if not entries:
            return
        await self._call(_append_events, run_id, *_event_columns(run_id, entries))

    async def read_events(self, run_id: str, after: int = -1) -> list[EventEntry]:
        """A run's stored events with offset greater than `after`, in order."""
        rows = await self._call(_fetchall, "read_events", (run_id, after))
        return events_from_rows(rows)

    async def aclose(self) -> None:
        """Close the pooled connections; the store cannot be used afterwards."""
        self._closed = True
        idle, self._idle = self._idle, []
        for conn in idle:
            await anyio.to_thread.run_sync(conn.close)


# --- the synchronous work, run in a worker thread ----------------------------------------

def _fetchone(conn: psycopg.Connection[Any], sql: _SQL, name: str, params: Any) -> Any:
    return conn.execute(getattr(sql, name), params).fetchone()


def _fetchall(conn: psycopg.Connection[Any], sql: _SQL, name: str, params: Any) -> list[Any]:
    return conn.execute(getattr(sql, name), params).fetchall()


def _execute(conn: psycopg.Connection[Any], sql: _SQL, name: str, params: Any) -> None:
    conn.execute(getattr(sql, name), params)


def _create_session(
    conn: psycopg.Connection[Any], sql: _SQL, record: SessionRecord, metadata: str
) -> None:
    from psycopg import errors

    try:
        conn.execute(
            sql.insert_session,
            (record.id, record.agent_id, record.created_at, record.updated_at, metadata),
        )
    except errors.UniqueViolation:
        raise SessionExistsError(f"session {record.id!r} already exists") from None


def _delete_session(conn: psycopg.Connection[Any], sql: _SQL, session_id: str) -> None:
    with conn.transaction():
        conn.execute(sql.lock_session, (session_id,))
        conn.execute(sql.delete_events_of_session, (session_id,))
        # The transcript and the runs go with the session (ON DELETE CASCADE).
        conn.execute(sql.delete_session, (session_id,))


def _load_transcript(conn: psycopg.Connection[Any], sql: _SQL, session_id: str) -> list[Any]:
    rows = conn.execute(sql.load_transcript, (session_id,)).fetchall()
    if not rows and conn.execute(sql.has_session, (session_id,)).fetchone() is None:
        raise SessionNotFoundError(f"no session {session_id!r}")
    return rows


def _append_transcript(
    conn: psycopg.Connection[Any], sql: _SQL, session_id: str, data: list[str], now: float
) -> None:
    with conn.transaction():
        # The update locks the session row, so concurrent appends take turns.
        if conn.execute(sql.touch_session, (now, session_id)).rowcount == 0:
            raise SessionNotFoundError(f"no session {session_id!r}")
        if data:
            row = conn.execute(sql.transcript_end, (session_id,)).fetchone()
            start = 0 if row is None else row[0]
            conn.execute(sql.append_transcript, (session_id, start, data))


def _truncate_transcript(
    conn: psycopg.Connection[Any], sql: _SQL, session_id: str, length: int
) -> None:
    with conn.transaction():
        if conn.execute(sql.lock_session, (session_id,)).fetchone() is None:
            raise SessionNotFoundError(f"no session {session_id!r}")
        if length < 0:  # like `del messages[length:]`: counts from the end
            row = conn.execute(sql.transcript_end, (session_id,)).fetchone()
            length = max((0 if row is None else row[0]) + length, 0)
        conn.execute(sql.truncate_transcript, (session_id, length))


def _event_columns(run_id: str, entries: Sequence[EventEntry]) -> tuple[list[int], list[str]]:
    """Offsets and JSON of `entries`, checked to grow (their order against the stored
    events is checked in the transaction that appends them)."""
    if not entries:
        return [], []
    check_offsets(run_id, entries[0].offset - 1, entries)
    return [entry.offset for entry in entries], [dump_event(entry) for entry in entries]


def _insert_events(
    conn: psycopg.Connection[Any], sql: _SQL, run_id: str, offsets: list[int], data: list[str]
) -> None:
    # One writer per run log at a time, across processes and hosts.
    conn.execute("SELECT pg_advisory_xact_lock(hashtext('agentkit.events ' || %s))", (run_id,))
    row = conn.execute(sql.events_end, (run_id,)).fetchone()
    last = -1 if row is None else row[0]
    if offsets[0] <= last:
        raise ValueError(f"offset {offsets[0]} does not follow {last} in run {run_id}")
    conn.execute(sql.append_events, (run_id, offsets, data))


def _create_run(
    conn: psycopg.Connection[Any],
    sql: _SQL,
    run: RunRecord,
    offsets: list[int],
    data: list[str],
) -> None:
    from psycopg import errors

    with conn.transaction():
        # The session's row lock makes the check and the insert one step for every process:
        # a second start on the session waits here, then sees the first run.
        if conn.execute(sql.lock_session, (run.session_id,)).fetchone() is None:
            raise SessionNotFoundError(f"no session {run.session_id!r}")
        if run.status == "running" and conn.execute(
            sql.running_in_session, (run.session_id,)
        ).fetchone():
            raise SessionBusyError(f"session {run.session_id!r} already has a run going")
        try:
            with conn.transaction():  # a savepoint: the error below leaves the rest usable
                conn.execute(
                    sql.insert_run,
                    (
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
                    ),
                )
        except errors.UniqueViolation:
            raise StoreError(f"run {run.id!r} already exists") from None
        if offsets:
            _insert_events(conn, sql, run.id, offsets, data)


def _finish_run(
    conn: psycopg.Connection[Any],
    sql: _SQL,
    run_id: str,
    status: RunStatus,
    finished_at: float,
    offsets: list[int],
    data: list[str],
    error: str | None,
    owner: str | None,
    expired_by: float | None,
) -> bool:
    with conn.transaction():
        row = conn.execute(sql.lock_run, (run_id,)).fetchone()
        if (
            row is None
            or row[0] != "running"
            or (owner is not None and row[1] != owner)
            or (expired_by is not None and row[2] is not None and row[2] >= expired_by)
        ):
            return False
        if offsets:
            _insert_events(conn, sql, run_id, offsets, data)
        conn.execute(sql.finish_run, (status, finished_at, error, run_id))
        return True


def _append_events(
    conn: psycopg.Connection[Any], sql: _SQL, run_id: str, offsets: list[int], data: list[str]
) -> None:
    with conn.transaction():
        row = conn.execute(sql.run_status, (run_id,)).fetchone()
        if row is not None and row[0] != "running":
            raise RunEndedError(f"run {run_id} has ended ({row[0]}): no more events")
        _insert_events(conn, sql, run_id, offsets, data)
