"""The embedded default store: one SQLite file (or `:memory:`) in WAL mode."""

from __future__ import annotations

import os
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
    import sqlite3

__all__ = ["CHECKPOINT_BYTES", "SCHEMA_VERSION", "SQLiteStore"]

CHECKPOINT_BYTES = 2 * 1024 * 1024
"""Bytes of data appended between two WAL checkpoints (each run in a background thread)."""

_SESSION_COLUMNS = "id, agent_id, created_at, updated_at, metadata"
_RUN_COLUMNS = (
    "id, session_id, agent_id, status, created_at, finished_at, owner, heartbeat_at, "
    "lease_expires_at, error"
)

_T = TypeVar("_T")

# SQLite's primary result codes for "another connection holds the lock".
_SQLITE_BUSY = 5
_SQLITE_LOCKED = 6


def _is_busy(exc: BaseException) -> bool:
    import sqlite3

    code = getattr(exc, "sqlite_errorcode", None)
    return (
        isinstance(exc, sqlite3.OperationalError)
        and code is not None
        and code & 0xFF in (_SQLITE_BUSY, _SQLITE_LOCKED)
    )


class SQLiteStore:
    """Sessions, transcripts, runs and events in one SQLite database.

    Args:
        path: A file path (created with its tables on first use) or `":memory:"`.
        busy_timeout: Seconds to keep retrying while another process holds the write lock
            before raising [`StoreError`][agentkit.stores.StoreError].

    The database runs in WAL mode with `synchronous=NORMAL` and foreign keys on, so any
    number of store instances and processes can share one file: readers never wait for the
    writer, and writers take turns. Every append is one transaction. Works under asyncio
    and trio.

    Each call runs inline on the event loop's thread: a small write takes tens of
    microseconds, several times less than a hop to a worker thread. When another process
    holds the write lock, the call does not block the loop but sleeps asynchronously and
    retries, up to `busy_timeout`; a call that need not wait does not yield to the event
    loop at all. WAL checkpoints (an fsync, tens of milliseconds) run in a background
    thread every `CHECKPOINT_BYTES` appended, never on the event loop.

    Example:
        ```python
        import anyio

        from agentkit.providers import UserMessage
        from agentkit.stores import SQLiteStore


        async def main() -> None:
            store = SQLiteStore(":memory:")
            await store.create_session("s1", "demo:agent")
            await store.append_transcript("s1", [UserMessage(content="hello")])
            print(await store.load_transcript("s1"))
            await store.aclose()


        anyio.run(main)
        ```
    """

    def __init__(self, path: str | os.PathLike[str] = ":memory:", *, busy_timeout: float = 30.0):
        self.path = os.fspath(path)
        self.busy_timeout = busy_timeout
        self._conn: sqlite3.Connection | None = None
        self._lock = threading.Lock()
        self._closed = False
        self._wal = False
        self._unchecked = 0
        self._checkpointer: threading.Thread | None = None

    def __repr__(self) -> str:
        return f"SQLiteStore({self.path!r})"

    # --- plumbing ---------------------------------------------------------------------

    def _open(self) -> sqlite3.Connection:
        import sqlite3

        if self._closed:
            raise StoreError(f"{self} is closed")
        if self.path != ":memory:" and os.path.exists(self.path) and not os.path.isfile(self.path):
            # SQLite would open a device or a FIFO and write its journal beside it
            # (`/dev/null-journal`): a store is a regular file.
            raise StoreError(f"{self.path}: not a regular file, so it cannot hold a database")
        # timeout=0: a locked database raises SQLITE_BUSY at once; `_call` waits for it
        # asynchronously instead of blocking the event loop inside SQLite.
        conn = sqlite3.connect(
            self.path, isolation_level=None, check_same_thread=False, timeout=0
        )
        try:
            self._wal = conn.execute("PRAGMA journal_mode=WAL").fetchone()[0] == "wal"
            if self._wal:
                # Checkpoints (copying the log back into the file, with an fsync) take tens
                # of milliseconds; `_wrote` runs them in a thread, off the event loop.
                conn.execute("PRAGMA wal_autocheckpoint=0")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute("PRAGMA foreign_keys=ON")
            conn.execute("BEGIN IMMEDIATE")
            _migrate(conn, self.path)
            conn.execute("COMMIT")
        except BaseException:
            conn.close()
            raise
        self._conn = conn
        return conn

    async def _call(self, fn: Callable[..., _T], *args: Any) -> _T:
        """Run `fn(connection, *args)` inline; retry after an async sleep while locked."""
        deadline: float | None = None
        delay = 0.0005
        while True:
            with self._lock:
                try:
                    return fn(self._conn or self._open(), *args)
                except BaseException as exc:
                    if self._conn is not None and self._conn.in_transaction:
                        self._conn.rollback()
                    if not _is_busy(exc):
                        error = self._store_error(exc)
                        if error is None:
                            raise
                        raise error from exc
                    busy = exc
            now = time.monotonic()
            if deadline is None:
                deadline = now + self.busy_timeout
            if now >= deadline:
                raise StoreError(
                    f"{self.path}: database stayed locked for {self.busy_timeout:g}s"
                ) from busy
            await anyio.sleep(delay)
            delay = min(delay * 2, 0.05)

    def _wrote(self, nbytes: int) -> None:
        """Count bytes written; past `CHECKPOINT_BYTES`, checkpoint in a background thread."""
        self._unchecked += nbytes
        if self._unchecked < CHECKPOINT_BYTES or not self._wal:
            return
        if self._checkpointer is not None and self._checkpointer.is_alive():
            return
        self._unchecked = 0
        self._checkpointer = threading.Thread(
            target=self._checkpoint, name=f"agentkit checkpoint {self.path}", daemon=True
        )
        self._checkpointer.start()

    def _checkpoint(self) -> None:
        import sqlite3

        try:
            conn = sqlite3.connect(self.path, isolation_level=None, timeout=0)
            try:
                conn.execute("PRAGMA wal_checkpoint(PASSIVE)")
            finally:
                conn.close()
        except sqlite3.Error:  # busy, or the file is gone: a later checkpoint catches up
            pass

    def _store_error(self, exc: BaseException) -> StoreError | None:
        """A `StoreError` naming the file for an SQLite failure (a broken or foreign file)."""
        import sqlite3

        if isinstance(exc, sqlite3.Error):
            return StoreError(f"{self.path}: {exc}")
        return None

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
        row = await self._call(_fetchone, _GET_SESSION, (session_id,))
        return None if row is None else session_from_row(row)

    async def update_session(self, session_id: str, metadata: dict[str, Any]) -> SessionRecord:
        """Replace a session's metadata; `SessionNotFoundError` when missing."""
        row = await self._call(
            _fetchone, _UPDATE_SESSION, (dump_metadata(metadata), time.time(), session_id)
        )
        if row is None:
            raise SessionNotFoundError(f"no session {session_id!r}")
        return session_from_row(row)

    async def list_sessions(self, agent_id: str | None = None) -> list[SessionRecord]:
        """Sessions, oldest first, optionally of one agent."""
        if agent_id is None:
            rows = await self._call(_fetchall, _LIST_SESSIONS, ())
        else:
            rows = await self._call(_fetchall, _LIST_AGENT_SESSIONS, (agent_id,))
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
        self._wrote(sum(map(len, data)))

    async def truncate_transcript(self, session_id: str, length: int) -> None:
        """Keep only the first `length` messages."""
        await self._call(_truncate_transcript, session_id, length)

    # --- runs -------------------------------------------------------------------------

    async def create_run(self, run: RunRecord, events: Sequence[EventEntry] = ()) -> None:
        """Record a new run with its first events in one transaction;
        `SessionBusyError` while the session has a running run."""
        rows = _event_rows(run.id, events)
        await self._call(_create_run, run, rows)
        self._wrote(sum(len(row[2]) for row in rows))

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
        rows = _event_rows(run_id, events)
        done = await self._call(
            _finish_run, run_id, status, finished_at, rows, error, owner, expired_by
        )
        self._wrote(sum(len(row[2]) for row in rows))
        return done

    async def renew_leases(
        self, owner: str, run_ids: Sequence[str], now: float, expires_at: float
    ) -> set[str]:
        """Renew `owner`'s leases on those of `run_ids` that are still running."""
        if not run_ids:
            return set()
        return await self._call(_renew_leases, owner, list(run_ids), now, expires_at)

    async def expired_runs(self, now: float) -> list[RunRecord]:
        """Running runs whose lease expired before `now` (or that have none)."""
        rows = await self._call(_fetchall, _EXPIRED_RUNS, (now,))
        return [run_from_row(row) for row in rows]

    async def get_run(self, run_id: str) -> RunRecord | None:
        """The run, or `None`."""
        row = await self._call(_fetchone, _GET_RUN, (run_id,))
        return None if row is None else run_from_row(row)

    async def list_runs(self, session_id: str) -> list[RunRecord]:
        """A session's runs, oldest first."""
        rows = await self._call(_fetchall, _LIST_RUNS, (session_id,))
        return [run_from_row(row) for row in rows]

    # --- events -----------------------------------------------------------------------

    async def append_events(self, run_id: str, entries: Sequence[EventEntry]) -> None:
        """Append events in one transaction; offsets must grow past the stored ones."""
        if not entries:
            return
        rows = _event_rows(run_id, entries)
        await self._call(_append_events, run_id, rows)
        self._wrote(sum(len(row[2]) for row in rows))

    async def read_events(self, run_id: str, after: int = -1) -> list[EventEntry]:
        """A run's stored events with offset greater than `after`, in order."""
        rows = await self._call(_fetchall, _READ_EVENTS, (run_id, after))
        return events_from_rows(rows)

    async def aclose(self) -> None:
        """Close the database connection; the store cannot be used afterwards."""
        with self._lock:
            self._closed = True
            conn, self._conn = self._conn, None
        # Closing the last connection checkpoints the log: do it off the event loop.
        if self._checkpointer is not None:
            await anyio.to_thread.run_sync(self._checkpointer.join)
        if conn is not None:
            await anyio.to_thread.run_sync(conn.close)


