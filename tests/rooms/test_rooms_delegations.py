"""Delegations always end: deadlines, cancel, lists by status, the default bound of a
wait, a shutdown or a crash with one in flight, agents in another host of the store, and
a result the store refuses."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import anyio
import pytest

from agentkit.rooms import (
    INTERRUPTED,
    MAX_PAYLOAD_BYTES,
    DelegationEndedError,
    DelegationRecord,
    EventInput,
    RoomAccessError,
    RoomAgentDescriptor,
    RoomAgentError,
    RoomAgentRequest,
    Rooms,
)
from agentkit.stores import NewRoomEvent, SQLiteStore

pytestmark = pytest.mark.anyio


class Worker:
    """Takes delegations: `sleep` seconds (forever when `None`), then the task doubled;
    a task `{"size": n}` answers a string of `n` characters."""

    def __init__(self, agent_id: str = "doubler", sleep: float | None = 0.0, **options: Any):
        self.descriptor = RoomAgentDescriptor(
            id=agent_id, read=("chat.*",), publish=("chat.*",), **options
        )
        self.sleep = sleep
        self.started: list[str] = []
        self.cancelled: list[str] = []
        self.requests: list[RoomAgentRequest] = []

    async def handle(self, request: RoomAgentRequest) -> list[EventInput]:
        return []

    async def delegate(self, request: RoomAgentRequest) -> Any:
        assert request.delegation_id is not None
        self.started.append(request.delegation_id)
        self.requests.append(request)
        try:
            if self.sleep is None:
                await anyio.sleep_forever()
            await anyio.sleep(self.sleep)
        except anyio.get_cancelled_exc_class():
            self.cancelled.append(request.delegation_id)
            raise
        task = request.task
        if isinstance(task, dict) and "size" in task:
            return "x" * task["size"]
        return task * 2


@pytest.fixture
async def rooms(tmp_path: Path) -> AsyncIterator[Rooms]:
    async with Rooms(
        store=tmp_path / "rooms.db", poll_interval=0.05, sweep_interval=0.05, shutdown_timeout=0.1
    ) as rooms:
        yield rooms


async def _room(rooms: Rooms, agent: Worker | None = None) -> str:
    room = await rooms.ensure_room("r", "lab", owners=["ada"])
    if agent is not None:
        await rooms.register_agent(room.id, agent)
    return room.id


async def _until(rooms: Rooms, room_id: str, delegation_id: str, status: str) -> DelegationRecord:
    ada = rooms.client("ada")
    with anyio.fail_after(10):
        while True:
            record = await ada.get_delegation(room_id, delegation_id)
            if record.status == status:
                return record
            await anyio.sleep(0.02)


async def test_a_delegation_ends_expired_at_its_deadline(rooms: Rooms) -> None:
    slow = Worker(sleep=None, delegation_deadline=0.3)
    room_id = await _room(rooms, slow)
    ada = rooms.client("ada")
    running = await ada.delegate(room_id, "doubler", 2)
    assert running.deadline is not None
    assert round(running.deadline - running.created_at, 6) == 0.3
    ended = await ada.wait_delegation(room_id, running.id)
    assert (ended.status, ended.error) == ("expired", "expired: not done by its deadline")
    assert slow.cancelled == [running.id]  # its handler was stopped
    # A request's own deadline wins over the agent's default.
    fast = await ada.delegate(room_id, "doubler", 2, deadline=0.1)
    assert fast.deadline is not None and round(fast.deadline - fast.created_at, 6) == 0.1
    assert (await ada.wait_delegation(room_id, fast.id)).status == "expired"
    kinds = [e.type for e in await ada.read(room_id, types=["delegation.*"], limit=100)]
    assert kinds.count("delegation.expired") == 2


async def test_the_sweep_expires_a_delegation_nobody_takes(tmp_path: Path) -> None:
    """An agent registered by another host (now gone) is known to the room: a delegation
    to it is accepted, and ends `expired` when nobody runs it by its deadline."""
    db = tmp_path / "rooms.db"
    async with Rooms(store=db) as first:
        await _room(first, Worker(delegation_deadline=0.2))
    async with Rooms(store=db, sweep_interval=0.05) as rooms:
        ada = rooms.client("ada")
        asked = await ada.delegate("r", "doubler", 1)
        assert asked.deadline is not None and round(asked.deadline - asked.created_at, 6) == 0.2
        ended = await ada.wait_delegation("r", asked.id, timeout=5)
        assert ended.status == "expired"
        assert [e.author for e in await ada.read("r", types=["delegation.expired"])] == [
            "agent:doubler"
        ]
        with pytest.raises(RoomAgentError):
            await ada.delegate("r", "never-registered", 1)


async def test_cancel_a_pending_and_a_running_delegation(rooms: Rooms) -> None:
    slow = Worker(sleep=None)
    room_id = await _room(rooms, slow)
    ada = rooms.client("ada")
    bob = rooms.client("bob")
    carl = rooms.client("carl")
    grant = {"read": ["chat.*", "delegation.*"], "publish": ["delegation.requested"]}
    await ada.set_grant(room_id, "member:bob", **grant)
    await ada.set_grant(room_id, "member:carl", **grant)
    running = await bob.delegate(room_id, "doubler", 1)
    await _until(rooms, room_id, running.id, "running")
    with pytest.raises(RoomAccessError):  # carl sees it (reads delegation.*) but did not ask
        await carl.cancel_delegation(room_id, running.id)
    cancelled = await bob.cancel_delegation(room_id, running.id)
    assert (cancelled.status, cancelled.error) == ("cancelled", "cancelled by member:bob")
    with anyio.fail_after(5):
        while True:
            if slow.cancelled == [running.id]:
                break
            await anyio.sleep(0.02)
    with pytest.raises(DelegationEndedError, match="cancelled"):
        await bob.cancel_delegation(room_id, running.id)
    # Pending (the agent is busy with another): the room's owner cancels it; it never runs.
    await rooms.remove_agent(room_id, "doubler")
    pending = await bob.delegate(room_id, "doubler", 2)
    assert (await ada.cancel_delegation(room_id, pending.id)).status == "cancelled"
    await rooms.register_agent(room_id, Worker())
    assert (await ada.get_delegation(room_id, pending.id)).status == "cancelled"
    ends = [e for e in await ada.read(room_id, types=["delegation.cancelled"])]
    assert [(e.author, e.payload["id"]) for e in ends] == [
        ("member:bob", running.id),
        ("member:ada", pending.id),
    ]


async def test_list_delegations_by_status_and_after(rooms: Rooms) -> None:
    room_id = await _room(rooms, Worker(sleep=None))
    ada = rooms.client("ada")
    first = await ada.delegate(room_id, "doubler", 1)
    await _until(rooms, room_id, first.id, "running")
    second = await ada.delegate(room_id, "doubler", 2)  # pending: the agent is busy
    third = await ada.delegate(room_id, "doubler", 3)
    await ada.cancel_delegation(room_id, third.id)
    statuses = {d.id: d.status for d in await ada.list_delegations(room_id)}
    assert statuses == {first.id: "running", second.id: "pending", third.id: "cancelled"}
    assert [d.id for d in await ada.list_delegations(room_id, status="pending")] == [second.id]
    both = await ada.list_delegations(room_id, status=["running", "cancelled"])
    assert [d.id for d in both] == [first.id, third.id]
    assert [d.id for d in await ada.list_delegations(room_id, after=first.id)] == [
        second.id,
        third.id,
    ]
    page = await ada.list_delegations(room_id, limit=1)
    assert [d.id for d in page] == [first.id] and page.next is not None
    rest = await ada.list_delegations(room_id, limit=1, cursor=page.next)
    assert [d.id for d in rest] == [second.id]
    with pytest.raises(Exception, match="status 'done' is not one of"):
        await ada.list_delegations(room_id, status="done")


async def test_wait_delegation_has_a_default_bound(rooms: Rooms) -> None:
    room_id = await _room(rooms, Worker(sleep=None))
    ada = rooms.client("ada")
    asked = await ada.delegate(room_id, "doubler", 1)
    started = time.monotonic()
    with pytest.raises(TimeoutError):
        await ada.wait_delegation(room_id, asked.id, timeout=0.2)
    assert time.monotonic() - started < 2
    import inspect

    bound = inspect.signature(type(ada).wait_delegation).parameters["timeout"].default
    assert bound == 600.0


async def test_a_shutdown_ends_the_delegation_in_flight(tmp_path: Path) -> None:
    db = tmp_path / "rooms.db"
    async with Rooms(store=db, poll_interval=0.05, shutdown_timeout=0.1) as rooms:
        slow = Worker(sleep=None)
        room_id = await _room(rooms, slow)
        asked = await rooms.client("ada").delegate(room_id, "doubler", 1)
        await _until(rooms, room_id, asked.id, "running")
    async with Rooms(store=db) as rooms:
        record = await rooms.client("ada").get_delegation(room_id, asked.id)
    assert (record.status, record.error) == ("failed", INTERRUPTED)
    assert slow.cancelled == [asked.id]


async def _left_running(db: Path, *, attempts: int = 1) -> str:
    """A delegation its process left `running` (as a SIGKILL leaves it), and a
    `pending` one requested before the agent's next start."""
    store = SQLiteStore(db)
    try:
        now = time.time()
        record = DelegationRecord(
            id="d-running",
            room_id="r",
            agent="doubler",
            task=20,
            status="running",
            requested_by="member:ada",
            created_at=now,
            updated_at=now,
            deadline=now + 60,
            attempts=attempts,
        )
        event = NewRoomEvent("e1", "delegation.running", "agent:doubler", {"id": "d-running"}, now)
        await store.append_room_events("r", [event], delegation=record)
        pending = replace(record, id="d-pending", status="pending", attempts=0, task=5)
        event = NewRoomEvent("e2", "delegation.requested", "member:ada", {"id": "d-pending"}, now)
        await store.append_room_events("r", [event], delegation=pending)
    finally:
        await store.aclose()
    return record.id


