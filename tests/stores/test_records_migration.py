"""Migration 4: a version 3 database, as the code of that version wrote it, opens with
nothing lost on SQLite and PostgreSQL.

Version 3 kept members and owner-created agents as sessions of reserved agent ids, with
their record in the session's metadata, and a conversation's record (name, visibility,
creator's name, instructions, runs) in its session's metadata. The fixture below writes
exactly those shapes (see `agentkit.conversations._members`, `_agent_service` and `_meta`
of version 3) over the tables of `MIGRATIONS[:3]`; the upgrade must turn them into
records, keep every transcript, run and event, and give a removed creator's private
conversations to nobody.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import sqlite3
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from agentkit.events import Text, TurnEnd
from agentkit.messages import AssistantMessage, Message, UserMessage
from agentkit.stores import (
    EventEntry,
    PostgresStore,
    RunRecord,
    SQLiteStore,
    Store,
    StoreError,
)
from agentkit.stores._codec import (
    dump_event,
    dump_message,
    events_from_rows,
    messages_from_rows,
    run_from_row,
)
from agentkit.stores._migrations import MIGRATIONS, SCHEMA_VERSION
from support.paths import DATA
from support.pg import new_schema

pytestmark = pytest.mark.anyio

Execute = Callable[[str, tuple[Any, ...]], None]

_HEX32 = re.compile(r"^[0-9a-f]{32}$")


def _hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def _meta(
    name: str,
    visibility: str,
    creator: str,
    created_at: float,
    instructions: str | None = None,
    runs: tuple[str, ...] = (),
) -> dict[str, Any]:
    """A conversation's metadata as version 3's `ConversationMeta.to_metadata` wrote it."""
    record: dict[str, Any] = {
        "name": name,
        "visibility": visibility,
        "creator": creator,
        "createdAt": created_at,
        "runs": [{"id": run_id, "t": 0} for run_id in runs],
    }
    if instructions is not None:
        record["instructions"] = instructions
    return {"agentkit.conversation": record}


HELPER = {
    "name": "helper",
    "description": "Reviews pull requests.",
    "instructions": "Be thorough; cite line numbers. ✓",
    "model": None,
    "tools": ["read_file", "grep"],
    "permission_mode": "default",
    "reasoning_effort": "high",
}

TRANSCRIPT: list[Message] = [
    UserMessage(content="Review this, please — ünïcode"),
    AssistantMessage(text="Looks good."),
]
EVENTS = [
    EventEntry(0, Text(content="Looks ")),
    EventEntry(3, TurnEnd(turn_id="t1", status="completed", duration_ms=5)),
]


@dataclass(frozen=True)
class Session:
    id: str
    agent_id: str
    created_at: float
    metadata: dict[str, Any]


SESSIONS = [
    # Members: version 3's `Members.add`.
    *(
        Session(
            f"agentkit-member:{name}",
            "agentkit-machine:member",
            created,
            {"agentkit.member": {"name": name, "role": role, "tokenHash": _hash(f"ak_{name}")}},
        )
        for name, role, created in (
            ("ada", "owner", 100.0),
            ("bob", "editor", 101.0),
            ("cy", "viewer", 102.0),
        )
    ),
    # An owner-created agent: version 3's `AgentService.create`.
    Session(
        "agentkit-agent:helper",
        "agentkit-machine:agent",
        103.0,
        {"agentkit.agent": {"definition": HELPER}},
    ),
    # Conversations: version 3's `ConversationService.create` (the session's agent id is
    # the agent's name), then `save_meta` with the runs.
    Session(
        "conv-ada",
        "rool",
        200.0,
        _meta("Plans", "private", "ada", 199.5, "Answer in French.", ("run-1",)),
    ),
    Session("conv-bob", "helper", 201.0, _meta("Review #12", "shared", "bob", 200.5)),
    Session("conv-gone", "rool", 202.0, _meta("Secrets", "private", "gone", 201.5)),
    Session("conv-gone-shared", "rool", 202.5, _meta("Notes", "shared", "gone", 202.2)),
    Session("conv-app", "app:researcher", 203.0, _meta("", "private", "cy", 202.7)),
    # Sessions that are no conversation stay as they are, whatever their metadata.
    Session("plain", "app:agent", 204.0, {"fingerprint": "abc", "nul": "a\u0000b"}),
    Session("odd", "app:agent", 205.0, {"score": float("nan")}),
]


def _write_v3(execute: Execute, migrations: list[str]) -> None:
    """The tables of version 3 and its data, through `execute` (`?` parameters)."""
    execute("CREATE TABLE {p}agentkit_schema_version (version integer NOT NULL)", ())
    for statement in migrations:
        execute(statement, ())
    for version in (1, 2, 3):
        execute("INSERT INTO {p}agentkit_schema_version VALUES (?)", (version,))
    for s in SESSIONS:
        execute(
            "INSERT INTO {p}agentkit_sessions (id, agent_id, created_at, updated_at, metadata) "
            "VALUES (?, ?, ?, ?, ?)",
            (
                s.id,
                s.agent_id,
                s.created_at,
                s.created_at + 10,
                json.dumps(s.metadata, ensure_ascii=False),
            ),
        )
    for session_id in ("conv-ada", "plain"):
        for pos, message in enumerate(TRANSCRIPT):
            execute(
                "INSERT INTO {p}agentkit_transcript (session_id, pos, data) VALUES (?, ?, ?)",
                (session_id, pos, dump_message(message)),
            )
    for run_id, session_id, created in (("run-1", "conv-ada", 300.0), ("run-2", "plain", 301.0)):
        execute(
            "INSERT INTO {p}agentkit_runs (id, session_id, agent_id, status, created_at, "
            "finished_at) VALUES (?, ?, ?, 'completed', ?, ?)",
            (run_id, session_id, "rool", created, created + 1),
        )
        for entry in EVENTS:
            execute(
                "INSERT INTO {p}agentkit_events (run_id, pos, data) VALUES (?, ?, ?)",
                (run_id, entry.offset, dump_event(entry)),
            )


def _sqlite_v3(path: Path) -> None:
    conn = sqlite3.connect(path)
    with conn:
        _write_v3(
            lambda sql, params: conn.execute(sql.format(p=""), params),
            [statement for m in MIGRATIONS[:3] for statement in m.sqlite],
        )
    conn.close()


def _postgres_v3(dsn: str, schema: str) -> None:
    import psycopg

    p = f'"{schema}".'
    with psycopg.connect(dsn) as conn:
        _write_v3(
            lambda sql, params: conn.execute(sql.format(p=p).replace("?", "%s"), params),
            [statement.format(p=p) for m in MIGRATIONS[:3] for statement in m.postgres],
        )


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
async def upgraded(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Store]:
    """A version 3 database with version 3's data, opened by this code."""
    if request.param == "sqlite":
        path = tmp_path / "v3.db"
        _sqlite_v3(path)
        store: Store = SQLiteStore(path)
        yield store
        await store.aclose()
        return
    from support.pg import dsn

    with new_schema("v3") as schema:
        _postgres_v3(dsn(), schema)
        store = PostgresStore(dsn(), schema=schema)
        yield store
        await store.aclose()


