"""Rooms in process: total order, grants on every path, agents' workers (selection, own
outputs, other agents' events, failures, timeouts), LLM agents and delegations."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentkit import AgentSpec, Runtime
from agentkit.rooms import (
    AGENT_FAILED,
    DelegationNotFoundError,
    EventInput,
    RoomAccessError,
    RoomAgentDescriptor,
    RoomAgentError,
    RoomAgentRequest,
    RoomError,
    RoomEvent,
    RoomNotFoundError,
    Rooms,
    SpecRoomAgent,
)
from agentkit.stores import MemoryStore
from agentkit.testing import ScriptedProvider

pytestmark = pytest.mark.anyio


def chat(text: str) -> EventInput:
    return EventInput(type="chat.message", payload={"text": text})


class WordCount:
    """The document's message-statistics agent."""

    def __init__(self, agent_id: str = "stats", **options: Any) -> None:
        self.descriptor = RoomAgentDescriptor(
            id=agent_id,
            read=("chat.*",),
            publish=("measurements.*",),
            selects=("chat.message",),
            **options,
        )
        self.seen: list[int] = []

    async def handle(self, request: RoomAgentRequest) -> list[EventInput]:
        self.seen.append(request.event.position)
        words = len(str(request.event.payload.get("text", "")).split())
        return [EventInput(type="measurements.word_count", payload={"words": words})]


class Echo:
    """Republishes what it selects as `chat.message` (an agent other agents may hear)."""

    def __init__(self, agent_id: str = "echo", **options: Any) -> None:
        options.setdefault("selects", ("chat.message",))
        self.descriptor = RoomAgentDescriptor(
            id=agent_id, read=("*",), publish=("chat.message",), **options
        )
        self.seen: list[RoomEvent] = []

    async def handle(self, request: RoomAgentRequest) -> list[EventInput]:
        self.seen.append(request.event)
        return [chat(f"echo {request.event.position}")]


async def _events(client: Any, room_id: str, count: int, **options: Any) -> list[RoomEvent]:
    """The first `count` events of a subscription."""
    found: list[RoomEvent] = []
    with anyio.fail_after(10):
        async for event in client.subscribe(room_id, **options):
            found.append(event)
            if len(found) == count:
                return found
    return found


async def _wait(client: Any, room_id: str, delegation_id: str) -> Any:
    with anyio.fail_after(10):
        return await client.wait_delegation(room_id, delegation_id)


async def _until(predicate: Any, limit: float = 10.0) -> None:
    with anyio.fail_after(limit):
        while not await predicate():  # noqa: ASYNC110 - a condition of several objects
            await anyio.sleep(0.01)


@pytest.fixture
async def rooms() -> AsyncIterator[Rooms]:
    async with Rooms(store=MemoryStore(), poll_interval=0.05, shutdown_timeout=1) as host:
        yield host


# --- the log ------------------------------------------------------------------------------


async def test_publish_read_and_subscribe(rooms: Rooms) -> None:
    ada = rooms.client("ada")
    room = await ada.create_room("lab")
    assert room.owners == ("ada",) and room.head == 0
    assert await ada.publish(room.id, chat("one")) == [1]
    assert await ada.publish(room.id, [chat("two"), EventInput(type="note.x", payload=1)]) == [2, 3]
    events = await ada.read(room.id)
    assert [(e.position, e.type, e.author) for e in events] == [
        (1, "chat.message", "member:ada"),
        (2, "chat.message", "member:ada"),
        (3, "note.x", "member:ada"),
    ]
    assert [e.position for e in await ada.read(room.id, after=1, types=["note.*"])] == [3]
    assert [e.position for e in await ada.read(room.id, limit=2)] == [1, 2]
    live: list[RoomEvent] = []

    async def follow() -> None:
        live.extend(await _events(ada, room.id, 4, after=2))

    async with anyio.create_task_group() as group:
        group.start_soon(follow)
        await anyio.sleep(0.1)  # replayed what was there; now following live
        for text in ("four", "five", "six"):
            await ada.publish(room.id, chat(text))
    assert [e.position for e in live] == [3, 4, 5, 6]


@given(
    batches=st.lists(st.lists(st.integers(0, 3), min_size=1, max_size=4), min_size=1, max_size=6)
)
@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
async def test_concurrent_publishers_make_one_gap_free_order(batches: list[list[int]]) -> None:
    async with Rooms(store=MemoryStore(), poll_interval=0.05) as rooms:
        ada = rooms.client("ada", role="owner")
        room = await ada.create_room("lab")
        positions: list[int] = []

        async def publisher(index: int, sizes: list[int]) -> None:
            for size in sizes:
                await anyio.lowlevel.checkpoint()
                if size:
                    events = [chat(f"{index}-{n}") for n in range(size)]
                    got = await ada.publish(room.id, events)
                    assert got == list(range(got[0], got[0] + size))  # a batch is contiguous
                    positions.extend(got)

        async with anyio.create_task_group() as group:
            for index, sizes in enumerate(batches):
                group.start_soon(publisher, index, sizes)
        total = sum(sum(sizes) for sizes in batches)
        assert sorted(positions) == list(range(1, total + 1))
        stored = await ada.read(room.id, limit=1000)
        assert [e.position for e in stored] == list(range(1, total + 1))


