"""PostgreSQL's shared notifications and claims, between stores standing for processes
(each has its own listening connection and claims session), under asyncio and trio: the
channel of a `search_path` schema, a lost listener that reconnects and wakes everyone,
claims that exclude the other sessions and die with their own."""

from __future__ import annotations

import itertools
import time
from collections.abc import AsyncIterator, Iterator

import anyio
import pytest

from agentkit.stores import ConversationRecord, PostgresStore, open_store
from agentkit.stores._pg_listen import PostgresNotifications
from support.pg import dsn, postgres_url

pytestmark = [pytest.mark.postgres, pytest.mark.anyio]


@pytest.fixture
def url() -> Iterator[str]:
    with postgres_url("notify") as found:
        yield found


@pytest.fixture
async def stores(url: str) -> AsyncIterator[tuple[PostgresStore, PostgresStore]]:
    first, second = open_store(url), open_store(url)
    assert isinstance(first, PostgresStore) and isinstance(second, PostgresStore)
    async with anyio.create_task_group() as group:
        for store in (first, second):
            group.start_soon(store.notifications.run)
        await _until("both to listen", lambda: _listening(first) and _listening(second))
        yield first, second
        group.cancel_scope.cancel()
    await first.aclose()
    await second.aclose()


def _listening(store: PostgresStore) -> bool:
    ready = store.notifications._ready  # type: ignore[attr-defined]
    return ready is not None and bool(ready.is_set())


def _terminate(role: str, store: PostgresStore) -> int:
    """End the store's dedicated connections of `role` (`listen`, `claims`), as a
    database restart or a network failure would; how many."""
    import psycopg

    with psycopg.connect(dsn(), autocommit=True) as conn:
        rows = conn.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = %s",
            (f"agentkit-{role} {store.channel}",),
        ).fetchall()
    return len(rows)


async def _until(what: str, check: object, limit: float = 10.0) -> None:
    deadline = time.monotonic() + limit
    while not check():  # type: ignore[operator]
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await anyio.sleep(0.02)


async def test_a_search_path_schema_has_a_channel_of_its_own(url: str) -> None:
    store = open_store(url)
    assert isinstance(store, PostgresStore)
    try:
        schema = url.rsplit("search_path%3D", 1)[1]
        assert await store.connected_channel() == f"agentkit.{schema}"
        assert store.channel == f"agentkit.{schema}"
    finally:
        await store.aclose()


async def test_a_write_in_one_process_wakes_a_reader_in_the_other(
    stores: tuple[PostgresStore, PostgresStore],
) -> None:
    first, second = stores
    with await second.notifications.subscribe("session:s1") as changes:
        started = time.monotonic()
        await first.create_session("s1", "agent")
        assert await changes.wait(10.0)
        assert "session:s1" in changes.notified
        assert time.monotonic() - started < 5
    with await second.notifications.subscribe("live:r") as live:
        await first.notifications.publish(["live:r\n[2]"])
        assert await live.wait(10.0)
        assert live.take() == (False, ["[2]"])


async def test_a_conversation_created_or_changed_wakes_its_sessions_readers(
    stores: tuple[PostgresStore, PostgresStore],
) -> None:
    first, second = stores
    record = ConversationRecord("c1", "a1", "m1", "private", "Plans", 1000.0, 1000.0)
    with await second.notifications.subscribe("session:c1") as changes:
        await first.create_conversation(record, "rool")
        assert await changes.wait(10.0)
        assert "session:c1" in changes.notified
    with await second.notifications.subscribe("session:c1") as changes:
        await first.update_conversation("c1", updated_at=1001.0, visibility="shared")
        assert await changes.wait(10.0)
        assert "session:c1" in changes.notified


async def test_a_listener_that_loses_its_connection_reconnects_and_wakes_everyone(
    stores: tuple[PostgresStore, PostgresStore],
) -> None:
    first, second = stores
    with await second.notifications.subscribe("session:s2") as changes:
        assert _terminate("listen", second) == 2  # both stores' (same channel)
        # Whatever was sent meanwhile is lost: every subscriber is told to look again.
        assert await changes.wait(10.0)
        changes.take()
        await _until("the listener to listen again", lambda: _listening(second))
        await first.create_session("s2", "agent")
        seen: set[str] = set()
        with anyio.fail_after(10):
            while "session:s2" not in seen:
                await changes.wait(10.0)
                seen |= changes.notified
                changes.take()


