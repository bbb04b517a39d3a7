"""Durable runs: stored from acceptance, owned under a lease, ended when their process dies,
one running run per session across processes, and stores that migrate old databases."""

from __future__ import annotations

import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from agentkit import AgentSpec, Runtime
from agentkit.events import ErrorEvent, TurnEnd, TurnStart
from agentkit.providers import AssistantMessage, UserMessage
from agentkit.runtime._lease import INTERRUPTED_REASON, end_expired_runs
from agentkit.stores import (
    EventEntry,
    MemoryStore,
    PostgresStore,
    RunRecord,
    SQLiteStore,
    Store,
    StoreError,
    _migrations,
    open_store,
)
from agentkit.testing import FunctionProvider, ScriptedProvider, assert_stream_invariants
from support.paths import DATA, SRC
from support.pg import PG_DSN, new_schema, schema_url

pytestmark = pytest.mark.anyio

HERE = Path(__file__).resolve().parent
FIXTURES = DATA / "store_v1"
CHILD = HERE / "durable_child.py"
SPEC = AgentSpec(id="demo:durable", system_prompt="You are durable.")
ALL_VERSIONS = [m.version for m in _migrations.MIGRATIONS]


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A store location that several processes can share: a SQLite file or a PostgreSQL
    schema of its own."""
    if request.param == "sqlite":
        yield str(tmp_path / "durable.db")
        return
    with new_schema() as schema:
        yield schema_url(schema)


@pytest.fixture
async def store(store_url: str) -> AsyncIterator[Store]:
    opened = open_store(store_url)
    yield opened
    await opened.aclose()


def _child(*args: str) -> subprocess.Popen[str]:
    """`tests/runtime/durable_child.py` with `args`, in a process of its own."""
    return subprocess.Popen(
        [sys.executable, str(CHILD), *args],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(SRC)},
    )


async def _until_ended(store: Store, run_id: str) -> RunRecord:
    """Poll another process's run until it is no longer running (there is nothing to
    wait on across processes)."""
    while (record := await store.get_run(run_id)) and record.status == "running":  # noqa: ASYNC110
        await anyio.sleep(0.05)
    assert record is not None
    return record


# --- a run is durable from acceptance ------------------------------------------------------


async def test_start_returns_once_the_run_and_its_prompt_are_stored(
    store_url: str, store: Store
) -> None:
    async def never(request: Any) -> str:
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    async with Runtime(provider=FunctionProvider(never), store=store_url) as runtime:
        run = await runtime.start(SPEC, "Remember this prompt")
        # Another store on the same database, as another process would see it.
        record = await store.get_run(run.id)
        assert record is not None
        assert (record.status, record.owner) == ("running", runtime.instance_id)
        assert record.heartbeat_at is not None and record.lease_expires_at is not None
        assert record.lease_expires_at - record.heartbeat_at == runtime.lease_duration
        events = [entry.event for entry in await store.read_events(run.id)]
        assert [event.type for event in events] == ["turn_start", "session_init"]
        assert isinstance(events[0], TurnStart)
        assert events[0].user_prompt == "Remember this prompt"
        run.cancel()
        assert (await run.wait()).status == "interrupted"
    record = await store.get_run(run.id)
    assert record is not None and record.status == "interrupted"
    types = [entry.event.type for entry in await store.read_events(run.id)]
    assert types == ["turn_start", "session_init", "error", "turn_end"]


async def test_a_stored_log_ends_with_its_final_block_and_status_together(
    store_url: str, store: Store
) -> None:
    async with Runtime(provider=ScriptedProvider(["hello"]), store=store_url) as runtime:
        run = await runtime.start(SPEC, "hi")
        outcome = await run.wait()
        record = await store.get_run(run.id)
        assert record is not None and record.status == "completed" == outcome.status
        assert record.error is None and record.finished_at is not None
        types = [entry.event.type for entry in await store.read_events(run.id)]
        assert types == ["turn_start", "session_init", "text", "result", "turn_end"]


async def test_a_failed_run_records_why(store_url: str, store: Store) -> None:
    provider = ScriptedProvider([{"error": "the model is down"}])
    async with Runtime(provider=provider, store=store_url) as runtime:
        run = await runtime.start(SPEC, "hi")
        outcome = await run.wait()
    record = await store.get_run(run.id)
    assert record is not None and record.status == "error"
    assert record.error == outcome.error and "the model is down" in (record.error or "")


# --- a dead process's runs end as interrupted -------------------------------------------


async def test_a_killed_process_run_is_ended_as_interrupted_and_its_session_resumed(
    store_url: str, store: Store
) -> None:
    """SIGKILL during the first model call: a new runtime on the same database shows the
    prompt, ends the run as interrupted once the lease (1.5 s) is over, and the session
    can be resumed."""
    child = _child(store_url, "hang", "Work until killed")
    try:
        assert child.stdout is not None
        line = await anyio.to_thread.run_sync(child.stdout.readline)
        run_id, session_id = line.split()
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
        if child.stdout is not None:
            child.stdout.close()
    killed = time.time()
    record = await store.get_run(run_id)
    assert record is not None and record.status == "running"
    events = [entry.event for entry in await store.read_events(run_id)]
    assert isinstance(events[0], TurnStart) and events[0].user_prompt == "Work until killed"

    provider = ScriptedProvider(["I am back."])
    async with Runtime(
        provider=provider, store=store_url, heartbeat_interval=0.1, lease_duration=1
    ) as runtime:
        with anyio.fail_after(20):
            record = await _until_ended(store, run_id)
        ended = time.time()
        assert (record.status, record.error) == ("error", INTERRUPTED_REASON)
        # Not before the dead process's lease was over.
        assert record.finished_at is not None and record.lease_expires_at is not None
        assert record.finished_at >= record.lease_expires_at
        assert ended - killed < 15
        entries = await store.read_events(run_id)
        assert [e.event.type for e in entries] == [
            "turn_start",
            "session_init",
            "error",
            "turn_end",
        ]
        assert_stream_invariants(e.event for e in entries)
        final = entries[-1].event
        assert isinstance(final, TurnEnd) and final.status == "error"
        assert isinstance(events[0], TurnStart) and final.turn_id == events[0].turn_id
        error = entries[-2].event
        assert isinstance(error, ErrorEvent) and error.error == INTERRUPTED_REASON

        again = await runtime.start(SPEC, "Are you there?", session_id=session_id)
        assert (await again.wait()).text == "I am back."


async def test_two_processes_starting_a_run_on_one_session_exactly_one_starts(
    store_url: str, store: Store, tmp_path: Path
) -> None:
    await store.create_session("shared", SPEC.id)
    go = tmp_path / "go"
    children = [_child(store_url, "race", "shared", str(go)) for _ in range(2)]
    await anyio.sleep(1.5)  # both have imported agentkit and wait for the signal
    go.write_text("go")
    outputs = []
    for child in children:
        out, _ = await anyio.to_thread.run_sync(lambda c=child: c.communicate(timeout=60))
        assert child.returncode == 0
        outputs.append(out.split())
    assert sorted(outputs) == [["busy"], ["started", "completed"]]
    runs = await store.list_runs("shared")
    assert [run.status for run in runs] == ["completed"]


async def test_a_sweep_never_ends_a_run_whose_owner_keeps_its_lease(
    store_url: str,
) -> None:
    async def slow(request: Any) -> str:
        await anyio.sleep(1.2)
        return "done"

    async with (
        Runtime(
            provider=FunctionProvider(slow),
            store=store_url,
            heartbeat_interval=0.1,
            lease_duration=0.4,
        ) as owner,
        Runtime(
            provider=ScriptedProvider([]),
            store=store_url,
            heartbeat_interval=0.05,
            lease_duration=0.4,
        ),
    ):
        run = await owner.start(SPEC, "take your time")
        outcome = await run.wait()
    assert outcome.status == "completed"


async def test_a_runtime_whose_run_was_ended_elsewhere_stops_it(
    store_url: str, store: Store
) -> None:
    stopped = anyio.Event()

    async def never(request: Any) -> str:
        try:
            await anyio.sleep_forever()
        finally:
            stopped.set()
        raise AssertionError("unreachable")

    async with Runtime(
        provider=FunctionProvider(never),
        store=store_url,
        heartbeat_interval=0.05,
        lease_duration=5,
    ) as runtime:
        run = await runtime.start(SPEC, "hi")
        # Another runtime took the run for dead (say its clock ran ahead) and ended it.
        assert await end_expired_runs(store, time.time() + 60) == [run.id]
        with anyio.fail_after(10):
            await stopped.wait()
            outcome = await run.wait()
        assert outcome.status == "interrupted"
    record = await store.get_run(run.id)
    assert record is not None and (record.status, record.error) == ("error", INTERRUPTED_REASON)
    types = [entry.event.type for entry in await store.read_events(run.id)]
    assert types == ["turn_start", "session_init", "error", "turn_end"]


async def test_leases_are_renewed_while_a_run_goes_on(store_url: str, store: Store) -> None:
    release = anyio.Event()

    async def wait(request: Any) -> str:
        await release.wait()
        return "done"

    async with Runtime(
        provider=FunctionProvider(wait),
        store=store_url,
        heartbeat_interval=0.05,
        lease_duration=1,
    ) as runtime:
        run = await runtime.start(SPEC, "hi")
        first = await store.get_run(run.id)
        await anyio.sleep(0.3)
        later = await store.get_run(run.id)
        assert first is not None and later is not None
        assert later.heartbeat_at is not None and first.heartbeat_at is not None
        assert later.heartbeat_at > first.heartbeat_at
        assert later.lease_expires_at == pytest.approx(later.heartbeat_at + 1)
        release.set()
        assert (await run.wait()).ok


async def test_leases_need_a_heartbeat_shorter_than_the_lease() -> None:
    with pytest.raises(ValueError, match="heartbeat_interval"):
        Runtime(heartbeat_interval=30, lease_duration=30)
    with pytest.raises(ValueError, match="heartbeat_interval"):
        Runtime(heartbeat_interval=0)


async def test_the_in_memory_store_keeps_no_leases() -> None:
    async with Runtime(provider=ScriptedProvider(["hi"]), store=MemoryStore()) as runtime:
        assert runtime._leases is None
        run = await runtime.start(SPEC, "hi")
        assert (await run.wait()).ok


# --- migrations ------------------------------------------------------------------------------


def _sqlite_fixture(tmp_path: Path) -> Path:
    path = tmp_path / "v1.sqlite"
    shutil.copyfile(FIXTURES / "v1.sqlite", path)
    return path


def _pg_fixture(schema: str) -> None:
    """Load the version-1 dump into `schema`."""
    import psycopg

    assert PG_DSN
    dump = (FIXTURES / "v1.postgres.sql").read_text()
    # psql's own commands (`\restrict`) are not SQL.
    sql = "\n".join(line for line in dump.splitlines() if not line.startswith("\\"))
    sql = sql.replace("agentkit_v1_fixture", schema)
    with psycopg.connect(PG_DSN, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
        conn.execute(sql)  # type: ignore[call-overload]


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def v1_store_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A version-1 database written by the code before migrations existed."""
    if request.param == "sqlite":
        yield str(_sqlite_fixture(tmp_path))
        return
    with new_schema() as schema:
        _pg_fixture(schema)
        yield schema_url(schema)