async def test_members_become_records(upgraded: Store) -> None:
    members = await upgraded.list_members()
    assert [(m.name, m.role, m.token_hash, m.created_at) for m in members] == [
        ("ada", "owner", _hash("ak_ada"), 100.0),
        ("bob", "editor", _hash("ak_bob"), 101.0),
        ("cy", "viewer", _hash("ak_cy"), 102.0),
    ]
    assert all(_HEX32.match(m.id) and m.removed_at is None for m in members)
    assert len({m.id for m in members}) == 3
    ada = await upgraded.member_by_token(_hash("ak_ada"))  # their tokens still work
    assert ada is not None and ada == members[0]
    assert await upgraded.find_member("bob") == members[1]
    assert await upgraded.find_member("gone") is None


async def test_agents_become_records(upgraded: Store) -> None:
    helper = await upgraded.find_agent("helper")
    assert helper is not None
    assert (helper.source, helper.version, helper.definition) == ("machine", 1, HELPER)
    assert (helper.created_at, helper.updated_at) == (103.0, 113.0)
    rool = await upgraded.find_agent("rool")
    researcher = await upgraded.find_agent("app:researcher")
    assert rool is not None and researcher is not None
    assert (rool.source, rool.definition) == ("builtin", {})
    assert (researcher.source, researcher.definition) == ("configured", {})
    agents = await upgraded.list_agents()
    assert {a.name for a in agents} == {"helper", "rool", "app:researcher"}
    assert all(_HEX32.match(a.id) for a in agents)


