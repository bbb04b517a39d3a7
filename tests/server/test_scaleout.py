"""Scale-out: two `agentkit serve` processes on one PostgreSQL database act as one machine.

A run prompted through one server is followed through the other (its live text deltas
too) and cancelled through the other; a server SIGKILLed while it owns a run and a room
agent's worker has its run ended as interrupted and its worker taken over by the other;
publishers on both servers make one gap-free order. An in-process machine under asyncio
and trio does the same as a second server (its notifications' listener differs by
backend).
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest

from agentkit.client import RemoteMachine
from agentkit.conversations import (
    ConversationClient,
    FinalEvent,
    FollowEvent,
    Machine,
    OutputEvent,
    TextDeltaPart,
    TextPart,
)
from agentkit.rooms import EventInput
from agentkit.testing import conformance_provider
from support.pg import postgres_url
from support.serve_process import ServeProcess

pytestmark = pytest.mark.postgres

LEASE = 3.0  # seconds: the servers' lease, so that a dead server's runs end soon
POLL = 0.5
SERVE_ARGS = [
    "--lease-duration",
    str(LEASE),
    "--heartbeat-interval",
    "0.5",
    "--poll-interval",
    str(POLL),
    "--extension",
    "support.scaleout_extension:setup",
]
TIMEOUT = 30.0


@pytest.fixture
def database() -> Iterator[str]:
    with postgres_url("scaleout") as url:
        yield url


@pytest.fixture
def servers(tmp_path: Path, database: str) -> Iterator[tuple[ServeProcess, ServeProcess]]:
    first = ServeProcess(tmp_path / "a", db=database, args=SERVE_ARGS)
    second = ServeProcess(tmp_path / "b", db=database, args=SERVE_ARGS)
    try:
        first.url, second.url  # noqa: B018  (both listening)
        yield first, second
    finally:
        first.stop()
        second.stop()


@dataclass
class Pair:
    """Two servers on one database, and a member's client of each."""

    first: ServeProcess
    second: ServeProcess
    via_a: RemoteMachine
    via_b: RemoteMachine


@pytest.fixture
async def pair(servers: tuple[ServeProcess, ServeProcess]) -> AsyncIterator[Pair]:
    first, second = servers
    token = await first.add_member("ada", "owner")
    async with RemoteMachine(first.url, token) as via_a, RemoteMachine(second.url, token) as via_b:
        yield Pair(first, second, via_a, via_b)


async def _follow(client: ConversationClient, conversation_id: str, run_id: str) -> list[Any]:
    with anyio.fail_after(TIMEOUT):
        return [e async for e in client.follow(conversation_id, run_id)]


def _check_one_log(executing: list[FollowEvent], other: list[FollowEvent]) -> None:
    """`other` (followed through another process) is the executing process's log, in
    order, each part once: every stored part, and live deltas (some may be missed)."""
    offsets = [event.offset for event in other]
    assert offsets == sorted(set(offsets)), offsets
    by_offset = {event.offset: event for event in executing}
    for event in other:
        assert by_offset.get(event.offset) == event
    stored = [e for e in executing if not (isinstance(e, OutputEvent) and _is_delta(e))]
    assert [e for e in other if not (isinstance(e, OutputEvent) and _is_delta(e))] == stored
    assert isinstance(other[-1], FinalEvent)


def _is_delta(event: OutputEvent) -> bool:
    return isinstance(event.part, TextDeltaPart)


def _deltas(events: list[FollowEvent]) -> list[str]:
    return [
        e.part.text
        for e in events
        if isinstance(e, OutputEvent) and isinstance(e.part, TextDeltaPart)
    ]


@pytest.mark.anyio
async def test_a_run_prompted_through_one_server_is_followed_through_the_other(
    pair: Pair,
) -> None:
    via_a, via_b = pair.via_a, pair.via_b
    conversation = await via_a.create_conversation(name="across")
    # 40 words, 20 ms apart: the follower on the other server joins as it streams.
    accepted = await via_a.prompt(conversation.id, "slow 40")
    results: dict[str, list[FollowEvent]] = {}

    async def follow(name: str, client: ConversationClient) -> None:
        results[name] = await _follow(client, conversation.id, accepted.run_id)

    async with anyio.create_task_group() as group:
        group.start_soon(follow, "a", via_a)
        group.start_soon(follow, "b", via_b)
    _check_one_log(results["a"], results["b"])
    final = results["b"][-1]
    assert isinstance(final, FinalEvent) and final.status == "completed"
    # The live text crossed processes: most deltas came through (the first few may be
    # sent before the follower on the other server listens), in order.
    relayed = _deltas(results["b"])
    assert len(relayed) >= 30, relayed
    assert "".join(relayed) in "".join(_deltas(results["a"]))
    assert any(isinstance(e, OutputEvent) and isinstance(e.part, TextPart) for e in results["b"])