async def _versions(store: Store) -> list[int]:
    if isinstance(store, SQLiteStore):
        conn = sqlite3.connect(store.path)
        try:
            rows = conn.execute("SELECT version FROM agentkit_schema_version").fetchall()
        finally:
            conn.close()
    else:
        import psycopg

        assert isinstance(store, PostgresStore)
        with psycopg.connect(store.dsn) as conn:
            rows = conn.execute("SELECT version FROM agentkit_schema_version").fetchall()
    return sorted(row[0] for row in rows)


async def test_a_version_1_database_upgrades_with_nothing_lost(v1_store_url: str) -> None:
    store = open_store(v1_store_url)
    try:
        sessions = {session.id: session for session in await store.list_sessions()}
        assert await _versions(store) == ALL_VERSIONS
        index = sessions.pop("s-index")
        done = index.metadata["done"]
        assert set(sessions) == {done, "s-dead", "s-unfinished"}
        assert sessions[done].metadata == {"k": "v", "n": 1}
        assert sessions[done].agent_id == "fixture:agent"

        transcript = await store.load_transcript(done)
        assert [message.role for message in transcript] == [
            "user",
            "assistant",
            "user",
            "assistant",
            "tool",
            "assistant",
        ]
        assert transcript[0] == UserMessage(content="Say hello")
        assert transcript[1] == AssistantMessage(text="Hello from the fixture.")
        assert await store.load_transcript("s-dead") == [
            UserMessage(content="Work forever"),
            AssistantMessage(text="Working on it."),
        ]

        runs = await store.list_runs(done)
        assert [run.status for run in runs] == ["completed", "completed"]
        assert all(run.owner is None and run.lease_expires_at is None for run in runs)
        first = [entry.event.type for entry in await store.read_events(runs[0].id)]
        assert first == ["turn_start", "session_init", "text", "result", "turn_end"]
        second = await store.read_events(runs[1].id)
        assert [entry.offset for entry in second] == [0, 1, 2, 3, 5, 6, 7]
        start = second[0].event
        assert isinstance(start, TurnStart) and start.user_prompt == "Read missing.txt"

        # Runs older code left running have no owner and count as expired.
        dead = await store.get_run("r-dead")
        assert dead is not None and (dead.status, dead.lease_expires_at) == ("running", 0)
        assert [run.id for run in await store.expired_runs(time.time())] == [
            "r-dead",
            "r-unfinished",
        ]
    finally:
        await store.aclose()