async def test_conversations_become_records(upgraded: Store) -> None:
    ada, bob, cy = await upgraded.list_members()
    agents = {a.name: a.id for a in await upgraded.list_agents()}
    plans = await upgraded.get_conversation("conv-ada")
    assert plans is not None
    assert (plans.agent_id, plans.creator_id, plans.visibility) == (
        agents["rool"],
        ada.id,
        "private",
    )
    assert (plans.name, plans.instructions) == ("Plans", "Answer in French.")
    assert (plans.created_at, plans.updated_at) == (199.5, 210.0)
    review = await upgraded.get_conversation("conv-bob")
    assert review is not None
    assert (review.agent_id, review.creator_id, review.visibility, review.name) == (
        agents["helper"],
        bob.id,
        "shared",
        "Review #12",
    )
    assert review.instructions is None
    research = await upgraded.get_conversation("conv-app")
    assert research is not None and research.agent_id == agents["app:researcher"]
    assert research.creator_id == cy.id and research.name == ""
    assert await upgraded.get_conversation("plain") is None
    assert await upgraded.get_conversation("agentkit-member:ada") is None
    # Each member sees the shared ones and their own, newest first.
    assert [c.id for c in await upgraded.list_conversations(ada.id)] == [
        "conv-gone-shared",
        "conv-bob",
        "conv-ada",
    ]
    assert [c.id for c in await upgraded.list_conversations(cy.id)] == [
        "conv-app",
        "conv-gone-shared",
        "conv-bob",
    ]


async def test_a_removed_creators_conversations_belong_to_nobody(upgraded: Store) -> None:
    secret = await upgraded.get_conversation("conv-gone")
    shared = await upgraded.get_conversation("conv-gone-shared")
    assert secret is not None and shared is not None
    assert _HEX32.match(secret.creator_id)
    assert await upgraded.get_member(secret.creator_id) is None
    members = await upgraded.list_members()
    assert secret.creator_id not in {m.id for m in members}
    # A newcomer taking the name inherits nothing.
    from agentkit.stores import MemberRecord

    await upgraded.create_member(MemberRecord("newcomer", "gone", "owner", "h-new", 500.0))
    seen = [c.id for c in await upgraded.list_conversations("newcomer")]
    assert "conv-gone" not in seen and "conv-gone-shared" in seen


async def test_transcripts_runs_and_sessions_are_kept(upgraded: Store) -> None:
    for session_id in ("conv-ada", "plain"):
        assert await upgraded.load_transcript(session_id) == TRANSCRIPT
    for run_id in ("run-1", "run-2"):
        assert await upgraded.read_events(run_id) == EVENTS
    assert [r.id for r in await upgraded.list_runs("conv-ada")] == ["run-1"]
    run = await upgraded.get_run("run-2")
    assert run == RunRecord("run-2", "plain", "rool", "completed", 301.0, 302.0)
    sessions = {s.id: s for s in await upgraded.list_sessions()}
    assert set(sessions) == {
        s.id for s in SESSIONS if not s.agent_id.startswith("agentkit-machine")
    }
    by_id = {s.id: s for s in SESSIONS}
    for session_id, session in sessions.items():
        # Metadata unchanged (a conversation's record stays there with its run entries).
        expected = by_id[session_id].metadata
        if session_id == "odd":
            assert str(session.metadata) == str(expected)  # NaN is no NaN's equal
        else:
            assert session.metadata == expected, session_id
        assert session.agent_id == by_id[session_id].agent_id
    ada = (await upgraded.list_members())[0]
    assert [r.id for r in await upgraded.list_readable_runs(ada.id, others=True)] == [
        "run-2",
        "run-1",
    ]
    assert await upgraded.running_sessions(["conv-ada", "plain"]) == set()