async def test_after_a_crash_running_ends_failed_and_pending_is_handled(tmp_path: Path) -> None:
    db = tmp_path / "rooms.db"
    async with Rooms(store=db) as rooms:
        await _room(rooms, Worker())  # known to the room, then gone
    await _left_running(db)
    async with Rooms(store=db, poll_interval=0.05) as rooms:
        agent = Worker()  # `current`: starts at the head, after both requests
        await rooms.register_agent("r", agent)
        ended = await _until(rooms, "r", "d-running", "failed")
        assert ended.error == INTERRUPTED
        done = await _until(rooms, "r", "d-pending", "completed")
        assert done.result == 10
        assert agent.started == ["d-pending"]
        assert agent.requests[0].event.position == 0  # its request came before the start


async def test_an_agent_may_retry_what_was_interrupted_once(tmp_path: Path) -> None:
    db = tmp_path / "rooms.db"
    async with Rooms(store=db) as rooms:
        await _room(rooms, Worker())
    await _left_running(db, attempts=1)
    async with Rooms(store=db, poll_interval=0.05) as rooms:
        agent = Worker(retry_interrupted=True)
        await rooms.register_agent("r", agent)
        retried = await _until(rooms, "r", "d-running", "completed")
        assert (retried.result, retried.attempts) == (40, 2)
    # Interrupted again after its retry: it ends failed.
    db2 = tmp_path / "again.db"
    async with Rooms(store=db2) as rooms:
        await _room(rooms, Worker())
    await _left_running(db2, attempts=2)
    async with Rooms(store=db2, poll_interval=0.05) as rooms:
        await rooms.register_agent("r", Worker(retry_interrupted=True))
        assert (await _until(rooms, "r", "d-running", "failed")).error == INTERRUPTED