# --- the synchronous work, each function one transaction or one statement ----------------

_GET_SESSION = f"SELECT {_SESSION_COLUMNS} FROM agentkit_sessions WHERE id = ?"
_UPDATE_SESSION = (
    "UPDATE agentkit_sessions SET metadata = ?, updated_at = ? WHERE id = ? "
    f"RETURNING {_SESSION_COLUMNS}"
)
_LIST_SESSIONS = f"SELECT {_SESSION_COLUMNS} FROM agentkit_sessions ORDER BY seq"
_LIST_AGENT_SESSIONS = (
    f"SELECT {_SESSION_COLUMNS} FROM agentkit_sessions WHERE agent_id = ? ORDER BY seq"
)
_EXPIRED_RUNS = (
    f"SELECT {_RUN_COLUMNS} FROM agentkit_runs WHERE status = 'running' "
    "AND (lease_expires_at IS NULL OR lease_expires_at < ?) ORDER BY seq"
)
_GET_RUN = f"SELECT {_RUN_COLUMNS} FROM agentkit_runs WHERE id = ?"
_LIST_RUNS = f"SELECT {_RUN_COLUMNS} FROM agentkit_runs WHERE session_id = ? ORDER BY seq"
_READ_EVENTS = "SELECT pos, data FROM agentkit_events WHERE run_id = ? AND pos > ? ORDER BY pos"