@pytest.mark.anyio
async def test_a_run_is_cancelled_through_the_other_server(
    pair: Pair,
) -> None:
    via_a, via_b = pair.via_a, pair.via_b
    conversation = await via_a.create_conversation(name="stop it")
    # 1000 words, 20 ms apart: still streaming when the follower on B joins (a delta
    # relayed before it listened is not stored: it would never see it).
    accepted = await via_a.prompt(conversation.id, "slow 1000")
    events: list[FollowEvent] = []

    async def follow() -> None:
        with anyio.fail_after(TIMEOUT):
            async for event in via_b.follow(conversation.id, accepted.run_id):
                events.append(event)

    async with anyio.create_task_group() as group:
        group.start_soon(follow)
        with anyio.fail_after(TIMEOUT):
            # Streaming in the other process.
            while not _deltas(events):  # noqa: ASYNC110 (a list another task fills)
                await anyio.sleep(0.02)
        started = time.monotonic()
        assert await via_b.cancel(conversation.id) is True
        took = time.monotonic() - started
    assert took < LEASE, f"the cancel took {took:.2f} s: it went by the lease, not by asking"
    final = events[-1]
    assert isinstance(final, FinalEvent) and final.status == "cancelled"
    turns = await via_b.list_turns(conversation.id)
    assert turns[-1].status == "cancelled"
    kept = turns[-1].text  # what it had streamed, kept
    assert kept.startswith("w0 ") and "".join(_deltas(events)) in kept
    assert not (await via_b.get_conversation(conversation.id)).is_running


async def _seen(client: RemoteMachine, after: int = 0) -> list[dict[str, Any]]:
    events = await client.rooms.read("lab", after=after, types=["measurements.seen"], limit=1000)
    return [event.payload for event in events]


async def _until(what: str, check: Any, limit: float = TIMEOUT) -> Any:
    deadline = time.monotonic() + limit
    while True:
        found = await check()
        if found:
            return found
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await anyio.sleep(0.05)


@pytest.mark.anyio
async def test_a_killed_server_loses_its_runs_and_room_workers_to_the_other(
    pair: Pair,
) -> None:
    first, second, via_a, via_b = pair.first, pair.second, pair.via_a, pair.via_b
    # Which server runs the room agent: the pid in its answer.
    [position] = await via_a.rooms.publish("lab", EventInput(type="chat.message", payload={}))
    seen = await _until("the agent's answer", lambda: _seen(via_a))
    assert seen == [{"position": position, "pid": seen[0]["pid"]}]
    owner_pid = seen[0]["pid"]
    assert owner_pid in (first.process.pid, second.process.pid)
    doomed, survivor = (first, second) if owner_pid == first.process.pid else (second, first)
    via_doomed, via_survivor = (via_a, via_b) if doomed is first else (via_b, via_a)
    # A run going on the doomed server too.
    conversation = await via_doomed.create_conversation(name="doomed")
    accepted = await via_doomed.prompt(conversation.id, "slow 5000")
    await _until(
        "the run to stream",
        lambda: _partial(via_survivor, conversation.id, accepted.run_id),
    )

    os.kill(doomed.process.pid, signal.SIGKILL)
    doomed.process.wait()
    killed = time.monotonic()

    # Its run is ended as interrupted by the survivor within the lease.
    events = await _follow(via_survivor, conversation.id, accepted.run_id)
    final = events[-1]
    assert isinstance(final, FinalEvent) and final.status == "error"
    assert final.error == "interrupted: its process stopped"
    assert time.monotonic() - killed < LEASE + 3.0
    # Its room agent's worker is taken over, resuming from the stored cursor: what
    # was published meanwhile is handled too, by the survivor.
    message = EventInput(type="chat.message", payload={})
    published = [(await via_survivor.rooms.publish("lab", message))[0] for _ in range(3)]

    async def all_seen() -> list[dict[str, Any]]:
        found = [s for s in await _seen(via_survivor) if s["position"] in published]
        return found if len(found) >= len(published) else []

    taken_over = await _until("the survivor to take the agent over", all_seen)
    assert {s["pid"] for s in taken_over} == {survivor.process.pid}
    assert sorted(s["position"] for s in taken_over) == published
    assert time.monotonic() - killed < POLL + 5.0


