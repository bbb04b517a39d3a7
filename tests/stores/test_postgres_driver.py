"""`PostgresStore`'s driver beyond the conformance suite: the pool, connections that die,
the `pool_size` URL parameter, the notifications of writes, event loops one after another,
and asyncio's driver running without threads."""

from __future__ import annotations

import asyncio
import threading
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from typing import Any

import anyio
import pytest

from agentkit.events import Text
from agentkit.providers import UserMessage
from agentkit.stores import (
    EventEntry,
    NewRoomEvent,
    PostgresStore,
    RoomGrant,
    RoomRecord,
    RunEndedError,
    RunRecord,
    SessionBusyError,
    SessionExistsError,
    StoreError,
    StoreLocationError,
    open_store,
)
from support.pg import PG_DSN


@pytest.fixture
def app() -> str:
    """An `application_name` of the test's own: its store's backends are the ones with it."""
    return f"agentkit-test-{uuid.uuid4().hex[:12]}"


def _dsn(app: str) -> str:
    from psycopg.conninfo import make_conninfo

    assert PG_DSN
    return make_conninfo(PG_DSN, application_name=app)


def _backends(app: str, expected: int | None = None) -> list[int]:
    """The server processes of the connections named `app`; with `expected`, waits (a
    little) until there are that many: a closed connection's process ends soon after."""
    import psycopg

    query = "SELECT pid FROM pg_stat_activity WHERE application_name = %s ORDER BY pid"
    deadline = time.monotonic() + 5
    with psycopg.connect(PG_DSN or "", autocommit=True) as conn:
        while True:
            pids = [row[0] for row in conn.execute(query, (app,)).fetchall()]
            if expected is None or len(pids) == expected or time.monotonic() > deadline:
                return pids
            time.sleep(0.02)


def _terminate(app: str) -> None:
    """Kill the server side of every connection named `app`, and wait until it is gone."""
    import psycopg

    with psycopg.connect(PG_DSN or "", autocommit=True) as conn:
        conn.execute(
            "SELECT pg_terminate_backend(pid, 5000) FROM pg_stat_activity "
            "WHERE application_name = %s",
            (app,),
        )
    assert _backends(app, expected=0) == []


@pytest.fixture
async def store(pg_schema: str, app: str) -> AsyncIterator[PostgresStore]:
    store = PostgresStore(_dsn(app), schema=pg_schema, max_connections=3)
    yield store
    await store.aclose()


def _run(run_id: str, session_id: str) -> RunRecord:
    return RunRecord(run_id, session_id, "app:agent", "running", time.time())


# --- the pool -------------------------------------------------------------------------------


@pytest.mark.postgres
@pytest.mark.anyio
async def test_the_pool_opens_at_most_max_connections(store: PostgresStore, app: str) -> None:
    await store.create_session("s1", "app:agent")

    async def append(i: int) -> None:
        await store.append_transcript("s1", [UserMessage(content=str(i))])

    async with anyio.create_task_group() as group:
        for i in range(24):
            group.start_soon(append, i)
    # Connections are closed only when they break: every one opened is still there. The
    # 24 calls started at once, so the pool opened all it may, and no more.
    assert len(_backends(app)) == store.max_connections == 3
    assert len(await store.load_transcript("s1")) == 24


@pytest.mark.postgres
@pytest.mark.anyio
async def test_a_killed_connection_is_replaced_on_the_next_call(
    store: PostgresStore, app: str
) -> None:
    await store.create_session("s1", "app:agent")
    [killed] = _backends(app)
    _terminate(app)
    session = await store.get_session("s1")  # no error: the dead connection is dropped
    assert session is not None and session.id == "s1"
    [replacement] = _backends(app)
    assert replacement != killed
    await store.append_transcript("s1", [UserMessage(content="after")])
    assert _backends(app) == [replacement]


