"""Rooms in the SQL stores, beyond the conformance suite: real processes appending to one
room at once, the version-3 migration on older databases, and type filters against a
reference (the conformance checks in `agentkit.testing` cover the rest on every backend)."""

from __future__ import annotations

import itertools
import json
import os
import shutil
import sqlite3
import sys
import textwrap
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentkit.providers import UserMessage
from agentkit.stores import (
    DelegationRecord,
    MemoryStore,
    NewRoomEvent,
    PostgresStore,
    RoomGrant,
    RoomRecord,
    RunRecord,
    SQLiteStore,
    Store,
    _migrations,
    open_store,
)
from support.paths import DATA, SRC
from support.pg import PG_DSN, new_schema, schema_url

pytestmark = pytest.mark.anyio

HERE = Path(__file__).resolve().parent
FIXTURES = DATA / "store_v1"


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A store several processes can share: a SQLite file or a PostgreSQL schema."""
    if request.param == "sqlite":
        yield str(tmp_path / "rooms.db")
        return
    with new_schema() as schema:
        yield schema_url(schema)


def _versions(url: str) -> list[int]:
    if url.startswith("postgresql"):
        import psycopg

        with psycopg.connect(url) as conn:
            rows = conn.execute("SELECT version FROM agentkit_schema_version").fetchall()
    else:
        conn = sqlite3.connect(url)
        try:
            rows = conn.execute("SELECT version FROM agentkit_schema_version").fetchall()
        finally:
            conn.close()
    return sorted(row[0] for row in rows)


ALL_VERSIONS = [m.version for m in _migrations.MIGRATIONS]


# --- two processes appending to one room ---------------------------------------------------

_APPENDER = textwrap.dedent(
    """
    import json, sys, time
    from pathlib import Path

    import anyio

    from agentkit.stores import NewRoomEvent, open_store


    async def main(url, label, appends, go, out):
        store = open_store(url)
        await store.room_head("shared")  # connected, and the room is there
        print("ready", flush=True)
        while not Path(go).exists():
            await anyio.sleep(0.005)
        returned = []
        for a in range(appends):
            size = 1 + a % 3
            batch = [
                NewRoomEvent(f"{label}-{a}-{k}", "test.proc", label, {"a": a, "k": k}, time.time())
                for k in range(size)
            ]
            events = await store.append_room_events("shared", batch)
            returned.append([event.position for event in events])
            await anyio.sleep(0.001)  # let the other process in: a run of ~0.3 s each
        await store.aclose()
        Path(out).write_text(json.dumps(returned))


    anyio.run(main, sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5])
    """
)


async def test_two_processes_append_to_one_room_in_one_gapless_order(
    store_url: str, tmp_path: Path
) -> None:
    """Two processes append batches of 1-3 events to one room at once while this one
    reads: every read is a gap-free prefix of whole batches, and at the end positions are
    exactly 1..N, each batch contiguous, each process's batches in its own order."""
    appends = 150
    store = open_store(store_url)
    await store.create_room(RoomRecord("shared", "shared", "member:ada", time.time()))
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    go = tmp_path / "go"
    labels = ("p1", "p2")
    outs = {label: tmp_path / f"{label}.json" for label in labels}
    procs = []
    try:
        for label in labels:
            command = [sys.executable, "-c", _APPENDER, store_url, label, str(appends)]
            procs.append(await anyio.open_process([*command, str(go), str(outs[label])], env=env))
        with anyio.fail_after(60):
            for proc in procs:
                assert proc.stdout is not None
                assert (await proc.stdout.receive()).strip() == b"ready"
        go.touch()
        seen = 0
        with anyio.fail_after(120):
            while any(proc.returncode is None for proc in procs):
                events = await store.read_room_events("shared")
                positions = [event.position for event in events]
                assert positions == list(range(1, len(positions) + 1)), "a gap or disorder"
                assert len(positions) >= seen, "a read went back in time"
                seen = len(positions)
                await anyio.sleep(0.003)
                for proc in procs:
                    with anyio.move_on_after(0):
                        await proc.wait()
        for proc in procs:
            assert proc.stderr is not None
            stderr = (await proc.stderr.receive()).decode() if proc.returncode else ""
            assert proc.returncode == 0, stderr
    finally:
        for proc in procs:
            if proc.returncode is None:
                proc.kill()
                await proc.wait()
            await proc.aclose()

    total = len(labels) * sum(1 + a % 3 for a in range(appends))
    events = await store.read_room_events("shared")
    assert [event.position for event in events] == list(range(1, total + 1))
    assert await store.room_head("shared") == total
    assert len({event.id for event in events}) == total
    by_position = {event.position: event for event in events}
    for label in labels:
        returned: list[list[int]] = json.loads(outs[label].read_text())
        assert len(returned) == appends
        flat = [p for batch in returned for p in batch]
        assert flat == sorted(flat), f"{label}'s batches out of order"
        for a, batch in enumerate(returned):
            assert batch == list(range(batch[0], batch[0] + len(batch))), "a batch was split"
            assert [by_position[p].id for p in batch] == [
                f"{label}-{a}-{k}" for k in range(len(batch))
            ]
            assert by_position[batch[0]].payload == {"a": a, "k": 0}
    # The two really ran at once: their events interleave.
    authors = [event.author for event in events]
    switches = sum(1 for before, after in itertools.pairwise(authors) if before != after)
    assert switches > 2, "the processes never interleaved"
    await store.aclose()


