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
    RunRecord,
    RunStatus,
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
    load_event,
    load_message,
    load_metadata,
)

if TYPE_CHECKING:
    import sqlite3

__all__ = ["CHECKPOINT_BYTES", "SCHEMA_VERSION", "SQLiteStore"]

SCHEMA_VERSION = 1
"""The version of the table layout this code writes (kept in `agentkit_schema_version`)."""

_SCHEMA = """
CREATE TABLE IF NOT EXISTS agentkit_schema_version (version INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS agentkit_sessions (
    seq INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    agent_id TEXT NOT NULL,
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL,
    metadata TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS agentkit_sessions_agent ON agentkit_sessions (agent_id, seq);
CREATE TABLE IF NOT EXISTS agentkit_transcript (
    session_id TEXT NOT NULL REFERENCES agentkit_sessions (id) ON DELETE CASCADE,
    pos INTEGER NOT NULL,
    data TEXT NOT NULL,
    PRIMARY KEY (session_id, pos)
);
CREATE TABLE IF NOT EXISTS agentkit_runs (
    seq INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    session_id TEXT NOT NULL REFERENCES agentkit_sessions (id) ON DELETE CASCADE,
    agent_id TEXT NOT NULL,
    status TEXT NOT NULL,
    created_at REAL NOT NULL,
    finished_at REAL
);
CREATE INDEX IF NOT EXISTS agentkit_runs_session ON agentkit_runs (session_id, seq);
CREATE TABLE IF NOT EXISTS agentkit_events (
    run_id TEXT NOT NULL,
    pos INTEGER NOT NULL,
    data TEXT NOT NULL,
    PRIMARY KEY (run_id, pos)
);
"""

CHECKPOINT_BYTES = 2 * 1024 * 1024
"""Bytes of data appended between two WAL checkpoints (each run in a background thread)."""

_SESSION_COLUMNS = "id, agent_id, created_at, updated_at, metadata"
_RUN_COLUMNS = "id, session_id, agent_id, status, created_at, finished_at"

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


def _session(row: Any) -> SessionRecord:
    return SessionRecord(row[0], row[1], row[2], row[3], load_metadata(row[4]))


def _run(row: Any) -> RunRecord:
    return RunRecord(row[0], row[1], row[2], row[3], row[4], row[5])


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
            for statement in _SCHEMA.split(";"):
                if statement.strip():
                    conn.execute(statement)
            row = conn.execute("SELECT max(version) FROM agentkit_schema_version").fetchone()
            if row[0] is None:
                conn.execute(
                    "INSERT INTO agentkit_schema_version VALUES (?)", (SCHEMA_VERSION,)
                )
            elif row[0] > SCHEMA_VERSION:
                raise StoreError(
                    f"{self.path}: database schema version {row[0]} is newer than this "
                    f"agentkit supports ({SCHEMA_VERSION}); upgrade agentkit"
                )
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
        return None if row is None else _session(row)

    async def update_session(self, session_id: str, metadata: dict[str, Any]) -> SessionRecord:
        """Replace a session's metadata; `SessionNotFoundError` when missing."""
        row = await self._call(
            _fetchone, _UPDATE_SESSION, (dump_metadata(metadata), time.time(), session_id)
        )
        if row is None:
            raise SessionNotFoundError(f"no session {session_id!r}")
        return _session(row)

    async def list_sessions(self, agent_id: str | None = None) -> list[SessionRecord]:
        """Sessions, oldest first, optionally of one agent."""
        if agent_id is None:
            rows = await self._call(_fetchall, _LIST_SESSIONS, ())
        else:
            rows = await self._call(_fetchall, _LIST_AGENT_SESSIONS, (agent_id,))
        return [_session(row) for row in rows]

    async def delete_session(self, session_id: str) -> None:
        """Delete a session with its transcript, runs and events (no error when missing)."""
        await self._call(_delete_session, session_id)

    # --- transcripts ------------------------------------------------------------------

    async def load_transcript(self, session_id: str) -> list[Message]:
        """The session's transcript in order; `SessionNotFoundError` when missing."""
        rows = await self._call(_load_transcript, session_id)
        return [load_message(row[0]) for row in rows]

    async def append_transcript(self, session_id: str, messages: Sequence[Message]) -> None:
        """Append messages atomically: all of them or none."""
        data = [dump_message(message) for message in messages]
        await self._call(_append_transcript, session_id, data, time.time())
        self._wrote(sum(map(len, data)))

    async def truncate_transcript(self, session_id: str, length: int) -> None:
        """Keep only the first `length` messages."""
        await self._call(_truncate_transcript, session_id, length)

    # --- runs -------------------------------------------------------------------------

    async def create_run(self, run: RunRecord) -> None:
        """Record a new run; `SessionNotFoundError` when its session is missing."""
        await self._call(_create_run, run)

    async def finish_run(self, run_id: str, status: RunStatus, finished_at: float) -> None:
        """Record how a run ended."""
        await self._call(_execute, _FINISH_RUN, (status, finished_at, run_id))

    async def get_run(self, run_id: str) -> RunRecord | None:
        """The run, or `None`."""
        row = await self._call(_fetchone, _GET_RUN, (run_id,))
        return None if row is None else _run(row)

    async def list_runs(self, session_id: str) -> list[RunRecord]:
        """A session's runs, oldest first."""
        rows = await self._call(_fetchall, _LIST_RUNS, (session_id,))
        return [_run(row) for row in rows]

    # --- events -----------------------------------------------------------------------

    async def append_events(self, run_id: str, entries: Sequence[EventEntry]) -> None:
        """Append events in one transaction; offsets must grow past the stored ones."""
        if not entries:
            return
        first = entries[0].offset
        check_offsets(run_id, first - 1, entries)
        rows = [(run_id, entry.offset, dump_event(entry)) for entry in entries]
        await self._call(_append_events, run_id, first, rows)
        self._wrote(sum(len(row[2]) for row in rows))

    async def read_events(self, run_id: str, after: int = -1) -> list[EventEntry]:
        """A run's stored events with offset greater than `after`, in order."""
        rows = await self._call(_fetchall, _READ_EVENTS, (run_id, after))
        return [load_event(offset, data) for offset, data in rows]

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
_FINISH_RUN = "UPDATE agentkit_runs SET status = ?, finished_at = ? WHERE id = ?"
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


def _create_run(conn: sqlite3.Connection, run: RunRecord) -> None:
    import sqlite3

    try:
        conn.execute(
            f"INSERT INTO agentkit_runs ({_RUN_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?)",
            (run.id, run.session_id, run.agent_id, run.status, run.created_at, run.finished_at),
        )
    except sqlite3.IntegrityError as exc:
        if "FOREIGN KEY" in str(exc):
            raise SessionNotFoundError(f"no session {run.session_id!r}") from None
        raise StoreError(f"run {run.id!r} already exists") from None


def _append_events(
    conn: sqlite3.Connection, run_id: str, first: int, rows: list[tuple[str, int, str]]
) -> None:
    conn.execute("BEGIN IMMEDIATE")
    (last,) = conn.execute(
        "SELECT coalesce(max(pos), -1) FROM agentkit_events WHERE run_id = ?", (run_id,)
    ).fetchone()
    if first <= last:
        raise ValueError(f"offset {first} does not follow {last} in run {run_id}")
    conn.executemany("INSERT INTO agentkit_events (run_id, pos, data) VALUES (?, ?, ?)", rows)
    conn.execute("COMMIT")