async def test_upgrading_again_changes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "v3.db"
    _sqlite_v3(path)
    first = SQLiteStore(path)
    members = await first.list_members()
    await first.aclose()
    again = SQLiteStore(path)
    assert await again.list_members() == members
    await again.aclose()
    conn = sqlite3.connect(path)
    assert conn.execute("SELECT max(version) FROM agentkit_schema_version").fetchone() == (
        SCHEMA_VERSION,
    )
    assert conn.execute("SELECT count(*) FROM agentkit_conversations").fetchone() == (5,)
    conn.close()


def _duplicate_token(execute: Execute) -> None:
    """Version 3 never wrote two members with one token hash: such a database cannot
    become records, and must be left as it was."""
    metadata = {"agentkit.member": {"name": "dup", "role": "viewer", "tokenHash": _hash("ak_ada")}}
    execute(
        "INSERT INTO {p}agentkit_sessions (id, agent_id, created_at, updated_at, metadata) "
        "VALUES (?, ?, ?, ?, ?)",
        ("agentkit-member:dup", "agentkit-machine:member", 1.0, 1.0, json.dumps(metadata)),
    )


async def test_a_failed_upgrade_leaves_the_database_as_it_was_sqlite(tmp_path: Path) -> None:
    path = tmp_path / "v3.db"
    _sqlite_v3(path)
    conn = sqlite3.connect(path)
    with conn:
        _duplicate_token(lambda sql, params: conn.execute(sql.format(p=""), params))
    conn.close()
    store = SQLiteStore(path)
    with pytest.raises(StoreError, match="UNIQUE"):
        await store.list_members()
    await store.aclose()
    conn = sqlite3.connect(path)
    assert conn.execute("SELECT max(version) FROM agentkit_schema_version").fetchone() == (3,)
    tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master")}
    assert "agentkit_members" not in tables and "agentkit_conversations" not in tables
    assert conn.execute("SELECT count(*) FROM agentkit_sessions").fetchone() == (len(SESSIONS) + 1,)
    conn.close()


@pytest.mark.postgres
async def test_a_failed_upgrade_leaves_the_database_as_it_was_postgres() -> None:
    import psycopg

    from support.pg import dsn

    with new_schema("v3") as schema:
        _postgres_v3(dsn(), schema)
        with psycopg.connect(dsn()) as conn:
            _duplicate_token(
                lambda sql, params: conn.execute(
                    sql.format(p=f'"{schema}".').replace("?", "%s"), params
                )
            )
        store = PostgresStore(dsn(), schema=schema)
        with pytest.raises(StoreError, match="schema version 4 failed, so nothing changed"):
            await store.list_members()
        await store.aclose()
        with psycopg.connect(dsn()) as conn:
            version = conn.execute(
                f'SELECT max(version) FROM "{schema}".agentkit_schema_version'
            ).fetchone()
            assert version == (3,)
            found = conn.execute(
                "SELECT count(*) FROM information_schema.tables "
                "WHERE table_schema = %s AND table_name = 'agentkit_members'",
                (schema,),
            ).fetchone()
            assert found == (0,)


# --- a database written by version 3's own code ----------------------------------------------

V3 = DATA / "store_v3"
"""`machine.sqlite`: what version 3's `Machine` wrote (members ada, bob and gone, an
owner-made agent `helper`, four conversations with one run each, then gone removed);
`tokens.json`: the members' tokens and the conversations' ids. `make_v3.py` wrote them."""


def _v3_rows(table: str, columns: str) -> list[tuple[Any, ...]]:
    conn = sqlite3.connect(V3 / "machine.sqlite")
    try:
        return conn.execute(f"SELECT {columns} FROM {table} ORDER BY rowid").fetchall()
    finally:
        conn.close()