async def test_bad_input_is_a_clear_error_and_publishes_nothing(rooms: Rooms) -> None:
    ada = rooms.client("ada")
    room = await ada.create_room("lab")
    with pytest.raises(ValueError, match="dotted lowercase"):
        EventInput(type="Chat Message")
    with pytest.raises(RoomError, match="not JSON"):
        await ada.publish(room.id, [chat("fine"), EventInput(type="x.y", payload={1, 2})])
    with pytest.raises(RoomError, match="over 65536 bytes"):
        await ada.publish(room.id, EventInput(type="x.y", payload="x" * 70_000))
    with pytest.raises(RoomError, match="1 to 100 events"):
        await ada.publish(room.id, [chat("x")] * 101)
    with pytest.raises(RoomError, match="after must be a position"):
        await ada.read(room.id, after=-1)
    assert await ada.read(room.id) == []
    assert await ada.publish(room.id, chat("first")) == [1]


# --- grants ---------------------------------------------------------------------------------


async def test_grants_on_every_path(rooms: Rooms) -> None:
    ada = rooms.client("ada")
    bob = rooms.client("bob")
    viewer = rooms.client("vic", role="viewer")
    room = await ada.create_room("lab")
    await ada.publish(room.id, [chat("hi"), EventInput(type="secret.plan", payload="x")])
    # Without a grant the room does not exist for bob.
    for call in (
        bob.get_room(room.id),
        bob.read(room.id),
        bob.publish(room.id, chat("no")),
        _events(bob, room.id, 1),
    ):
        with pytest.raises(RoomNotFoundError):
            await call
    assert await bob.list_rooms() == []
    with pytest.raises(RoomNotFoundError):
        await bob.set_grant(room.id, "member:bob", read=["*"], publish=["*"])
    await ada.set_grant(room.id, "member:bob", read=["chat.*"], publish=["chat.message"])
    assert [r.id for r in await bob.list_rooms()] == [room.id]
    assert [e.type for e in await bob.read(room.id)] == ["chat.message"]  # not secret.plan
    assert [e.type for e in await _events(bob, room.id, 1)] == ["chat.message"]
    with pytest.raises(RoomAccessError, match="nothing was published"):
        await bob.publish(room.id, [chat("ok"), EventInput(type="secret.plan", payload=1)])
    assert (await ada.get_room(room.id)).head == 2  # the batch left nothing
    assert await bob.publish(room.id, chat("allowed")) == [3]
    with pytest.raises(RoomAccessError, match="owners"):
        await bob.list_grants(room.id)
    with pytest.raises(RoomAccessError, match="owners"):
        await bob.set_grant(room.id, "member:bob", read=["*"], publish=["*"])
    with pytest.raises(RoomAccessError, match="viewers"):
        await viewer.create_room("mine")
    # Revoking: empty lists remove the grant, and the room is gone for bob again.
    await ada.set_grant(room.id, "member:bob", read=[], publish=[])
    with pytest.raises(RoomNotFoundError):
        await bob.read(room.id)
    with pytest.raises(ValueError, match="pattern"):
        await ada.set_grant(room.id, "member:bob", read=["chat*"], publish=[])


async def test_machine_owners_own_every_room(rooms: Rooms) -> None:
    bob = rooms.client("bob")
    room = await bob.create_room("bob's")
    boss = rooms.client("boss", role="owner")
    await boss.set_grant(room.id, "member:carl", read=["*"], publish=[])
    assert {g.participant for g in await boss.list_grants(room.id)} == {"member:carl"}
    await boss.delete_room(room.id)
    with pytest.raises(RoomNotFoundError):
        await bob.get_room(room.id)


# --- agents -----------------------------------------------------------------------------------


async def test_the_message_statistics_agent(rooms: Rooms) -> None:
    ada = rooms.client("ada")
    room = await ada.create_room("lab")
    await ada.publish(room.id, chat("before the agent"))  # `current`: not replayed
    stats = WordCount()
    await rooms.register_agent(room.id, stats)
    await ada.publish(room.id, [chat("three little words"), EventInput(type="other.x")])
    derived = await _events(ada, room.id, 1, after=3, types=["measurements.*"])
    assert derived[0].payload == {"words": 3} and derived[0].author == "agent:stats"
    assert stats.seen == [2]
    status = (await rooms.workers(room.id))[0]
    assert status.agent == "stats" and status.failures == 0
    await _until(lambda: _lag_zero(rooms, room.id))