@pytest.mark.postgres
@pytest.mark.anyio
async def test_a_cancelled_call_leaves_the_pool_whole(pg_schema: str, app: str) -> None:
    """A call cancelled inside its transaction, and one cancelled while waiting for the
    pool's only connection: the transaction is all or nothing, the connection is not
    handed on half-way through a transaction, and the pool keeps its place."""
    import psycopg

    store = PostgresStore(_dsn(app), schema=pg_schema, max_connections=1)
    await store.create_session("s1", "app:agent")
    blocker = psycopg.connect(PG_DSN or "")  # not autocommit: holds its lock until rollback
    blocker.execute(
        f'SELECT 1 FROM "{pg_schema}".agentkit_sessions WHERE id = %s FOR UPDATE', ("s1",)
    )
    # Released from a thread: on trio the blocked call's worker thread cannot be
    # interrupted, so the cancelled scope ends only once the lock is gone.
    release = threading.Timer(1.0, blocker.rollback)
    release.start()
    try:
        with anyio.move_on_after(0.3):
            async with anyio.create_task_group() as group:
                group.start_soon(store.append_transcript, "s1", [UserMessage(content="late")])
                await anyio.sleep(0.05)
                group.start_soon(store.get_session, "s1")  # waits for the pool
    finally:
        release.join()
        blocker.close()
    transcript = await store.load_transcript("s1")
    assert transcript in ([], [UserMessage(content="late")])
    await store.append_transcript("s1", [UserMessage(content="next")])
    assert (await store.load_transcript("s1"))[-1] == UserMessage(content="next")
    assert len(_backends(app, expected=1)) == 1
    await store.aclose()


@pytest.mark.postgres
@pytest.mark.anyio
async def test_a_closed_store_refuses_calls_and_closes_its_connections(
    store: PostgresStore, app: str
) -> None:
    await store.create_session("s1", "app:agent")
    await store.aclose()
    assert _backends(app, expected=0) == []
    with pytest.raises(StoreError, match="closed"):
        await store.get_session("s1")
    with pytest.raises(StoreError, match="closed"):
        await store.notify(["x"])


def test_max_connections_must_be_positive() -> None:
    with pytest.raises(ValueError, match="max_connections"):
        PostgresStore("postgresql://nobody@127.0.0.1:9/none", max_connections=0)
    assert PostgresStore("postgresql://nobody@127.0.0.1:9/none").max_connections == 10


# --- the drivers: asyncio's without threads, event loops one after another -------------------


@pytest.mark.postgres
def test_on_asyncio_calls_run_without_threads(pg_schema: str, app: str) -> None:
    before = {thread.ident for thread in threading.enumerate()}

    async def main() -> set[int | None]:
        store = PostgresStore(_dsn(app), schema=pg_schema)
        await store.create_session("s1", "app:agent")  # connects, creates the tables
        await store.create_run(_run("r1", "s1"), [EventEntry(0, Text(content="a"))])
        await store.append_step("s1", [UserMessage(content="hi")], "r1", [])
        assert [e.offset for e in await store.read_events("r1")] == [0]
        # Still inside the loop: asyncio's executor threads (getaddrinfo, to_thread) and
        # anyio's worker threads would be alive here.
        started = {thread.ident for thread in threading.enumerate()} - before
        await store.aclose()
        return started

    assert asyncio.run(main()) == set()


@pytest.mark.postgres
def test_one_store_serves_event_loops_one_after_another(pg_schema: str, app: str) -> None:
    """`asyncio.run` twice (as `Agent.run_sync` does), then trio, then asyncio again: a
    connection of a loop that is gone is closed, not reused."""
    store = PostgresStore(_dsn(app), schema=pg_schema)
    asyncio.run(store.create_session("s1", "app:agent"))
    [first] = _backends(app)
    session = asyncio.run(store.get_session("s1"))
    assert session is not None and session.id == "s1"
    [second] = _backends(app, expected=1)
    assert second != first
    anyio.run(store.append_transcript, "s1", [UserMessage(content="trio")], backend="trio")
    # trio's calls run on a connection of their own kind, beside asyncio's idle one.
    assert len(_backends(app)) == 2
    transcript = asyncio.run(store.load_transcript("s1"))
    assert transcript == [UserMessage(content="trio")]
    assert second not in _backends(app, expected=2)
    asyncio.run(store.aclose())
    assert _backends(app, expected=0) == []