# --- the version-3 migration ----------------------------------------------------------------


def _older_layout(monkeypatch: pytest.MonkeyPatch, version: int) -> None:
    """Make the stores opened next write the layout of `version` (as older code did)."""
    older = tuple(m for m in _migrations.MIGRATIONS if m.version <= version)
    for module in ("agentkit.stores._sqlite", "agentkit.stores._postgres"):
        monkeypatch.setattr(f"{module}.MIGRATIONS", older)
        monkeypatch.setattr(f"{module}.SCHEMA_VERSION", version)
    monkeypatch.setattr(_migrations, "SCHEMA_VERSION", version)


async def _use_rooms(store: Store) -> None:
    """Rooms work fully in an upgraded database."""
    await store.create_room(RoomRecord("r1", "lab", "member:ada", 1000.0, {"k": 1}))
    delegation = DelegationRecord(
        "d1", "r1", "agent:stats", {"q": 1}, "pending", "member:ada", 1000.0, 1000.0
    )
    events = await store.append_room_events(
        "r1",
        [NewRoomEvent("e1", "chat.message", "member:ada", {"text": "hi"}, 1000.0)],
        delegation=delegation,
    )
    assert [event.position for event in events] == [1]
    await store.set_grant("r1", RoomGrant("member:ada", ("*",), ("*",)))
    await store.set_cursor("r1", "agent:stats", 1)
    assert [e.id for e in await store.read_room_events("r1", types=["chat.*"])] == ["e1"]
    assert await store.get_delegation("r1", "d1") == delegation
    assert await store.get_cursor("r1", "agent:stats") == 1
    assert [r.id for r in await store.list_rooms()] == ["r1"]