def _fetchone(conn: sqlite3.Connection, sql: str, params: tuple[Any, ...]) -> Any:
    return conn.execute(sql, params).fetchone()


def _fetchall(conn: sqlite3.Connection, sql: str, params: tuple[Any, ...]) -> list[Any]:
    return conn.execute(sql, params).fetchall()


def _execute(conn: sqlite3.Connection, sql: str, params: tuple[Any, ...]) -> None:
    conn.execute(sql, params)


def _require_session(conn: sqlite3.Connection, session_id: str) -> None:
    if conn.execute("SELECT 1 FROM agentkit_sessions WHERE id = ?", (session_id,)).fetchone():
        return
    raise SessionNotFoundError(f"no session {session_id!r}")


def _create_session(conn: sqlite3.Connection, record: SessionRecord, metadata: str) -> None:
    import sqlite3

    try:
        conn.execute(
            "INSERT INTO agentkit_sessions (id, agent_id, created_at, updated_at, metadata) "
            "VALUES (?, ?, ?, ?, ?)",
            (record.id, record.agent_id, record.created_at, record.updated_at, metadata),
        )
    except sqlite3.IntegrityError:
        raise SessionExistsError(f"session {record.id!r} already exists") from None


def _delete_session(conn: sqlite3.Connection, session_id: str) -> None:
    conn.execute("BEGIN IMMEDIATE")
    conn.execute(
        "DELETE FROM agentkit_events WHERE run_id IN "
        "(SELECT id FROM agentkit_runs WHERE session_id = ?)",
        (session_id,),
    )
    # The transcript and the runs go with the session (ON DELETE CASCADE).
    conn.execute("DELETE FROM agentkit_sessions WHERE id = ?", (session_id,))
    conn.execute("COMMIT")