# --- pool_size in a URL -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "dsn", "size"),
    [
        ("postgresql://u@h/db", "postgresql://u@h/db", 10),
        ("postgresql://u@h/db?pool_size=20", "postgresql://u@h/db", 20),
        ("postgres://u@h/db?sslmode=disable&pool_size=2", "postgres://u@h/db?sslmode=disable", 2),
        (
            "postgresql://u@h/db?pool_size=3&options=-csearch_path%3Dx&connect_timeout=5",
            "postgresql://u@h/db?options=-csearch_path%3Dx&connect_timeout=5",
            3,
        ),
    ],
)
def test_open_store_takes_pool_size_out_of_the_url(url: str, dsn: str, size: int) -> None:
    store = open_store(url)
    assert isinstance(store, PostgresStore)
    assert (store.dsn, store.max_connections) == (dsn, size)


@pytest.mark.parametrize("value", ["0", "-1", "abc", "", "2.5", "١"])
def test_a_bad_pool_size_is_a_store_location_error(value: str) -> None:
    with pytest.raises(StoreLocationError, match="pool_size") as info:
        open_store(f"postgresql://u:secret@h/db?pool_size={value}")
    assert "secret" not in str(info.value)


def test_pool_size_given_twice_is_a_store_location_error() -> None:
    with pytest.raises(StoreLocationError, match="pool_size"):
        open_store("postgresql://u@h/db?pool_size=2&pool_size=3")


