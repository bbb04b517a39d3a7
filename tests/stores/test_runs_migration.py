"""Migration 6: a version-5 database gets the index that keeps one running run per
session (`agentkit_runs_one_running`), on SQLite and PostgreSQL. A database as earlier
code wrote it upgrades in place and keeps its runs; one that somehow holds two running
runs of a session is refused with a message that says what to do, and stays as it was.
On PostgreSQL the index is what turns a second start on a session into `SessionBusyError`."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from agentkit.errors import StoreError
from agentkit.stores import RunRecord, SessionBusyError, _migrations, open_store
from support.old_layout import older_layout, run_sql
from support.pg import new_schema, schema_url

pytestmark = pytest.mark.anyio

SHARED = ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]


@pytest.fixture(params=SHARED)
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A SQLite file or a PostgreSQL schema (as a URL whose search path is that schema)."""
    if request.param == "sqlite":
        yield str(tmp_path / "runs.db")
        return
    with new_schema("runs") as schema:
        yield schema_url(schema)


def _insert_run(run_id: str, session_id: str, status: str) -> str:
    return (
        "INSERT INTO agentkit_runs (id, session_id, agent_id, status, created_at) "
        f"VALUES ('{run_id}', '{session_id}', 'app:agent', '{status}', 1000.0)"
    )


def _versions(url: str) -> list[int]:
    return sorted(row[0] for row in run_sql(url, ["SELECT version FROM agentkit_schema_version"]))


def _has_index(url: str) -> bool:
    query = (
        "SELECT 1 FROM pg_indexes WHERE indexname = 'agentkit_runs_one_running' "
        "AND schemaname = current_schema()"
        if url.startswith("postgresql")
        else "SELECT 1 FROM sqlite_master WHERE name = 'agentkit_runs_one_running'"
    )
    return bool(run_sql(url, [query]))


async def _version_5_with_sessions(url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A database as version-5 code left it, with sessions `s1` and `s2`."""
    older_layout(monkeypatch, 5)
    old = open_store(url)
    await old.create_session("s1", "app:agent")
    await old.create_session("s2", "app:agent")
    await old.aclose()
    monkeypatch.undo()


async def test_a_version_5_database_upgrades_and_keeps_one_running_run_per_session(
    store_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    await _version_5_with_sessions(store_url, monkeypatch)
    run_sql(
        store_url,
        [
            _insert_run("r1", "s1", "completed"),
            _insert_run("r2", "s1", "running"),
            _insert_run("r3", "s2", "interrupted"),
        ],
    )
    assert _versions(store_url) == [1, 2, 3, 4, 5]

    store = open_store(store_url)
    try:
        assert [run.id for run in await store.list_runs("s1")] == ["r1", "r2"]
        assert _versions(store_url) == [m.version for m in _migrations.MIGRATIONS]
        assert _has_index(store_url)
        # The running run kept from version 5 makes its session busy...
        with pytest.raises(SessionBusyError):
            await store.create_run(RunRecord("r4", "s1", "app:agent", "running", time.time()))
        # ...and once it ends, the session takes a new one; `s2` had none going.
        assert await store.finish_run("r2", "completed", time.time())
        await store.create_run(RunRecord("r4", "s1", "app:agent", "running", time.time()))
        await store.create_run(RunRecord("r5", "s2", "app:agent", "running", time.time()))
        assert [run.id for run in await store.list_runs("s1")] == ["r1", "r2", "r4"]
    finally:
        await store.aclose()


async def test_a_database_with_two_running_runs_of_a_session_is_refused_unchanged(
    store_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    await _version_5_with_sessions(store_url, monkeypatch)
    run_sql(store_url, [_insert_run("r1", "s1", "running"), _insert_run("r2", "s1", "running")])

    store = open_store(store_url)
    try:
        with pytest.raises(StoreError) as refused:
            await store.list_runs("s1")
    finally:
        await store.aclose()
    message = str(refused.value)
    assert "schema version 6" in message
    assert "more than one run marked running" in message
    assert "'s1'" in message
    assert _versions(store_url) == [1, 2, 3, 4, 5]
    assert not _has_index(store_url)
    # Once the operator ends one of them, the database upgrades.
    run_sql(store_url, ["UPDATE agentkit_runs SET status = 'interrupted' WHERE id = 'r1'"])
    store = open_store(store_url)
    try:
        assert [run.status for run in await store.list_runs("s1")] == ["interrupted", "running"]
        assert _has_index(store_url)
    finally:
        await store.aclose()


async def test_of_starts_racing_on_a_session_from_two_stores_exactly_one_wins(
    store_url: str,
) -> None:
    """Without the session lock PostgreSQL took before migration 6, the index alone keeps
    a session to one running run when starts race from two processes (two stores, each
    with its own connections); each loser is told the session is busy, never more."""
    first, second = open_store(store_url), open_store(store_url)
    try:
        await first.create_session("s1", "app:agent")
        outcomes: list[str] = []

        async def start(store: Any, run_id: str) -> None:
            try:
                await store.create_run(RunRecord(run_id, "s1", "app:agent", "running", 1.0))
                outcomes.append("won")
            except SessionBusyError:
                outcomes.append("busy")

        async with anyio.create_task_group() as group:
            for number in range(10):
                group.start_soon(start, (first, second)[number % 2], f"r{number}")
        assert sorted(outcomes) == ["busy"] * 9 + ["won"]
        runs = await second.list_runs("s1")
        assert [run.status for run in runs] == ["running"]
        # A run id taken is not a busy session: its own error, as before.
        assert await first.finish_run(runs[0].id, "completed", 2.0)
        with pytest.raises(StoreError, match="already exists") as taken:
            await second.create_run(RunRecord(runs[0].id, "s1", "app:agent", "running", 3.0))
        assert not isinstance(taken.value, SessionBusyError)
    finally:
        await first.aclose()
        await second.aclose()