async def test_a_claim_excludes_other_sessions_and_dies_with_its_own(
    stores: tuple[PostgresStore, PostgresStore],
) -> None:
    first, second = stores
    one, other = first.notifications, second.notifications
    assert isinstance(one, PostgresNotifications) and isinstance(other, PostgresNotifications)
    assert await one.try_claim("room-worker lab agent:seen")
    assert await one.try_claim("room-worker lab agent:seen")  # held already: still held
    assert not await other.try_claim("room-worker lab agent:seen")
    assert await other.try_claim("room-worker lab agent:other")  # another name: free
    await one.release("room-worker lab agent:seen")
    assert await other.try_claim("room-worker lab agent:seen")
    assert not await one.try_claim("room-worker lab agent:seen")
    # The holder's session ends (its process died, its connection broke): the claim goes
    # with it, and its process notices it no longer holds it.
    assert _terminate("claims", second) == 2
    with anyio.fail_after(10):
        while not await one.try_claim("room-worker lab agent:seen"):  # noqa: ASYNC110 (a lock in the database)
            await anyio.sleep(0.05)
    await _until("the old holder to notice", lambda: not other.holds("room-worker lab agent:seen"))


async def test_a_lock_makes_other_processes_wait_their_turn(
    stores: tuple[PostgresStore, PostgresStore],
) -> None:
    first, second = stores
    order: list[str] = []

    async def hold(store: PostgresStore, name: str, seconds: float) -> None:
        async with store.notifications.lock("conversation c1"):
            order.append(f"{name} in")
            await anyio.sleep(seconds)
            order.append(f"{name} out")

    async with anyio.create_task_group() as group:
        group.start_soon(hold, first, "a", 0.3)
        await anyio.sleep(0.1)
        group.start_soon(hold, second, "b", 0.0)
    assert order == ["a in", "a out", "b in", "b out"]


async def test_a_claim_lost_with_its_session_is_known_lost_at_once_and_claimed_again(
    stores: tuple[PostgresStore, PostgresStore],
) -> None:
    first, second = stores
    one, other = first.notifications, second.notifications
    assert isinstance(one, PostgresNotifications)
    assert await one.try_claim("room-worker lab agent:seen")
    assert one.holds("room-worker lab agent:seen")
    assert _terminate("claims", first) == 1  # only `first` has a claims session
    # Known at once from the connection itself, long before the periodic check would.
    started = time.monotonic()
    await _until("the claim to be known lost", lambda: not one.holds("room-worker lab agent:seen"))
    assert time.monotonic() - started < 1.0 < 2.0  # the periodic check runs every 2 s
    # Claimed again, on a new session, which excludes the other process as before.
    assert await one.try_claim("room-worker lab agent:seen")
    assert one.holds("room-worker lab agent:seen")
    assert not await other.try_claim("room-worker lab agent:seen")
    await anyio.sleep(0.1)
    assert one.holds("room-worker lab agent:seen")  # a live session says nothing


async def test_the_listener_backs_off_while_it_fails_and_retries_soon_once_it_listened(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Connection attempts are spaced out more and more while the database is away; a
    connection that worked and then broke is retried at once, however long the earlier
    outage was."""
    from agentkit.stores import _pg_listen

    monkeypatch.setattr(_pg_listen, "_RETRY_FIRST", 0.001)
    monkeypatch.setattr(_pg_listen, "_RETRY_MAX", 0.4)
    notifications = PostgresNotifications(open_store("postgresql://nobody@127.0.0.1:1/none"))  # type: ignore[arg-type]
    attempts: list[float] = []
    failures = 10  # the wait grows to the maximum: 0.001 * 2**9 > 0.4

    async def listen() -> None:
        attempts.append(time.monotonic())
        if len(attempts) <= failures:
            raise OSError("database away")
        if len(attempts) == failures + 1:
            notifications._listening(True)  # type: ignore[attr-defined]
            await anyio.sleep(0.05)
            raise OSError("connection lost")
        await anyio.sleep_forever()

    monkeypatch.setattr(notifications, "_listen_async", listen)
    monkeypatch.setattr(notifications, "_listen_in_thread", listen)
    with anyio.fail_after(10):
        async with anyio.create_task_group() as group:
            group.start_soon(notifications._listen_forever)  # type: ignore[attr-defined]
            while len(attempts) < failures + 2:  # noqa: ASYNC110 (a fake listener)
                await anyio.sleep(0.01)
            group.cancel_scope.cancel()
    gaps = [later - earlier for earlier, later in itertools.pairwise(attempts)]
    assert gaps[failures - 2] > 0.2  # backed off while failing
    assert gaps[failures] - 0.05 < 0.1  # listened, then broke: retried at once