def _load_transcript(conn: sqlite3.Connection, session_id: str) -> list[Any]:
    rows = conn.execute(
        "SELECT data FROM agentkit_transcript WHERE session_id = ? ORDER BY pos", (session_id,)
    ).fetchall()
    if not rows:
        _require_session(conn, session_id)
    return rows


def _append_transcript(
    conn: sqlite3.Connection, session_id: str, data: list[str], now: float
) -> None:
    conn.execute("BEGIN IMMEDIATE")
    updated = conn.execute(
        "UPDATE agentkit_sessions SET updated_at = ? WHERE id = ?", (now, session_id)
    )
    if updated.rowcount == 0:
        raise SessionNotFoundError(f"no session {session_id!r}")
    (start,) = conn.execute(
        "SELECT coalesce(max(pos) + 1, 0) FROM agentkit_transcript WHERE session_id = ?",
        (session_id,),
    ).fetchone()
    conn.executemany(
        "INSERT INTO agentkit_transcript (session_id, pos, data) VALUES (?, ?, ?)",
        [(session_id, start + i, item) for i, item in enumerate(data)],
    )
    conn.execute("COMMIT")


def _truncate_transcript(conn: sqlite3.Connection, session_id: str, length: int) -> None:
    conn.execute("BEGIN IMMEDIATE")
    _require_session(conn, session_id)
    if length < 0:  # like `del messages[length:]`: counts from the end
        (count,) = conn.execute(
            "SELECT count(*) FROM agentkit_transcript WHERE session_id = ?", (session_id,)
        ).fetchone()
        length = max(count + length, 0)
    conn.execute(
        "DELETE FROM agentkit_transcript WHERE session_id = ? AND pos >= ?", (session_id, length)
    )
    conn.execute("COMMIT")


def _migrate(conn: sqlite3.Connection, path: str) -> None:
    """Bring the layout up to `SCHEMA_VERSION` (inside the caller's write transaction)."""
    conn.execute("CREATE TABLE IF NOT EXISTS agentkit_schema_version (version INTEGER NOT NULL)")
    (version,) = conn.execute("SELECT max(version) FROM agentkit_schema_version").fetchone()
    version = version or 0
    if version > SCHEMA_VERSION:
        raise StoreError(newer_database_message(path, version))
    for migration in MIGRATIONS:
        if migration.version > version:
            for statement in migration.sqlite:
                conn.execute(statement)
            conn.execute("INSERT INTO agentkit_schema_version VALUES (?)", (migration.version,))


def _event_rows(run_id: str, entries: Sequence[EventEntry]) -> list[tuple[str, int, str]]:
    """The rows of `entries`, checked to grow (their order against the stored events is
    checked in the transaction that appends them)."""
    if not entries:
        return []
    check_offsets(run_id, entries[0].offset - 1, entries)
    return [(run_id, entry.offset, dump_event(entry)) for entry in entries]


