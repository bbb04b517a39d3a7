"""The store backends: conformance under asyncio and trio, durability, sharing, bad input."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import textwrap
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentkit.events import Text
from agentkit.providers import AssistantMessage, ToolCall, UserMessage
from agentkit.stores import (
    EventEntry,
    MemoryStore,
    PostgresStore,
    RunRecord,
    SessionNotFoundError,
    SQLiteStore,
    Store,
    StoreError,
    StoreUnavailableError,
    _migrations,
    open_store,
)
from agentkit.testing._store_conformance import STORE_CHECKS, StoreConformance, store_conformance
from support.paths import SRC
from support.pg import PG_DSN

# --- the conformance suite against every backend -----------------------------------------


class TestMemoryStore(StoreConformance):
    @pytest.fixture
    async def store(self) -> AsyncIterator[Store]:
        store = MemoryStore()
        yield store
        await store.aclose()


class TestSQLiteFileStore(StoreConformance):
    @pytest.fixture
    async def store(self, tmp_path: Path) -> AsyncIterator[Store]:
        store = SQLiteStore(tmp_path / "agentkit.db")
        yield store
        await store.aclose()


class TestSQLiteMemoryStore(StoreConformance):
    @pytest.fixture
    async def store(self) -> AsyncIterator[Store]:
        store = SQLiteStore(":memory:")
        yield store
        await store.aclose()


@pytest.mark.postgres
class TestPostgresStore(StoreConformance):
    @pytest.fixture
    async def store(self, pg_schema: str) -> AsyncIterator[Store]:
        assert PG_DSN
        store = PostgresStore(PG_DSN, schema=pg_schema)
        yield store
        await store.aclose()


def test_every_check_is_a_test() -> None:
    names = {name for name in dir(StoreConformance) if name.startswith("test_")}
    assert names == {f"test_{name}" for name in STORE_CHECKS}
    assert len(STORE_CHECKS) >= 20


# --- store_conformance() outside pytest classes -------------------------------------------


@pytest.mark.anyio
async def test_store_conformance_function_passes_for_sqlite(tmp_path: Path) -> None:
    counter = iter(range(1000))
    await store_conformance(lambda: SQLiteStore(tmp_path / f"{next(counter)}.db"))


class _ForgetfulStore(MemoryStore):
    """Loses the gaps between offsets: the kind of bug the suite must catch."""

    async def read_events(self, run_id: str, after: int = -1) -> list[EventEntry]:
        events = await super().read_events(run_id, after)
        return [EventEntry(i, e.event) for i, e in enumerate(events)]


@pytest.mark.anyio
async def test_store_conformance_names_the_failing_checks() -> None:
    async def make() -> Store:
        return _ForgetfulStore()

    with pytest.raises(ExceptionGroup) as info:
        await store_conformance(make)
    notes = [note for exc in info.value.exceptions for note in exc.__notes__]
    assert any("'events_gaps_preserved'" in note for note in notes)
    assert any("'events_after'" in note for note in notes)
    assert not any("'session_list'" in note for note in notes)
    assert f"of {len(STORE_CHECKS)} store conformance checks failed" in str(info.value)


@settings(max_examples=60, deadline=None)
@given(
    batches=st.lists(st.lists(st.integers(-2, 40), max_size=6), max_size=10),
    after=st.integers(-3, 45),
)
@pytest.mark.anyio
async def test_sqlite_event_log_matches_the_reference(batches: list[list[int]], after: int) -> None:
    """Any sequence of batches, valid or not, leaves SQLite's log exactly like MemoryStore's."""
    stores: list[Store] = [MemoryStore(), SQLiteStore(":memory:")]
    outcomes: list[list[str]] = []
    for store in stores:
        await store.create_session("s", "app:agent")
        await store.create_run(RunRecord("r", "s", "app:agent", "running", 0.0))
        seen = []
        for offsets in batches:
            entries = [EventEntry(o, Text(content=str(o))) for o in offsets]
            try:
                await store.append_events("r", entries)
                seen.append("ok")
            except ValueError:
                seen.append("rejected")
        outcomes.append(seen)
    reference, sqlite = stores
    assert outcomes[0] == outcomes[1]
    assert await sqlite.read_events("r") == await reference.read_events("r")
    assert await sqlite.read_events("r", after) == await reference.read_events("r", after)
    for store in stores:
        await store.aclose()


# --- SQLite: durability, WAL, sharing one file --------------------------------------------


async def _fill(store: Store) -> None:
    await store.create_session("s1", "app:agent", {"fingerprint": "f1"})
    await store.append_transcript(
        "s1",
        [
            UserMessage(content="add 1 and 2"),
            AssistantMessage(tool_calls=(ToolCall(id="c1", name="add", arguments="{bad"),)),
        ],
    )
    await store.create_run(RunRecord("r1", "s1", "app:agent", "running", 1000.5))
    await store.append_events(
        "r1", [EventEntry(0, Text(content="a")), EventEntry(7, Text(content="b"))]
    )
    await store.finish_run("r1", "completed", 1001.25)
    await store.update_session("s1", {"fingerprint": "f2"})


@pytest.mark.anyio
async def test_sqlite_reopen_sees_everything(tmp_path: Path) -> None:
    path = tmp_path / "durable.db"
    first = SQLiteStore(path)
    await _fill(first)
    expected = (
        await first.list_sessions(),
        await first.load_transcript("s1"),
        await first.list_runs("s1"),
        await first.read_events("r1"),
    )
    await first.aclose()

    for again in (SQLiteStore(str(path)), open_store(f"sqlite:///{path}"), open_store(path)):
        got = (
            await again.list_sessions(),
            await again.load_transcript("s1"),
            await again.list_runs("s1"),
            await again.read_events("r1"),
        )
        assert got == expected
        assert got[0][0].metadata == {"fingerprint": "f2"}
        assert got[2][0].status == "completed" and got[2][0].finished_at == 1001.25
        assert [e.offset for e in got[3]] == [0, 7]
        await again.aclose()


@pytest.mark.anyio
async def test_sqlite_file_is_wal_with_schema_version(tmp_path: Path) -> None:
    path = tmp_path / "wal.db"
    store = SQLiteStore(path)
    await store.create_session("s1", "app:agent")
    conn = sqlite3.connect(path)
    try:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        versions = conn.execute("SELECT version FROM agentkit_schema_version").fetchall()
        assert versions == [(m.version,) for m in _migrations.MIGRATIONS]
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        assert {"agentkit_sessions", "agentkit_transcript", "agentkit_runs"} <= tables
        assert "agentkit_events" in tables
    finally:
        conn.close()
    await store.aclose()


@pytest.mark.anyio
async def test_two_sqlite_stores_on_one_file(tmp_path: Path) -> None:
    path = tmp_path / "shared.db"
    a, b = SQLiteStore(path), SQLiteStore(path)
    await a.create_session("s1", "app:agent")
    await b.append_transcript("s1", [UserMessage(content="from b")])
    await a.create_run(RunRecord("r1", "s1", "app:agent", "running", time.time()))
    await a.append_events("r1", [EventEntry(0, Text(content="x"))])
    with pytest.raises(ValueError):
        await b.append_events("r1", [EventEntry(0, Text(content="dup"))])
    await b.append_events("r1", [EventEntry(1, Text(content="y"))])
    assert await a.load_transcript("s1") == [UserMessage(content="from b")]
    assert [e.offset for e in await a.read_events("r1")] == [0, 1]
    await b.delete_session("s1")
    assert await a.get_session("s1") is None
    await a.aclose()
    await b.aclose()


_WRITER = """
import sys, time, anyio
from agentkit.events import Text
from agentkit.providers import UserMessage
from agentkit.stores import EventEntry, PostgresStore, RunRecord, SQLiteStore

