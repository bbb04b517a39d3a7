"""The SQL stores' table layout, as numbered migrations.

A database records every version applied in `agentkit_schema_version` (one row each). On
open, a store applies the migrations newer than the database's version in one transaction
(PostgreSQL under an advisory lock, SQLite under its write lock), so two processes opening
an old database at once upgrade it once. A database newer than the code is refused.

Each migration is written for both dialects side by side, so the two layouts cannot drift
apart. `{p}` stands for the schema prefix of PostgreSQL's tables (empty for SQLite).
Migrations never change once released: a change of layout is a new migration.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["MIGRATIONS", "SCHEMA_VERSION", "Migration", "newer_database_message"]


@dataclass(frozen=True)
class Migration:
    """One step of the layout, for both dialects."""

    version: int
    description: str
    sqlite: tuple[str, ...]
    postgres: tuple[str, ...]


MIGRATIONS: tuple[Migration, ...] = (
    Migration(
        1,
        "sessions, transcripts, runs and run events",
        sqlite=(
            """CREATE TABLE IF NOT EXISTS agentkit_sessions (
                seq INTEGER PRIMARY KEY,
                id TEXT NOT NULL UNIQUE,
                agent_id TEXT NOT NULL,
                created_at REAL NOT NULL,
                updated_at REAL NOT NULL,
                metadata TEXT NOT NULL)""",
            "CREATE INDEX IF NOT EXISTS agentkit_sessions_agent "
            "ON agentkit_sessions (agent_id, seq)",
            """CREATE TABLE IF NOT EXISTS agentkit_transcript (
                session_id TEXT NOT NULL REFERENCES agentkit_sessions (id) ON DELETE CASCADE,
                pos INTEGER NOT NULL,
                data TEXT NOT NULL,
                PRIMARY KEY (session_id, pos))""",
            """CREATE TABLE IF NOT EXISTS agentkit_runs (
                seq INTEGER PRIMARY KEY,
                id TEXT NOT NULL UNIQUE,
                session_id TEXT NOT NULL REFERENCES agentkit_sessions (id) ON DELETE CASCADE,
                agent_id TEXT NOT NULL,
                status TEXT NOT NULL,
                created_at REAL NOT NULL,
                finished_at REAL)""",
            "CREATE INDEX IF NOT EXISTS agentkit_runs_session ON agentkit_runs (session_id, seq)",
            """CREATE TABLE IF NOT EXISTS agentkit_events (
                run_id TEXT NOT NULL,
                pos INTEGER NOT NULL,
                data TEXT NOT NULL,
                PRIMARY KEY (run_id, pos))""",
        ),
        postgres=(
            """CREATE TABLE IF NOT EXISTS {p}agentkit_sessions (
                seq bigserial PRIMARY KEY,
                id text NOT NULL UNIQUE,
                agent_id text NOT NULL,
                created_at double precision NOT NULL,
                updated_at double precision NOT NULL,
                metadata text NOT NULL)""",
            "CREATE INDEX IF NOT EXISTS agentkit_sessions_agent "
            "ON {p}agentkit_sessions (agent_id, seq)",
            """CREATE TABLE IF NOT EXISTS {p}agentkit_transcript (
                session_id text NOT NULL REFERENCES {p}agentkit_sessions (id) ON DELETE CASCADE,
                pos integer NOT NULL,
                data text NOT NULL,
                PRIMARY KEY (session_id, pos))""",
            """CREATE TABLE IF NOT EXISTS {p}agentkit_runs (
                seq bigserial PRIMARY KEY,
                id text NOT NULL UNIQUE,
                session_id text NOT NULL REFERENCES {p}agentkit_sessions (id) ON DELETE CASCADE,
                agent_id text NOT NULL,
                status text NOT NULL,
                created_at double precision NOT NULL,
                finished_at double precision)""",
            "CREATE INDEX IF NOT EXISTS agentkit_runs_session "
            "ON {p}agentkit_runs (session_id, seq)",
            """CREATE TABLE IF NOT EXISTS {p}agentkit_events (
                run_id text NOT NULL,
                pos bigint NOT NULL,
                data text NOT NULL,
                PRIMARY KEY (run_id, pos))""",
        ),
    ),
    Migration(
        2,
        "run ownership and leases; why a run failed",
        # Runs left `running` by older code have no owner: their lease is taken as expired,
        # so the first runtime to open the database ends them as interrupted.
        sqlite=(
            "ALTER TABLE agentkit_runs ADD COLUMN owner TEXT",
            "ALTER TABLE agentkit_runs ADD COLUMN heartbeat_at REAL",
            "ALTER TABLE agentkit_runs ADD COLUMN lease_expires_at REAL",
            "ALTER TABLE agentkit_runs ADD COLUMN error TEXT",
            "UPDATE agentkit_runs SET lease_expires_at = 0 WHERE status = 'running'",
            "CREATE INDEX agentkit_runs_leases ON agentkit_runs (lease_expires_at) "
            "WHERE status = 'running'",
        ),
        postgres=(
            "ALTER TABLE {p}agentkit_runs ADD COLUMN owner text, "
            "ADD COLUMN heartbeat_at double precision, "
            "ADD COLUMN lease_expires_at double precision, ADD COLUMN error text",
            "UPDATE {p}agentkit_runs SET lease_expires_at = 0 WHERE status = 'running'",
            "CREATE INDEX agentkit_runs_leases ON {p}agentkit_runs (lease_expires_at) "
            "WHERE status = 'running'",
        ),
    ),
    Migration(
        3,
        "rooms: their event logs, grants, consumer cursors and delegations",
        # A room's `head` is the position of its last event: an append bumps it with one
        # UPDATE ... RETURNING, which takes the room's row lock (PostgreSQL) or runs under
        # the write lock (SQLite), so positions are gap-free across processes. Events have
        # no foreign key (their insert is already guarded by that UPDATE); the other tables
        # do, so a grant, cursor or delegation of a missing room is refused.
        # On PostgreSQL, types and participants compare in code point order (COLLATE "C"):
        # the same order as SQLite and Python, and a type prefix read (LIKE 'chat.%') can
        # use the (room_id, type, pos) index whatever the database's locale.
        sqlite=(
            """CREATE TABLE agentkit_rooms (
                seq INTEGER PRIMARY KEY,
                id TEXT NOT NULL UNIQUE,
                name TEXT NOT NULL,
                created_by TEXT NOT NULL,
                created_at REAL NOT NULL,
                metadata TEXT NOT NULL,
                head INTEGER NOT NULL DEFAULT 0)""",
            """CREATE TABLE agentkit_room_events (
                room_id TEXT NOT NULL,
                pos INTEGER NOT NULL,
                id TEXT NOT NULL,
                type TEXT NOT NULL,
                author TEXT NOT NULL,
                payload TEXT NOT NULL,
                created_at REAL NOT NULL,
                PRIMARY KEY (room_id, pos),
                UNIQUE (room_id, id))""",
            "CREATE INDEX agentkit_room_events_type ON agentkit_room_events (room_id, type, pos)",
            """CREATE TABLE agentkit_room_grants (
                room_id TEXT NOT NULL REFERENCES agentkit_rooms (id) ON DELETE CASCADE,
                participant TEXT NOT NULL,
                read_types TEXT NOT NULL,
                publish_types TEXT NOT NULL,
                PRIMARY KEY (room_id, participant))""",
            """CREATE TABLE agentkit_room_cursors (
                room_id TEXT NOT NULL REFERENCES agentkit_rooms (id) ON DELETE CASCADE,
                consumer TEXT NOT NULL,
                pos INTEGER NOT NULL,
                PRIMARY KEY (room_id, consumer))""",
            """CREATE TABLE agentkit_delegations (
                seq INTEGER PRIMARY KEY,
                room_id TEXT NOT NULL REFERENCES agentkit_rooms (id) ON DELETE CASCADE,
                id TEXT NOT NULL,
                agent TEXT NOT NULL,
                task TEXT NOT NULL,
                status TEXT NOT NULL,
                requested_by TEXT NOT NULL,
                created_at REAL NOT NULL,
                updated_at REAL NOT NULL,
                result TEXT NOT NULL,
                error TEXT,
                UNIQUE (room_id, id))""",
        ),
        postgres=(
            """CREATE TABLE {p}agentkit_rooms (
                seq bigserial PRIMARY KEY,
                id text NOT NULL UNIQUE,
                name text NOT NULL,
                created_by text NOT NULL,
                created_at double precision NOT NULL,
                metadata text NOT NULL,
                head bigint NOT NULL DEFAULT 0)""",
            """CREATE TABLE {p}agentkit_room_events (
                room_id text NOT NULL,
                pos bigint NOT NULL,
                id text NOT NULL,
                type text COLLATE "C" NOT NULL,
                author text NOT NULL,
                payload text NOT NULL,
                created_at double precision NOT NULL,
                PRIMARY KEY (room_id, pos),
                UNIQUE (room_id, id))""",
            "CREATE INDEX agentkit_room_events_type "
            "ON {p}agentkit_room_events (room_id, type, pos)",
            """CREATE TABLE {p}agentkit_room_grants (
                room_id text NOT NULL REFERENCES {p}agentkit_rooms (id) ON DELETE CASCADE,
                participant text COLLATE "C" NOT NULL,
                read_types text NOT NULL,
                publish_types text NOT NULL,
                PRIMARY KEY (room_id, participant))""",
            """CREATE TABLE {p}agentkit_room_cursors (
                room_id text NOT NULL REFERENCES {p}agentkit_rooms (id) ON DELETE CASCADE,
                consumer text NOT NULL,
                pos bigint NOT NULL,
                PRIMARY KEY (room_id, consumer))""",
            """CREATE TABLE {p}agentkit_delegations (
                seq bigserial PRIMARY KEY,
                room_id text NOT NULL REFERENCES {p}agentkit_rooms (id) ON DELETE CASCADE,
                id text NOT NULL,
                agent text NOT NULL,
                task text NOT NULL,
                status text NOT NULL,
                requested_by text NOT NULL,
                created_at double precision NOT NULL,
                updated_at double precision NOT NULL,
                result text NOT NULL,
                error text,
                UNIQUE (room_id, id))""",
        ),
    ),
)

SCHEMA_VERSION = MIGRATIONS[-1].version
"""The version of the table layout this code writes (kept in `agentkit_schema_version`)."""


def newer_database_message(where: str, version: int) -> str:
    """The error for a database whose layout is newer than this code knows."""
    return (
        f"{where}: database schema version {version} is newer than this agentkit supports "
        f"({SCHEMA_VERSION}); upgrade agentkit"
    )