async def _partial(client: RemoteMachine, conversation_id: str, run_id: str) -> bool:
    async with anyio.create_task_group() as group:
        found = anyio.Event()

        async def follow() -> None:
            async for event in client.follow(conversation_id, run_id):
                if isinstance(event, OutputEvent):
                    found.set()
                    return

        group.start_soon(follow)
        with anyio.move_on_after(1.0):
            await found.wait()
        group.cancel_scope.cancel()
    return found.is_set()


@pytest.mark.anyio
async def test_publishers_on_both_servers_make_one_gap_free_order(
    pair: Pair,
) -> None:
    via_a, via_b = pair.via_a, pair.via_b
    room = await via_a.rooms.create_room("order")
    positions: list[int] = []

    async def publish(client: RemoteMachine, name: str) -> None:
        for index in range(25):
            event = EventInput(type="chat.note", payload={"by": name, "n": index})
            positions.extend(await client.rooms.publish(room.id, event))

    async with anyio.create_task_group() as group:
        for writer in range(4):
            group.start_soon(publish, via_a if writer % 2 else via_b, f"w{writer}")
    assert sorted(positions) == list(range(1, 101))
    read = await via_b.rooms.read(room.id, after=0, limit=1000)
    assert [event.position for event in read] == list(range(1, 101))
    for name in ("w0", "w1", "w2", "w3"):  # each writer's own order kept
        mine = [event.payload["n"] for event in read if event.payload["by"] == name]
        assert mine == list(range(25))


# --- an in-process machine beside a server, under asyncio and trio -------------------------


@pytest.fixture
async def machine_beside(
    database: str, tmp_path: Path
) -> AsyncIterator[tuple[Machine, ServeProcess]]:
    server = ServeProcess(tmp_path / "server", db=database, args=SERVE_ARGS)
    try:
        server.url  # noqa: B018
        root = tmp_path / "space"
        root.mkdir()
        async with Machine(
            store=database,
            provider=conformance_provider(),
            attachment_roots=[root],
            poll_interval=30.0,  # woken by notifications, or the test times out
            lease_duration=LEASE,
            heartbeat_interval=0.5,
        ) as machine:
            yield machine, server
    finally:
        server.stop()


@pytest.mark.anyio
async def test_an_in_process_machine_follows_and_cancels_a_served_run_by_notifications(
    machine_beside: tuple[Machine, ServeProcess],
) -> None:
    machine, server = machine_beside
    token = await machine.add_member("ada", "owner")
    local = machine.client(await machine.member("ada"))
    async with RemoteMachine(server.url, token) as remote:
        conversation = await remote.create_conversation(name="beside")
        accepted = await remote.prompt(conversation.id, "slow 20")
        # Its poll interval is 30 s: everything below comes through notifications.
        events = await _follow(local, conversation.id, accepted.run_id)
        assert isinstance(events[-1], FinalEvent) and events[-1].status == "completed"
        assert len(_deltas(events)) >= 10

        views: list[Any] = []
        stop = await local.watch(conversation.id, views.append)
        try:
            accepted = await remote.prompt(conversation.id, "slow 1000")
            await _until(
                "the watch to show the other process's run streaming",
                _async(lambda: any(v.is_running and v.output for v in views)),
            )
            with anyio.fail_after(LEASE):
                assert await local.cancel(conversation.id) is True
            await _until(
                "the watch to show the run ended",
                _async(lambda: not views[-1].is_running and len(views[-1].turns) == 4),
            )
        finally:
            stop()
        assert views[-1].turns[-1].status == "cancelled"


def _async(predicate: Any) -> Any:
    async def check() -> Any:
        return predicate()

    return check