async def _lag_zero(rooms: Rooms, room_id: str) -> bool:
    return all(status.lag == 0 for status in await rooms.workers(room_id))


async def test_own_outputs_and_other_agents_events(rooms: Rooms) -> None:
    ada = rooms.client("ada")
    room = await ada.create_room("lab")
    echo = Echo()  # publishes chat.message, which it selects: never sees its own
    deaf = Echo("deaf")  # other agents' events: not without include_agent_events
    hears = Echo("hears", include_agent_events=True, selects=("chat.message",))
    for agent in (echo, deaf, hears):
        await rooms.register_agent(room.id, agent)
    with pytest.raises(RoomAgentError, match="already"):
        await rooms.register_agent(room.id, Echo())
    await ada.publish(room.id, chat("hello"))
    await _until(lambda: _settled(rooms, room.id, [echo, deaf, hears]))
    assert [e.position for e in echo.seen] == [1]
    assert [e.position for e in deaf.seen] == [1]
    # `hears` gets ada's message and the two echoes of the other agents, not its own.
    assert {e.author for e in hears.seen} == {"member:ada", "agent:echo", "agent:deaf"}
    assert all(e.author != "agent:hears" for e in hears.seen)


async def _settled(rooms: Rooms, room_id: str, agents: list[Echo]) -> bool:
    await anyio.sleep(0.2)
    return await _lag_zero(rooms, room_id)


class Failing:
    def __init__(self, agent_id: str, how: str, **options: Any) -> None:
        self.descriptor = RoomAgentDescriptor(
            id=agent_id, read=("*",), publish=("chat.message",), selects=("chat.*",), **options
        )
        self.how = how
        self.calls = 0

    async def handle(self, request: RoomAgentRequest) -> list[EventInput]:
        self.calls += 1
        if self.how == "raise":
            raise RuntimeError("the handler broke")
        if self.how == "hang":
            await anyio.sleep_forever()
        return [EventInput(type="secret.plan", payload=1)]  # outside its grants


async def test_failures_are_recorded_and_isolated(rooms: Rooms) -> None:
    ada = rooms.client("ada")
    room = await ada.create_room("lab")
    raising = Failing("raising", "raise")
    hanging = Failing("hanging", "hang", handler_timeout=0.2)
    outside = Failing("outside", "grants")
    retried = Failing("retried", "raise", start="persisted", max_attempts=3)
    stats = WordCount()
    for agent in (raising, hanging, outside, retried, stats):
        await rooms.register_agent(room.id, agent)
    await ada.publish(room.id, chat("two words"))
    failures = await _events(ada, room.id, 4, types=[AGENT_FAILED])
    by_agent = {e.payload["agent"]: e.payload for e in failures}
    assert by_agent["raising"]["error"] == "RuntimeError: the handler broke"
    assert by_agent["raising"]["attempts"] == 1 and by_agent["raising"]["position"] == 1
    assert "longer than 0.2 s" in by_agent["hanging"]["error"]
    assert "outside the agent's grants" in by_agent["outside"]["error"]
    assert by_agent["retried"]["attempts"] == 3 and retried.calls == 3
    assert all(e.author == f"agent:{e.payload['agent']}" for e in failures)
    # The statistics agent went on as if nothing had happened.
    counts = await ada.read(room.id, types=["measurements.word_count"])
    assert [e.payload for e in counts] == [{"words": 2}]
    assert not await ada.read(room.id, types=["secret.*"])  # the rejected batch is not there
    # Later events are handled: every worker moved on.
    await ada.publish(room.id, chat("again"))
    await _until(lambda: _calls(raising, 2))
    statuses = {s.agent: s for s in await rooms.workers(room.id)}
    assert statuses["raising"].failures >= 1 and statuses["raising"].last_error


async def _calls(agent: Failing, count: int) -> bool:
    return agent.calls >= count


async def test_removing_an_agent_waits_for_its_handler(rooms: Rooms) -> None:
    ada = rooms.client("ada")
    room = await ada.create_room("lab")
    stats = WordCount()
    await rooms.register_agent(room.id, stats)
    await rooms.remove_agent(room.id, "stats")
    assert rooms.agents(room.id) == []
    await ada.publish(room.id, chat("nobody counts this"))
    await anyio.sleep(0.2)
    assert stats.seen == []
    with pytest.raises(RoomAgentError):
        await rooms.remove_agent(room.id, "stats")