async def main(where, batches):
    kind, _, place = where.partition(":")
    store = SQLiteStore(place) if kind == "sqlite" else PostgresStore(sys.argv[3], schema=place)
    await store.create_run(RunRecord("proc-run", "proc", "app:agent", "running", time.time()))
    print("started", flush=True)
    for i in range(batches):
        await store.append_events(
            "proc-run", [EventEntry(3 * i + k, Text(content=f"{i}.{k}")) for k in range(3)]
        )
        await store.append_transcript("proc", [UserMessage(content=str(i))])
        await anyio.sleep(0.001)
    await store.finish_run("proc-run", "completed", time.time())
    await store.aclose()

anyio.run(main, sys.argv[1], int(sys.argv[2]))
"""


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def shared_place(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """Where two processes meet: `sqlite:<file>` or `postgres:<schema>`."""
    if request.param == "sqlite":
        yield f"sqlite:{tmp_path / 'multi.db'}"
    else:
        schema = request.getfixturevalue("pg_schema")
        yield f"postgres:{schema}"


@pytest.mark.anyio
async def test_store_shared_with_a_writing_process(shared_place: str) -> None:
    """Another process appends while this one reads and writes: every read sees whole
    batches in order, nothing is lost, and neither side fails on the shared lock."""
    batches = 150
    kind, _, place = shared_place.partition(":")
    store: Store = (
        SQLiteStore(place) if kind == "sqlite" else PostgresStore(PG_DSN or "", schema=place)
    )
    await store.create_session("proc", "app:agent")
    await store.create_session("mine", "app:agent")
    await store.create_run(RunRecord("my-run", "mine", "app:agent", "running", time.time()))
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    seen: list[int] = []
    partial_reads = 0
    mine = 0
    async with await anyio.open_process(
        [sys.executable, "-c", _WRITER, shared_place, str(batches), PG_DSN or ""], env=env
    ) as proc:
        while proc.returncode is None:
            events = await store.read_events("proc-run")
            offsets = [e.offset for e in events]
            assert offsets == list(range(len(offsets))), "a read saw a gap or disorder"
            assert len(offsets) % 3 == 0, "a read saw half a batch"
            assert len(offsets) >= len(seen), "a read went back in time"
            if 0 < len(offsets) < 3 * batches:
                partial_reads += 1
            seen = offsets
            # Write too, so both processes contend for the write lock.
            await store.append_events("my-run", [EventEntry(mine, Text(content="mine"))])
            mine += 1
            await anyio.sleep(0.002)
            if proc.returncode is None:
                with anyio.move_on_after(0):
                    await proc.wait()
        assert proc.stderr is not None
        stderr = (await proc.stderr.receive()).decode() if proc.returncode else ""
        assert proc.returncode == 0, stderr
    events = await store.read_events("proc-run")
    assert [e.offset for e in events] == list(range(3 * batches))
    assert events[-1].event == Text(content=f"{batches - 1}.2")
    transcript = await store.load_transcript("proc")
    assert [m.content for m in transcript if isinstance(m, UserMessage)] == [
        str(i) for i in range(batches)
    ]
    run = await store.get_run("proc-run")
    assert run is not None and run.status == "completed"
    assert [e.offset for e in await store.read_events("my-run")] == list(range(mine))
    assert partial_reads > 0, "never observed the other process mid-way"
    await store.aclose()


@pytest.mark.anyio
async def test_sqlite_waits_for_a_lock_without_blocking_the_loop(tmp_path: Path) -> None:
    path = tmp_path / "locked.db"
    store = SQLiteStore(path, busy_timeout=5)
    await store.create_session("s1", "app:agent")
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # another writer holds the lock
    ticks = 0

    async def tick() -> None:
        nonlocal ticks
        while True:
            ticks += 1
            await anyio.sleep(0.01)

    async def release() -> None:
        await anyio.sleep(0.3)
        holder.execute("COMMIT")

    async with anyio.create_task_group() as tg:
        tg.start_soon(tick)
        tg.start_soon(release)
        started = time.monotonic()
        await store.append_transcript("s1", [UserMessage(content="waited")])
        waited = time.monotonic() - started
        tg.cancel_scope.cancel()
    holder.close()
    assert waited >= 0.25
    assert ticks >= 10, "the event loop was blocked while waiting for the lock"
    assert await store.load_transcript("s1") == [UserMessage(content="waited")]
    await store.aclose()


@pytest.mark.anyio
async def test_sqlite_lock_held_too_long_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "stuck.db"
    store = SQLiteStore(path, busy_timeout=0.2)
    await store.create_session("s1", "app:agent")
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        # Unavailable (retrying later may work), still a `StoreError`.
        with pytest.raises(StoreUnavailableError, match=r"stuck\.db: database stayed locked"):
            await store.append_transcript("s1", [UserMessage(content="never")])
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert await store.load_transcript("s1") == []  # reading never waits for the writer
    await store.aclose()


@pytest.mark.anyio
async def test_sqlite_not_a_database_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("these are my notes, not a database\n" * 100)
    store = SQLiteStore(path)
    with pytest.raises(StoreError, match=r"notes\.txt: file is not a database"):
        await store.get_session("s1")
    missing_dir = SQLiteStore(tmp_path / "no" / "such" / "dir.db")
    with pytest.raises(StoreUnavailableError, match=r"dir\.db: unable to open database file"):
        await missing_dir.list_sessions()


@pytest.mark.anyio
async def test_sqlite_newer_schema_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "future.db"
    store = SQLiteStore(path)
    await store.list_sessions()
    await store.aclose()
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE agentkit_schema_version SET version = 99")
    conn.close()
    with pytest.raises(StoreError, match="schema version 99 is newer"):
        await SQLiteStore(path).list_sessions()


@pytest.mark.anyio
async def test_sqlite_closed_store_refuses_calls() -> None:
    store = SQLiteStore()
    await store.create_session("s1", "app:agent")
    await store.aclose()
    with pytest.raises(StoreError, match="closed"):
        await store.get_session("s1")


@pytest.mark.anyio
async def test_sqlite_cancelled_caller_leaves_no_half_write(tmp_path: Path) -> None:
    """A caller cancelled while waiting for the lock writes nothing, and the store works on."""
    path = tmp_path / "cancel.db"
    store = SQLiteStore(path)
    await store.create_session("s1", "app:agent")
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    with anyio.move_on_after(0.1) as scope:
        await store.append_transcript("s1", [UserMessage(content="cancelled")])
    assert scope.cancelled_caught
    holder.execute("ROLLBACK")
    holder.close()
    await store.append_transcript("s1", [UserMessage(content="kept")])
    assert await store.load_transcript("s1") == [UserMessage(content="kept")]
    await store.aclose()


# --- PostgreSQL beyond the suite ----------------------------------------------------------


@pytest.mark.postgres
@pytest.mark.anyio
async def test_postgres_two_stores_share_one_database(pg_schema: str) -> None:
    assert PG_DSN
    a = PostgresStore(PG_DSN, schema=pg_schema, max_connections=2)
    b = PostgresStore(PG_DSN, schema=pg_schema, max_connections=3)
    await a.create_session("s1", "app:agent")

    async def append(store: Store, label: str) -> None:
        for i in range(10):
            await store.append_transcript(
                "s1", [UserMessage(content=f"{label}{i}.{k}") for k in range(3)]
            )

    async with anyio.create_task_group() as tg:
        for n in range(4):
            tg.start_soon(append, a if n % 2 else b, f"w{n}-")
    contents = [m.content for m in await b.load_transcript("s1") if isinstance(m, UserMessage)]
    assert len(contents) == 4 * 10 * 3
    for start in range(0, len(contents), 3):
        head = contents[start].rsplit(".", 1)[0]
        assert contents[start : start + 3] == [f"{head}.{k}" for k in range(3)]
    await a.create_run(RunRecord("r1", "s1", "app:agent", "running", time.time()))
    await a.append_events("r1", [EventEntry(0, Text(content="a"))])
    with pytest.raises(ValueError):
        await b.append_events("r1", [EventEntry(0, Text(content="b"))])
    assert await b.read_events("r1") == [EventEntry(0, Text(content="a"))]
    await a.aclose()
    await b.aclose()


@pytest.mark.postgres
@pytest.mark.anyio
async def test_postgres_reconnect_sees_everything(pg_schema: str) -> None:
    assert PG_DSN
    first = PostgresStore(PG_DSN, schema=pg_schema)
    await _fill(first)
    expected = (await first.list_sessions(), await first.read_events("r1"))
    await first.aclose()
    with pytest.raises(StoreError, match="closed"):
        await first.list_sessions()
    again = PostgresStore(PG_DSN, schema=pg_schema)
    assert (await again.list_sessions(), await again.read_events("r1")) == expected
    assert await again.load_transcript("s1") == [
        UserMessage(content="add 1 and 2"),
        AssistantMessage(tool_calls=(ToolCall(id="c1", name="add", arguments="{bad"),)),
    ]
    await again.aclose()


@pytest.mark.anyio
async def test_postgres_unreachable_is_a_store_error() -> None:
    store = PostgresStore("postgresql://nobody@127.0.0.1:1/none?connect_timeout=2")
    with pytest.raises(StoreUnavailableError, match="PostgreSQL: "):
        await store.get_session("s1")
    await store.aclose()


@pytest.mark.postgres
@pytest.mark.anyio
async def test_postgres_nul_in_an_id_is_a_store_error(pg_schema: str) -> None:
    assert PG_DSN
    store = PostgresStore(PG_DSN, schema=pg_schema)
    with pytest.raises(StoreError, match="NUL"):
        await store.create_session("bad\x00id", "app:agent")
    with pytest.raises(SessionNotFoundError):
        await store.load_transcript("s1")
    await store.aclose()


# --- open_store and import cost ---------------------------------------------------------


@pytest.mark.parametrize(
    ("location", "kind", "path"),
    [
        (":memory:", SQLiteStore, ":memory:"),
        ("sqlite://", SQLiteStore, ":memory:"),
        ("sqlite:///:memory:", SQLiteStore, ":memory:"),
        ("sqlite:///data/agentkit.db", SQLiteStore, "data/agentkit.db"),
        ("sqlite:////var/lib/agentkit.db", SQLiteStore, "/var/lib/agentkit.db"),
        ("runs.db", SQLiteStore, "runs.db"),
        ("/tmp/x/runs.db", SQLiteStore, "/tmp/x/runs.db"),
        ("memory://", MemoryStore, None),
        ("postgresql://u@h:5432/db", PostgresStore, None),
        ("postgres://u@h/db", PostgresStore, None),
    ],
)
def test_open_store_forms(location: str, kind: type[Any], path: str | None) -> None:
    store = open_store(location)
    assert type(store) is kind
    if path is not None:
        assert isinstance(store, SQLiteStore) and store.path == path
    if isinstance(store, PostgresStore):
        assert store.dsn == location
    assert isinstance(store, Store)


def test_open_store_expands_home(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    store = open_store("~/agentkit.db")
    assert isinstance(store, SQLiteStore) and store.path == str(tmp_path / "agentkit.db")


@pytest.mark.parametrize(
    ("location", "message"),
    [
        ("mysql://u@h/db", "unknown store URL scheme 'mysql'"),
        ("", "store location is empty"),
        ("   ", "store location is empty"),
    ],
)
def test_open_store_rejects(location: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        open_store(location)


def test_importing_stores_loads_no_database_library() -> None:
    code = textwrap.dedent(
        """
        import json, sys
        import agentkit.stores, agentkit.testing._store_conformance
        heavy = ("psycopg", "sqlite3", "pytest", "agentkit.stores._sqlite")
        heavy += ("agentkit.stores._postgres",)
        print(json.dumps([m for m in heavy if m in sys.modules]))
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        env={**os.environ, "PYTHONPATH": str(SRC)},
        capture_output=True,
        text=True,
        check=True,
    )
    assert json.loads(out.stdout) == []