_V3_TABLES = {
    "agentkit_sessions": "id, agent_id, created_at, updated_at, metadata",
    "agentkit_transcript": "session_id, pos, data",
    "agentkit_runs": (
        "id, session_id, agent_id, status, created_at, finished_at, owner, heartbeat_at, "
        "lease_expires_at, error"
    ),
    "agentkit_events": "run_id, pos, data",
}


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
async def machine_v3(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Store]:
    """Version 3's machine database opened by this code: the file itself on SQLite; on
    PostgreSQL, version 3's tables holding the same rows."""
    if request.param == "sqlite":
        path = tmp_path / "machine.sqlite"
        shutil.copyfile(V3 / "machine.sqlite", path)
        store: Store = SQLiteStore(path)
        yield store
        await store.aclose()
        return
    import psycopg

    from support.pg import dsn

    with new_schema("v3m") as schema:
        p = f'"{schema}".'
        with psycopg.connect(dsn()) as conn:
            conn.execute(f"CREATE TABLE {p}agentkit_schema_version (version integer NOT NULL)")
            for m in MIGRATIONS[:3]:
                for statement in m.postgres:
                    conn.execute(statement.format(p=p))
                conn.execute(f"INSERT INTO {p}agentkit_schema_version VALUES (%s)", (m.version,))
            for table, columns in _V3_TABLES.items():
                marks = ", ".join(["%s"] * len(columns.split(", ")))
                with conn.cursor() as cursor:
                    cursor.executemany(
                        f"INSERT INTO {p}{table} ({columns}) VALUES ({marks})",
                        _v3_rows(table, columns),
                    )
        store = PostgresStore(dsn(), schema=schema)
        yield store
        await store.aclose()


async def test_version_3s_own_machine_database_upgrades_with_nothing_lost(
    machine_v3: Store,
) -> None:
    fixture = json.loads((V3 / "tokens.json").read_text())
    tokens, ids = fixture["tokens"], fixture["conversations"]
    store = machine_v3
    ada = await store.member_by_token(_hash(tokens["ada"]))
    bob = await store.member_by_token(_hash(tokens["bob"]))
    assert ada is not None and (ada.name, ada.role) == ("ada", "owner")
    assert bob is not None and (bob.name, bob.role) == ("bob", "editor")
    assert await store.member_by_token(_hash(tokens["gone"])) is None  # removed in v3
    assert [m.name for m in await store.list_members()] == ["ada", "bob"]
    helper = await store.find_agent("helper")
    rool = await store.find_agent("rool")
    assert helper is not None and rool is not None
    assert (helper.source, helper.version) == ("machine", 1)
    assert helper.definition["description"] == "Reviews changes."
    assert helper.definition["instructions"] == "Be thorough. ✓"
    assert (rool.source, rool.definition) == ("builtin", {})
    sessions = {s.id: s for s in await store.list_sessions()}
    assert set(sessions) == set(ids.values())  # the member and agent sessions are gone
    expected = {
        "plans": (rool.id, ada.id, "private", "Plans", "Answer in French."),
        "review": (helper.id, bob.id, "shared", "Review", None),
    }
    for label, (agent_id, creator_id, visibility, name, instructions) in expected.items():
        found = await store.get_conversation(ids[label])
        assert found is not None
        assert (found.agent_id, found.creator_id, found.visibility, found.name) == (
            agent_id,
            creator_id,
            visibility,
            name,
        )
        assert found.instructions == instructions
        meta = sessions[ids[label]].metadata["agentkit.conversation"]
        assert found.created_at == meta["createdAt"]
        assert [run["id"] for run in meta["runs"]] == [
            r.id for r in await store.list_runs(ids[label])
        ]
    secrets = await store.get_conversation(ids["secrets"])
    notes = await store.get_conversation(ids["notes"])
    assert secrets is not None and notes is not None
    assert secrets.creator_id not in (ada.id, bob.id)
    assert await store.get_member(secrets.creator_id) is None
    assert [c.id for c in await store.list_conversations(ada.id)] == [
        ids["notes"],
        ids["review"],
        ids["plans"],
    ]
    # Every transcript, run and event is as version 3 stored it.
    for session_id in ids.values():
        rows = [
            (data,)
            for sid, _, data in _v3_rows("agentkit_transcript", "session_id, pos, data")
            if sid == session_id
        ]
        assert await store.load_transcript(session_id) == messages_from_rows(rows)
        assert len(rows) == 2
    for run_row in _v3_rows("agentkit_runs", _V3_TABLES["agentkit_runs"]):
        assert await store.get_run(run_row[0]) == run_from_row(run_row)
        events = [
            (pos, data)
            for run_id, pos, data in _v3_rows("agentkit_events", "run_id, pos, data")
            if run_id == run_row[0]
        ]
        assert await store.read_events(run_row[0]) == events_from_rows(events)
        assert events