async def test_a_version_2_database_gets_rooms_and_keeps_its_sessions(
    store_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    _older_layout(monkeypatch, 2)
    old = open_store(store_url)
    await old.create_session("s1", "app:agent", {"k": "v"})
    await old.append_transcript("s1", [UserMessage(content="before rooms")])
    await old.create_run(RunRecord("run1", "s1", "app:agent", "completed", 1.0, 2.0))
    await old.aclose()
    assert _versions(store_url) == [1, 2]
    monkeypatch.undo()

    store = open_store(store_url)
    try:
        session = await store.get_session("s1")
        assert session is not None and session.metadata == {"k": "v"}
        assert _versions(store_url) == ALL_VERSIONS
        assert 3 in ALL_VERSIONS
        assert await store.load_transcript("s1") == [UserMessage(content="before rooms")]
        run = await store.get_run("run1")
        assert run is not None and run.status == "completed"
        await _use_rooms(store)
        await store.create_session("s2", "app:agent")  # sessions go on beside rooms
        assert [s.id for s in await store.list_sessions()] == ["s1", "s2"]
    finally:
        await store.aclose()
    # Opening the upgraded database again applies nothing twice.
    again = open_store(store_url)
    try:
        assert await again.room_head("r1") == 1
        assert _versions(store_url) == ALL_VERSIONS
    finally:
        await again.aclose()


async def test_a_version_1_sqlite_file_upgrades_to_rooms(tmp_path: Path) -> None:
    path = tmp_path / "v1.sqlite"
    shutil.copyfile(FIXTURES / "v1.sqlite", path)
    store = SQLiteStore(path)
    try:
        sessions = {session.id for session in await store.list_sessions()}
        assert {"s-index", "s-dead", "s-unfinished"} <= sessions
        assert _versions(str(path)) == ALL_VERSIONS
        assert len(await store.load_transcript("s-dead")) == 2
        await _use_rooms(store)
    finally:
        await store.aclose()


async def test_a_failing_version_3_leaves_a_version_2_database_as_it_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = str(tmp_path / "v2.db")
    _older_layout(monkeypatch, 2)
    old = SQLiteStore(path)
    await old.create_session("kept", "app:agent")
    await old.aclose()
    monkeypatch.undo()
    (v3,) = [m for m in _migrations.MIGRATIONS if m.version == 3]
    broken = _migrations.Migration(3, v3.description, (*v3.sqlite, "SELECT nope()"), v3.postgres)
    monkeypatch.setattr(
        "agentkit.stores._sqlite.MIGRATIONS",
        tuple(m if m.version != 3 else broken for m in _migrations.MIGRATIONS),
    )
    failing = SQLiteStore(path)
    with pytest.raises(Exception, match="nope"):
        await failing.list_sessions()
    await failing.aclose()
    monkeypatch.undo()
    conn = sqlite3.connect(path)
    try:
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
    finally:
        conn.close()
    assert "agentkit_rooms" not in tables and "agentkit_room_events" not in tables
    assert _versions(path) == [1, 2]
    store = SQLiteStore(path)
    try:
        assert [s.id for s in await store.list_sessions()] == ["kept"]
        await _use_rooms(store)
    finally:
        await store.aclose()


# --- the layout -----------------------------------------------------------------------------


async def _fill_for_plans(store: Store) -> None:
    """10,000 events of 100 types: a typed read is selective enough for its index."""
    await store.create_room(RoomRecord("r1", "lab", "member:ada", 1.0))
    for b in range(20):
        await store.append_room_events(
            "r1",
            [
                NewRoomEvent(
                    f"e{b}-{i}", f"t{i % 100}.x" if i % 100 else "chat.message", "m", None, 1
                )
                for i in range(500)
            ],
        )
    await store.aclose()


async def test_sqlite_typed_reads_use_the_type_index(tmp_path: Path) -> None:
    path = tmp_path / "plan.db"
    await _fill_for_plans(SQLiteStore(path))
    conn = sqlite3.connect(path)
    try:
        conn.execute("ANALYZE")
        for where, params in (
            ("type IN (?, ?)", ("chat.message", "t5.x")),
            ("(type >= ? AND type < ?)", ("chat.", "chat/")),  # what `chat.*` reads
        ):
            plan = conn.execute(
                "EXPLAIN QUERY PLAN SELECT pos FROM agentkit_room_events "
                f"WHERE room_id = ? AND pos > ? AND {where} ORDER BY pos LIMIT 100",
                ("r1", 0, *params),
            ).fetchall()
            assert "agentkit_room_events_type" in " ".join(str(row) for row in plan), plan
    finally:
        conn.close()


@pytest.mark.postgres
async def test_postgres_typed_reads_use_the_type_index() -> None:
    """`type` is COLLATE "C", so `LIKE 'chat.%'` is a range of the type index whatever the
    database's locale."""
    with new_schema() as schema:
        await _fill_for_plans(PostgresStore(PG_DSN or "", schema=schema))
        import psycopg

        with psycopg.connect(schema_url(schema), autocommit=True) as conn:
            conn.execute("ANALYZE agentkit_room_events")
            for where in ("type = ANY(ARRAY['chat.message', 't5.x'])", "type LIKE 'chat.%'"):
                plan = conn.execute(
                    "EXPLAIN SELECT pos FROM agentkit_room_events "
                    f"WHERE room_id = 'r1' AND pos > 0 AND {where} ORDER BY pos LIMIT 100"
                ).fetchall()
                text = " ".join(row[0] for row in plan)
                assert "agentkit_room_events_type" in text, text
                assert "Index Cond" in text and "type" in text.split("Index Cond")[-1], text


# --- type filters against a reference ------------------------------------------------------

_ALPHABET = st.sampled_from(["a", "b", "A", ".", ".", "_", "%", "\\", "é", "/", "-"])
_TYPES = st.text(_ALPHABET, min_size=1, max_size=5)


@st.composite
def _pattern(draw: st.DrawFn, types: list[str]) -> str:
    """A pattern near one of `types`: itself or a prefix of it up to a dot (as
    `prefix.*`), maybe with characters turned into LIKE wildcards; or `*`, or any type."""
    base = draw(st.sampled_from(types))
    form = draw(st.sampled_from(["exact", "prefix", "prefix", "all", "other"]))
    if form == "all":
        return "*"
    if form == "other":
        return draw(_TYPES)
    if form == "prefix":
        dots = [i for i, c in enumerate(base) if c == "."]
        cut = draw(st.sampled_from(dots)) if dots else draw(st.integers(0, len(base)))
        base = base[:cut]
    if base and draw(st.integers(0, 3)):  # mostly: a wildcard character or two
        for _ in range(draw(st.integers(1, 2))):
            at = draw(st.integers(0, len(base) - 1))
            base = base[:at] + draw(st.sampled_from(["_", "%"])) + base[at + 1 :]
    return base + ".*" if form == "prefix" else base


def _reference(types: list[str], patterns: list[str]) -> list[int]:
    def keeps(event_type: str) -> bool:
        for pattern in patterns:
            if pattern == "*" or pattern == event_type:
                return True
            if pattern.endswith(".*") and event_type.startswith(pattern[:-1]):
                return True
        return False

    return [i + 1 for i, event_type in enumerate(types) if keeps(event_type)]


@pytest.fixture(params=["memory", "sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def kind(request: pytest.FixtureRequest) -> Iterator[str]:
    if request.param == "postgres":
        with new_schema() as schema:
            yield f"postgres:{schema}"
        return
    yield str(request.param)


def _open(kind: str) -> Store:
    if kind == "memory":
        return MemoryStore()
    if kind == "sqlite":
        return SQLiteStore(":memory:")
    return PostgresStore(PG_DSN or "", schema=kind.partition(":")[2])


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    data=st.data(),
    types=st.lists(_TYPES, min_size=1, max_size=12),
    after=st.integers(0, 12),
    limit=st.one_of(st.none(), st.integers(0, 5)),
)
def test_type_filters_match_the_reference(
    kind: str, data: st.DataObject, types: list[str], after: int, limit: int | None
) -> None:
    """Exact names and `x.*` prefixes select exactly what plain string comparison does,
    whatever `%`, `_`, `\\`, case or non-ASCII the types hold."""
    patterns = data.draw(st.lists(_pattern(types), min_size=1, max_size=3))

    async def main() -> list[int]:
        store = _open(kind)
        room = f"r-{uuid.uuid4().hex}"
        try:
            await store.create_room(RoomRecord(room, "lab", "member:ada", 1.0))
            await store.append_room_events(
                room,
                [NewRoomEvent(f"e{i}", t, "member:ada", None, 1.0) for i, t in enumerate(types)],
            )
            events = await store.read_room_events(room, after=after, limit=limit, types=patterns)
            return [event.position for event in events]
        finally:
            await store.delete_room(room)
            await store.aclose()

    expected = [p for p in _reference(types, patterns) if p > after]
    if limit is not None:
        expected = expected[:limit]
    assert anyio.run(main) == expected


def test_every_room_method_is_on_the_protocol_and_every_store() -> None:
    from agentkit.stores import Store as Protocol

    names = [
        "create_room",
        "get_room",
        "list_rooms",
        "update_room",
        "delete_room",
        "append_room_events",
        "read_room_events",
        "room_head",
        "set_grant",
        "delete_grant",
        "list_grants",
        "get_cursor",
        "set_cursor",
        "get_delegation",
        "list_delegations",
        "overdue_delegations",
    ]
    for cls in (Protocol, MemoryStore, SQLiteStore, PostgresStore):
        missing = [name for name in names if not hasattr(cls, name)]
        assert not missing, f"{cls.__name__} lacks {missing}"
    assert isinstance(MemoryStore(), Protocol)
    assert isinstance(SQLiteStore(":memory:"), Protocol)
