"""Supervised workers: a store fault outside the handler (a full filesystem, a terminated
PostgreSQL connection) leaves a worker `degraded`, listed with its fault, and it recovers
by itself once the store does, without running a handler twice or losing what it
returned; a publish the store refuses is a clear error."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import anyio
import pytest

from agentkit.errors import StoreUnavailableError
from agentkit.rooms import EventInput, RoomAgentDescriptor, RoomAgentRequest, Rooms
from support.full_disk import small_filesystem
from support.pg import dsn, postgres_url

pytestmark = pytest.mark.anyio


class Gated:
    """A persisted agent whose handler waits for `gate` before answering, so a test can
    break the store between an event's delivery and its commit."""

    def __init__(self) -> None:
        self.descriptor = RoomAgentDescriptor(
            id="gated",
            read=("chat.*",),
            publish=("measurements.*",),
            selects=("chat.message",),
            start="persisted",
        )
        self.gate = anyio.Event()
        self.entered = anyio.Event()
        self.calls: list[int] = []

    async def handle(self, request: RoomAgentRequest) -> list[EventInput]:
        self.calls.append(request.event.position)
        self.entered.set()
        await self.gate.wait()
        return [EventInput(type="measurements.seen", payload={"position": request.event.position})]


def chat(text: str) -> EventInput:
    return EventInput(type="chat.message", payload={"text": text})


async def _state(rooms: Rooms, room_id: str, state: str) -> Any:
    with anyio.fail_after(20):
        while True:
            (status,) = await rooms.workers(room_id)
            if status.state == state:
                return status
            await anyio.sleep(0.02)


async def _seen(rooms: Rooms, room_id: str, count: int) -> list[int]:
    ada = rooms.client("ada", role="owner")
    with anyio.fail_after(20):
        while True:
            found = await ada.read(room_id, types=["measurements.seen"])
            if len(found) >= count:
                return [event.payload["position"] for event in found]
            await anyio.sleep(0.05)


@pytest.fixture
async def disk() -> AsyncIterator[Any]:
    with small_filesystem("4m") as disk:
        yield disk


async def test_a_full_disk_degrades_the_worker_until_space_comes_back(disk: Any) -> None:
    agent = Gated()
    async with Rooms(store=disk.path / "rooms.db", poll_interval=0.05) as rooms:
        room = await rooms.ensure_room("r", "lab")
        await rooms.register_agent(room.id, agent)
        ada = rooms.client("ada", role="owner")
        (first,) = await ada.publish(room.id, chat("before the disk filled"))
        with anyio.fail_after(10):
            await agent.entered.wait()
        disk.fill()
        # A member's publish is refused with a storage error, nothing half-written.
        with pytest.raises(StoreUnavailableError):
            await ada.publish(room.id, [chat(f"while full {n}" * 500) for n in range(50)])
        agent.gate.set()  # the handler answers; its commit meets the full disk
        status = await _state(rooms, room.id, "degraded")
        assert status.fault is not None and "StoreUnavailableError" in status.fault
        assert [s.agent for s in await rooms.workers(room.id)] == ["gated"]  # still listed
        disk.free()
        await _state(rooms, room.id, "running")
        assert await _seen(rooms, room.id, 1) == [first]
        (second,) = await ada.publish(room.id, chat("after"))
        assert await _seen(rooms, room.id, 2) == [first, second]
    # The handler ran once for the event whose commit waited for the disk.
    assert agent.calls == [first, second]


async def test_a_terminated_postgres_connection_is_survived() -> None:
    import psycopg

    agent = Gated()
    agent.gate.set()
    with postgres_url("faults") as url:
        async with Rooms(store=url, poll_interval=0.05) as rooms:
            room = await rooms.ensure_room("r", "lab")
            await rooms.register_agent(room.id, agent)
            ada = rooms.client("ada", role="owner")
            (first,) = await ada.publish(room.id, chat("one"))
            assert await _seen(rooms, room.id, 1) == [first]
            schema = url.split("search_path%3D", 1)[1]
            with psycopg.connect(dsn(), autocommit=True) as admin:
                killed = admin.execute(
                    "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                    "WHERE datname = current_database() AND pid <> pg_backend_pid() "
                    "AND backend_type = 'client backend'"
                ).fetchone()
            assert killed is not None and killed[0] >= 1, schema
            # Whatever the next calls meet, the worker is back by itself and answers.
            (second,) = await _publish_retrying(ada, room.id, chat("two"))
            assert await _seen(rooms, room.id, 2) == [first, second]
            await _state(rooms, room.id, "running")
            assert [s.agent for s in await rooms.workers(room.id)] == ["gated"]
    assert agent.calls == [first, second]


async def _publish_retrying(client: Any, room_id: str, event: EventInput) -> list[int]:
    """A member's publish right after the store lost its connections: the first may meet
    the dead connection (`StoreUnavailableError`, nothing written); the next one works."""
    for _ in range(3):
        try:
            positions: list[int] = await client.publish(room_id, event)
            return positions
        except StoreUnavailableError:
            await anyio.sleep(0.1)
    raise AssertionError("the store did not come back")