@pytest.mark.postgres
@pytest.mark.anyio
async def test_pool_size_sizes_the_pool(pg_schema: str, app: str) -> None:
    import psycopg

    with psycopg.connect(PG_DSN or "", autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{pg_schema}"')
    assert PG_DSN
    separator = "&" if "?" in PG_DSN else "?"
    url = f"{PG_DSN}{separator}application_name={app}&pool_size=2"
    url += f"&options=-csearch_path%3D{pg_schema}"
    store = open_store(url)
    await store.create_session("s1", "app:agent")
    async with anyio.create_task_group() as group:
        for i in range(10):
            group.start_soon(store.append_transcript, "s1", [UserMessage(content=str(i))])
    assert len(_backends(app)) == 2
    await store.aclose()


# --- notifications ----------------------------------------------------------------------------


def test_the_channel_is_named_after_the_schema() -> None:
    dsn = "postgresql://nobody@127.0.0.1:9/none"
    assert PostgresStore(dsn).channel == "agentkit"
    assert PostgresStore(dsn, schema="tenant_1").channel == "agentkit.tenant_1"
    long_a, long_b = "a" * 60 + "x", "a" * 60 + "y"
    channels = {PostgresStore(dsn, schema=s).channel for s in (long_a, long_b)}
    assert len(channels) == 2
    assert all(len(c.encode()) <= 63 and c.startswith("agentkit.aaa") for c in channels)
    accented = PostgresStore(dsn, schema="é" * 40).channel  # cut between whole characters
    assert len(accented.encode()) <= 63 and accented.startswith("agentkit.éé")


class _Listener:
    """A connection of its own LISTENing on a store's channel."""

    def __init__(self, channel: str) -> None:
        import psycopg
        from psycopg import sql

        self.conn = psycopg.connect(PG_DSN or "", autocommit=True)
        self.conn.execute(sql.SQL("LISTEN {}").format(sql.Identifier(channel)))

    async def heard(self, store: PostgresStore) -> list[str]:
        """The payloads received since the last call. Notifications arrive in commit
        order: everything before a marker sent now, which ends the wait."""
        marker = f"marker:{uuid.uuid4().hex}"
        await store.notify([marker])
        got: list[str] = []
        for notification in self.conn.notifies(timeout=5):
            if notification.payload == marker:
                return got
            got.append(notification.payload)
        raise AssertionError(f"the marker never came; heard {got}")

    def close(self) -> None:
        self.conn.close()


@pytest.fixture
def listener(store: PostgresStore) -> Iterator[_Listener]:
    listening = _Listener(store.channel)
    yield listening
    listening.close()


@pytest.mark.postgres
@pytest.mark.anyio
async def test_session_and_run_writes_notify_their_topics(
    store: PostgresStore, listener: _Listener
) -> None:
    hear = listener.heard
    await store.create_session("s1", "app:agent")
    assert await hear(store) == ["session:s1"]
    await store.update_session("s1", {"k": 1})
    assert await hear(store) == ["session:s1"]
    await store.append_transcript("s1", [UserMessage(content="a"), UserMessage(content="b")])
    assert await hear(store) == ["session:s1"]
    await store.truncate_transcript("s1", 1)
    assert await hear(store) == ["session:s1"]
    await store.truncate_transcript("s1", 5)  # nothing to cut
    assert await hear(store) == []
    await store.create_run(_run("r1", "s1"), [EventEntry(0, Text(content="x"))])
    assert sorted(await hear(store)) == ["run:r1", "session:s1"]
    await store.append_events("r1", [EventEntry(1, Text(content="y"))])
    assert await hear(store) == ["run:r1"]
    await store.append_step("s1", [UserMessage(content="c")], "r1", [])
    assert sorted(await hear(store)) == ["run:r1", "session:s1"]
    await store.append_step("s1", [], "r1", [EventEntry(2, Text(content="z"))])
    assert sorted(await hear(store)) == ["run:r1", "session:s1"]
    assert await store.renew_leases("nobody", ["r1"], time.time(), time.time() + 5) == set()
    assert await hear(store) == []
    assert await store.finish_run("r1", "completed", time.time())
    assert sorted(await hear(store)) == ["run:r1", "session:s1"]
    assert not await store.finish_run("r1", "failed", time.time())  # already ended
    assert await hear(store) == []
    await store.delete_session("s1")
    assert await hear(store) == ["session:s1"]
    await store.delete_session("s1")  # nothing left to delete
    assert await hear(store) == []


@pytest.mark.postgres
@pytest.mark.anyio
async def test_room_writes_notify_their_topic(store: PostgresStore, listener: _Listener) -> None:
    hear = listener.heard
    await store.create_room(RoomRecord("r1", "lab", "member:ada", 1.0))
    assert await hear(store) == ["room:r1"]
    await store.update_room("r1", name="lab 2")
    assert await hear(store) == ["room:r1"]
    new = [NewRoomEvent(f"e{i}", "chat.message", "member:ada", {"i": i}, 1.0) for i in range(3)]
    await store.append_room_events("r1", new)
    assert await hear(store) == ["room:r1"]
    await store.set_grant("r1", RoomGrant("member:bob", ("chat.*",), ()))
    assert await hear(store) == ["room:r1"]
    await store.delete_grant("r1", "member:bob")
    assert await hear(store) == ["room:r1"]
    await store.set_cursor("r1", "agent:x", 2)
    await store.read_room_events("r1")
    assert await hear(store) == []  # reads and cursors tell nobody
    await store.delete_room("r1")
    assert await hear(store) == ["room:r1"]
    await store.delete_room("r1")
    assert await hear(store) == []


@pytest.mark.postgres
@pytest.mark.anyio
async def test_a_failed_write_notifies_nothing(store: PostgresStore, listener: _Listener) -> None:
    hear = listener.heard
    await store.create_session("s1", "app:agent")
    await store.create_run(_run("r1", "s1"))
    await store.create_room(RoomRecord("room", "lab", "member:ada", 1.0))
    await hear(store)
    with pytest.raises(SessionExistsError):
        await store.create_session("s1", "app:agent")
    with pytest.raises(SessionBusyError):
        await store.create_run(_run("r2", "s1"))
    event = NewRoomEvent("e1", "chat.message", "member:ada", None, 1.0)
    await store.append_room_events("room", [event])
    assert await hear(store) == ["room:room"]
    with pytest.raises(StoreError, match="event id"):
        await store.append_room_events("room", [event])
    await store.append_events("r1", [EventEntry(0, Text(content="x"))])
    assert await hear(store) == ["run:r1"]
    with pytest.raises(ValueError):  # an offset that does not follow the stored ones
        await store.append_events("r1", [EventEntry(0, Text(content="again"))])
    # The step's transcript part went in (and queued its notifications) before its event
    # was refused: the rollback takes both back.
    with pytest.raises(ValueError):
        await store.append_step(
            "s1", [UserMessage(content="m")], "r1", [EventEntry(0, Text(content="again"))]
        )
    assert await store.load_transcript("s1") == []
    await store.finish_run("r1", "completed", time.time())
    assert sorted(await hear(store)) == ["run:r1", "session:s1"]
    with pytest.raises(RunEndedError):
        await store.append_events("r1", [EventEntry(1, Text(content="late"))])
    assert await hear(store) == []
    assert await store.read_room_events("room") != []  # the failed append kept nothing


@pytest.mark.postgres
@pytest.mark.anyio
async def test_an_id_too_long_for_a_topic_notifies_the_whole_kind(
    store: PostgresStore, listener: _Listener
) -> None:
    long_id = "s" * 6992  # `session:` and this: 7000 bytes, the most a topic takes
    await store.create_session(long_id, "app:agent")
    assert await listener.heard(store) == [f"session:{long_id}"]
    longer = long_id + "s"
    await store.create_session(longer, "app:agent")
    assert await listener.heard(store) == ["session:*"]


@pytest.mark.postgres
@pytest.mark.anyio
async def test_notify_sends_each_payload(store: PostgresStore, listener: _Listener) -> None:
    big = "run:r1\n" + "d" * (7900 - 7)
    await store.notify(["run:r1\nhello", "room:x", big])
    assert await listener.heard(store) == ["run:r1\nhello", "room:x", big]
    await store.notify([])
    with pytest.raises(ValueError, match="7901 bytes"):
        await store.notify(["ok", big + "d"])
    with pytest.raises(ValueError, match="bytes"):
        await store.notify(["é" * 3951])  # 7902 bytes in UTF-8
    with pytest.raises(TypeError):
        await store.notify("run:r1")
    assert await listener.heard(store) == []


@pytest.mark.postgres
@pytest.mark.anyio
async def test_notifications_are_sent_when_the_write_commits(
    store: PostgresStore, listener: _Listener
) -> None:
    """A write blocked inside its transaction has sent nothing yet; its notification
    comes once it commits."""
    import psycopg

    await store.create_session("s1", "app:agent")
    await listener.heard(store)
    blocker = psycopg.connect(PG_DSN or "")
    blocker.execute(
        f'SELECT 1 FROM "{store.schema}".agentkit_sessions WHERE id = %s FOR UPDATE', ("s1",)
    )
    heard: list[Any] = []

    async def append() -> None:
        await store.append_transcript("s1", [UserMessage(content="a")])

    async with anyio.create_task_group() as group:
        group.start_soon(append)
        await anyio.sleep(0.3)  # the append is waiting for the session's row lock
        heard.extend(n.payload for n in listener.conn.notifies(timeout=0.2))
        blocker.rollback()
    blocker.close()
    assert heard == []
    assert await listener.heard(store) == ["session:s1"]
