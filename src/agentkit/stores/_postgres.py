"""The scale-out store: PostgreSQL, shared by any number of processes and hosts.

psycopg is imported only when a store first connects (extra `typed-agentkit[postgres]`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import anyio

from agentkit.errors import OffsetError
from agentkit.stores._base import (
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
from agentkit.stores._rooms import TypeFilter, like_prefix
from agentkit.stores._sql import (
    DELEGATION_COLUMNS,
    GRANT_COLUMNS,
    ROOM_COLUMNS,
    ROOM_EVENT_COLUMNS,
    RUN_COLUMNS,
    SESSION_COLUMNS,
    RoomEventColumns,
    SQLStore,
    may_finish,
    run_params,
)

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
        session_cols, run_cols = SESSION_COLUMNS, RUN_COLUMNS
        self.create_schema = f"CREATE SCHEMA IF NOT EXISTS {_quote(schema)}" if schema else None
        self.create_version = f"CREATE TABLE IF NOT EXISTS {version} (version integer NOT NULL)"
        self.migrations = [
            (m.version, [statement.format(p=p) for statement in m.postgres]) for m in MIGRATIONS
        ]
        self.get_version = f"SELECT max(version) FROM {version}"
        self.set_version = f"INSERT INTO {version} VALUES (%s)"
        self.insert_session = f"INSERT INTO {sessions} ({session_cols}) VALUES (%s, %s, %s, %s, %s)"
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
        self.load_transcript = f"SELECT data FROM {transcript} WHERE session_id = %s ORDER BY pos"
        self.transcript_end = (
            f"SELECT coalesce(max(pos) + 1, 0) FROM {transcript} WHERE session_id = %s"
        )
        self.append_transcript = (
            f"INSERT INTO {transcript} (session_id, pos, data) "
            "SELECT %s, %s + n - 1, d FROM unnest(%s::text[]) WITH ORDINALITY AS u (d, n)"
        )
        self.truncate_transcript = f"DELETE FROM {transcript} WHERE session_id = %s AND pos >= %s"
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
        # --- rooms ---
        rooms, room_events = f"{p}agentkit_rooms", f"{p}agentkit_room_events"
        grants, cursors = f"{p}agentkit_room_grants", f"{p}agentkit_room_cursors"
        delegations = f"{p}agentkit_delegations"
        self.insert_room = f"INSERT INTO {rooms} ({ROOM_COLUMNS}) VALUES (%s, %s, %s, %s, %s)"
        self.get_room = f"SELECT {ROOM_COLUMNS} FROM {rooms} WHERE id = %s"
        self.list_rooms = f"SELECT {ROOM_COLUMNS} FROM {rooms} ORDER BY seq"
        self.update_room = (
            f"UPDATE {rooms} SET name = coalesce(%s, name), metadata = coalesce(%s, metadata) "
            f"WHERE id = %s RETURNING {ROOM_COLUMNS}"
        )
        self.lock_room = f"SELECT 1 FROM {rooms} WHERE id = %s FOR UPDATE"
        self.delete_room_events = f"DELETE FROM {room_events} WHERE room_id = %s"
        # Grants, cursors and delegations go with the room (ON DELETE CASCADE).
        self.delete_room = f"DELETE FROM {rooms} WHERE id = %s"
        # The update takes the room's row lock until the transaction ends: appenders to
        # one room take turns, in every process, and commit in position order.
        self.bump_head = f"UPDATE {rooms} SET head = head + %s WHERE id = %s RETURNING head"
        self.room_head = f"SELECT head FROM {rooms} WHERE id = %s"
        self.insert_room_events = (
            f"INSERT INTO {room_events} (room_id, {ROOM_EVENT_COLUMNS}) "
            "SELECT %s, %s + n, i, t, a, d, c FROM unnest("
            "%s::text[], %s::text[], %s::text[], %s::text[], %s::float8[]"
            ") WITH ORDINALITY AS u (i, t, a, d, c, n)"
        )
        self.read_room_events = (
            f"SELECT {ROOM_EVENT_COLUMNS} FROM {room_events} WHERE room_id = %s AND pos > %s"
        )
        self.upsert_delegation = (
            f"INSERT INTO {delegations} ({DELEGATION_COLUMNS}) "
            "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s) "
            "ON CONFLICT (room_id, id) DO UPDATE SET "
            "agent = excluded.agent, task = excluded.task, status = excluded.status, "
            "requested_by = excluded.requested_by, created_at = excluded.created_at, "
            "updated_at = excluded.updated_at, result = excluded.result, error = excluded.error"
        )
        self.set_grant = (
            f"INSERT INTO {grants} (room_id, {GRANT_COLUMNS}) VALUES (%s, %s, %s, %s) "
            "ON CONFLICT (room_id, participant) DO UPDATE SET "
            "read_types = excluded.read_types, publish_types = excluded.publish_types"
        )
        self.delete_grant = f"DELETE FROM {grants} WHERE room_id = %s AND participant = %s"
        self.list_grants = (
            f"SELECT {GRANT_COLUMNS} FROM {grants} WHERE room_id = %s ORDER BY participant"
        )
        self.get_cursor = f"SELECT pos FROM {cursors} WHERE room_id = %s AND consumer = %s"
        self.set_cursor = (
            f"INSERT INTO {cursors} (room_id, consumer, pos) VALUES (%s, %s, %s) "
            "ON CONFLICT (room_id, consumer) DO UPDATE SET pos = excluded.pos"
        )
        self.get_delegation = (
            f"SELECT {DELEGATION_COLUMNS} FROM {delegations} WHERE room_id = %s AND id = %s"
        )
        self.list_delegations = (
            f"SELECT {DELEGATION_COLUMNS} FROM {delegations} WHERE room_id = %s ORDER BY seq"
        )


class _Postgres:
    """The operations in PostgreSQL's dialect, on the store's statements; each runs in a
    worker thread, as one statement or one transaction."""

    def __init__(self, sql: _SQL) -> None:
        self.sql = sql

    def create_session(
        self, conn: psycopg.Connection[Any], record: SessionRecord, metadata: str
    ) -> None:
        from psycopg import errors

        try:
            conn.execute(
                self.sql.insert_session,
                (record.id, record.agent_id, record.created_at, record.updated_at, metadata),
            )
        except errors.UniqueViolation:
            raise SessionExistsError(f"session {record.id!r} already exists") from None

    def get_session(self, conn: psycopg.Connection[Any], session_id: str) -> Any:
        return conn.execute(self.sql.get_session, (session_id,)).fetchone()

    def update_session(
        self, conn: psycopg.Connection[Any], session_id: str, metadata: str, now: float
    ) -> Any:
        return conn.execute(self.sql.update_session, (metadata, now, session_id)).fetchone()

    def list_sessions(self, conn: psycopg.Connection[Any], agent_id: str | None) -> list[Any]:
        if agent_id is None:
            return conn.execute(self.sql.list_sessions).fetchall()
        return conn.execute(self.sql.list_agent_sessions, (agent_id,)).fetchall()

    def delete_session(self, conn: psycopg.Connection[Any], session_id: str) -> None:
        with conn.transaction():
            conn.execute(self.sql.lock_session, (session_id,))
            conn.execute(self.sql.delete_events_of_session, (session_id,))
            # The transcript and the runs go with the session (ON DELETE CASCADE).
            conn.execute(self.sql.delete_session, (session_id,))

    def load_transcript(self, conn: psycopg.Connection[Any], session_id: str) -> list[Any]:
        rows = conn.execute(self.sql.load_transcript, (session_id,)).fetchall()
        if not rows and conn.execute(self.sql.has_session, (session_id,)).fetchone() is None:
            raise SessionNotFoundError(f"no session {session_id!r}")
        return rows

    def append_transcript(
        self, conn: psycopg.Connection[Any], session_id: str, data: list[str], now: float
    ) -> None:
        with conn.transaction():
            self._insert_transcript(conn, session_id, data, now)

    def _insert_transcript(
        self, conn: psycopg.Connection[Any], session_id: str, data: list[str], now: float
    ) -> None:
        # The update locks the session row, so concurrent appends take turns.
        if conn.execute(self.sql.touch_session, (now, session_id)).rowcount == 0:
            raise SessionNotFoundError(f"no session {session_id!r}")
        if data:
            row = conn.execute(self.sql.transcript_end, (session_id,)).fetchone()
            start = 0 if row is None else row[0]
            conn.execute(self.sql.append_transcript, (session_id, start, data))

    def truncate_transcript(
        self, conn: psycopg.Connection[Any], session_id: str, length: int
    ) -> None:
        with conn.transaction():
            if conn.execute(self.sql.lock_session, (session_id,)).fetchone() is None:
                raise SessionNotFoundError(f"no session {session_id!r}")
            if length < 0:  # like `del messages[length:]`: counts from the end
                row = conn.execute(self.sql.transcript_end, (session_id,)).fetchone()
                length = max((0 if row is None else row[0]) + length, 0)
            conn.execute(self.sql.truncate_transcript, (session_id, length))

    def create_run(
        self, conn: psycopg.Connection[Any], run: RunRecord, offsets: list[int], data: list[str]
    ) -> None:
        from psycopg import errors

        with conn.transaction():
            # The session's row lock makes the check and the insert one step for every
            # process: a second start on the session waits here, then sees the first run.
            if conn.execute(self.sql.lock_session, (run.session_id,)).fetchone() is None:
                raise SessionNotFoundError(f"no session {run.session_id!r}")
            if (
                run.status == "running"
                and conn.execute(self.sql.running_in_session, (run.session_id,)).fetchone()
            ):
                raise SessionBusyError(f"session {run.session_id!r} already has a run going")
            try:
                with conn.transaction():  # a savepoint: the error leaves the rest usable
                    conn.execute(self.sql.insert_run, run_params(run))
            except errors.UniqueViolation:
                raise StoreError(f"run {run.id!r} already exists") from None
            self._insert_events(conn, run.id, offsets, data)

    def finish_run(
        self,
        conn: psycopg.Connection[Any],
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
            row = conn.execute(self.sql.lock_run, (run_id,)).fetchone()
            if row is None or not may_finish(row, owner, expired_by):
                return False
            self._insert_events(conn, run_id, offsets, data)
            conn.execute(self.sql.finish_run, (status, finished_at, error, run_id))
            return True

    def renew_leases(
        self,
        conn: psycopg.Connection[Any],
        owner: str,
        run_ids: list[str],
        now: float,
        expires_at: float,
    ) -> set[str]:
        rows = conn.execute(self.sql.renew_leases, (now, expires_at, owner, run_ids)).fetchall()
        return {row[0] for row in rows}

    def expired_runs(self, conn: psycopg.Connection[Any], now: float) -> list[Any]:
        return conn.execute(self.sql.expired_runs, (now,)).fetchall()

    def get_run(self, conn: psycopg.Connection[Any], run_id: str) -> Any:
        return conn.execute(self.sql.get_run, (run_id,)).fetchone()

    def list_runs(self, conn: psycopg.Connection[Any], session_id: str) -> list[Any]:
        return conn.execute(self.sql.list_runs, (session_id,)).fetchall()

    def append_events(
        self, conn: psycopg.Connection[Any], run_id: str, offsets: list[int], data: list[str]
    ) -> None:
        with conn.transaction():
            self._require_running(conn, run_id)
            self._insert_events(conn, run_id, offsets, data)

    def append_step(
        self,
        conn: psycopg.Connection[Any],
        session_id: str,
        messages: list[str],
        now: float,
        run_id: str,
        offsets: list[int],
        data: list[str],
    ) -> None:
        with conn.transaction():
            self._require_running(conn, run_id)
            self._insert_transcript(conn, session_id, messages, now)
            self._insert_events(conn, run_id, offsets, data)

    def _require_running(self, conn: psycopg.Connection[Any], run_id: str) -> None:
        row = conn.execute(self.sql.run_status, (run_id,)).fetchone()
        if row is not None and row[0] != "running":
            raise RunEndedError(f"run {run_id} has ended ({row[0]}): no more events")

    def read_events(self, conn: psycopg.Connection[Any], run_id: str, after: int) -> list[Any]:
        return conn.execute(self.sql.read_events, (run_id, after)).fetchall()

    def _insert_events(
        self, conn: psycopg.Connection[Any], run_id: str, offsets: list[int], data: list[str]
    ) -> None:
        if not offsets:
            return
        # One writer per run log at a time, across processes and hosts.
        conn.execute("SELECT pg_advisory_xact_lock(hashtext('agentkit.events ' || %s))", (run_id,))
        row = conn.execute(self.sql.events_end, (run_id,)).fetchone()
        last = -1 if row is None else row[0]
        if offsets[0] <= last:
            raise OffsetError(f"offset {offsets[0]} does not follow {last} in run {run_id}")
        conn.execute(self.sql.append_events, (run_id, offsets, data))

    # --- rooms ------------------------------------------------------------------------

    def create_room(self, conn: psycopg.Connection[Any], room: RoomRecord, metadata: str) -> None:
        from psycopg import errors

        try:
            conn.execute(
                self.sql.insert_room,
                (room.id, room.name, room.created_by, room.created_at, metadata),
            )
        except errors.UniqueViolation:
            raise RoomExistsError(f"room {room.id!r} already exists") from None

    def get_room(self, conn: psycopg.Connection[Any], room_id: str) -> Any:
        return conn.execute(self.sql.get_room, (room_id,)).fetchone()

    def list_rooms(self, conn: psycopg.Connection[Any]) -> list[Any]:
        return conn.execute(self.sql.list_rooms).fetchall()

    def update_room(
        self, conn: psycopg.Connection[Any], room_id: str, name: str | None, metadata: str | None
    ) -> Any:
        return conn.execute(self.sql.update_room, (name, metadata, room_id)).fetchone()

    def delete_room(self, conn: psycopg.Connection[Any], room_id: str) -> None:
        with conn.transaction():
            # Waits for an append in flight; one that comes after finds no room.
            conn.execute(self.sql.lock_room, (room_id,))
            conn.execute(self.sql.delete_room_events, (room_id,))
            conn.execute(self.sql.delete_room, (room_id,))

    def append_room_events(
        self,
        conn: psycopg.Connection[Any],
        room_id: str,
        columns: RoomEventColumns,
        delegation: tuple[Any, ...] | None,
    ) -> int:
        from psycopg import errors

        ids, types, authors, payloads, times = columns
        with conn.transaction():
            row = conn.execute(self.sql.bump_head, (len(ids), room_id)).fetchone()
            if row is None:
                raise RoomNotFoundError(f"no room {room_id!r}")
            head: int = row[0]
            try:
                conn.execute(
                    self.sql.insert_room_events,
                    (room_id, head - len(ids), ids, types, authors, payloads, times),
                )
            except errors.UniqueViolation:
                raise StoreError(
                    f"room {room_id!r}: an event id of the batch is already in the room or "
                    "repeated in the batch; nothing was appended"
                ) from None
            if delegation is not None:
                conn.execute(self.sql.upsert_delegation, delegation)
        return head

    def read_room_events(
        self,
        conn: psycopg.Connection[Any],
        room_id: str,
        after: int,
        limit: int | None,
        types: TypeFilter | None,
    ) -> list[Any] | None:
        query, params = self.sql.read_room_events, list[Any]([room_id, after])
        if types is not None:
            clauses = []
            if types.exact:
                clauses.append("type = ANY(%s)")
                params.append(list(types.exact))
            for prefix in types.prefixes:
                # `type` is COLLATE "C": the LIKE is case-sensitive and a range of the
                # (room_id, type, pos) index; `%`, `_` and `\` in the prefix are escaped.
                clauses.append("type LIKE %s ESCAPE '\\'")
                params.append(like_prefix(prefix))
            query += f" AND ({' OR '.join(clauses)})"
        query += " ORDER BY pos"
        if limit is not None:
            query += " LIMIT %s"
            params.append(limit)
        rows = conn.execute(query, params).fetchall()
        if not rows and self.room_head(conn, room_id) is None:
            return None
        return rows

    def room_head(self, conn: psycopg.Connection[Any], room_id: str) -> int | None:
        row = conn.execute(self.sql.room_head, (room_id,)).fetchone()
        return None if row is None else int(row[0])

    def set_grant(
        self,
        conn: psycopg.Connection[Any],
        room_id: str,
        participant: str,
        read: str,
        publish: str,
    ) -> None:
        from psycopg import errors

        try:
            conn.execute(self.sql.set_grant, (room_id, participant, read, publish))
        except errors.ForeignKeyViolation:
            raise RoomNotFoundError(f"no room {room_id!r}") from None

    def delete_grant(self, conn: psycopg.Connection[Any], room_id: str, participant: str) -> None:
        conn.execute(self.sql.delete_grant, (room_id, participant))

    def list_grants(self, conn: psycopg.Connection[Any], room_id: str) -> list[Any]:
        return conn.execute(self.sql.list_grants, (room_id,)).fetchall()

    def get_cursor(self, conn: psycopg.Connection[Any], room_id: str, consumer: str) -> int | None:
        row = conn.execute(self.sql.get_cursor, (room_id, consumer)).fetchone()
        return None if row is None else int(row[0])

    def set_cursor(
        self, conn: psycopg.Connection[Any], room_id: str, consumer: str, position: int
    ) -> None:
        from psycopg import errors

        try:
            conn.execute(self.sql.set_cursor, (room_id, consumer, position))
        except errors.ForeignKeyViolation:
            raise RoomNotFoundError(f"no room {room_id!r}") from None

    def get_delegation(
        self, conn: psycopg.Connection[Any], room_id: str, delegation_id: str
    ) -> Any:
        return conn.execute(self.sql.get_delegation, (room_id, delegation_id)).fetchone()

    def list_delegations(self, conn: psycopg.Connection[Any], room_id: str) -> list[Any]:
        return conn.execute(self.sql.list_delegations, (room_id,)).fetchall()


class PostgresStore(SQLStore):
    """Sessions, transcripts, runs and events, and rooms, in PostgreSQL.

    Args:
        dsn: A libpq connection string or URL, e.g. `postgresql://user@host:5432/db`.
        schema: The schema holding the tables (created when missing); by default the first
            schema of the connection's `search_path` (usually `public`). Tables are named
            `agentkit_sessions`, `agentkit_transcript`, `agentkit_runs`, `agentkit_events`,
            `agentkit_rooms`, `agentkit_room_events`, `agentkit_room_grants`,
            `agentkit_room_cursors`, `agentkit_delegations` and `agentkit_schema_version`,
            and are created on first use.
        max_connections: Size of the store's own small connection pool.

    Each call runs psycopg's synchronous API in a worker thread (anyio), so the store works
    under asyncio and trio alike; at most `max_connections` calls run at once, each on a
    connection of its own, reused afterwards. Every append is one transaction; appends to
    one transcript, one run log or one room are serialised across processes by row and
    advisory locks, so any number of processes and hosts can share the database.
    Needs the `postgres` extra (`pip install 'typed-agentkit[postgres]'`).
    """

    def __init__(self, dsn: str, *, schema: str | None = None, max_connections: int = 4):
        if max_connections < 1:
            raise ValueError("max_connections must be at least 1")
        self.dsn = dsn
        self.schema = schema
        self._sql = _SQL(schema)
        self._ops = _Postgres(self._sql)
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
        """Run `fn(connection, *args)` in a worker thread on a pooled connection."""
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
            return fn(conn, *args)
        except psycopg.Error as exc:
            raise StoreError(f"PostgreSQL: {exc}") from exc

    async def aclose(self) -> None:
        """Close the pooled connections; the store cannot be used afterwards."""
        self._closed = True
        idle, self._idle = self._idle, []
        for conn in idle:
            await anyio.to_thread.run_sync(conn.close)
