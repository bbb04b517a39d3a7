"""The embedded default store: one SQLite file (or `:memory:`) in WAL mode."""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import anyio

from agentkit.errors import OffsetError, StoreUnavailableError
from agentkit.stores._base import (
    PageKey,
    RecordExistsError,
    RoomExistsError,
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
)
from agentkit.stores._migrations import MIGRATIONS, SCHEMA_VERSION, newer_database_message
from agentkit.stores._queue_sql import SQLiteQueue
from agentkit.stores._rooms import TypeFilter, state_error
from agentkit.stores._sql import (
    AGENT_COLUMNS,
    CONVERSATION_COLUMNS,
    DELEGATION_COLUMNS,
    GRANT_COLUMNS,
    MEMBER_COLUMNS,
    ROOM_COLUMNS,
    ROOM_EVENT_COLUMNS,
    RUN_COLUMNS,
    SESSION_COLUMNS,
    WAITING_COLUMNS,
    RoomEventColumns,
    SQLStore,
    count_runs_sql,
    delegation_upsert,
    delegations_where,
    may_finish,
    room_event_rows,
    run_params,
)

if TYPE_CHECKING:
    import sqlite3

__all__ = ["CHECKPOINT_BYTES", "SCHEMA_VERSION", "SQLiteStore"]

CHECKPOINT_BYTES = 2 * 1024 * 1024
"""Bytes of data appended between two WAL checkpoints (each run in a background thread)."""

_T = TypeVar("_T")

# SQLite's primary result codes for "another connection holds the lock".
_SQLITE_BUSY = 5
_SQLITE_LOCKED = 6

# SQLite's primary result codes for "the storage fails now": out of memory (7), a read-only
# file (8), an I/O error (10), a full disk (13), a file it cannot open (14). Retrying later
# may succeed: they become `StoreUnavailableError`.
_SQLITE_UNAVAILABLE = frozenset((7, 8, 10, 13, 14))


def _is_busy(exc: BaseException) -> bool:
    import sqlite3

    code = getattr(exc, "sqlite_errorcode", None)
    return (
        isinstance(exc, sqlite3.OperationalError)
        and code is not None
        and code & 0xFF in (_SQLITE_BUSY, _SQLITE_LOCKED)
    )


_RENEW_CHUNK = 500  # ids per statement, well under SQLite's limit on bound parameters