async def test_a_delegation_to_an_agent_of_another_host_is_handled_there(tmp_path: Path) -> None:
    db = tmp_path / "rooms.db"
    async with (
        Rooms(store=db, poll_interval=0.05) as runner,
        Rooms(store=db, poll_interval=0.05) as other,
    ):
        await _room(runner, Worker(delegation_deadline=120))
        asked = await other.client("ada").delegate("r", "doubler", 21)
        assert asked.deadline is not None and round(asked.deadline - asked.created_at) == 120
        done = await other.client("ada").wait_delegation("r", asked.id, timeout=10)
        assert (done.status, done.result) == ("completed", 42)


async def test_a_result_too_large_for_its_event_fails_the_delegation(rooms: Rooms) -> None:
    """The result travels in a `delegation.completed` event with the delegation's id and
    agent: a result just under the payload limit does not fit there. The delegation ends
    `failed` saying so, and the worker goes on."""
    room_id = await _room(rooms, Worker())
    ada = rooms.client("ada")
    big = await ada.delegate(room_id, "doubler", {"size": MAX_PAYLOAD_BYTES - 20})
    failed = await ada.wait_delegation(room_id, big.id, timeout=10)
    assert failed.status == "failed"
    assert failed.error is not None and f"over {MAX_PAYLOAD_BYTES} bytes" in failed.error
    after = await ada.delegate(room_id, "doubler", 4)
    assert (await ada.wait_delegation(room_id, after.id, timeout=10)).result == 8
    (status,) = await rooms.workers(room_id)
    assert status.state == "running"
