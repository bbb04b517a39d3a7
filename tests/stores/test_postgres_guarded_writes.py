"""PostgreSQL's one-statement writes (`append_events`, `append_step`, `finish_run`) and
one-round-trip start (`create_run`) when another writer holds the run or the session:
a statement that waited for the other's commit sees what it wrote, through the locked
transaction it falls back to, so the answers are the transactional ones (an `OffsetError`,
a `SessionBusyError`, a run already ended), never a duplicate or a lost event."""

from __future__ import annotations

import contextlib
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Any

import anyio
import pytest

from agentkit.errors import OffsetError
from agentkit.events import Text
from agentkit.providers import UserMessage
from agentkit.stores import (
    EventEntry,
    PostgresStore,
    RunRecord,
    SessionBusyError,
)
from agentkit.stores._codec import dump_event, dump_message
from support.pg import PG_DSN, PG_SKIP, dsn, new_schema

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(PG_DSN is None, reason=PG_SKIP)]


def _run(run_id: str, session_id: str = "s1") -> RunRecord:
    return RunRecord(run_id, session_id, "app:agent", "running", time.time())


class Other:
    """Another process's writer: a transaction on a connection of its own, in a thread."""

    def __init__(self, schema: str) -> None:
        import psycopg

        self.schema = schema
        self.conn = psycopg.connect(dsn(), autocommit=True)

    async def run(self, *statements: tuple[str, tuple[Any, ...]]) -> None:
        def execute() -> None:
            for query, params in statements:
                self.conn.execute(query.replace("{s}", f'"{self.schema}".'), params)

        await anyio.to_thread.run_sync(execute)

    def close(self) -> None:
        self.conn.close()


@pytest.fixture
def schema() -> Iterator[str]:
    with new_schema("guarded") as name:
        yield name


@contextlib.asynccontextmanager
async def opened(schema: str) -> AsyncIterator[tuple[PostgresStore, Other, str]]:
    """A store on `schema` whose connections are named apart, and another writer."""
    from psycopg.conninfo import make_conninfo

    app = f"agentkit-guarded-{uuid.uuid4().hex[:10]}"
    store = PostgresStore(make_conninfo(dsn(), application_name=app), schema=schema)
    other = Other(schema)
    try:
        yield store, other, app
    finally:
        other.close()
        await store.aclose()


async def _waits_on_a_lock(app: str) -> None:
    """Until a backend of the store (`application_name` `app`) waits on a lock."""
    import psycopg

    query = (
        "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s "
        "AND wait_event_type = 'Lock'"
    )
    with psycopg.connect(dsn(), autocommit=True) as conn, anyio.fail_after(10):
        # Polled: the waiting is the server's, no event of this process tells of it.
        while not conn.execute(query, (app,)).fetchone()[0]:  # type: ignore[index]  # noqa: ASYNC110
            await anyio.sleep(0.01)


async def _while_held(
    other: Other, app: str, hold: tuple[str, ...], write: Callable[[], Awaitable[Any]]
) -> Any:
    """`write()` started while `other` holds a transaction (its `hold` statements), which
    commits once the write waits on its lock: what the write returned, or raised."""
    await other.run(("BEGIN", ()), *((query, ()) for query in hold))
    outcome: dict[str, Any] = {}

    async def go() -> None:
        try:
            outcome["value"] = await write()
        except Exception as exc:
            outcome["error"] = exc

    async with anyio.create_task_group() as group:
        group.start_soon(go)
        await _waits_on_a_lock(app)
        await other.run(("COMMIT", ()))
    if "error" in outcome:
        raise outcome["error"]
    return outcome.get("value")


def _insert_event(run_id: str, offset: int) -> str:
    data = dump_event(EventEntry(offset, Text(content="other")))
    return (
        f"INSERT INTO {{s}}agentkit_events (run_id, pos, data) VALUES ('{run_id}', {offset}, "
        f"'{data}')"
    )


def _lock_run(run_id: str) -> str:
    return f"SELECT 1 FROM {{s}}agentkit_runs WHERE id = '{run_id}' FOR UPDATE"


async def test_an_append_behind_another_writer_gets_the_offset_error(
    schema: str,
) -> None:
    async with opened(schema) as (store, other, app):
        await store.create_session("s1", "app:agent")
        await store.create_run(_run("r1"), [EventEntry(0, Text(content="a"))])
        with pytest.raises(OffsetError, match="does not follow 1"):
            await _while_held(
                other,
                app,
                (_lock_run("r1"), _insert_event("r1", 1)),
                lambda: store.append_events("r1", [EventEntry(1, Text(content="b"))]),
            )
        assert [e.offset for e in await store.read_events("r1", -1)] == [0, 1]
        await store.append_events("r1", [EventEntry(2, Text(content="c"))])
        assert [e.event.content for e in await store.read_events("r1", -1)] == [  # type: ignore[union-attr]
            "a",
            "other",
            "c",
        ]


async def test_a_step_behind_another_writer_of_the_transcript_lands_after_it(
    schema: str,
) -> None:
    async with opened(schema) as (store, other, app):
        await store.create_session("s1", "app:agent")
        await store.create_run(_run("r1"), [EventEntry(0, Text(content="a"))])
        message = dump_message(UserMessage(content="other")).replace("'", "''")
        hold = (
            "UPDATE {s}agentkit_sessions SET updated_at = updated_at WHERE id = 's1'",
            f"INSERT INTO {{s}}agentkit_transcript (session_id, pos, data) VALUES ('s1', 0, "
            f"'{message}')",
        )
        await _while_held(
            other,
            app,
            hold,
            lambda: store.append_step(
                "s1", [UserMessage(content="mine")], "r1", [EventEntry(1, Text(content="b"))]
            ),
        )
        transcript = await store.load_transcript("s1")
        assert [m.content for m in transcript] == ["other", "mine"]  # type: ignore[union-attr]
        assert [e.offset for e in await store.read_events("r1", -1)] == [0, 1]


async def test_an_end_behind_another_writer_is_refused_when_its_events_do_not_follow(
    schema: str,
) -> None:
    async with opened(schema) as (store, other, app):
        await store.create_session("s1", "app:agent")
        await store.create_run(_run("r1"), [EventEntry(0, Text(content="a"))])
        with pytest.raises(OffsetError):
            await _while_held(
                other,
                app,
                (_lock_run("r1"), _insert_event("r1", 1)),
                lambda: store.finish_run(
                    "r1", "completed", time.time(), events=[EventEntry(1, Text(content="z"))]
                ),
            )
        assert (await store.get_run("r1")).status == "running"  # type: ignore[union-attr]
        ending = [EventEntry(2, Text(content="z"))]
        assert await store.finish_run("r1", "completed", time.time(), events=ending)
        assert (await store.get_run("r1")).status == "completed"  # type: ignore[union-attr]


async def test_a_start_behind_another_start_on_the_session_finds_it_busy(
    schema: str,
) -> None:
    async with opened(schema) as (store, other, app):
        await store.create_session("s1", "app:agent")
        now = time.time()
        hold = (
            "SELECT 1 FROM {s}agentkit_sessions WHERE id = 's1' FOR UPDATE",
            "INSERT INTO {s}agentkit_runs (id, session_id, agent_id, status, created_at) "
            f"VALUES ('r0', 's1', 'app:agent', 'running', {now})",
        )
        with pytest.raises(SessionBusyError):
            await _while_held(other, app, hold, lambda: store.create_run(_run("r1"), []))
        assert [run.id for run in await store.list_runs("s1")] == ["r0"]
