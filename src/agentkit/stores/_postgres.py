"""The scale-out store: PostgreSQL, shared by any number of processes and hosts.

psycopg is imported only when a store first connects (extra `typed-agentkit[postgres]`).
The connections and the two ways of running an operation (asyncio's driver, or worker
threads elsewhere) are `_pg_connections`'; this module has the statements and the
operations, each written once against that module's `Connection`.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar, cast

from agentkit.errors import OffsetError
from agentkit.messages import Message
from agentkit.stores._base import (
    ConversationRecord,
    MemberRecord,
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
from agentkit.stores._codec import load_message, run_from_row, session_from_row
from agentkit.stores._migrations import MIGRATIONS, SCHEMA_VERSION, newer_database_message
from agentkit.stores._notify import Notifications
from agentkit.stores._pg_connections import Connection, ConnectionPool
from agentkit.stores._queue_sql import PostgresQueue
from agentkit.stores._records import conversation_from_row, member_from_row
from agentkit.stores._rooms import TypeFilter, like_prefix, state_error
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
    Dialect,
    RoomEventColumns,
    SQLStore,
    count_runs_sql,
    delegation_upsert,
    delegations_where,
    may_finish,
    run_params,
)

__all__ = ["SCHEMA_VERSION", "PostgresStore"]

_T = TypeVar("_T")

_ENDS = tuple(
    sum(len(columns.split(", ")) for columns in groups)
    for groups in (
        (MEMBER_COLUMNS,),
        (MEMBER_COLUMNS, CONVERSATION_COLUMNS),
        (MEMBER_COLUMNS, CONVERSATION_COLUMNS, SESSION_COLUMNS),
    )
)  # where `member_and_conversation`'s row's member, conversation and session end
_NAME_BYTES = 63  # PostgreSQL's longest identifier, and so channel name
_TOPIC_BYTES = 7000  # a topic with a longer id names the whole kind instead (`run:*`)
_PAYLOAD_BYTES = 7900  # what `notify` sends at most; PostgreSQL's limit is just under 8000


def _quote(identifier: str) -> str:
    return '"' + identifier.replace('"', '""') + '"'


def channel_name(schema: str | None) -> str:
    """The notification channel of the store on `schema`: `agentkit`, or
    `agentkit.<schema>` cut to 63 bytes. A cut name ends with a hash of the whole one,
    so two long schema names that begin alike still get channels of their own."""
    name = f"agentkit.{schema}" if schema else "agentkit"
    raw = name.encode()
    if len(raw) <= _NAME_BYTES:
        return name
    digest = hashlib.sha256(raw).hexdigest()[:10]
    head = raw[: _NAME_BYTES - len(digest) - 1].decode(errors="ignore")  # whole characters
    return f"{head}~{digest}"


def _topic(kind: str, ident: str) -> str:
    """`kind:ident`; `kind:*` ("look at every one") when the id would make it too long."""
    topic = f"{kind}:{ident}"
    return topic if len(topic.encode()) <= _TOPIC_BYTES else f"{kind}:*"


def _notifying(write: str, columns: str = "1") -> str:
    """`write` (an INSERT, UPDATE or DELETE) as a statement that also notifies, when it
    changed rows, the topics of a text array on a channel: two more parameters (see
    `_Postgres._announce`). It changes no row: no notification. Its rows: `columns` of
    each changed row, and the notification's (empty) value, once per topic.

    The notifications belong to the statement's transaction, so they go out if and when
    it commits; riding on a statement the transaction runs anyway, they cost no round
    trip (a statement of their own costs a write about 15%: bench/pg_drivers.py). The
    repeats for several rows are free: PostgreSQL sends a transaction's equal
    notifications once."""
    return (
        f"WITH changed AS ({write} RETURNING {columns}) "
        f"SELECT {columns}, pg_notify(%s, topic) FROM changed CROSS JOIN unnest(%s::text[]) "
        "AS topic"
    )


class _SQL:
    """Every statement, with table names qualified by the store's schema."""

    def __init__(self, schema: str | None) -> None:
        p = f"{_quote(schema)}." if schema else ""
        sessions, transcript = f"{p}agentkit_sessions", f"{p}agentkit_transcript"
        runs, events = f"{p}agentkit_runs", f"{p}agentkit_events"
        self.runs_table = runs
        version = f"{p}agentkit_schema_version"
        session_cols, run_cols = SESSION_COLUMNS, RUN_COLUMNS
        self.create_schema = f"CREATE SCHEMA IF NOT EXISTS {_quote(schema)}" if schema else None
        self.create_version = f"CREATE TABLE IF NOT EXISTS {version} (version integer NOT NULL)"
        self.migrations = [
            (
                m.version,
                [statement.format(p=p) for statement in m.postgres],
                None if m.check is None else (m.check[0].format(p=p), m.check[1]),
            )
            for m in MIGRATIONS
        ]
        self.get_version = f"SELECT max(version) FROM {version}"
        self.set_version = f"INSERT INTO {version} VALUES (%s)"
        # Every write notifies through one of its statements (`_notifying`); this one is
        # `PostgresStore.notify`'s.
        self.notify = "SELECT pg_notify(%s, payload) FROM unnest(%s::text[]) AS payload"
        self.insert_session = _notifying(
            f"INSERT INTO {sessions} ({session_cols}) VALUES (%s, %s, %s, %s, %s)"
        )
        self.get_session = f"SELECT {session_cols} FROM {sessions} WHERE id = %s"
        self.lock_session = f"SELECT 1 FROM {sessions} WHERE id = %s FOR UPDATE"
        self.update_session = _notifying(
            f"UPDATE {sessions} SET metadata = %s, updated_at = %s WHERE id = %s", session_cols
        )
        self.touch_session = _notifying(f"UPDATE {sessions} SET updated_at = %s WHERE id = %s")
        self.list_sessions = f"SELECT {session_cols} FROM {sessions} ORDER BY seq"
        self.list_agent_sessions = (
            f"SELECT {session_cols} FROM {sessions} WHERE agent_id = %s ORDER BY seq"
        )
        self.delete_events_of_session = (
            f"DELETE FROM {events} WHERE run_id IN (SELECT id FROM {runs} WHERE session_id = %s)"
        )
        self.delete_session = _notifying(f"DELETE FROM {sessions} WHERE id = %s")
        # The transcript and the runs go with the session (ON DELETE CASCADE); the events
        # are not the runs' (no foreign key), so they go first.
        self.session_deletion = (
            self.lock_session,
            self.delete_events_of_session,
            self.delete_session,
        )
        # The session comes along: no row means no session, one NULL an empty transcript.
        self.load_transcript = (
            f"SELECT t.data FROM {sessions} AS s LEFT JOIN {transcript} AS t "
            "ON t.session_id = s.id WHERE s.id = %s ORDER BY t.pos"
        )
        self.transcript_end = (
            f"SELECT coalesce(max(pos) + 1, 0) FROM {transcript} WHERE session_id = %s"
        )
        self.append_transcript = (
            f"INSERT INTO {transcript} (session_id, pos, data) "
            "SELECT %s, %s + n - 1, d FROM unnest(%s::text[]) WITH ORDINALITY AS u (d, n)"
        )
        self.truncate_transcript = _notifying(
            f"DELETE FROM {transcript} WHERE session_id = %s AND pos >= %s"
        )
        self.insert_run = _notifying(
            f"INSERT INTO {runs} ({run_cols}) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)"
        )
        self.running_in_session = (
            f"SELECT 1 FROM {runs} WHERE session_id = %s AND status = 'running' LIMIT 1"
        )
        # The session comes along for the notification of the run's end.
        self.lock_run = (
            f"SELECT status, owner, lease_expires_at, session_id FROM {runs} "
            "WHERE id = %s FOR UPDATE"
        )
        # Shared with other appends, exclusive with `lock_run`: no event lands after the end.
        self.run_status = f"SELECT status FROM {runs} WHERE id = %s FOR SHARE"
        self.finish_run = _notifying(
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
        # One writer per run log at a time, across processes and hosts.
        self.lock_events = "SELECT pg_advisory_xact_lock(hashtext('agentkit.events ' || %s))"
        self.events_end = f"SELECT coalesce(max(pos), -1) FROM {events} WHERE run_id = %s"
        self.append_events = _notifying(
            f"INSERT INTO {events} (run_id, pos, data) "
            "SELECT %s, p, d FROM unnest(%s::bigint[], %s::text[]) AS u (p, d)"
        )
        self.read_events = (
            f"SELECT pos, data FROM {events} WHERE run_id = %s AND pos > %s ORDER BY pos"
        )
        # --- one-round-trip writes: `create_run`, `append_events`, `append_step`, `finish_run`
        # A run's start: the run, its first events and the notifications in one statement,
        # its own transaction. No lock or check before it: the session's foreign key
        # refuses a missing session, and the partial unique index of migration 6
        # (`agentkit_runs_one_running`) a second running run (a concurrent start waits on
        # the first's row and fails once that commits).
        casts = [
            "text",
            "text",
            "text",
            "text",
            "float8",
            "float8",
            "text",
            "float8",
            "float8",
            "text",
        ]
        values = ", ".join(f"%s::{cast}" for cast in casts)
        self.start_run = (
            f"WITH ins AS (INSERT INTO {runs} ({run_cols}) VALUES ({values}) RETURNING id), "
            f"ev AS (INSERT INTO {events} (run_id, pos, data) SELECT ins.id, u.p, u.d FROM ins "
            "CROSS JOIN unnest(%s::bigint[], %s::text[]) AS u (p, d) RETURNING 1), "
            "note AS (SELECT pg_notify(%s, topic) FROM ins "
            "CROSS JOIN unnest(%s::text[]) AS topic) "
            "SELECT (SELECT count(*) FROM note), (SELECT count(*) FROM ev)"
        )
        # The checks every guarded write starts with, on the run's row locked FOR UPDATE
        # (which excludes every other writer of the run's log: the transactional paths
        # take it FOR SHARE, or FOR UPDATE to end it): `g` has one row, `ok` says
        # whether the write may go ahead. Parameters: run id, whether a missing run is
        # refused, whether only a running run is written, the first new offset.
        guard = (
            f"r AS (SELECT status, owner, lease_expires_at, session_id FROM {runs} "
            "WHERE id = %s FOR UPDATE), "
            f"last AS (SELECT coalesce(max(pos), -1) AS pos FROM {events} WHERE run_id = %s), "
            "g AS (SELECT (SELECT status FROM r) AS status, (SELECT pos FROM last) AS last, "
            "(SELECT session_id FROM r) AS session_id, EXISTS (SELECT 1 FROM r) AS found, "
            "(SELECT owner FROM r) AS holder, (SELECT lease_expires_at FROM r) AS lease_end)"
        )
        insert_events = (
            f"ev AS (INSERT INTO {events} (run_id, pos, data) SELECT %s, u.p, u.d FROM ok "
            "CROSS JOIN unnest(%s::bigint[], %s::text[]) AS u (p, d) RETURNING 1)"
        )
        # Append to a run's log: refused (nothing written) when the run has ended or
        # the offsets do not follow the stored ones; a missing run is written to.
        self.guarded_append = (
            f"WITH {guard.replace('%s', '%(run)s')}, "
            "ok AS (SELECT 1 FROM g WHERE (g.status IS NULL OR g.status = 'running') "
            "AND (%(first)s::bigint IS NULL OR g.last < %(first)s::bigint)), "
            + insert_events.replace("%s, u.p", "%(run)s, u.p")
            .replace("%s::bigint[]", "%(offsets)s::bigint[]")
            .replace("%s::text[]", "%(data)s::text[]")
            + ", note AS (SELECT pg_notify(%(channel)s, topic) FROM ok "
            "CROSS JOIN unnest(%(topics)s::text[]) AS topic) "
            "SELECT g.status, g.last, (SELECT count(*) FROM note), (SELECT count(*) FROM ev) "
            "FROM g"
        )
        # A step: the transcript's messages and the run's events, refused like an append,
        # and when the session is missing; the session's `updated_at` is touched.
        self.guarded_step = (
            f"WITH {guard.replace('%s', '%(run)s')}, "
            f"s AS (SELECT 1 FROM {sessions} WHERE id = %(session)s), "
            "ok AS (SELECT 1 FROM g WHERE (g.status IS NULL OR g.status = 'running') "
            "AND (%(first)s::bigint IS NULL OR g.last < %(first)s::bigint) "
            "AND EXISTS (SELECT 1 FROM s)), "
            f"touch AS (UPDATE {sessions} SET updated_at = %(now)s WHERE id = %(session)s "
            "AND EXISTS (SELECT 1 FROM ok) RETURNING 1), "
            f"tr AS (INSERT INTO {transcript} (session_id, pos, data) "
            f"SELECT %(session)s, (SELECT coalesce(max(pos) + 1, 0) FROM {transcript} "
            "WHERE session_id = %(session)s) + n - 1, d FROM ok "
            "CROSS JOIN unnest(%(messages)s::text[]) WITH ORDINALITY AS u (d, n) RETURNING 1), "
            + insert_events.replace("%s, u.p", "%(run)s, u.p")
            .replace("%s::bigint[]", "%(offsets)s::bigint[]")
            .replace("%s::text[]", "%(data)s::text[]")
            + ", note AS (SELECT pg_notify(%(channel)s, topic) FROM ok "
            "CROSS JOIN unnest(%(topics)s::text[]) AS topic) "
            "SELECT g.status, g.last, EXISTS (SELECT 1 FROM s), (SELECT count(*) FROM note), "
            "(SELECT count(*) FROM ev), (SELECT count(*) FROM tr), (SELECT count(*) FROM touch) "
            "FROM g"
        )
        # A run's end, on `may_finish`'s terms, with its last events; the session's
        # topic is made here, from the run's row (`_topic`'s rule in SQL).
        self.guarded_finish = (
            f"WITH {guard.replace('%s', '%(run)s')}, "
            "ok AS (SELECT 1 FROM g WHERE g.status = 'running' "
            "AND (%(owner)s::text IS NULL OR g.holder = %(owner)s::text) "
            "AND (%(expired_by)s::float8 IS NULL OR g.lease_end IS NULL "
            "OR g.lease_end < %(expired_by)s::float8) "
            "AND (%(first)s::bigint IS NULL OR g.last < %(first)s::bigint)), "
            + insert_events.replace("%s, u.p", "%(run)s, u.p")
            .replace("%s::bigint[]", "%(offsets)s::bigint[]")
            .replace("%s::text[]", "%(data)s::text[]")
            + f", up AS (UPDATE {runs} SET status = %(status)s, finished_at = %(finished_at)s, "
            "error = %(error)s WHERE id = %(run)s AND EXISTS (SELECT 1 FROM ok) RETURNING 1), "
            "note AS (SELECT pg_notify(%(channel)s, topic) FROM up CROSS JOIN g CROSS JOIN "
            "unnest(ARRAY[%(run_topic)s::text, CASE WHEN octet_length('session:' || g.session_id) "
            f"<= {_TOPIC_BYTES} THEN 'session:' || g.session_id ELSE 'session:*' END]) "
            "AS topic) "
            "SELECT g.status, g.holder, g.lease_end, g.last, (SELECT count(*) FROM up), "
            "(SELECT count(*) FROM note), (SELECT count(*) FROM ev) FROM g"
        )
        # --- waiting runs ---
        self.lock_run_state = (
            f"SELECT status, owner, session_id, request_id FROM {runs} WHERE id = %s FOR UPDATE"
        )
        self.suspend_run = _notifying(
            f"UPDATE {runs} SET status = 'waiting', owner = NULL, heartbeat_at = NULL, "
            "lease_expires_at = NULL, request_id = %s, pending = %s, deadline = %s WHERE id = %s"
        )
        self.lock_waiting = f"SELECT {WAITING_COLUMNS}, status FROM {runs} WHERE id = %s FOR UPDATE"
        self.resume_run = _notifying(
            f"UPDATE {runs} SET status = 'running', owner = %s, heartbeat_at = %s, "
            "lease_expires_at = %s, pending = NULL, deadline = NULL WHERE id = %s"
        )
        self.get_waiting = (
            f"SELECT {WAITING_COLUMNS} FROM {runs} WHERE id = %s AND status = 'waiting'"
        )
        # The terms of the `agentkit_runs_waiting` index's WHERE, so that the planner uses it.
        self.overdue_requests = (
            f"SELECT {WAITING_COLUMNS} FROM {runs} WHERE status = 'waiting' "
            'AND deadline IS NOT NULL AND deadline <= %s ORDER BY deadline, id COLLATE "C" '
            "LIMIT %s"
        )
        # --- rooms ---
        rooms, room_events = f"{p}agentkit_rooms", f"{p}agentkit_room_events"
        grants, cursors = f"{p}agentkit_room_grants", f"{p}agentkit_room_cursors"
        delegations = f"{p}agentkit_delegations"
        self.insert_room = _notifying(
            f"INSERT INTO {rooms} ({ROOM_COLUMNS}) VALUES (%s, %s, %s, %s, %s)"
        )
        self.get_room = f"SELECT {ROOM_COLUMNS} FROM {rooms} WHERE id = %s"
        self.list_rooms = f"SELECT {ROOM_COLUMNS} FROM {rooms} ORDER BY seq"
        self.update_room = _notifying(
            f"UPDATE {rooms} SET name = coalesce(%s, name), metadata = coalesce(%s, metadata) "
            "WHERE id = %s",
            ROOM_COLUMNS,
        )
        self.lock_room = f"SELECT 1 FROM {rooms} WHERE id = %s FOR UPDATE"
        self.delete_room_events = f"DELETE FROM {room_events} WHERE room_id = %s"
        self.delete_room = _notifying(f"DELETE FROM {rooms} WHERE id = %s")
        # The lock waits for an append in flight; one that comes after finds no room.
        # Grants, cursors and delegations go with the room (ON DELETE CASCADE).
        self.room_deletion = (self.lock_room, self.delete_room_events, self.delete_room)
        # The update takes the room's row lock until the transaction ends: appenders to
        # one room take turns, in every process, and commit in position order.
        self.bump_head = _notifying(f"UPDATE {rooms} SET head = head + %s WHERE id = %s", "head")
        self.room_head = f"SELECT head FROM {rooms} WHERE id = %s"
        self.insert_room_events = (
            f"INSERT INTO {room_events} (room_id, {ROOM_EVENT_COLUMNS}) "
            "SELECT %s, %s + n, i, t, a, d, c, b, r FROM unnest("
            "%s::text[], %s::text[], %s::text[], %s::text[], %s::float8[], %s::bigint[], "
            "%s::text[]) WITH ORDINALITY AS u (i, t, a, d, c, b, r, n)"
        )
        self.read_room_events = (
            f"SELECT {ROOM_EVENT_COLUMNS} FROM {room_events} WHERE room_id = %s AND pos > %s"
        )
        self.upsert_delegation = delegation_upsert(delegations, "%s")
        # Read under the room's row lock, which every change of a delegation takes.
        self.lock_delegation = (
            f"SELECT status FROM {delegations} WHERE room_id = %s AND id = %s FOR UPDATE"
        )
        self.set_grant = _notifying(
            f"INSERT INTO {grants} (room_id, {GRANT_COLUMNS}) VALUES (%s, %s, %s, %s) "
            "ON CONFLICT (room_id, participant) DO UPDATE SET "
            "read_types = excluded.read_types, publish_types = excluded.publish_types"
        )
        self.delete_grant = _notifying(
            f"DELETE FROM {grants} WHERE room_id = %s AND participant = %s"
        )
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
        self.list_delegations = f"SELECT {DELEGATION_COLUMNS} FROM {delegations} WHERE "
        # The terms of the overdue index's WHERE, so that the planner uses it.
        self.overdue_delegations = (
            f"SELECT {DELEGATION_COLUMNS} FROM {delegations} "
            "WHERE status IN ('pending', 'running') AND deadline IS NOT NULL "
            'AND deadline <= %s ORDER BY deadline, room_id COLLATE "C", id COLLATE "C" LIMIT %s'
        )
        # --- records ---
        members, agents = f"{p}agentkit_members", f"{p}agentkit_agents"
        conversations = f"{p}agentkit_conversations"
        self.insert_member = f"INSERT INTO {members} ({MEMBER_COLUMNS}) VALUES ({_marks(6)})"
        self.get_member = f"SELECT {MEMBER_COLUMNS} FROM {members} WHERE id = %s"
        self.find_member = (
            f"SELECT {MEMBER_COLUMNS} FROM {members} WHERE name = %s AND removed_at IS NULL"
        )
        self.member_by_token = (
            f"SELECT {MEMBER_COLUMNS} FROM {members} WHERE token_hash = %s AND removed_at IS NULL"
        )
        # A request's member, with the conversation it names and its session, read
        # together (`PostgresStore.member_and_conversation`).
        prefixed = ", ".join(
            f"{alias}.{column}"
            for alias, columns in (
                ("m", MEMBER_COLUMNS),
                ("c", CONVERSATION_COLUMNS),
                ("s", SESSION_COLUMNS),
            )
            for column in columns.split(", ")
        )
        # What a prompt reads of a conversation under its lock, in one statement
        # (`PostgresStore.conversation_state`): the session, its runs in order, the
        # transcript's length and its last message.
        self.conversation_state = (
            f"SELECT {', '.join('s.' + c for c in SESSION_COLUMNS.split(', '))}, "
            f"(SELECT coalesce(json_agg(json_build_array({run_cols}) ORDER BY seq), '[]') "
            f"FROM {runs} WHERE session_id = s.id), "
            f"(SELECT count(*) FROM {transcript} WHERE session_id = s.id), "
            f"(SELECT data FROM {transcript} WHERE session_id = s.id ORDER BY pos DESC LIMIT 1) "
            f"FROM {sessions} AS s WHERE s.id = %s"
        )
        self.member_and_conversation = (
            f"SELECT {prefixed} FROM {members} AS m "
            f"LEFT JOIN {p}agentkit_conversations AS c ON c.id = %s "
            f"LEFT JOIN {sessions} AS s ON s.id = c.id "
            "WHERE m.token_hash = %s AND m.removed_at IS NULL"
        )
        self.update_member = (
            f"UPDATE {members} SET role = coalesce(%s, role), "
            "token_hash = coalesce(%s, token_hash) WHERE id = %s AND removed_at IS NULL "
            f"RETURNING {MEMBER_COLUMNS}"
        )
        self.remove_member = (
            f"UPDATE {members} SET removed_at = %s WHERE id = %s AND removed_at IS NULL RETURNING 1"
        )
        self.members_page = _pages(MEMBER_COLUMNS, members, "removed_at IS NULL")
        self.insert_agent = f"INSERT INTO {agents} ({AGENT_COLUMNS}) VALUES ({_marks(8)})"
        self.get_agent = f"SELECT {AGENT_COLUMNS} FROM {agents} WHERE id = %s"
        self.find_agent = (
            f"SELECT {AGENT_COLUMNS} FROM {agents} WHERE name = %s AND deleted_at IS NULL"
        )
        self.replace_agent = (
            f"UPDATE {agents} SET definition = %s, version = version + 1, updated_at = %s "
            f"WHERE id = %s AND deleted_at IS NULL RETURNING {AGENT_COLUMNS}"
        )
        self.delete_agent = (
            f"UPDATE {agents} SET deleted_at = %s WHERE id = %s AND deleted_at IS NULL RETURNING 1"
        )
        self.agents_page = _pages(AGENT_COLUMNS, agents, "deleted_at IS NULL")
        self.insert_conversation = (
            f"INSERT INTO {conversations} ({CONVERSATION_COLUMNS}) VALUES ({_marks(8)})"
        )
        self.get_conversation = f"SELECT {CONVERSATION_COLUMNS} FROM {conversations} WHERE id = %s"
        # A fork copies inside the database: the transcript's first messages, then the
        # ended runs (new id, old id pairs, in order: `seq` keeps their order) and their
        # events.
        self.fork_transcript = (
            f"INSERT INTO {transcript} (session_id, pos, data) "
            f"SELECT %s, pos, data FROM {transcript} WHERE session_id = %s "
            "AND pos < coalesce(%s::integer, pos + 1)"
        )
        fork_pairs = "unnest(%s::text[], %s::text[]) WITH ORDINALITY AS m (old, new, n)"
        self.fork_runs = (
            f"INSERT INTO {runs} ({run_cols}) SELECT m.new, %s, r.agent_id, r.status, "
            "r.created_at, r.finished_at, r.owner, r.heartbeat_at, r.lease_expires_at, r.error "
            f"FROM {fork_pairs} JOIN {runs} AS r ON r.id = m.old "
            "WHERE r.session_id = %s AND r.status NOT IN ('running', 'waiting') ORDER BY m.n"
        )
        self.fork_events = (
            f"INSERT INTO {events} (run_id, pos, data) SELECT m.new, e.pos, e.data "
            f"FROM {fork_pairs} JOIN {events} AS e ON e.run_id = m.old"
        )
        self.update_conversation = _notifying(
            f"UPDATE {conversations} SET updated_at = %s, name = coalesce(%s, name), "
            "visibility = coalesce(%s, visibility) WHERE id = %s",
            CONVERSATION_COLUMNS,
        )
        # Two ranges read newest first, each at most `limit` long: the shared
        # conversations (visibility index) and the viewer's others (creator index).
        self.conversations_page = tuple(
            f"(SELECT {CONVERSATION_COLUMNS} FROM {conversations} "
            f"WHERE visibility = 'shared'{before} {_NEWEST} LIMIT %s) UNION ALL "
            f"(SELECT {CONVERSATION_COLUMNS} FROM {conversations} "
            f"WHERE creator_id = %s AND visibility <> 'shared'{before} {_NEWEST} LIMIT %s) "
            f"{_NEWEST} LIMIT %s"
            for before in ("", ' AND (created_at, id) < (%s, %s COLLATE "C")')
        )
        run_cols_of_r = ", ".join(f"r.{column}" for column in RUN_COLUMNS.split(", "))
        # A run is readable in a shared conversation, in the viewer's own, and (with
        # `others`) outside every conversation.
        self.readable_runs = (
            f"SELECT {run_cols_of_r} FROM {runs} AS r "
            f"LEFT JOIN {conversations} AS c ON c.id = r.session_id "
            "WHERE (c.visibility = 'shared' OR c.creator_id = %s "
            "OR (c.id IS NULL AND %s::boolean))"
        )
        self.running_sessions = (
            f"SELECT DISTINCT session_id FROM {runs} "
            "WHERE status = 'running' AND session_id = ANY(%s)"
        )


def _refuse(run_id: str, offsets: list[int], *, state: str | None, last: int) -> None:
    """The error of a guarded write that wrote nothing: the run has ended, or the
    offsets do not follow the stored ones (nothing when neither)."""
    if state is not None and state != "running":
        raise RunEndedError(f"run {run_id} has ended ({state}): no more events")
    if offsets and offsets[0] <= last:
        raise OffsetError(f"offset {offsets[0]} does not follow {last} in run {run_id}")


class _Postgres:
    """The operations in PostgreSQL's dialect, on the store's statements: each one
    statement or one transaction on the connection it is given. Every write notifies its
    topics on `channel` through one of its statements (`_notifying`), so they go out only
    if it commits, and not when it changed nothing."""

    def __init__(self, sql: _SQL, channel: str) -> None:
        self.sql = sql
        self.channel = channel

    def _announce(self, *topics: str) -> tuple[str, list[str]]:
        """The last two parameters of a `_notifying` statement."""
        return self.channel, list(topics)

    async def notify(self, conn: Connection, payloads: list[str]) -> None:
        await conn.execute(self.sql.notify, (self.channel, payloads))

    async def create_session(self, conn: Connection, record: SessionRecord, metadata: str) -> None:
        from psycopg import errors

        params = (record.id, record.agent_id, record.created_at, record.updated_at, metadata)
        try:
            await conn.execute(
                self.sql.insert_session, (*params, *self._announce(_topic("session", record.id)))
            )
        except errors.UniqueViolation:
            raise SessionExistsError(f"session {record.id!r} already exists") from None

    async def get_session(self, conn: Connection, session_id: str) -> Any:
        return (await conn.execute(self.sql.get_session, (session_id,))).first()

    async def update_session(
        self, conn: Connection, session_id: str, metadata: str, now: float
    ) -> Any:
        params = (metadata, now, session_id, *self._announce(_topic("session", session_id)))
        return (await conn.execute(self.sql.update_session, params)).first()

    async def list_sessions(self, conn: Connection, agent_id: str | None) -> list[Any]:
        if agent_id is None:
            return (await conn.execute(self.sql.list_sessions)).rows
        return (await conn.execute(self.sql.list_agent_sessions, (agent_id,))).rows

    async def delete_session(self, conn: Connection, session_id: str) -> None:
        topic = _topic("session", session_id)
        await self._delete(conn, self.sql.session_deletion, session_id, topic)

    async def _delete(
        self, conn: Connection, statements: tuple[str, str, str], ident: str, topic: str
    ) -> None:
        """Delete a session or a room, in one transaction: lock its row, delete what it
        holds, then itself, telling `topic` (`statements`, each taking the id); nothing
        at all when it is missing."""
        lock, contents, owner = statements
        async with conn.transaction():
            if (await conn.execute(lock, (ident,))).first() is None:
                return  # nothing to delete, nobody to tell
            await conn.execute(contents, (ident,))
            await conn.execute(owner, (ident, *self._announce(topic)))

    async def load_transcript(self, conn: Connection, session_id: str) -> list[Any]:
        rows = (await conn.execute(self.sql.load_transcript, (session_id,))).rows
        if not rows:
            raise SessionNotFoundError(f"no session {session_id!r}")
        return [] if rows[0][0] is None else rows

    async def append_transcript(
        self, conn: Connection, session_id: str, data: list[str], now: float
    ) -> None:
        async with conn.transaction():
            await self._insert_transcript(
                conn, session_id, data, now, _topic("session", session_id)
            )

    async def _insert_transcript(
        self, conn: Connection, session_id: str, data: list[str], now: float, *topics: str
    ) -> None:
        """Append to the transcript, notifying `topics`."""
        # The update locks the session row, so concurrent appends take turns.
        touch = (now, session_id, *self._announce(*topics))
        if not (await conn.execute(self.sql.touch_session, touch)).rows:
            raise SessionNotFoundError(f"no session {session_id!r}")
        if data:
            row = (await conn.execute(self.sql.transcript_end, (session_id,))).first()
            start = 0 if row is None else row[0]
            await conn.execute(self.sql.append_transcript, (session_id, start, data))

    async def truncate_transcript(self, conn: Connection, session_id: str, length: int) -> None:
        async with conn.transaction():
            if (await conn.execute(self.sql.lock_session, (session_id,))).first() is None:
                raise SessionNotFoundError(f"no session {session_id!r}")
            if length < 0:  # like `del messages[length:]`: counts from the end
                row = (await conn.execute(self.sql.transcript_end, (session_id,))).first()
                length = max((0 if row is None else row[0]) + length, 0)
            # Notifies only when messages went.
            cut = (session_id, length, *self._announce(_topic("session", session_id)))
            await conn.execute(self.sql.truncate_transcript, cut)

    async def create_run(
        self, conn: Connection, run: RunRecord, offsets: list[int], data: list[str]
    ) -> None:
        from psycopg import errors

        # One statement in autocommit, so one round trip and one transaction (see
        # `_SQL.start_run`). A new run has no stored events: its offsets need no check.
        topics = self._announce(_topic("run", run.id), _topic("session", run.session_id))
        params = (*run_params(run), offsets, data, *topics)
        try:
            await conn.execute(self.sql.start_run, params)
        except errors.ForeignKeyViolation:
            raise SessionNotFoundError(f"no session {run.session_id!r}") from None
        except errors.UniqueViolation as exc:
            if exc.diag.constraint_name == "agentkit_runs_one_running":
                raise SessionBusyError(
                    f"session {run.session_id!r} already has a run going"
                ) from None
            raise StoreError(f"run {run.id!r} already exists") from None

    async def finish_run(
        self,
        conn: Connection,
        run_id: str,
        status: RunStatus,
        finished_at: float,
        offsets: list[int],
        data: list[str],
        error: str | None,
        owner: str | None,
        expired_by: float | None,
    ) -> bool:
        from psycopg import errors

        params = {
            "run": run_id,
            "owner": owner,
            "expired_by": expired_by,
            "first": offsets[0] if offsets else None,
            "offsets": offsets,
            "data": data,
            "status": status,
            "finished_at": finished_at,
            "error": error,
            "channel": self.channel,
            "run_topic": _topic("run", run_id),
        }
        try:
            row = (await conn.execute(self.sql.guarded_finish, params)).first()
        except errors.UniqueViolation:  # events stored after this statement's snapshot
            return await self._finish_run_locked(
                conn, run_id, status, finished_at, offsets, data, error, owner, expired_by
            )
        state, holder, lease_end, last, ended = row[0], row[1], row[2], row[3], row[4]
        if ended:
            return True
        if state is None or not may_finish((state, holder, lease_end), owner, expired_by):
            return False
        raise OffsetError(f"offset {offsets[0]} does not follow {last} in run {run_id}")

    async def _finish_run_locked(
        self,
        conn: Connection,
        run_id: str,
        status: RunStatus,
        finished_at: float,
        offsets: list[int],
        data: list[str],
        error: str | None,
        owner: str | None,
        expired_by: float | None,
    ) -> bool:
        """`finish_run` in a transaction of several statements, each seeing what was
        committed before it: the way to a precise answer when the one statement met a
        concurrent writer."""
        async with conn.transaction():
            row = (await conn.execute(self.sql.lock_run, (run_id,))).first()
            if row is None or not may_finish(row[:3], owner, expired_by):
                return False
            await self._insert_events(conn, run_id, offsets, data)
            topics = self._announce(_topic("run", run_id), _topic("session", row[3]))
            await conn.execute(self.sql.finish_run, (status, finished_at, error, run_id, *topics))
            return True

    async def renew_leases(
        self, conn: Connection, owner: str, run_ids: list[str], now: float, expires_at: float
    ) -> set[str]:
        result = await conn.execute(self.sql.renew_leases, (now, expires_at, owner, run_ids))
        return {row[0] for row in result.rows}

    async def expired_runs(self, conn: Connection, now: float) -> list[Any]:
        return (await conn.execute(self.sql.expired_runs, (now,))).rows

    async def get_run(self, conn: Connection, run_id: str) -> Any:
        return (await conn.execute(self.sql.get_run, (run_id,))).first()

    async def list_runs(self, conn: Connection, session_id: str) -> list[Any]:
        return (await conn.execute(self.sql.list_runs, (session_id,))).rows

    async def append_events(
        self, conn: Connection, run_id: str, offsets: list[int], data: list[str]
    ) -> None:
        from psycopg import errors

        params = {
            "run": run_id,
            "first": offsets[0] if offsets else None,
            "offsets": offsets,
            "data": data,
            "channel": self.channel,
            "topics": [_topic("run", run_id)] if offsets else [],
        }
        try:
            row = (await conn.execute(self.sql.guarded_append, params)).first()
        except errors.UniqueViolation:  # events stored after this statement's snapshot
            async with conn.transaction():
                await self._require_running(conn, run_id)
                await self._insert_events(conn, run_id, offsets, data, _topic("run", run_id))
            return
        _refuse(run_id, offsets, state=row[0], last=row[1])

    async def append_step(
        self,
        conn: Connection,
        session_id: str,
        messages: list[str],
        now: float,
        run_id: str,
        offsets: list[int],
        data: list[str],
    ) -> None:
        from psycopg import errors

        params = {
            "run": run_id,
            "session": session_id,
            "first": offsets[0] if offsets else None,
            "now": now,
            "messages": messages,
            "offsets": offsets,
            "data": data,
            "channel": self.channel,
            "topics": [_topic("run", run_id), _topic("session", session_id)],
        }
        try:
            row = (await conn.execute(self.sql.guarded_step, params)).first()
        except errors.UniqueViolation:  # rows stored after this statement's snapshot
            async with conn.transaction():
                await self._require_running(conn, run_id)
                topics = _topic("run", run_id), _topic("session", session_id)
                await self._insert_transcript(conn, session_id, messages, now, *topics)
                await self._insert_events(conn, run_id, offsets, data)
            return
        state, last, session_found = row[0], row[1], row[2]
        if state is not None and state != "running":
            _refuse(run_id, offsets, state=state, last=last)
        if not session_found:
            raise SessionNotFoundError(f"no session {session_id!r}")
        _refuse(run_id, offsets, state=state, last=last)

    async def _require_running(self, conn: Connection, run_id: str) -> None:
        row = (await conn.execute(self.sql.run_status, (run_id,))).first()
        if row is not None and row[0] != "running":
            raise RunEndedError(f"run {run_id} has ended ({row[0]}): no more events")

    async def read_events(self, conn: Connection, run_id: str, after: int) -> list[Any]:
        return (await conn.execute(self.sql.read_events, (run_id, after))).rows

    async def _insert_events(
        self, conn: Connection, run_id: str, offsets: list[int], data: list[str], *topics: str
    ) -> None:
        """Append to the run's log, notifying `topics` (when there are events)."""
        if not offsets:
            return
        await conn.execute(self.sql.lock_events, (run_id,))
        row = (await conn.execute(self.sql.events_end, (run_id,))).first()
        last = -1 if row is None else row[0]
        if offsets[0] <= last:
            raise OffsetError(f"offset {offsets[0]} does not follow {last} in run {run_id}")
        await conn.execute(
            self.sql.append_events, (run_id, offsets, data, *self._announce(*topics))
        )

    # --- waiting runs -----------------------------------------------------------------

    async def suspend_run(
        self,
        conn: Connection,
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
        async with conn.transaction():
            row = (await conn.execute(self.sql.lock_run_state, (run_id,))).first()
            if row is None or row[0] != "running" or row[1] != owner:
                return False
            session_id = row[2]
            topics = _topic("run", run_id), _topic("session", session_id)
            await self._insert_transcript(conn, session_id, messages, now, *topics)
            await self._insert_events(conn, run_id, offsets, data)
            params = (request_id, state, deadline, run_id, *self._announce(*topics))
            await conn.execute(self.sql.suspend_run, params)
            return True

    async def resume_run(
        self,
        conn: Connection,
        run_id: str,
        request_id: str,
        owner: str,
        now: float,
        lease_expires_at: float,
        offsets: list[int],
        data: list[str],
    ) -> Any:
        async with conn.transaction():
            # Under the run's row lock: of two deciders, the second reads the first's
            # committed change and finds the run no longer waiting.
            row = (await conn.execute(self.sql.lock_waiting, (run_id,))).first()
            if row is None or row[-1] != "waiting" or row[3] != request_id:
                return None
            await self._insert_events(conn, run_id, offsets, data)
            topics = _topic("run", run_id), _topic("session", row[1])
            params = (owner, now, lease_expires_at, run_id, *self._announce(*topics))
            await conn.execute(self.sql.resume_run, params)
            return row[:-1]

    async def get_waiting(self, conn: Connection, run_id: str) -> Any:
        return (await conn.execute(self.sql.get_waiting, (run_id,))).first()

    async def overdue_requests(self, conn: Connection, now: float, limit: int) -> list[Any]:
        return (await conn.execute(self.sql.overdue_requests, (now, limit))).rows

    # --- rooms ------------------------------------------------------------------------

    async def create_room(self, conn: Connection, room: RoomRecord, metadata: str) -> None:
        from psycopg import errors

        params = (room.id, room.name, room.created_by, room.created_at, metadata)
        try:
            await conn.execute(
                self.sql.insert_room, (*params, *self._announce(_topic("room", room.id)))
            )
        except errors.UniqueViolation:
            raise RoomExistsError(f"room {room.id!r} already exists") from None

    async def get_room(self, conn: Connection, room_id: str) -> Any:
        return (await conn.execute(self.sql.get_room, (room_id,))).first()

    async def list_rooms(self, conn: Connection) -> list[Any]:
        return (await conn.execute(self.sql.list_rooms)).rows

    async def update_room(
        self, conn: Connection, room_id: str, name: str | None, metadata: str | None
    ) -> Any:
        params = (name, metadata, room_id, *self._announce(_topic("room", room_id)))
        return (await conn.execute(self.sql.update_room, params)).first()

    async def delete_room(self, conn: Connection, room_id: str) -> None:
        await self._delete(conn, self.sql.room_deletion, room_id, _topic("room", room_id))

    async def append_room_events(
        self,
        conn: Connection,
        room_id: str,
        columns: RoomEventColumns,
        delegation: tuple[Any, ...] | None,
        expect: list[str] | None,
        cursor: tuple[str, int] | None,
    ) -> int:
        from psycopg import errors

        count = len(columns[0])
        async with conn.transaction():
            bump = (count, room_id, *self._announce(_topic("room", room_id)))
            row = (await conn.execute(self.sql.bump_head, bump)).first()
            if row is None:
                raise RoomNotFoundError(f"no room {room_id!r}")
            head: int = row[0]
            if delegation is not None and expect is not None:
                # The room's row lock is held: a competing change of the delegation
                # waits for this transaction, then reads what it wrote.
                params = (room_id, delegation[0])
                found = (await conn.execute(self.sql.lock_delegation, params)).first()
                status = None if found is None else found[0]
                if status not in expect:
                    raise state_error(delegation[0], status, expect)
            try:
                await conn.execute(self.sql.insert_room_events, (room_id, head - count, *columns))
            except errors.UniqueViolation:
                raise StoreError(
                    f"room {room_id!r}: an event id of the batch is already in the room or "
                    "repeated in the batch; nothing was appended"
                ) from None
            if delegation is not None:
                await conn.execute(self.sql.upsert_delegation, delegation)
            if cursor is not None:
                await conn.execute(self.sql.set_cursor, (room_id, *cursor))
        return head

    async def read_room_events(
        self,
        conn: Connection,
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
        rows = (await conn.execute(query, params)).rows
        if not rows and await self.room_head(conn, room_id) is None:
            return None
        return rows

    async def room_head(self, conn: Connection, room_id: str) -> int | None:
        row = (await conn.execute(self.sql.room_head, (room_id,))).first()
        return None if row is None else int(row[0])

    async def set_grant(
        self, conn: Connection, room_id: str, participant: str, read: str, publish: str
    ) -> None:
        from psycopg import errors

        params = (room_id, participant, read, publish, *self._announce(_topic("room", room_id)))
        try:
            await conn.execute(self.sql.set_grant, params)
        except errors.ForeignKeyViolation:
            raise RoomNotFoundError(f"no room {room_id!r}") from None

    async def delete_grant(self, conn: Connection, room_id: str, participant: str) -> None:
        params = (room_id, participant, *self._announce(_topic("room", room_id)))
        await conn.execute(self.sql.delete_grant, params)

    async def list_grants(self, conn: Connection, room_id: str) -> list[Any]:
        return (await conn.execute(self.sql.list_grants, (room_id,))).rows

    async def get_cursor(self, conn: Connection, room_id: str, consumer: str) -> int | None:
        row = (await conn.execute(self.sql.get_cursor, (room_id, consumer))).first()
        return None if row is None else int(row[0])

    async def set_cursor(
        self, conn: Connection, room_id: str, consumer: str, position: int
    ) -> None:
        from psycopg import errors

        try:
            await conn.execute(self.sql.set_cursor, (room_id, consumer, position))
        except errors.ForeignKeyViolation:
            raise RoomNotFoundError(f"no room {room_id!r}") from None

    async def get_delegation(self, conn: Connection, room_id: str, delegation_id: str) -> Any:
        return (await conn.execute(self.sql.get_delegation, (room_id, delegation_id))).first()

    async def list_delegations(
        self,
        conn: Connection,
        room_id: str,
        statuses: list[str] | None,
        agent: str | None,
        after: PageKey | None,
        limit: int | None,
    ) -> list[Any]:
        where, params = delegations_where(
            room_id, statuses, agent, after, limit, mark="%s", id_order='id COLLATE "C"'
        )
        return (await conn.execute(self.sql.list_delegations + where, params)).rows

    async def overdue_delegations(self, conn: Connection, now: float, limit: int) -> list[Any]:
        return (await conn.execute(self.sql.overdue_delegations, (now, limit))).rows

    # --- records ----------------------------------------------------------------------

    async def create_member(self, conn: Connection, params: tuple[Any, ...]) -> None:
        await self._insert_record(conn, self.sql.insert_member, params, "member")

    async def _insert_record(
        self, conn: Connection, statement: str, params: tuple[Any, ...], kind: str
    ) -> None:
        from psycopg import errors

        try:
            await conn.execute(statement, params)
        except errors.UniqueViolation:  # the id, a live name, a token hash
            raise RecordExistsError(
                f"{kind} {params[1]!r}: a live {kind} has this name, or a {kind} this id"
                + (" or token" if kind == "member" else "")
            ) from None

    async def get_member(self, conn: Connection, member_id: str) -> Any:
        return (await conn.execute(self.sql.get_member, (member_id,))).first()

    async def find_member(self, conn: Connection, name: str) -> Any:
        return (await conn.execute(self.sql.find_member, (name,))).first()

    async def member_by_token(self, conn: Connection, token_hash: str) -> Any:
        return (await conn.execute(self.sql.member_by_token, (token_hash,))).first()

    async def update_member(
        self, conn: Connection, member_id: str, role: str | None, token_hash: str | None
    ) -> Any:
        from psycopg import errors

        try:
            params = (role, token_hash, member_id)
            return (await conn.execute(self.sql.update_member, params)).first()
        except errors.UniqueViolation:
            raise RecordExistsError("another member has this token") from None

    async def remove_member(self, conn: Connection, member_id: str, removed_at: float) -> bool:
        return bool((await conn.execute(self.sql.remove_member, (removed_at, member_id))).rows)

    async def list_members(self, conn: Connection, after: PageKey | None, limit: int) -> list[Any]:
        return await _read_page(conn, self.sql.members_page, after, limit)

    async def create_agent(self, conn: Connection, params: tuple[Any, ...]) -> None:
        await self._insert_record(conn, self.sql.insert_agent, params, "agent")

    async def get_agent(self, conn: Connection, agent_id: str) -> Any:
        return (await conn.execute(self.sql.get_agent, (agent_id,))).first()

    async def find_agent(self, conn: Connection, name: str) -> Any:
        return (await conn.execute(self.sql.find_agent, (name,))).first()

    async def replace_agent(
        self, conn: Connection, agent_id: str, definition: str, updated_at: float
    ) -> Any:
        params = (definition, updated_at, agent_id)
        return (await conn.execute(self.sql.replace_agent, params)).first()

    async def delete_agent(self, conn: Connection, agent_id: str, deleted_at: float) -> bool:
        return bool((await conn.execute(self.sql.delete_agent, (deleted_at, agent_id))).rows)

    async def list_agents(self, conn: Connection, after: PageKey | None, limit: int) -> list[Any]:
        return await _read_page(conn, self.sql.agents_page, after, limit)

    async def create_conversation(
        self, conn: Connection, session: SessionRecord, metadata: str, params: tuple[Any, ...]
    ) -> None:
        from psycopg import errors

        async with conn.transaction():
            await self.create_session(conn, session, metadata)
            try:
                await conn.execute(self.sql.insert_conversation, params)
            except errors.UniqueViolation:  # only a conversation left without its session
                raise SessionExistsError(f"session {session.id!r} already exists") from None

    async def fork_conversation(
        self,
        conn: Connection,
        session: SessionRecord,
        metadata: str,
        params: tuple[Any, ...],
        source_id: str,
        runs: list[tuple[str, str]],
        transcript_length: int | None,
    ) -> None:
        from psycopg import errors

        sql = self.sql
        old, new = [pair[0] for pair in runs], [pair[1] for pair in runs]
        async with conn.transaction():
            if (await conn.execute(sql.get_session, (source_id,))).first() is None:
                raise SessionNotFoundError(f"no session {source_id!r}")
            await self.create_conversation(conn, session, metadata, params)
            copied = await conn.execute(
                sql.fork_transcript, (session.id, source_id, transcript_length)
            )
            if transcript_length is not None and copied.rowcount != transcript_length:
                raise StoreError(
                    f"session {source_id!r} has fewer than {transcript_length} transcript messages"
                )
            if not runs:
                return
            try:
                found = await conn.execute(sql.fork_runs, (session.id, old, new, source_id))
            except errors.UniqueViolation:
                raise StoreError("a new run id is taken already") from None
            if found.rowcount != len(runs):
                missing = len(runs) - found.rowcount
                raise StoreError(f"{missing} runs are not ended runs of session {source_id!r}")
            await conn.execute(sql.fork_events, (old, new))

    async def get_conversation(self, conn: Connection, conversation_id: str) -> Any:
        return (await conn.execute(self.sql.get_conversation, (conversation_id,))).first()

    async def update_conversation(
        self,
        conn: Connection,
        conversation_id: str,
        updated_at: float,
        name: str | None,
        visibility: str | None,
    ) -> Any:
        topics = self._announce(_topic("session", conversation_id))
        params = (updated_at, name, visibility, conversation_id, *topics)
        row = (await conn.execute(self.sql.update_conversation, params)).first()
        return None if row is None else row[: len(CONVERSATION_COLUMNS.split(", "))]

    async def list_conversations(
        self, conn: Connection, viewer_id: str, after: PageKey | None, limit: int
    ) -> list[Any]:
        first, later = self.sql.conversations_page
        if after is None:
            params: tuple[Any, ...] = (limit, viewer_id, limit, limit)
            return (await conn.execute(first, params)).rows
        params = (*after, limit, viewer_id, *after, limit, limit)
        return (await conn.execute(later, params)).rows

    async def list_readable_runs(
        self,
        conn: Connection,
        viewer_id: str,
        others: bool,
        session_id: str | None,
        after: PageKey | None,
        limit: int,
    ) -> list[Any]:
        query, params = self.sql.readable_runs, list[Any]([viewer_id, others])
        if session_id is not None:
            query += " AND r.session_id = %s"
            params.append(session_id)
        if after is not None:
            query += ' AND (r.created_at, r.id COLLATE "C") < (%s, %s)'
            params.extend(after)
        query += ' ORDER BY r.created_at DESC, r.id COLLATE "C" DESC LIMIT %s'
        return (await conn.execute(query, (*params, limit))).rows

    async def count_runs(self, conn: Connection, statuses: list[str]) -> list[Any]:
        return (await conn.execute(count_runs_sql(self.sql.runs_table, statuses))).rows

    async def running_sessions(self, conn: Connection, session_ids: list[str]) -> set[str]:
        rows = (await conn.execute(self.sql.running_sessions, (session_ids,))).rows
        return {row[0] for row in rows}


_NEWEST = "ORDER BY created_at DESC, id DESC"


def _marks(count: int) -> str:
    return ", ".join(["%s"] * count)


def _pages(columns: str, table: str, live: str) -> tuple[str, str]:
    """The first page and a later page of a table's live records, oldest first."""
    select, order = f"SELECT {columns} FROM {table} WHERE {live}", "ORDER BY created_at, id"
    return (
        f"{select} {order} LIMIT %s",
        f"{select} AND (created_at, id) > (%s, %s) {order} LIMIT %s",
    )


async def _read_page(
    conn: Connection, statements: tuple[str, str], after: PageKey | None, limit: int
) -> list[Any]:
    first, later = statements
    if after is None:
        return (await conn.execute(first, (limit,))).rows
    return (await conn.execute(later, (*after, limit))).rows


async def _nothing(conn: Connection) -> None:
    """An operation that only makes sure the store has connected."""


class PostgresStore(SQLStore, PostgresQueue):
    """Sessions, transcripts, runs and events, rooms, and records (members, agents,
    conversations), in PostgreSQL.

    Args:
        dsn: A libpq connection string or URL, e.g. `postgresql://user@host:5432/db`.
        schema: The schema holding the tables (created when missing); by default the first
            schema of the connection's `search_path` (usually `public`). Tables are named
            `agentkit_sessions`, `agentkit_transcript`, `agentkit_runs`, `agentkit_events`,
            `agentkit_rooms`, `agentkit_room_events`, `agentkit_room_grants`,
            `agentkit_room_cursors`, `agentkit_delegations`, `agentkit_members`,
            `agentkit_agents`, `agentkit_conversations` and `agentkit_schema_version`,
            and are created on first use.
        max_connections: The size of the store's connection pool: at most this many calls
            run at once (`open_store` reads it from a URL's `pool_size` parameter).

    Raises:
        ValueError: `max_connections` is less than 1.

    The driver is psycopg 3. On asyncio, calls run on its `AsyncConnection`s, in the
    calling task; on any other anyio backend (trio), and on Windows' default asyncio loop
    (which the async driver cannot use), on its synchronous connections, each call in a
    worker thread. Each call takes a connection of its own from the pool (opened
    when none is idle; at most `max_connections`, further calls wait their turn) and gives
    it back for the next call; a connection that broke, or that the server closed while it
    was idle, is dropped and replaced. Connections open on first use, and a store may
    serve one event loop after another (`asyncio.run` twice, asyncio then trio).

    Every append is one transaction; appends to one transcript, one run log or one room
    are serialised across processes by row and advisory locks, so any number of processes
    and hosts can share the database.

    Every write also sends a PostgreSQL notification on the store's
    [`channel`][agentkit.stores.PostgresStore.channel], within its transaction, so it is
    delivered if and when the write commits (a write that fails sends nothing). The
    payload is a topic, `kind:id` with the id as given:

    - `run:<run_id>` after `create_run`, `append_events`, `append_step` and a
      `finish_run` that ended the run;
    - `session:<session_id>` after `create_session`, `update_session`,
      `delete_session`, `append_transcript`, `truncate_transcript`, `append_step`,
      `create_run` and `finish_run` (the run's session), and `create_conversation` and
      `update_conversation` (the conversation's session);
    - `room:<room_id>` after `create_room`, `update_room`, `delete_room`,
      `append_room_events`, `set_grant` and `delete_grant`.

    A write that changes nothing (deleting what is not there, truncating nothing, a
    `finish_run` that does not end the run) sends nothing. When an id would make the topic
    longer than 7000 bytes, the topic is `kind:*`: look at everything of that kind.
    [`notify`][agentkit.stores.PostgresStore.notify] sends other payloads on the same
    channel.
    Needs the `postgres` extra (`pip install 'typed-agentkit[postgres]'`).
    """

    def __init__(self, dsn: str, *, schema: str | None = None, max_connections: int = 10):
        if max_connections < 1:
            raise ValueError("max_connections must be at least 1")
        self.dsn = dsn
        self.schema = schema
        self.max_connections = max_connections
        self._channel = channel_name(schema)
        self._sql = _SQL(schema)
        self._dialect = _Postgres(self._sql, self._channel)
        # `SQLStore` types the operations as `Dialect`'s synchronous ones; these are
        # coroutine functions of the same arguments, whose results `_call` awaits.
        self._ops = cast(Dialect, self._dialect)
        self._pool = ConnectionPool(dsn, max_connections)
        self._ready = False
        self._closed = False

    def __repr__(self) -> str:
        schema = f", schema={self.schema!r}" if self.schema else ""
        return f"PostgresStore(<dsn>{schema})"

    @property
    def channel(self) -> str:
        """The PostgreSQL notification channel of the store's writes (and `notify`):
        `agentkit` for the `public` schema, else `agentkit.<schema>`, cut to 63 bytes
        (PostgreSQL's longest name) and then ending with a hash of the whole name.
        Without a `schema` argument, the schema is the connection's current one (its
        `search_path`, which a URL can set with `?options=-csearch_path%3Dname`): known
        once the store has connected (see `connected_channel`). Listen with
        `LISTEN "<channel>"` (quoted: it has dots and may have capitals)."""
        return self._channel

    async def connected_channel(self) -> str:
        """The `channel`, connecting first if the store has not yet (and so creating
        its tables)."""
        if not self._ready:
            await self._run(_nothing)
        return self._channel

    @functools.cached_property
    def notifications(self) -> Notifications:
        """The store's notifications, shared by every process on the database: LISTEN
        on `channel` for the subscribers of this process, and advisory locks for its
        claims, each on a dedicated connection (the runtime runs the listener; see
        `agentkit.stores.Notifications`)."""
        from agentkit.stores._pg_listen import PostgresNotifications

        return PostgresNotifications(self)

    async def notify(self, topic_payloads: Sequence[str]) -> None:
        """Send each string as a notification on `channel`, in one round trip and one
        transaction. PostgreSQL delivers identical payloads sent together once.

        Raises:
            ValueError: A payload is longer than 7900 bytes (UTF-8).
            TypeError: `topic_payloads` is a single string.
        """
        if isinstance(topic_payloads, str):
            raise TypeError("notify takes a sequence of payloads, not one string")
        payloads = list(topic_payloads)
        for payload in payloads:
            size = len(payload.encode())
            if size > _PAYLOAD_BYTES:
                raise ValueError(
                    f"a notification payload of {size} bytes is too long: at most "
                    f"{_PAYLOAD_BYTES} bytes fit"
                )
        if payloads:
            await self._run(self._dialect.notify, payloads)

    async def member_and_conversation(
        self, token_hash: str, conversation_id: str
    ) -> tuple[MemberRecord | None, ConversationRecord | None, SessionRecord | None]:
        """The live member whose token has this hash, with the conversation of id
        `conversation_id` and its session (each `None` when missing), in one statement:
        what a request to a conversation's routes reads before anything else."""
        query = self._sql.member_and_conversation

        async def read(conn: Connection) -> Any:
            return (await conn.execute(query, (conversation_id, token_hash))).first()

        row = await self._run(read)
        if row is None:
            return None, None, None
        ends = _ENDS
        member = member_from_row(row[: ends[0]])
        conversation = row[ends[0] : ends[1]]
        session = row[ends[1] : ends[2]]
        return (
            member,
            None if conversation[0] is None else conversation_from_row(conversation),
            None if session[0] is None else session_from_row(session),
        )

    async def conversation_state(
        self, session_id: str
    ) -> tuple[SessionRecord, list[RunRecord], int, Message | None] | None:
        """A session with its runs (oldest first), its transcript's length and last
        message, in one statement; `None` when there is no such session."""
        query = self._sql.conversation_state

        async def read(conn: Connection) -> Any:
            return (await conn.execute(query, (session_id,))).first()

        row = await self._run(read)
        if row is None:
            return None
        width = len(SESSION_COLUMNS.split(", "))
        session = session_from_row(row[:width])
        runs, length, last = row[width:]
        return (
            session,
            [run_from_row(run) for run in runs],
            int(length),
            None if last is None else load_message(last),
        )

    # --- plumbing ---------------------------------------------------------------------

    async def _execute(self, fn: Callable[..., _T], *args: Any) -> _T:
        # `SQLStore` passes the operations of `_ops`, typed as `Dialect`'s synchronous
        # ones: they are coroutine functions of the same arguments.
        return await self._run(cast(Callable[..., Awaitable[_T]], fn), *args)

    async def _run(self, fn: Callable[..., Awaitable[_T]], *args: Any) -> _T:
        """Run the operation `fn(connection, *args)` on a pooled connection; the store's
        first call also brings the tables up to date."""
        if self._closed:
            raise StoreError(f"{self!r} is closed")

        async def operation(conn: Connection) -> _T:
            if not self._ready:
                await self._create_schema(conn)
                self._ready = True
            return await fn(conn, *args)

        return await self._pool.run(operation)

    async def _create_schema(self, conn: Connection) -> None:
        """Bring the layout up to `SCHEMA_VERSION`, in one transaction; without a
        `schema`, name the channel after the connection's current schema."""
        if self.schema is None:
            row = (await conn.execute("SELECT current_schema()")).first()
            current = None if row is None else row[0]
            if current and current != "public":
                self._channel = self._dialect.channel = channel_name(current)
        async with conn.transaction():
            # Processes opening the same database take turns: each migration runs once.
            await conn.execute("SELECT pg_advisory_xact_lock(hashtext('agentkit.schema'))")
            if self._sql.create_schema is not None:
                await conn.execute(self._sql.create_schema)
            await conn.execute(self._sql.create_version)
            row = (await conn.execute(self._sql.get_version)).first()
            version = (None if row is None else row[0]) or 0
            if version > SCHEMA_VERSION:
                raise StoreError(newer_database_message("PostgreSQL", version))
            for number, statements, check in self._sql.migrations:
                if number > version:
                    await self._migrate(conn, number, statements, check)

    async def _migrate(
        self,
        conn: Connection,
        number: int,
        statements: list[str],
        check: tuple[str, str] | None,
    ) -> None:
        """Apply migration `number` (inside `_create_schema`'s transaction, which a failure
        rolls back whole: the database stays at the version it had)."""
        from psycopg import errors

        if check is not None:
            row = (await conn.execute(check[0])).first()
            if row is not None:
                raise StoreError(
                    f"PostgreSQL: cannot upgrade the tables to schema version {number}, so "
                    f"nothing changed: {check[1]} (found: {row[0]!r})"
                )
        try:
            for statement in statements:
                await conn.execute(statement)
        except errors.OperationalError:
            raise  # the connection or the server failed: `StoreUnavailableError`
        except errors.DatabaseError as exc:
            raise StoreError(
                f"PostgreSQL: upgrading the tables to schema version {number} failed, so "
                f"nothing changed: {exc}"
            ) from exc
        await conn.execute(self._sql.set_version, (number,))

    async def aclose(self) -> None:
        """Close the pooled connections; the store cannot be used afterwards."""
        self._closed = True
        await self._pool.aclose()
