"""`QueueStore` in SQL: `agentkit_queued_prompts` (migration 7), for SQLite and PostgreSQL.

Each operation is one transaction. Enqueueing counts the session's queued prompts and
inserts under a lock (SQLite's write lock; the session's row lock on PostgreSQL), so a
queue never holds more than its bound. On PostgreSQL every write notifies the session's
topic (`session:<id>`), as the store's other writes do, so watchers elsewhere see it.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, cast

from agentkit.errors import SessionNotFoundError, StoreError
from agentkit.stores._queue import QueuedRecord

if TYPE_CHECKING:
    import sqlite3

    from agentkit.stores._pg_connections import Connection

__all__ = ["PostgresQueue", "SQLiteQueue"]

_COLUMNS = "id, session_id, member_id, prompt, created_at, options, status, error"
_TABLE = "agentkit_queued_prompts"
_TOPIC_BYTES = 7000  # as `_postgres`'s: a longer topic names the whole kind


def _params(record: QueuedRecord) -> tuple[Any, ...]:
    return (
        record.id,
        record.session_id,
        record.member_id,
        json.dumps(record.prompt, ensure_ascii=False),  # JSON: a NUL is kept, escaped
        record.created_at,
        json.dumps(record.options, ensure_ascii=False),
        "queued",
        None,
    )


def _record(row: Any) -> QueuedRecord:
    options = json.loads(row[5])
    return QueuedRecord(
        id=row[0],
        session_id=row[1],
        member_id=row[2],
        prompt=json.loads(row[3]),
        created_at=float(row[4]),
        options=options if isinstance(options, dict) else {},
        status="dropped" if row[6] == "dropped" else "queued",
        error=row[7],
    )


# --- SQLite ---------------------------------------------------------------------------------


def _sqlite_enqueue(conn: sqlite3.Connection, params: tuple[Any, ...], limit: int) -> bool:
    import sqlite3

    conn.execute("BEGIN IMMEDIATE")
    (count,) = conn.execute(
        f"SELECT count(*) FROM {_TABLE} WHERE session_id = ? AND status = 'queued'",
        (params[1],),
    ).fetchone()
    if count >= limit:
        conn.execute("ROLLBACK")
        return False
    try:
        conn.execute(f"INSERT INTO {_TABLE} ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)", params)
    except sqlite3.IntegrityError as exc:
        if "FOREIGN KEY" in str(exc):
            raise SessionNotFoundError(f"no session {params[1]!r}") from None
        raise StoreError(f"queued prompt {params[0]!r} already exists") from None
    conn.execute("COMMIT")
    return True


def _sqlite_rows(conn: sqlite3.Connection, query: str, params: tuple[Any, ...]) -> list[Any]:
    return conn.execute(query, params).fetchall()


def _sqlite_write(conn: sqlite3.Connection, query: str, params: tuple[Any, ...]) -> bool:
    return conn.execute(query, params).rowcount > 0


class SQLiteQueue:
    """`QueueStore` for `SQLiteStore` (through its `_call`)."""

    async def _queue_call(self, fn: Any, *args: Any) -> Any:
        return await cast(Any, self)._call(fn, *args)

    async def enqueue_prompt(self, record: QueuedRecord, *, limit: int) -> bool:
        return bool(await self._queue_call(_sqlite_enqueue, _params(record), limit))

    async def list_queued(self, session_id: str) -> list[QueuedRecord]:
        query = f"SELECT {_COLUMNS} FROM {_TABLE} WHERE session_id = ? ORDER BY seq"
        return [_record(row) for row in await self._queue_call(_sqlite_rows, query, (session_id,))]

    async def get_queued(self, queued_id: str) -> QueuedRecord | None:
        query = f"SELECT {_COLUMNS} FROM {_TABLE} WHERE id = ?"
        rows = await self._queue_call(_sqlite_rows, query, (queued_id,))
        return _record(rows[0]) if rows else None

    async def delete_queued(self, queued_id: str) -> bool:
        query = f"DELETE FROM {_TABLE} WHERE id = ?"
        return bool(await self._queue_call(_sqlite_write, query, (queued_id,)))

    async def drop_queued(self, queued_id: str, error: str) -> bool:
        query = (
            f"UPDATE {_TABLE} SET status = 'dropped', error = ? WHERE id = ? AND status = 'queued'"
        )
        return bool(await self._queue_call(_sqlite_write, query, (error, queued_id)))

    async def queued_sessions(self, limit: int = 100) -> list[str]:
        query = (
            f"SELECT session_id FROM {_TABLE} WHERE status = 'queued' "
            "GROUP BY session_id ORDER BY min(seq) LIMIT ?"
        )
        return [row[0] for row in await self._queue_call(_sqlite_rows, query, (limit,))]

    async def count_queued(self) -> int:
        query = f"SELECT count(*) FROM {_TABLE} WHERE status = 'queued'"
        return int((await self._queue_call(_sqlite_rows, query, ()))[0][0])


# --- PostgreSQL -----------------------------------------------------------------------------


class PostgresQueue:
    """`QueueStore` for `PostgresStore` (through its `_run`, on its schema and channel)."""

    def _queue_table(self) -> str:
        schema = cast(Any, self).schema
        return f'"{schema.replace(chr(34), chr(34) * 2)}".{_TABLE}' if schema else _TABLE

    async def _queue_run(self, fn: Any, *args: Any) -> Any:
        return await cast(Any, self)._run(fn, *args)

    async def _queue_notify(self, conn: Connection, session_id: str) -> None:
        # The store's topic of the session (`session:*` when the id makes it too long).
        topic = f"session:{session_id}"
        if len(topic.encode()) > _TOPIC_BYTES:
            topic = "session:*"
        await cast(Any, self)._dialect.notify(conn, [topic])

    async def enqueue_prompt(self, record: QueuedRecord, *, limit: int) -> bool:
        from psycopg import errors

        table = self._queue_table()
        sessions = table.removesuffix(_TABLE) + "agentkit_sessions"
        params = _params(record)

        async def enqueue(conn: Connection) -> bool:
            async with conn.transaction():
                # The session's row lock: enqueues of one session take turns.
                found = await conn.execute(
                    f"SELECT 1 FROM {sessions} WHERE id = %s FOR UPDATE", (record.session_id,)
                )
                if found.first() is None:
                    raise SessionNotFoundError(f"no session {record.session_id!r}")
                counted = await conn.execute(
                    f"SELECT count(*) FROM {table} WHERE session_id = %s AND status = 'queued'",
                    (record.session_id,),
                )
                row = counted.first()
                if row is not None and row[0] >= limit:
                    return False
                try:
                    await conn.execute(
                        f"INSERT INTO {table} ({_COLUMNS}) VALUES ({', '.join(['%s'] * 8)})",
                        params,
                    )
                except errors.UniqueViolation:
                    raise StoreError(f"queued prompt {record.id!r} already exists") from None
                await self._queue_notify(conn, record.session_id)
            return True

        return bool(await self._queue_run(enqueue))

    async def _rows(self, query: str, params: tuple[Any, ...]) -> list[Any]:
        async def read(conn: Connection) -> list[Any]:
            return (await conn.execute(query, params)).rows

        return cast(list[Any], await self._queue_run(read))

    async def _write(self, query: str, params: tuple[Any, ...]) -> bool:
        """A write `RETURNING session_id`; notifies that session when it changed a row."""

        async def write(conn: Connection) -> bool:
            async with conn.transaction():
                row = (await conn.execute(query, params)).first()
                if row is None:
                    return False
                await self._queue_notify(conn, row[0])
            return True

        return bool(await self._queue_run(write))

    async def list_queued(self, session_id: str) -> list[QueuedRecord]:
        query = f"SELECT {_COLUMNS} FROM {self._queue_table()} WHERE session_id = %s ORDER BY seq"
        return [_record(row) for row in await self._rows(query, (session_id,))]

    async def get_queued(self, queued_id: str) -> QueuedRecord | None:
        rows = await self._rows(
            f"SELECT {_COLUMNS} FROM {self._queue_table()} WHERE id = %s", (queued_id,)
        )
        return _record(rows[0]) if rows else None

    async def delete_queued(self, queued_id: str) -> bool:
        query = f"DELETE FROM {self._queue_table()} WHERE id = %s RETURNING session_id"
        return await self._write(query, (queued_id,))

    async def drop_queued(self, queued_id: str, error: str) -> bool:
        query = (
            f"UPDATE {self._queue_table()} SET status = 'dropped', error = %s "
            "WHERE id = %s AND status = 'queued' RETURNING session_id"
        )
        return await self._write(query, (error, queued_id))

    async def queued_sessions(self, limit: int = 100) -> list[str]:
        query = (
            f"SELECT session_id FROM {self._queue_table()} WHERE status = 'queued' "
            "GROUP BY session_id ORDER BY min(seq) LIMIT %s"
        )
        return [row[0] for row in await self._rows(query, (limit,))]

    async def count_queued(self) -> int:
        query = f"SELECT count(*) FROM {self._queue_table()} WHERE status = 'queued'"
        return int((await self._rows(query, ()))[0][0])