async def test_a_runtime_opening_a_version_1_database_ends_its_orphaned_runs(
    v1_store_url: str,
) -> None:
    store = open_store(v1_store_url)
    try:
        async with Runtime(provider=ScriptedProvider(["Done now."]), store=v1_store_url) as rt:
            # Ended as the runtime opened, before it started anything.
            dead = await store.get_run("r-dead")
            assert dead is not None
            assert (dead.status, dead.error) == ("error", INTERRUPTED_REASON)
            entries = await store.read_events("r-dead")
            assert [(e.offset, e.event.type) for e in entries] == [
                (0, "turn_start"),
                (1, "session_init"),
                (3, "text"),
                (4, "error"),
                (5, "turn_end"),
            ]
            end = entries[-1].event
            assert isinstance(end, TurnEnd) and end.turn_id == "turn-dead"
            # A log that already had its final block keeps it and gets its status.
            unfinished = await store.get_run("r-unfinished")
            assert unfinished is not None
            assert (unfinished.status, unfinished.error) == ("error", "model call failed: boom")
            assert len(await store.read_events("r-unfinished")) == 4
            # And the sessions go on.
            spec = AgentSpec(id="fixture:agent", system_prompt="You are a fixture.")
            run = await rt.start(spec, "Still there?", session_id="s-dead")
            assert (await run.wait()).text == "Done now."
        transcript = await store.load_transcript("s-dead")
        assert transcript[-2:] == [
            UserMessage(content="Still there?"),
            AssistantMessage(text="Done now."),
        ]
    finally:
        await store.aclose()