def _insert_events(
    conn: sqlite3.Connection, run_id: str, rows: list[tuple[str, int, str]]
) -> None:
    (last,) = conn.execute(
        "SELECT coalesce(max(pos), -1) FROM agentkit_events WHERE run_id = ?", (run_id,)
    ).fetchone()
    if rows[0][1] <= last:
        raise ValueError(f"offset {rows[0][1]} does not follow {last} in run {run_id}")
    conn.executemany("INSERT INTO agentkit_events (run_id, pos, data) VALUES (?, ?, ?)", rows)


def _create_run(
    conn: sqlite3.Connection, run: RunRecord, rows: list[tuple[str, int, str]]
) -> None:
    import sqlite3

    conn.execute("BEGIN IMMEDIATE")
    # The write lock is held: no other connection can start a run on this session between
    # the check and the insert.
    busy = conn.execute(
        "SELECT 1 FROM agentkit_runs WHERE session_id = ? AND status = 'running' LIMIT 1",
        (run.session_id,),
    ).fetchone()
    if busy is not None and run.status == "running":
        raise SessionBusyError(f"session {run.session_id!r} already has a run going")
    try:
        conn.execute(
            f"INSERT INTO agentkit_runs ({_RUN_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
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
    except sqlite3.IntegrityError as exc:
        if "FOREIGN KEY" in str(exc):
            raise SessionNotFoundError(f"no session {run.session_id!r}") from None
        raise StoreError(f"run {run.id!r} already exists") from None
    if rows:
        _insert_events(conn, run.id, rows)
    conn.execute("COMMIT")


def _finish_run(
    conn: sqlite3.Connection,
    run_id: str,
    status: RunStatus,
    finished_at: float,
    rows: list[tuple[str, int, str]],
    error: str | None,
    owner: str | None,
    expired_by: float | None,
) -> bool:
    conn.execute("BEGIN IMMEDIATE")
    row = conn.execute(
        "SELECT status, owner, lease_expires_at FROM agentkit_runs WHERE id = ?", (run_id,)
    ).fetchone()
    if (
        row is None
        or row[0] != "running"
        or (owner is not None and row[1] != owner)
        or (expired_by is not None and row[2] is not None and row[2] >= expired_by)
    ):
        conn.execute("ROLLBACK")
        return False
    if rows:
        _insert_events(conn, run_id, rows)
    conn.execute(
        "UPDATE agentkit_runs SET status = ?, finished_at = ?, error = ? WHERE id = ?",
        (status, finished_at, error, run_id),
    )
    conn.execute("COMMIT")
    return True


_RENEW_CHUNK = 500  # ids per statement, well under SQLite's limit on bound parameters


def _renew_leases(
    conn: sqlite3.Connection, owner: str, run_ids: list[str], now: float, expires_at: float
) -> set[str]:
    renewed: set[str] = set()
    conn.execute("BEGIN IMMEDIATE")
    for start in range(0, len(run_ids), _RENEW_CHUNK):
        chunk = run_ids[start : start + _RENEW_CHUNK]
        marks = ", ".join("?" * len(chunk))
        cursor = conn.execute(
            "UPDATE agentkit_runs SET heartbeat_at = ?, lease_expires_at = ? "
            f"WHERE owner = ? AND status = 'running' AND id IN ({marks}) RETURNING id",
            (now, expires_at, owner, *chunk),
        )
        renewed.update(row[0] for row in cursor.fetchall())
    conn.execute("COMMIT")
    return renewed


def _append_events(
    conn: sqlite3.Connection, run_id: str, rows: list[tuple[str, int, str]]
) -> None:
    conn.execute("BEGIN IMMEDIATE")
    row = conn.execute("SELECT status FROM agentkit_runs WHERE id = ?", (run_id,)).fetchone()
    if row is not None and row[0] != "running":
        raise RunEndedError(f"run {run_id} has ended ({row[0]}): no more events")
    _insert_events(conn, run_id, rows)
    conn.execute("COMMIT")