# --- with the runtime ---------------------------------------------------------------------


@pytest.mark.anyio
async def test_runtime_resumes_a_session_from_a_reopened_sqlite_file(tmp_path: Path) -> None:
    from agentkit import AgentSpec
    from agentkit.runtime import Runtime
    from agentkit.testing import ScriptedProvider

    path = tmp_path / "runtime.db"
    spec = AgentSpec(id="demo:greeter", system_prompt="Greet people.")
    store = SQLiteStore(path)
    async with Runtime(provider=ScriptedProvider([{"text": "Hello!"}]), store=store) as rt:
        first = await (await rt.start(spec, "Say hello")).wait()
    await store.aclose()
    assert first.status == "completed"

    store = SQLiteStore(path)  # a new process would see the same
    provider = ScriptedProvider([{"text": "Hello again!"}])
    async with Runtime(provider=provider, store=store) as rt:
        second = await (await rt.start(spec, "Once more", session_id=first.session_id)).wait()
    assert second.text == "Hello again!"
    assert [m.model_dump(exclude_defaults=True) for m in provider.requests[0].messages] == [
        {"content": "Say hello"},
        {"text": "Hello!"},
        {"content": "Once more"},
    ]
    for run in await store.list_runs(first.session_id):
        events = await store.read_events(run.id)
        types = [e.event.type for e in events]
        assert types[0] == "turn_start" and types[-1] == "turn_end"
        assert "text_delta" not in types and "result" in types
        assert run.status == "completed" and run.finished_at is not None
    assert [r.id for r in await store.list_runs(first.session_id)] == [first.run_id, second.run_id]
    await store.aclose()


@pytest.mark.anyio
async def test_sqlite_checkpoints_in_a_background_thread(tmp_path: Path) -> None:
    from agentkit.stores._sqlite import CHECKPOINT_BYTES

    path = tmp_path / "big.db"
    store = SQLiteStore(path)
    await store.create_session("s1", "app:agent")
    await store.create_run(RunRecord("r1", "s1", "app:agent", "running", time.time()))
    chunk = "z" * 100_000
    count = CHECKPOINT_BYTES // len(chunk) + 5
    for i in range(count):
        await store.append_events("r1", [EventEntry(i, Text(content=chunk))])
    assert store._checkpointer is not None
    await anyio.to_thread.run_sync(store._checkpointer.join)
    # The checkpoint copied the log into the database file itself.
    assert (await anyio.Path(path).stat()).st_size > CHECKPOINT_BYTES
    await store.aclose()  # the last connection closed: the log is folded in and removed
    assert not await anyio.Path(f"{path}-wal").exists()
    again = SQLiteStore(path)
    events = await again.read_events("r1")
    assert [e.offset for e in events] == list(range(count))
    await again.aclose()
