"""The SQL stores' table layout, as numbered migrations.

A database records every version applied in `agentkit_schema_version` (one row each). On
open, a store applies the migrations newer than the database's version in one transaction
(PostgreSQL under an advisory lock, SQLite under its write lock), so two processes opening
an old database at once upgrade it once. A database newer than the code is refused.

Each migration is written for both dialects side by side, so the two layouts cannot drift
apart. `{p}` stands for the schema prefix of PostgreSQL's tables (empty for SQLite).
Migrations never change once released: a change of layout is a new migration.

Migration 4 also upgrades the data: what version 3 kept as sessions of reserved agent ids
(members, owner-created agents) becomes rows of the new tables, and each conversation
session gets its conversation row (its record stays in the session's metadata too, where
the per-run entries live).
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
    check: tuple[str, str] | None = None
    """A query (both dialects, `{p}` for the prefix) that finds a row only in a database
    this migration cannot upgrade, and the message to refuse it with (then nothing
    changes). It runs before the statements, in their transaction."""


class _SQLiteJSON:
    """What the data upgrade of migration 4 says differently in SQLite."""

    p = ""
    empty = "'{}'"
    new_id = "lower(hex(randomblob(16)))"

    def text(self, key: str, *path: str) -> str:
        return f"json_extract(metadata, '$.\"{key}\".{'.'.join(path)}')"

    def number(self, key: str, *path: str) -> str:
        return self.text(key, *path)

    def json(self, key: str, *path: str) -> str:
        return self.text(key, *path)  # an object comes out as its JSON text

    def is_object(self, key: str) -> str:
        # `CASE` reads the metadata only when it is JSON that SQLite accepts (a session's
        # metadata may hold NaN, which it does not).
        return (
            f"CASE WHEN json_valid(metadata) THEN json_type(metadata, '$.\"{key}\"') END = 'object'"
        )


class _PostgresJSON:
    """What the data upgrade of migration 4 says differently in PostgreSQL."""

    p = "{p}"  # the statements are formatted with the schema prefix
    empty = "'{{}}'"
    new_id = "md5(random()::text || clock_timestamp()::text)"

    def text(self, key: str, *path: str) -> str:
        steps = "".join(f" -> '{step}'" for step in path[:-1])
        return f"(metadata::json -> '{key}'{steps} ->> '{path[-1]}')"

    def number(self, key: str, *path: str) -> str:
        return f"{self.text(key, *path)}::double precision"

    def json(self, key: str, *path: str) -> str:
        steps = "".join(f" -> '{step}'" for step in path)
        return f"(metadata::json -> '{key}'{steps})::text"

    def is_object(self, key: str) -> str:
        # `json`, not `jsonb`: it takes any text `json.dumps` writes (NUL escapes too), and
        # `CASE` casts only the metadata that mentions the key.
        return (
            f"CASE WHEN metadata LIKE '%\"{key}\"%' "
            f"THEN json_typeof(metadata::json -> '{key}') END = 'object'"
        )


def _upgrade_records(d: _SQLiteJSON | _PostgresJSON) -> tuple[str, ...]:
    """Migration 4's data upgrade in one dialect: version 3 kept members and owner-made
    agents as sessions of reserved agent ids (`agentkit-machine:member`, `:agent`) and a
    conversation's record in its session's metadata (`agentkit.conversation`)."""
    p, member, agent, conversation = (
        d.p,
        "agentkit.member",
        "agentkit.agent",
        "agentkit.conversation",
    )
    sessions = f"{p}agentkit_sessions"
    return (
        # Members: a fresh id each, the token hash and role as they were.
        f"""INSERT INTO {p}agentkit_members (id, name, role, token_hash, created_at)
            SELECT {d.new_id}, {d.text(member, "name")}, {d.text(member, "role")},
                {d.text(member, "tokenHash")}, created_at
            FROM {sessions} WHERE agent_id = 'agentkit-machine:member' ORDER BY seq""",
        # Agents created by owners, with their definitions.
        f"""INSERT INTO {p}agentkit_agents
                (id, name, version, source, definition, created_at, updated_at)
            SELECT {d.new_id}, {d.text(agent, "definition", "name")}, 1, 'machine',
                {d.json(agent, "definition")}, created_at, updated_at
            FROM {sessions} WHERE agent_id = 'agentkit-machine:agent' ORDER BY seq""",
        # Every other agent a conversation names: the built-in one or a configured one.
        f"""INSERT INTO {p}agentkit_agents
                (id, name, version, source, definition, created_at, updated_at)
            SELECT {d.new_id}, used.name, 1,
                CASE WHEN used.name = 'rool' THEN 'builtin' ELSE 'configured' END, {d.empty},
                used.first, used.first
            FROM (
                SELECT agent_id AS name, min(created_at) AS first FROM {sessions}
                WHERE {d.is_object(conversation)} GROUP BY agent_id
            ) AS used
            WHERE NOT EXISTS (
                SELECT 1 FROM {p}agentkit_agents AS a
                WHERE a.name = used.name AND a.deleted_at IS NULL
            )
            ORDER BY used.first, used.name""",
        # Conversations: their agent's id, and their creator's member id; a creator who is
        # no member any more gets an id no member has, so no newcomer of that name
        # inherits their private conversations.
        f"""INSERT INTO {p}agentkit_conversations
                (id, agent_id, creator_id, visibility, name, instructions, created_at,
                 updated_at)
            SELECT s.id,
                (SELECT a.id FROM {p}agentkit_agents AS a
                 WHERE a.name = s.agent_id AND a.deleted_at IS NULL),
                coalesce(
                    (SELECT m.id FROM {p}agentkit_members AS m
                     WHERE m.name = s.creator AND m.removed_at IS NULL),
                    {d.new_id}),
                CASE WHEN s.visibility = 'shared' THEN 'shared' ELSE 'private' END,
                coalesce(s.name, ''), s.instructions,
                coalesce(nullif(s.created, 0), s.created_at), s.updated_at
            FROM (
                SELECT seq, id, agent_id, created_at, updated_at,
                    {d.text(conversation, "creator")} AS creator,
                    {d.text(conversation, "visibility")} AS visibility,
                    {d.text(conversation, "name")} AS name,
                    {d.text(conversation, "instructions")} AS instructions,
                    {d.number(conversation, "createdAt")} AS created
                FROM {sessions} WHERE {d.is_object(conversation)}
            ) AS s
            ORDER BY s.seq""",
        # The member and agent sessions have become records.
        f"DELETE FROM {sessions} "
        "WHERE agent_id IN ('agentkit-machine:member', 'agentkit-machine:agent')",
    )


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
    Migration(
        4,
        "members, agents and conversations as records; runs paged by time",
        # Ids are never reused: a removed member or deleted agent keeps its row, and only
        # live names are unique (partial unique indexes). Conversations are read a page
        # at a time by keyset (created_at, id): the shared ones and a viewer's private
        # ones are two ranges of their own indexes. On PostgreSQL, ids compare in code
        # point order (COLLATE "C") like SQLite's and Python's, whatever the locale.
        sqlite=(
            """CREATE TABLE agentkit_members (
                seq INTEGER PRIMARY KEY,
                id TEXT NOT NULL UNIQUE,
                name TEXT NOT NULL,
                role TEXT NOT NULL,
                token_hash TEXT NOT NULL UNIQUE,
                created_at REAL NOT NULL,
                removed_at REAL)""",
            "CREATE UNIQUE INDEX agentkit_members_name ON agentkit_members (name) "
            "WHERE removed_at IS NULL",
            "CREATE INDEX agentkit_members_live ON agentkit_members (created_at, id) "
            "WHERE removed_at IS NULL",
            """CREATE TABLE agentkit_agents (
                seq INTEGER PRIMARY KEY,
                id TEXT NOT NULL UNIQUE,
                name TEXT NOT NULL,
                version INTEGER NOT NULL,
                source TEXT NOT NULL,
                definition TEXT NOT NULL,
                created_at REAL NOT NULL,
                updated_at REAL NOT NULL,
                deleted_at REAL)""",
            "CREATE UNIQUE INDEX agentkit_agents_name ON agentkit_agents (name) "
            "WHERE deleted_at IS NULL",
            "CREATE INDEX agentkit_agents_live ON agentkit_agents (created_at, id) "
            "WHERE deleted_at IS NULL",
            """CREATE TABLE agentkit_conversations (
                id TEXT NOT NULL PRIMARY KEY
                    REFERENCES agentkit_sessions (id) ON DELETE CASCADE,
                agent_id TEXT NOT NULL,
                creator_id TEXT NOT NULL,
                visibility TEXT NOT NULL,
                name TEXT NOT NULL,
                instructions TEXT,
                created_at REAL NOT NULL,
                updated_at REAL NOT NULL)""",
            "CREATE INDEX agentkit_conversations_visibility "
            "ON agentkit_conversations (visibility, created_at, id)",
            "CREATE INDEX agentkit_conversations_creator "
            "ON agentkit_conversations (creator_id, created_at, id)",
            "CREATE INDEX agentkit_runs_created ON agentkit_runs (created_at, id)",
            *_upgrade_records(_SQLiteJSON()),
        ),
        postgres=(
            """CREATE TABLE {p}agentkit_members (
                seq bigserial PRIMARY KEY,
                id text COLLATE "C" NOT NULL UNIQUE,
                name text NOT NULL,
                role text NOT NULL,
                token_hash text NOT NULL UNIQUE,
                created_at double precision NOT NULL,
                removed_at double precision)""",
            "CREATE UNIQUE INDEX agentkit_members_name ON {p}agentkit_members (name) "
            "WHERE removed_at IS NULL",
            "CREATE INDEX agentkit_members_live ON {p}agentkit_members (created_at, id) "
            "WHERE removed_at IS NULL",
            """CREATE TABLE {p}agentkit_agents (
                seq bigserial PRIMARY KEY,
                id text COLLATE "C" NOT NULL UNIQUE,
                name text NOT NULL,
                version integer NOT NULL,
                source text NOT NULL,
                definition text NOT NULL,
                created_at double precision NOT NULL,
                updated_at double precision NOT NULL,
                deleted_at double precision)""",
            "CREATE UNIQUE INDEX agentkit_agents_name ON {p}agentkit_agents (name) "
            "WHERE deleted_at IS NULL",
            "CREATE INDEX agentkit_agents_live ON {p}agentkit_agents (created_at, id) "
            "WHERE deleted_at IS NULL",
            """CREATE TABLE {p}agentkit_conversations (
                id text COLLATE "C" NOT NULL PRIMARY KEY
                    REFERENCES {p}agentkit_sessions (id) ON DELETE CASCADE,
                agent_id text NOT NULL,
                creator_id text NOT NULL,
                visibility text NOT NULL,
                name text NOT NULL,
                instructions text,
                created_at double precision NOT NULL,
                updated_at double precision NOT NULL)""",
            "CREATE INDEX agentkit_conversations_visibility "
            "ON {p}agentkit_conversations (visibility, created_at, id)",
            "CREATE INDEX agentkit_conversations_creator "
            "ON {p}agentkit_conversations (creator_id, created_at, id)",
            'CREATE INDEX agentkit_runs_created ON {p}agentkit_runs (created_at, id COLLATE "C")',
            *_upgrade_records(_PostgresJSON()),
        ),
    ),
    Migration(
        5,
        "rooms in production: what caused an event, delegation deadlines and attempts",
        # New columns are nullable or have a default, so the rows of version 4 stay as
        # they are: their events caused by nothing known, their delegations without a
        # deadline and never taken (`attempts` 0). The statuses `cancelled` and
        # `expired` need no change of layout: `status` has no CHECK constraint.
        # The overdue index holds only the delegations still under way that have a
        # deadline: the expiry sweep reads the earliest of them, however many ended ones
        # the table keeps. A room's delegations are listed by (created_at, id), in code
        # point order on PostgreSQL (COLLATE "C") as in SQLite and Python.
        sqlite=(
            "ALTER TABLE agentkit_room_events ADD COLUMN caused_by INTEGER",
            "ALTER TABLE agentkit_room_events ADD COLUMN run_id TEXT",
            "ALTER TABLE agentkit_delegations ADD COLUMN deadline REAL",
            "ALTER TABLE agentkit_delegations ADD COLUMN attempts INTEGER NOT NULL DEFAULT 0",
            "CREATE INDEX agentkit_delegations_overdue ON agentkit_delegations (deadline) "
            "WHERE status IN ('pending', 'running') AND deadline IS NOT NULL",
            "CREATE INDEX agentkit_delegations_listed "
            "ON agentkit_delegations (room_id, created_at, id)",
        ),
        postgres=(
            "ALTER TABLE {p}agentkit_room_events ADD COLUMN caused_by bigint, "
            "ADD COLUMN run_id text",
            "ALTER TABLE {p}agentkit_delegations ADD COLUMN deadline double precision, "
            "ADD COLUMN attempts integer NOT NULL DEFAULT 0",
            "CREATE INDEX agentkit_delegations_overdue ON {p}agentkit_delegations (deadline) "
            "WHERE status IN ('pending', 'running') AND deadline IS NOT NULL",
            "CREATE INDEX agentkit_delegations_listed "
            'ON {p}agentkit_delegations (room_id, created_at, id COLLATE "C")',
        ),
    ),
    Migration(
        6,
        "at most one running run per session, enforced by the database",
        # A partial unique index over the running runs: on PostgreSQL a run's start is a
        # single INSERT whose unique violation (of this index, by name) means the session
        # is busy, with no session lock or busy check before it; a second start waits on
        # the first's uncommitted row and fails once it commits. SQLite keeps its check
        # (its writes are serialised anyway); the index makes its layout the same.
        # Code of every earlier version already kept one running run per session, so the
        # index builds on any database it wrote; one that holds two is refused (`check`).
        sqlite=(
            "CREATE UNIQUE INDEX agentkit_runs_one_running ON agentkit_runs (session_id) "
            "WHERE status = 'running'",
        ),
        postgres=(
            "CREATE UNIQUE INDEX agentkit_runs_one_running ON {p}agentkit_runs (session_id) "
            "WHERE status = 'running'",
        ),
        check=(
            "SELECT session_id FROM {p}agentkit_runs WHERE status = 'running' "
            "GROUP BY session_id HAVING count(*) > 1 LIMIT 1",
            "a session has more than one run marked running; end all but one "
            "(UPDATE agentkit_runs SET status = 'interrupted' ...) and open the store again",
        ),
    ),
    Migration(
        7,
        "queued prompts: what a busy conversation is prompted with, until its run starts",
        # Self-contained: one new table and its indexes. A queued prompt's id is the id of
        # the run it becomes (runs' ids are unique: its start is its claim). A session's
        # queue is read in `seq` order; the sweep finds the sessions with a waiting prompt
        # through the partial index, however many dropped rows the table keeps.
        sqlite=(
            """CREATE TABLE agentkit_queued_prompts (
                seq INTEGER PRIMARY KEY,
                id TEXT NOT NULL UNIQUE,
                session_id TEXT NOT NULL REFERENCES agentkit_sessions (id) ON DELETE CASCADE,
                member_id TEXT NOT NULL,
                prompt TEXT NOT NULL,
                created_at REAL NOT NULL,
                options TEXT NOT NULL,
                status TEXT NOT NULL,
                error TEXT)""",
            "CREATE INDEX agentkit_queued_prompts_session "
            "ON agentkit_queued_prompts (session_id, seq)",
            "CREATE INDEX agentkit_queued_prompts_waiting ON agentkit_queued_prompts (seq) "
            "WHERE status = 'queued'",
        ),
        postgres=(
            """CREATE TABLE {p}agentkit_queued_prompts (
                seq bigserial PRIMARY KEY,
                id text COLLATE "C" NOT NULL UNIQUE,
                session_id text NOT NULL REFERENCES {p}agentkit_sessions (id) ON DELETE CASCADE,
                member_id text NOT NULL,
                prompt text NOT NULL,
                created_at double precision NOT NULL,
                options text NOT NULL,
                status text NOT NULL,
                error text)""",
            "CREATE INDEX agentkit_queued_prompts_session "
            "ON {p}agentkit_queued_prompts (session_id, seq)",
            "CREATE INDEX agentkit_queued_prompts_waiting ON {p}agentkit_queued_prompts (seq) "
            "WHERE status = 'queued'",
        ),
    ),
)


def _waiting_runs() -> Migration:
    """Runs that wait for a person (docs/human-in-the-loop.md), as one self-contained entry."""
    # A waiting run keeps its pending request's id, its continuation (JSON) and its
    # deadline; `request_id` stays once decided, so a late second decision is told it
    # came too late. A waiting run holds its session like a running one: the partial
    # unique index of migration 6 is rebuilt (same name) over both statuses. The overdue
    # index holds only the waiting runs that have a deadline (the deadline sweep's read).
    return Migration(
        8,
        "runs waiting for a person: their pending request, continuation and deadline",
        sqlite=(
            "ALTER TABLE agentkit_runs ADD COLUMN request_id TEXT",
            "ALTER TABLE agentkit_runs ADD COLUMN pending TEXT",
            "ALTER TABLE agentkit_runs ADD COLUMN deadline REAL",
            "DROP INDEX agentkit_runs_one_running",
            "CREATE UNIQUE INDEX agentkit_runs_one_running ON agentkit_runs (session_id) "
            "WHERE status IN ('running', 'waiting')",
            "CREATE INDEX agentkit_runs_waiting ON agentkit_runs (deadline) "
            "WHERE status = 'waiting' AND deadline IS NOT NULL",
        ),
        postgres=(
            "ALTER TABLE {p}agentkit_runs ADD COLUMN request_id text, "
            "ADD COLUMN pending text, ADD COLUMN deadline double precision",
            "DROP INDEX {p}agentkit_runs_one_running",
            "CREATE UNIQUE INDEX agentkit_runs_one_running ON {p}agentkit_runs (session_id) "
            "WHERE status IN ('running', 'waiting')",
            "CREATE INDEX agentkit_runs_waiting ON {p}agentkit_runs (deadline) "
            "WHERE status = 'waiting' AND deadline IS NOT NULL",
        ),
    )


MIGRATIONS = (*MIGRATIONS, _waiting_runs())

SCHEMA_VERSION = MIGRATIONS[-1].version
"""The version of the table layout this code writes (kept in `agentkit_schema_version`)."""


def newer_database_message(where: str, version: int) -> str:
    """The error for a database whose layout is newer than this code knows."""
    return (
        f"{where}: database schema version {version} is newer than this agentkit supports "
        f"({SCHEMA_VERSION}); upgrade agentkit"
    )
