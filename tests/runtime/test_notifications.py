"""Notifications and the cross-process run reader, without a database: subscriptions by
topic, and `Runtime.follow`'s merge of stored events with relayed live ones (in order, each
once, missing deltas skipped, never a stored event)."""

from __future__ import annotations

import time

import anyio
import pytest

from agentkit.events import Text, TextDelta, ToolUse, TurnEnd
from agentkit.runtime._relay import LiveRelay, remote_entries
from agentkit.stores import EventEntry, MemoryStore, Notifications, notifications_of
from support.remote_runs import collect, running_elsewhere, until

pytestmark = pytest.mark.anyio


# --- subscriptions -------------------------------------------------------------------------


async def test_a_subscription_gets_its_topics_and_their_data_in_order() -> None:
    hub = Notifications()
    with await hub.subscribe("run:1", "live:1") as subscription:
        await hub.publish(["run:2", "live:2\nnot mine"])
        assert not await subscription.wait(0.01)
        await hub.publish(["live:1\nfirst", "run:1", "live:1\nsecond"])
        assert await subscription.wait(5)
        assert subscription.notified == {"run:1"}
        assert subscription.take() == (True, ["first", "second"])
        assert subscription.take() == (False, [])
    await hub.publish(["run:1"])  # closed: nothing delivered, nothing kept
    assert not subscription.pending


async def test_a_wildcard_topic_reaches_every_subscriber_of_its_kind() -> None:
    hub = Notifications()
    runs = [await hub.subscribe(f"run:{n}") for n in range(3)]
    room = await hub.subscribe("room:lab")
    hub.dispatch(["run:*"])  # what a store sends for an id too long for a notification
    assert all(subscription.pending for subscription in runs)
    assert not room.pending
    hub.wake_all()  # after notifications may have been lost: everyone reads again
    assert room.pending


async def test_a_waiting_subscriber_is_woken_at_once() -> None:
    hub = Notifications()
    subscription = await hub.subscribe("room:lab")
    async with anyio.create_task_group() as group:
        group.start_soon(subscription.wait, 30.0)
        await anyio.sleep(0.01)
        started = time.monotonic()
        hub.dispatch(["room:lab"])
    assert time.monotonic() - started < 5


async def test_a_subscriber_that_does_not_keep_up_drops_data_and_counts_it() -> None:
    hub = Notifications()
    subscription = await hub.subscribe("live:1")
    hub.dispatch([f"live:1\n{n}" for n in range(1500)])
    _, data = subscription.take()
    assert data == [str(n) for n in range(1000)]
    assert subscription.dropped == 500


async def test_every_caller_gets_the_same_local_notifications_of_a_store() -> None:
    store = MemoryStore()
    assert notifications_of(store) is notifications_of(store)
    assert not notifications_of(store).shared
    assert notifications_of(MemoryStore()) is not notifications_of(store)
    assert await notifications_of(store).try_claim("anything")  # nobody else to exclude


# --- the reader of a run executed elsewhere ------------------------------------------------


async def test_relayed_deltas_and_stored_events_come_in_log_order_each_once() -> None:
    store, hub = MemoryStore(), Notifications()
    await running_elsewhere(store)
    relay = LiveRelay(hub)
    got: list[EventEntry] = []
    async with anyio.create_task_group() as group:
        group.start_soon(relay.run)
        # A long poll interval: what comes, comes because it was notified.
        group.start_soon(collect, remote_entries(store, hub, "r", -1, 60.0), got)
        await until(lambda: len(got) == 2)  # the stored start
        for offset, piece in [(2, "Hel"), (3, "lo")]:
            relay.add("r", offset, piece)
        await until(lambda: len(got) == 4)
        assert [e.event for e in got[2:]] == [TextDelta(content="Hel"), TextDelta(content="lo")]
        # The step's end: its text block (relayed too, then stored) and a tool call.
        relay.add("r", 4, Text(content="Hello"))
        relay.add("r", 5, ToolUse(id="c", tool="Read", input={"path": "x"}))
        await until(lambda: len(got) == 6)
        await store.append_events(
            "r",
            [
                EventEntry(4, Text(content="Hello")),
                EventEntry(5, ToolUse(id="c", tool="Read", input={"path": "x"})),
            ],
        )
        await hub.publish(["run:r"])
        ending = [EventEntry(6, TurnEnd(turn_id="t", status="completed", duration_ms=1))]
        relay.add("r", 6, ending[0].event)  # relayed as "read it from the store"
        await anyio.sleep(0.05)
        assert len(got) == 6  # the ending waits for the store
        await store.finish_run("r", "completed", time.time(), events=ending)
        await hub.publish(["run:r"])
        await until(lambda: len(got) == 7)
        group.cancel_scope.cancel()
    assert [e.offset for e in got] == list(range(7))
    assert got[4].event == Text(content="Hello")
    assert isinstance(got[-1].event, TurnEnd)


async def test_a_reader_that_misses_deltas_skips_them_and_gets_every_stored_event() -> None:
    store, hub = MemoryStore(), Notifications()
    await running_elsewhere(store)
    got: list[EventEntry] = []
    async with anyio.create_task_group() as group:
        group.start_soon(collect, remote_entries(store, hub, "r", -1, 60.0), got)
        await until(lambda: len(got) == 2)
        relay = LiveRelay(hub)
        group.start_soon(relay.run)
        relay.add("r", 2, "a")
        await until(lambda: len(got) == 3)
        # The delta at 3 is lost on the way; 4 arrives, and cannot come before 3.
        relay.add("r", 4, "c")
        await anyio.sleep(0.05)
        assert len(got) == 3
        # The store moves past the gap: it has every event but the deltas, so the
        # missing 3 can only be a delta, and the reader goes on.
        await store.append_events("r", [EventEntry(5, Text(content="abc"))])
        await hub.publish(["run:r"])
        await until(lambda: len(got) == 5)
        group.cancel_scope.cancel()
    assert [e.offset for e in got] == [0, 1, 2, 4, 5]
    assert [e.event for e in got[2:]] == [
        TextDelta(content="a"),
        TextDelta(content="c"),
        Text(content="abc"),
    ]


async def test_a_reader_after_the_end_gets_nothing_more() -> None:
    store, hub = MemoryStore(), Notifications()
    await running_elsewhere(store)
    ending = [EventEntry(2, TurnEnd(turn_id="t", status="completed", duration_ms=1))]
    await store.finish_run("r", "completed", time.time(), events=ending)
    with anyio.fail_after(10):
        assert [e.offset async for e in remote_entries(store, hub, "r", 2, 60.0)] == []
        assert [e.offset async for e in remote_entries(store, hub, "r", 0, 60.0)] == [1, 2]


async def test_relayed_batches_stay_within_a_notification_and_big_events_go_by_the_store() -> None:
    sent: list[str] = []

    class Recording(Notifications):
        async def publish(self, payloads: object) -> None:
            sent.extend(payloads)  # type: ignore[arg-type]

    relay = LiveRelay(Recording())
    for offset in range(2000):
        relay.add("r", offset, "x" * 20)
    relay.add("r", 2000, Text(content="y" * 10_000))
    async with anyio.create_task_group() as group:
        group.start_soon(relay.run)
        await until(lambda: bool(sent))
        group.cancel_scope.cancel()
    assert len(sent) > 1
    assert all(len(payload.encode()) <= 7800 for payload in sent)
    assert sent[-1].endswith("[2000,null]]")