async def test_stores_opened_at_once_apply_each_migration_once(store_url: str) -> None:
    stores = [open_store(store_url) for _ in range(4)]
    try:
        async with anyio.create_task_group() as tg:
            for one in stores:
                tg.start_soon(one.list_sessions)
        assert await _versions(stores[0]) == ALL_VERSIONS
    finally:
        for one in stores:
            await one.aclose()


async def test_a_failing_migration_changes_nothing(
    store_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = open_store(store_url)
    await first.create_session("kept", "a:a")
    await first.aclose()
    broken = _migrations.Migration(
        _migrations.SCHEMA_VERSION + 1,
        "a step that fails half way",
        sqlite=("CREATE TABLE agentkit_extra (x INTEGER)", "SELECT no_such_function()"),
        postgres=("CREATE TABLE {p}agentkit_extra (x integer)", "SELECT no_such_function()"),
    )
    monkeypatch.setattr(_migrations, "SCHEMA_VERSION", broken.version)
    for module in ("agentkit.stores._sqlite", "agentkit.stores._postgres"):
        monkeypatch.setattr(f"{module}.MIGRATIONS", (*_migrations.MIGRATIONS, broken))
        monkeypatch.setattr(f"{module}.SCHEMA_VERSION", broken.version)
    failing = open_store(store_url)
    with pytest.raises(StoreError, match="no_such_function"):
        await failing.list_sessions()
    await failing.aclose()
    monkeypatch.undo()
    again = open_store(store_url)
    try:
        assert [s.id for s in await again.list_sessions()] == ["kept"]
        assert await _versions(again) == ALL_VERSIONS
        # The table of the failed step's first statement was rolled back with it.
        await again.create_session("after", "a:a")
    finally:
        await again.aclose()
    if store_url.startswith("postgresql"):
        import psycopg

        with psycopg.connect(store_url) as conn:
            found = conn.execute("SELECT to_regclass('agentkit_extra')").fetchone()
        assert found == (None,)
    else:
        conn = sqlite3.connect(store_url)
        try:
            names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
        finally:
            conn.close()
        assert "agentkit_extra" not in names


async def test_a_store_path_that_is_not_a_regular_file_is_refused(tmp_path: Path) -> None:
    store = SQLiteStore("/dev/null")
    with pytest.raises(StoreError, match="not a regular file"):
        await store.list_sessions()
    await store.aclose()
    assert not any(map(os.path.exists, ["/dev/null-journal", "/dev/null-wal"]))


async def test_ended_runs_take_no_more_events(store: Store) -> None:
    await store.create_session("s", "a:a")
    await store.create_run(RunRecord("r", "s", "a:a", "running", time.time()))
    assert await store.finish_run("r", "completed", time.time())
    from agentkit.events import Text
    from agentkit.stores import RunEndedError

    with pytest.raises(RunEndedError):
        await store.append_events("r", [EventEntry(0, Text(content="late"))])