class _SQLite:
    """The operations in SQLite's dialect; each is one statement or one transaction."""

    def create_session(
        self, conn: sqlite3.Connection, record: SessionRecord, metadata: str
    ) -> None:
        import sqlite3

        try:
            conn.execute(
                f"INSERT INTO agentkit_sessions ({SESSION_COLUMNS}) VALUES (?, ?, ?, ?, ?)",
                (record.id, record.agent_id, record.created_at, record.updated_at, metadata),
            )
        except sqlite3.IntegrityError:
            raise SessionExistsError(f"session {record.id!r} already exists") from None

    def get_session(self, conn: sqlite3.Connection, session_id: str) -> Any:
        return conn.execute(
            f"SELECT {SESSION_COLUMNS} FROM agentkit_sessions WHERE id = ?", (session_id,)
        ).fetchone()

    def update_session(
        self, conn: sqlite3.Connection, session_id: str, metadata: str, now: float
    ) -> Any:
        return conn.execute(
            "UPDATE agentkit_sessions SET metadata = ?, updated_at = ? WHERE id = ? "
            f"RETURNING {SESSION_COLUMNS}",
            (metadata, now, session_id),
        ).fetchone()

    def list_sessions(self, conn: sqlite3.Connection, agent_id: str | None) -> list[Any]:
        if agent_id is None:
            return conn.execute(
                f"SELECT {SESSION_COLUMNS} FROM agentkit_sessions ORDER BY seq"
            ).fetchall()
        return conn.execute(
            f"SELECT {SESSION_COLUMNS} FROM agentkit_sessions WHERE agent_id = ? ORDER BY seq",
            (agent_id,),
        ).fetchall()

    def delete_session(self, conn: sqlite3.Connection, session_id: str) -> None:
        conn.execute("BEGIN IMMEDIATE")
        conn.execute(
            "DELETE FROM agentkit_events WHERE run_id IN "
            "(SELECT id FROM agentkit_runs WHERE session_id = ?)",
            (session_id,),
        )
        # The transcript and the runs go with the session (ON DELETE CASCADE).
        conn.execute("DELETE FROM agentkit_sessions WHERE id = ?", (session_id,))
        conn.execute("COMMIT")

    def load_transcript(self, conn: sqlite3.Connection, session_id: str) -> list[Any]:
        rows = conn.execute(
            "SELECT data FROM agentkit_transcript WHERE session_id = ? ORDER BY pos",
            (session_id,),
        ).fetchall()
        if not rows:
            _require_session(conn, session_id)
        return rows

    def append_transcript(
        self, conn: sqlite3.Connection, session_id: str, data: list[str], now: float
    ) -> None:
        conn.execute("BEGIN IMMEDIATE")
        _insert_transcript(conn, session_id, data, now)
        conn.execute("COMMIT")

    def truncate_transcript(self, conn: sqlite3.Connection, session_id: str, length: int) -> None:
        conn.execute("BEGIN IMMEDIATE")
        _require_session(conn, session_id)
        if length < 0:  # like `del messages[length:]`: counts from the end
            (count,) = conn.execute(
                "SELECT count(*) FROM agentkit_transcript WHERE session_id = ?", (session_id,)
            ).fetchone()
            length = max(count + length, 0)
        conn.execute(
            "DELETE FROM agentkit_transcript WHERE session_id = ? AND pos >= ?",
            (session_id, length),
        )
        conn.execute("COMMIT")

    def create_run(
        self, conn: sqlite3.Connection, run: RunRecord, offsets: list[int], data: list[str]
    ) -> None:
        import sqlite3

        conn.execute("BEGIN IMMEDIATE")
        # The write lock is held: no other connection can start a run on this session
        # between the check and the insert.
        busy = conn.execute(
            "SELECT 1 FROM agentkit_runs WHERE session_id = ? "
            "AND status IN ('running', 'waiting') LIMIT 1",
            (run.session_id,),
        ).fetchone()
        if busy is not None and run.status == "running":
            raise SessionBusyError(f"session {run.session_id!r} already has a run going")
        try:
            conn.execute(
                f"INSERT INTO agentkit_runs ({RUN_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                run_params(run),
            )
        except sqlite3.IntegrityError as exc:
            if "FOREIGN KEY" in str(exc):
                raise SessionNotFoundError(f"no session {run.session_id!r}") from None
            raise StoreError(f"run {run.id!r} already exists") from None
        _insert_events(conn, run.id, offsets, data)
        conn.execute("COMMIT")

    def finish_run(
        self,
        conn: sqlite3.Connection,
        run_id: str,
        status: RunStatus,
        finished_at: float,
        offsets: list[int],
        data: list[str],
        error: str | None,
        owner: str | None,
        expired_by: float | None,
    ) -> bool:
        conn.execute("BEGIN IMMEDIATE")
        row = conn.execute(
            "SELECT status, owner, lease_expires_at FROM agentkit_runs WHERE id = ?", (run_id,)
        ).fetchone()
        if row is None or not may_finish(row, owner, expired_by):
            conn.execute("ROLLBACK")
            return False
        _insert_events(conn, run_id, offsets, data)
        conn.execute(
            "UPDATE agentkit_runs SET status = ?, finished_at = ?, error = ? WHERE id = ?",
            (status, finished_at, error, run_id),
        )
        conn.execute("COMMIT")
        return True

    def renew_leases(
        self,
        conn: sqlite3.Connection,
        owner: str,
        run_ids: list[str],
        now: float,
        expires_at: float,
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

    def expired_runs(self, conn: sqlite3.Connection, now: float) -> list[Any]:
        return conn.execute(
            f"SELECT {RUN_COLUMNS} FROM agentkit_runs WHERE status = 'running' "
            "AND (lease_expires_at IS NULL OR lease_expires_at < ?) ORDER BY seq",
            (now,),
        ).fetchall()

    def get_run(self, conn: sqlite3.Connection, run_id: str) -> Any:
        return conn.execute(
            f"SELECT {RUN_COLUMNS} FROM agentkit_runs WHERE id = ?", (run_id,)
        ).fetchone()

    def list_runs(self, conn: sqlite3.Connection, session_id: str) -> list[Any]:
        return conn.execute(
            f"SELECT {RUN_COLUMNS} FROM agentkit_runs WHERE session_id = ? ORDER BY seq",
            (session_id,),
        ).fetchall()

    def append_events(
        self, conn: sqlite3.Connection, run_id: str, offsets: list[int], data: list[str]
    ) -> None:
        conn.execute("BEGIN IMMEDIATE")
        _require_running(conn, run_id)
        _insert_events(conn, run_id, offsets, data)
        conn.execute("COMMIT")

    def append_step(
        self,
        conn: sqlite3.Connection,
        session_id: str,
        messages: list[str],
        now: float,
        run_id: str,
        offsets: list[int],
        data: list[str],
    ) -> None:
        conn.execute("BEGIN IMMEDIATE")
        _require_running(conn, run_id)
        _insert_transcript(conn, session_id, messages, now)
        _insert_events(conn, run_id, offsets, data)
        conn.execute("COMMIT")

    def read_events(self, conn: sqlite3.Connection, run_id: str, after: int) -> list[Any]:
        return conn.execute(
            "SELECT pos, data FROM agentkit_events WHERE run_id = ? AND pos > ? ORDER BY pos",
            (run_id, after),
        ).fetchall()

    # --- waiting runs -----------------------------------------------------------------

    def suspend_run(
        self,
        conn: sqlite3.Connection,
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
        conn.execute("BEGIN IMMEDIATE")
        row = conn.execute(
            "SELECT status, owner, session_id FROM agentkit_runs WHERE id = ?", (run_id,)
        ).fetchone()
        if row is None or row[0] != "running" or row[1] != owner:
            conn.execute("ROLLBACK")
            return False
        _insert_transcript(conn, row[2], messages, now)
        _insert_events(conn, run_id, offsets, data)
        conn.execute(
            "UPDATE agentkit_runs SET status = 'waiting', owner = NULL, heartbeat_at = NULL, "
            "lease_expires_at = NULL, request_id = ?, pending = ?, deadline = ? WHERE id = ?",
            (request_id, state, deadline, run_id),
        )
        conn.execute("COMMIT")
        return True

    def resume_run(
        self,
        conn: sqlite3.Connection,
        run_id: str,
        request_id: str,
        owner: str,
        now: float,
        lease_expires_at: float,
        offsets: list[int],
        data: list[str],
    ) -> Any:
        conn.execute("BEGIN IMMEDIATE")
        row = conn.execute(
            f"SELECT {WAITING_COLUMNS} FROM agentkit_runs "
            "WHERE id = ? AND status = 'waiting' AND request_id = ?",
            (run_id, request_id),
        ).fetchone()
        if row is None:
            conn.execute("ROLLBACK")
            return None
        _insert_events(conn, run_id, offsets, data)
        conn.execute(
            "UPDATE agentkit_runs SET status = 'running', owner = ?, heartbeat_at = ?, "
            "lease_expires_at = ?, pending = NULL, deadline = NULL WHERE id = ?",
            (owner, now, lease_expires_at, run_id),
        )
        conn.execute("COMMIT")
        return row

    def get_waiting(self, conn: sqlite3.Connection, run_id: str) -> Any:
        return conn.execute(
            f"SELECT {WAITING_COLUMNS} FROM agentkit_runs WHERE id = ? AND status = 'waiting'",
            (run_id,),
        ).fetchone()

    def overdue_requests(self, conn: sqlite3.Connection, now: float, limit: int) -> list[Any]:
        # The terms of the `agentkit_runs_waiting` index's WHERE, so that it is used.
        return conn.execute(
            f"SELECT {WAITING_COLUMNS} FROM agentkit_runs WHERE status = 'waiting' "
            "AND deadline IS NOT NULL AND deadline <= ? ORDER BY deadline, id LIMIT ?",
            (now, limit),
        ).fetchall()

    # --- rooms ------------------------------------------------------------------------

    def create_room(self, conn: sqlite3.Connection, room: RoomRecord, metadata: str) -> None:
        import sqlite3

        try:
            conn.execute(
                f"INSERT INTO agentkit_rooms ({ROOM_COLUMNS}) VALUES (?, ?, ?, ?, ?)",
                (room.id, room.name, room.created_by, room.created_at, metadata),
            )
        except sqlite3.IntegrityError:
            raise RoomExistsError(f"room {room.id!r} already exists") from None

    def get_room(self, conn: sqlite3.Connection, room_id: str) -> Any:
        return conn.execute(
            f"SELECT {ROOM_COLUMNS} FROM agentkit_rooms WHERE id = ?", (room_id,)
        ).fetchone()

    def list_rooms(self, conn: sqlite3.Connection) -> list[Any]:
        return conn.execute(f"SELECT {ROOM_COLUMNS} FROM agentkit_rooms ORDER BY seq").fetchall()

    def update_room(
        self, conn: sqlite3.Connection, room_id: str, name: str | None, metadata: str | None
    ) -> Any:
        rows = conn.execute(
            "UPDATE agentkit_rooms SET name = coalesce(?, name), "
            f"metadata = coalesce(?, metadata) WHERE id = ? RETURNING {ROOM_COLUMNS}",
            (name, metadata, room_id),
        ).fetchall()
        return rows[0] if rows else None

    def delete_room(self, conn: sqlite3.Connection, room_id: str) -> None:
        conn.execute("BEGIN IMMEDIATE")
        for table in _ROOM_TABLES:
            conn.execute(f"DELETE FROM {table} WHERE room_id = ?", (room_id,))
        conn.execute("DELETE FROM agentkit_rooms WHERE id = ?", (room_id,))
        conn.execute("COMMIT")

    def append_room_events(
        self,
        conn: sqlite3.Connection,
        room_id: str,
        columns: RoomEventColumns,
        delegation: tuple[Any, ...] | None,
        expect: list[str] | None,
        cursor: tuple[str, int] | None,
    ) -> int:
        import sqlite3

        count = len(columns[0])
        # The write lock serialises appenders, in this process and in others: the head
        # read and bumped here is the room's last position until COMMIT, and a failure
        # rolls the bump back with the rows, so no position is ever skipped.
        conn.execute("BEGIN IMMEDIATE")
        rows = conn.execute(
            "UPDATE agentkit_rooms SET head = head + ? WHERE id = ? RETURNING head",
            (count, room_id),
        ).fetchall()
        if not rows:
            raise RoomNotFoundError(f"no room {room_id!r}")
        head: int = rows[0][0]
        if delegation is not None and expect is not None:
            # Under the write lock: no other writer moves the delegation before COMMIT.
            found = conn.execute(
                "SELECT status FROM agentkit_delegations WHERE room_id = ? AND id = ?",
                (room_id, delegation[0]),
            ).fetchone()
            status = None if found is None else found[0]
            if status not in expect:
                raise state_error(delegation[0], status, expect)
        try:
            conn.executemany(
                f"INSERT INTO agentkit_room_events (room_id, {ROOM_EVENT_COLUMNS}) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [(room_id, *row) for row in room_event_rows(head - count + 1, columns)],
            )
        except sqlite3.IntegrityError:
            raise StoreError(
                f"room {room_id!r}: an event id of the batch is already in the room or "
                "repeated in the batch; nothing was appended"
            ) from None
        if delegation is not None:
            conn.execute(_UPSERT_DELEGATION, delegation)
        if cursor is not None:
            self.set_cursor(conn, room_id, *cursor)
        conn.execute("COMMIT")
        return head

    def read_room_events(
        self,
        conn: sqlite3.Connection,
        room_id: str,
        after: int,
        limit: int | None,
        types: TypeFilter | None,
    ) -> list[Any] | None:
        where, params = "", list[str]()
        if types is not None:
            clauses = []
            if types.exact:
                clauses.append(f"type IN ({', '.join('?' * len(types.exact))})")
                params.extend(types.exact)
            for prefix in types.prefixes:
                # With the BINARY collation, the strings starting with `x.` are exactly
                # those in [`x.`, `x/`): exact (no LIKE, so no wildcard characters and no
                # case folding) and a range of the (room_id, type, pos) index.
                clauses.append("(type >= ? AND type < ?)")
                params.extend((prefix, prefix[:-1] + "/"))
            where = f" AND ({' OR '.join(clauses)})"
        rows = conn.execute(
            f"SELECT {ROOM_EVENT_COLUMNS} FROM agentkit_room_events "
            f"WHERE room_id = ? AND pos > ?{where} ORDER BY pos LIMIT ?",
            (room_id, after, *params, -1 if limit is None else limit),
        ).fetchall()
        if not rows and self.room_head(conn, room_id) is None:
            return None
        return rows

    def room_head(self, conn: sqlite3.Connection, room_id: str) -> int | None:
        row = conn.execute("SELECT head FROM agentkit_rooms WHERE id = ?", (room_id,)).fetchone()
        return None if row is None else int(row[0])

    def set_grant(
        self, conn: sqlite3.Connection, room_id: str, participant: str, read: str, publish: str
    ) -> None:
        import sqlite3

        try:
            conn.execute(
                f"INSERT INTO agentkit_room_grants (room_id, {GRANT_COLUMNS}) "
                "VALUES (?, ?, ?, ?) ON CONFLICT (room_id, participant) DO UPDATE SET "
                "read_types = excluded.read_types, publish_types = excluded.publish_types",
                (room_id, participant, read, publish),
            )
        except sqlite3.IntegrityError:  # the foreign key: no such room
            raise RoomNotFoundError(f"no room {room_id!r}") from None

    def delete_grant(self, conn: sqlite3.Connection, room_id: str, participant: str) -> None:
        conn.execute(
            "DELETE FROM agentkit_room_grants WHERE room_id = ? AND participant = ?",
            (room_id, participant),
        )

    def list_grants(self, conn: sqlite3.Connection, room_id: str) -> list[Any]:
        return conn.execute(
            f"SELECT {GRANT_COLUMNS} FROM agentkit_room_grants WHERE room_id = ? "
            "ORDER BY participant",
            (room_id,),
        ).fetchall()

    def get_cursor(self, conn: sqlite3.Connection, room_id: str, consumer: str) -> int | None:
        row = conn.execute(
            "SELECT pos FROM agentkit_room_cursors WHERE room_id = ? AND consumer = ?",
            (room_id, consumer),
        ).fetchone()
        return None if row is None else int(row[0])

    def set_cursor(
        self, conn: sqlite3.Connection, room_id: str, consumer: str, position: int
    ) -> None:
        import sqlite3

        try:
            conn.execute(
                "INSERT INTO agentkit_room_cursors (room_id, consumer, pos) VALUES (?, ?, ?) "
                "ON CONFLICT (room_id, consumer) DO UPDATE SET pos = excluded.pos",
                (room_id, consumer, position),
            )
        except sqlite3.IntegrityError:  # the foreign key: no such room
            raise RoomNotFoundError(f"no room {room_id!r}") from None

    def get_delegation(self, conn: sqlite3.Connection, room_id: str, delegation_id: str) -> Any:
        return conn.execute(
            f"SELECT {DELEGATION_COLUMNS} FROM agentkit_delegations WHERE room_id = ? AND id = ?",
            (room_id, delegation_id),
        ).fetchone()

    def list_delegations(
        self,
        conn: sqlite3.Connection,
        room_id: str,
        statuses: list[str] | None,
        agent: str | None,
        after: PageKey | None,
        limit: int | None,
    ) -> list[Any]:
        where, params = delegations_where(room_id, statuses, agent, after, limit, mark="?")
        return conn.execute(
            f"SELECT {DELEGATION_COLUMNS} FROM agentkit_delegations WHERE {where}", params
        ).fetchall()

    def overdue_delegations(self, conn: sqlite3.Connection, now: float, limit: int) -> list[Any]:
        # The terms of the overdue index's WHERE, as written there: SQLite uses it.
        return conn.execute(
            f"SELECT {DELEGATION_COLUMNS} FROM agentkit_delegations "
            "WHERE status IN ('pending', 'running') AND deadline IS NOT NULL AND deadline <= ? "
            "ORDER BY deadline, room_id, id LIMIT ?",
            (now, limit),
        ).fetchall()

    # --- records ----------------------------------------------------------------------

    def create_member(self, conn: sqlite3.Connection, params: tuple[Any, ...]) -> None:
        _insert_record(conn, "agentkit_members", MEMBER_COLUMNS, params, "member")

    def get_member(self, conn: sqlite3.Connection, member_id: str) -> Any:
        return conn.execute(
            f"SELECT {MEMBER_COLUMNS} FROM agentkit_members WHERE id = ?", (member_id,)
        ).fetchone()

    def find_member(self, conn: sqlite3.Connection, name: str) -> Any:
        return conn.execute(
            f"SELECT {MEMBER_COLUMNS} FROM agentkit_members WHERE name = ? AND removed_at IS NULL",
            (name,),
        ).fetchone()

    def member_by_token(self, conn: sqlite3.Connection, token_hash: str) -> Any:
        return conn.execute(
            f"SELECT {MEMBER_COLUMNS} FROM agentkit_members "
            "WHERE token_hash = ? AND removed_at IS NULL",
            (token_hash,),
        ).fetchone()

    def update_member(
        self,
        conn: sqlite3.Connection,
        member_id: str,
        role: str | None,
        token_hash: str | None,
    ) -> Any:
        import sqlite3

        try:
            return conn.execute(
                "UPDATE agentkit_members SET role = coalesce(?, role), "
                "token_hash = coalesce(?, token_hash) WHERE id = ? AND removed_at IS NULL "
                f"RETURNING {MEMBER_COLUMNS}",
                (role, token_hash, member_id),
            ).fetchone()
        except sqlite3.IntegrityError:
            raise RecordExistsError("another member has this token") from None

    def remove_member(self, conn: sqlite3.Connection, member_id: str, removed_at: float) -> bool:
        cursor = conn.execute(
            "UPDATE agentkit_members SET removed_at = ? WHERE id = ? AND removed_at IS NULL",
            (removed_at, member_id),
        )
        return cursor.rowcount > 0

    def list_members(
        self, conn: sqlite3.Connection, after: PageKey | None, limit: int
    ) -> list[Any]:
        return _page(conn, MEMBER_COLUMNS, "agentkit_members", "removed_at IS NULL", after, limit)

    def create_agent(self, conn: sqlite3.Connection, params: tuple[Any, ...]) -> None:
        _insert_record(conn, "agentkit_agents", AGENT_COLUMNS, params, "agent")

    def get_agent(self, conn: sqlite3.Connection, agent_id: str) -> Any:
        return conn.execute(
            f"SELECT {AGENT_COLUMNS} FROM agentkit_agents WHERE id = ?", (agent_id,)
        ).fetchone()

    def find_agent(self, conn: sqlite3.Connection, name: str) -> Any:
        return conn.execute(
            f"SELECT {AGENT_COLUMNS} FROM agentkit_agents WHERE name = ? AND deleted_at IS NULL",
            (name,),
        ).fetchone()

    def replace_agent(
        self, conn: sqlite3.Connection, agent_id: str, definition: str, updated_at: float
    ) -> Any:
        return conn.execute(
            "UPDATE agentkit_agents SET definition = ?, version = version + 1, updated_at = ? "
            f"WHERE id = ? AND deleted_at IS NULL RETURNING {AGENT_COLUMNS}",
            (definition, updated_at, agent_id),
        ).fetchone()

    def delete_agent(self, conn: sqlite3.Connection, agent_id: str, deleted_at: float) -> bool:
        cursor = conn.execute(
            "UPDATE agentkit_agents SET deleted_at = ? WHERE id = ? AND deleted_at IS NULL",
            (deleted_at, agent_id),
        )
        return cursor.rowcount > 0

    def list_agents(self, conn: sqlite3.Connection, after: PageKey | None, limit: int) -> list[Any]:
        return _page(conn, AGENT_COLUMNS, "agentkit_agents", "deleted_at IS NULL", after, limit)

    def create_conversation(
        self,
        conn: sqlite3.Connection,
        session: SessionRecord,
        metadata: str,
        params: tuple[Any, ...],
        *,
        commit: bool = True,
    ) -> None:
        import sqlite3

        conn.execute("BEGIN IMMEDIATE")
        self.create_session(conn, session, metadata)
        try:
            conn.execute(
                f"INSERT INTO agentkit_conversations ({CONVERSATION_COLUMNS}) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                params,
            )
        except sqlite3.IntegrityError:  # only a conversation left without its session
            raise SessionExistsError(f"session {session.id!r} already exists") from None
        if commit:  # else the caller goes on in the same transaction
            conn.execute("COMMIT")

    def fork_conversation(
        self,
        conn: sqlite3.Connection,
        session: SessionRecord,
        metadata: str,
        params: tuple[Any, ...],
        source_id: str,
        runs: list[tuple[str, str]],
        transcript_length: int | None,
    ) -> None:
        import sqlite3

        # One transaction under the write lock: the copy is whole or absent, and the
        # source cannot change while it is read. Rows are copied inside the database.
        self.create_conversation(conn, session, metadata, params, commit=False)
        _require_session(conn, source_id)
        copied = conn.execute(
            "INSERT INTO agentkit_transcript (session_id, pos, data) "
            "SELECT ?, pos, data FROM agentkit_transcript WHERE session_id = ? "
            "AND pos < coalesce(?, pos + 1)",
            (session.id, source_id, transcript_length),
        ).rowcount
        if transcript_length is not None and copied != transcript_length:
            raise StoreError(
                f"session {source_id!r} has fewer than {transcript_length} transcript messages"
            )
        if runs:
            # The pairs go to a temporary table of this connection (emptied before and after
            # each fork), so that the runs and their events are one statement each.
            conn.execute(
                "CREATE TEMP TABLE IF NOT EXISTS agentkit_fork_pairs "
                "(n INTEGER PRIMARY KEY, old TEXT NOT NULL, new TEXT NOT NULL) "
            )
            conn.execute("DELETE FROM temp.agentkit_fork_pairs")
            conn.executemany(
                "INSERT INTO temp.agentkit_fork_pairs (n, old, new) VALUES (?, ?, ?)",
                [(n, old, new) for n, (old, new) in enumerate(runs)],
            )
            try:
                found = conn.execute(
                    f"INSERT INTO agentkit_runs ({RUN_COLUMNS}) "
                    "SELECT m.new, ?, r.agent_id, r.status, r.created_at, r.finished_at, "
                    "r.owner, r.heartbeat_at, r.lease_expires_at, r.error "
                    "FROM temp.agentkit_fork_pairs AS m JOIN agentkit_runs AS r ON r.id = m.old "
                    "WHERE r.session_id = ? AND r.status NOT IN ('running', 'waiting') "
                    "ORDER BY m.n",
                    (session.id, source_id),
                ).rowcount
            except sqlite3.IntegrityError:
                raise StoreError("a new run id is taken already") from None
            if found != len(runs):
                missing = len(runs) - found
                raise StoreError(f"{missing} runs are not ended runs of session {source_id!r}")
            conn.execute(
                "INSERT INTO agentkit_events (run_id, pos, data) "
                "SELECT m.new, e.pos, e.data FROM temp.agentkit_fork_pairs AS m "
                "JOIN agentkit_events AS e ON e.run_id = m.old"
            )
            conn.execute("DELETE FROM temp.agentkit_fork_pairs")
        conn.execute("COMMIT")

    def get_conversation(self, conn: sqlite3.Connection, conversation_id: str) -> Any:
        return conn.execute(
            f"SELECT {CONVERSATION_COLUMNS} FROM agentkit_conversations WHERE id = ?",
            (conversation_id,),
        ).fetchone()

    def update_conversation(
        self,
        conn: sqlite3.Connection,
        conversation_id: str,
        updated_at: float,
        name: str | None,
        visibility: str | None,
    ) -> Any:
        return conn.execute(
            "UPDATE agentkit_conversations SET updated_at = ?, name = coalesce(?, name), "
            f"visibility = coalesce(?, visibility) WHERE id = ? RETURNING {CONVERSATION_COLUMNS}",
            (updated_at, name, visibility, conversation_id),
        ).fetchone()

    def list_conversations(
        self, conn: sqlite3.Connection, viewer_id: str, after: PageKey | None, limit: int
    ) -> list[Any]:
        # Two ranges read newest first, each at most `limit` long: the shared
        # conversations (visibility index) and the viewer's others (creator index).
        before, params = "", list[Any]()
        if after is not None:
            before, params = " AND (created_at, id) < (?, ?)", [after[0], after[1]]
        newest = f"{before} ORDER BY created_at DESC, id DESC LIMIT ?"
        return conn.execute(
            f"SELECT * FROM (SELECT {CONVERSATION_COLUMNS} FROM agentkit_conversations "
            f"WHERE visibility = 'shared'{newest}) "
            f"UNION ALL SELECT * FROM (SELECT {CONVERSATION_COLUMNS} "
            f"FROM agentkit_conversations WHERE creator_id = ? AND visibility <> 'shared'"
            f"{newest}) ORDER BY created_at DESC, id DESC LIMIT ?",
            (*params, limit, viewer_id, *params, limit, limit),
        ).fetchall()

    def list_readable_runs(
        self,
        conn: sqlite3.Connection,
        viewer_id: str,
        others: bool,
        session_id: str | None,
        after: PageKey | None,
        limit: int,
    ) -> list[Any]:
        where, params = [_READABLE], list[Any]([viewer_id, others])
        if session_id is not None:
            where.append("r.session_id = ?")
            params.append(session_id)
        if after is not None:
            where.append("(r.created_at, r.id) < (?, ?)")
            params.extend(after)
        return conn.execute(
            f"SELECT {_RUN_COLUMNS_OF_R} FROM agentkit_runs AS r "
            "LEFT JOIN agentkit_conversations AS c ON c.id = r.session_id "
            f"WHERE {' AND '.join(where)} ORDER BY r.created_at DESC, r.id DESC LIMIT ?",
            (*params, limit),
        ).fetchall()

    def count_runs(self, conn: sqlite3.Connection, statuses: list[str]) -> list[Any]:
        return conn.execute(count_runs_sql("agentkit_runs", statuses)).fetchall()

    def running_sessions(self, conn: sqlite3.Connection, session_ids: list[str]) -> set[str]:
        running: set[str] = set()
        for start in range(0, len(session_ids), _RENEW_CHUNK):
            chunk = session_ids[start : start + _RENEW_CHUNK]
            rows = conn.execute(
                "SELECT DISTINCT session_id FROM agentkit_runs WHERE status = 'running' "
                f"AND session_id IN ({', '.join('?' * len(chunk))})",
                chunk,
            ).fetchall()
            running.update(row[0] for row in rows)
        return running


_RUN_COLUMNS_OF_R = ", ".join(f"r.{column}" for column in RUN_COLUMNS.split(", "))

# A run is readable in a shared conversation, in the viewer's own, and (with `others`)
# outside every conversation.
_READABLE = "(c.visibility = 'shared' OR c.creator_id = ? OR (c.id IS NULL AND ?))"


def _insert_record(
    conn: sqlite3.Connection, table: str, columns: str, params: tuple[Any, ...], kind: str
) -> None:
    import sqlite3

    marks = ", ".join("?" * len(params))
    try:
        conn.execute(f"INSERT INTO {table} ({columns}) VALUES ({marks})", params)
    except sqlite3.IntegrityError:  # a unique index: the id, a live name, a token hash
        raise RecordExistsError(
            f"{kind} {params[1]!r}: a live {kind} has this name, or a {kind} this id"
            + (" or token" if kind == "member" else "")
        ) from None


def _page(
    conn: sqlite3.Connection,
    columns: str,
    table: str,
    live: str,
    after: PageKey | None,
    limit: int,
) -> list[Any]:
    """A page of a table's live records, oldest first, after the key `after`."""
    if after is None:
        return conn.execute(
            f"SELECT {columns} FROM {table} WHERE {live} ORDER BY created_at, id LIMIT ?",
            (limit,),
        ).fetchall()
    return conn.execute(
        f"SELECT {columns} FROM {table} WHERE {live} AND (created_at, id) > (?, ?) "
        "ORDER BY created_at, id LIMIT ?",
        (*after, limit),
    ).fetchall()


# What a room holds besides its row, each table keyed by `room_id`.
_ROOM_TABLES = (
    "agentkit_room_events",
    "agentkit_room_grants",
    "agentkit_room_cursors",
    "agentkit_delegations",
)

_UPSERT_DELEGATION = delegation_upsert("agentkit_delegations", "?")


def _migrate(conn: sqlite3.Connection, path: str) -> None:
    """Bring the layout up to `SCHEMA_VERSION` (inside the caller's write transaction)."""
    conn.execute("CREATE TABLE IF NOT EXISTS agentkit_schema_version (version INTEGER NOT NULL)")
    (version,) = conn.execute("SELECT max(version) FROM agentkit_schema_version").fetchone()
    version = version or 0
    if version > SCHEMA_VERSION:
        raise StoreError(newer_database_message(path, version))
    for migration in MIGRATIONS:
        if migration.version > version:
            if migration.check is not None:
                row = conn.execute(migration.check[0].format(p="")).fetchone()
                if row is not None:
                    raise StoreError(
                        f"{path}: cannot upgrade the tables to schema version "
                        f"{migration.version}, so nothing changed: {migration.check[1]} "
                        f"(found: {row[0]!r})"
                    )
            for statement in migration.sqlite:
                conn.execute(statement)
            conn.execute("INSERT INTO agentkit_schema_version VALUES (?)", (migration.version,))


def _require_running(conn: sqlite3.Connection, run_id: str) -> None:
    row = conn.execute("SELECT status FROM agentkit_runs WHERE id = ?", (run_id,)).fetchone()
    if row is not None and row[0] != "running":
        raise RunEndedError(f"run {run_id} has ended ({row[0]}): no more events")


def _insert_transcript(
    conn: sqlite3.Connection, session_id: str, data: list[str], now: float
) -> None:
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


def _require_session(conn: sqlite3.Connection, session_id: str) -> None:
    if conn.execute("SELECT 1 FROM agentkit_sessions WHERE id = ?", (session_id,)).fetchone():
        return
    raise SessionNotFoundError(f"no session {session_id!r}")


def _insert_events(
    conn: sqlite3.Connection, run_id: str, offsets: list[int], data: list[str]
) -> None:
    if not offsets:
        return
    (last,) = conn.execute(
        "SELECT coalesce(max(pos), -1) FROM agentkit_events WHERE run_id = ?", (run_id,)
    ).fetchone()
    if offsets[0] <= last:
        raise OffsetError(f"offset {offsets[0]} does not follow {last} in run {run_id}")
    conn.executemany(
        "INSERT INTO agentkit_events (run_id, pos, data) VALUES (?, ?, ?)",
        [(run_id, offset, item) for offset, item in zip(offsets, data, strict=True)],
    )


class SQLiteStore(SQLStore, SQLiteQueue):
    """Sessions, transcripts, runs and events, rooms, and records (members, agents,
    conversations), in one SQLite database.

    Args:
        path: A file path (created with its tables on first use) or `":memory:"`.
        busy_timeout: Seconds to keep retrying while another process holds the write lock
            before raising [`StoreUnavailableError`][agentkit.errors.StoreUnavailableError].

    A failure of the storage (a full disk, an I/O error, a file that cannot be opened or
    written) raises `StoreUnavailableError` and writes nothing: the transaction is rolled
    back, and the next call works again once the storage does.

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

    _ops = _SQLite()

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
        conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False, timeout=0)
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

    async def _execute(self, fn: Callable[..., _T], *args: Any) -> _T:
        """Run `fn(connection, *args)` inline; retry after an async sleep while locked."""
        deadline: float | None = None
        delay = 0.0005
        while True:
            with self._lock:
                try:
                    return fn(self._conn or self._open(), *args)
                except BaseException as exc:
                    self._roll_back()
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
                raise StoreUnavailableError(
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

    def _roll_back(self) -> None:
        """End the transaction a failed operation left open. A connection that cannot
        roll back (its disk failed under it) is closed: the next call opens a new one,
        and SQLite's journal undoes what the failed transaction wrote."""
        import sqlite3

        conn = self._conn
        if conn is None or not conn.in_transaction:
            return
        try:
            conn.rollback()
        except sqlite3.Error:
            self._conn = None
            with contextlib.suppress(sqlite3.Error):
                conn.close()

    def _store_error(self, exc: BaseException) -> StoreError | None:
        """A `StoreError` naming the file for an SQLite failure (a broken or foreign file);
        a `StoreUnavailableError` for a failure of the storage (a full disk, an I/O
        error, a file it cannot open or write, no memory)."""
        import sqlite3

        if not isinstance(exc, sqlite3.Error):
            return None
        code = getattr(exc, "sqlite_errorcode", None)
        if code is not None and code & 0xFF in _SQLITE_UNAVAILABLE:
            return StoreUnavailableError(f"{self.path}: {exc}")
        return StoreError(f"{self.path}: {exc}")

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