async def test_persisted_agents_resume_after_their_cursor(tmp_path: Path) -> None:
    db = str(tmp_path / "rooms.db")
    async with Rooms(store=db, poll_interval=0.05) as rooms:
        ada = rooms.client("ada")
        room = await ada.create_room("lab")
        first = WordCount(start="persisted")
        await rooms.register_agent(room.id, first)
        await ada.publish(room.id, chat("one"))
        await _until(lambda: _lag_zero(rooms, room.id))
    async with Rooms(store=db, poll_interval=0.05) as rooms:
        ada = rooms.client("ada")
        await ada.publish(room.id, [chat("two two"), chat("three three three")])  # missed
        second = WordCount(start="persisted")
        current = WordCount("now")  # `current`: starts at the head, nothing replayed
        await rooms.register_agent(room.id, second)
        await rooms.register_agent(room.id, current)
        await _until(lambda: _seen(second, 2))
        assert second.seen == [3, 4] and current.seen == []


async def _seen(agent: WordCount, count: int) -> bool:
    return len(agent.seen) >= count


# --- delegations and LLM agents ------------------------------------------------------------


class Adder(WordCount):
    async def delegate(self, request: RoomAgentRequest) -> Any:
        if request.task == "fail":
            raise ValueError("cannot add that")
        return sum(request.task)


async def test_delegations_end_to_end(rooms: Rooms) -> None:
    ada = rooms.client("ada")
    bob = rooms.client("bob")
    room = await ada.create_room("lab")
    await rooms.register_agent(room.id, Adder("adder"))
    await rooms.register_agent(room.id, WordCount())
    asked = await ada.delegate(room.id, "adder", [1, 2, 3])
    assert asked.status == "pending"
    done = await _wait(ada, room.id, asked.id)
    assert (done.status, done.result) == ("completed", 6)
    failed = await _wait(ada, room.id, (await ada.delegate(room.id, "adder", "fail")).id)
    assert failed.status == "failed" and "cannot add that" in (failed.error or "")
    not_taking = await ada.delegate(room.id, "stats", "x")
    result = await _wait(ada, room.id, not_taking.id)
    assert result.status == "failed" and "does not take delegations" in (result.error or "")
    kinds = [e.type for e in await ada.read(room.id, types=["delegation.*"])]
    assert kinds[:3] == ["delegation.requested", "delegation.running", "delegation.completed"]
    with pytest.raises(RoomAgentError):
        await ada.delegate(room.id, "nobody", 1)
    await ada.set_grant(room.id, "member:bob", read=["chat.*"], publish=["chat.*"])
    with pytest.raises(RoomAccessError):
        await bob.delegate(room.id, "adder", [1])
    with pytest.raises(DelegationNotFoundError):
        await bob.get_delegation(room.id, asked.id)


async def test_an_llm_room_agent_answers_and_remembers_the_room() -> None:
    provider = ScriptedProvider(["Hello Ada.", "You said hi before.", "42"])
    spec = AgentSpec(id="demo:helper", system_prompt="Answer in the room.")
    async with (
        Runtime(provider=provider, store=MemoryStore()) as runtime,
        Rooms(runtime=runtime, poll_interval=0.05) as rooms,
    ):
        ada = rooms.client("ada")
        room = await ada.create_room("lab")
        helper = SpecRoomAgent(spec)
        assert helper.descriptor.id == "demo-helper"
        await rooms.register_agent(room.id, helper)
        await ada.publish(room.id, chat("hi"))
        first = await _events(ada, room.id, 1, after=1)
        assert first[0].payload == {"text": "Hello Ada.", "reply_to": 1}
        assert first[0].author == "agent:demo-helper"
        await ada.publish(room.id, chat("remember?"))
        second = await _events(ada, room.id, 1, after=3)
        assert second[0].payload["text"] == "You said hi before."
        # The room is its memory: the second run's one message holds the first exchange.
        (message,) = provider.requests[-1].messages
        assert "[1] member:ada (chat.message): hi\n[2] agent:demo-helper" in message.content
        assert message.content.endswith("answer:\n[3] member:ada (chat.message): remember?")
        asked = await ada.delegate(room.id, "demo-helper", "What is six times seven?")
        done = await _wait(ada, room.id, asked.id)
        assert (done.status, done.result) == ("completed", "42")


async def test_a_grant_to_every_member(rooms: Rooms) -> None:
    ada = rooms.client("ada")
    room = await ada.create_room("lobby")
    await ada.set_grant(room.id, "member:*", read=["chat.*"], publish=["chat.message"])
    await ada.set_grant(room.id, "member:bob", read=["chat.*"], publish=[])
    carl = rooms.client("carl")
    bob = rooms.client("bob")
    assert await carl.publish(room.id, chat("hello from carl")) == [1]
    with pytest.raises(RoomAccessError):
        await bob.publish(room.id, chat("bob's own grant wins"))
    assert [e.author for e in await bob.read(room.id)] == ["member:carl"]
    with pytest.raises(RoomError, match="member:\\*"):
        await ada.set_grant(room.id, "everyone", read=["*"], publish=[])
