"""The room agents of the rooms conformance suite, and how a served machine registers
them when a client asks.

The suite's checks use only these agents, by name (`TEST_ROOM_AGENTS`): an in-process
host registers them directly; a served machine started with
`--extension agentkit.testing:rooms_conformance_extension` has a control room
(`CONTROL_ROOM`, owned by the machine's owners) whose `registrar` agent takes
delegations `{"room": <id>, "agent": <name>}` and registers that agent in that room.
[`register_test_agent`][agentkit.testing.register_test_agent] is the client's side: a
delegation, waited for, through any [`RoomsClient`][agentkit.rooms.RoomsClient] of a
machine owner.

The extension is test support: it lets any machine owner register these two harmless
agents in any room; never load it on a machine that serves anything else.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import anyio

from agentkit.rooms import (
    EventInput,
    RoomAgent,
    RoomAgentDescriptor,
    RoomAgentError,
    RoomAgentRequest,
    RoomsClient,
)

if TYPE_CHECKING:
    from agentkit.conversations import Machine

__all__ = [
    "CONTROL_ROOM",
    "REGISTRAR",
    "TEST_ROOM_AGENTS",
    "AdderAgent",
    "WordCountAgent",
    "make_test_agent",
    "register_test_agent",
    "rooms_conformance_extension",
]

CONTROL_ROOM = "agentkit-test-control"
"""The room of the extension's `registrar` agent (machine owners own it)."""
REGISTRAR = "registrar"
"""The agent of the control room that registers test agents when delegated to."""


class WordCountAgent:
    """`word-count`: for each `chat.message` a member publishes, publishes
    `measurements.word_count` with the message's `position` and its number of `words`
    (of the payload's `text`)."""

    descriptor = RoomAgentDescriptor(
        id="word-count",
        description="Counts the words of chat messages.",
        read=("chat.*",),
        publish=("measurements.*",),
        selects=("chat.message",),
    )

    async def handle(self, request: RoomAgentRequest) -> list[EventInput]:
        """One `measurements.word_count` for the message."""
        payload = request.event.payload
        text = payload.get("text", "") if isinstance(payload, dict) else ""
        words = len(str(text).split())
        return [
            EventInput(
                type="measurements.word_count",
                payload={"position": request.event.position, "words": words},
            )
        ]


class AdderAgent:
    """`adder`: takes delegations whose task is a list of numbers and completes them
    with their sum; any other task fails the delegation. It reacts to no event."""

    descriptor = RoomAgentDescriptor(id="adder", description="Adds numbers it is given.")

    async def handle(self, request: RoomAgentRequest) -> list[EventInput]:
        """Nothing: it selects no event."""
        return []

    async def delegate(self, request: RoomAgentRequest) -> Any:
        """The sum of the task's numbers (`ValueError` for anything else)."""
        task = request.task
        if not isinstance(task, list) or not all(
            isinstance(n, int | float) and not isinstance(n, bool) for n in task
        ):
            raise ValueError(f"the task must be a list of numbers, not {task!r}")
        return sum(task)


class SleeperAgent:
    """`sleeper`: takes delegations whose task is a number of seconds, sleeps them and
    completes with `"slept"`; for checks that need a delegation to stay `running`."""

    descriptor = RoomAgentDescriptor(id="sleeper", description="Sleeps as long as it is told.")

    async def handle(self, request: RoomAgentRequest) -> list[EventInput]:
        """Nothing: it selects no event."""
        return []

    async def delegate(self, request: RoomAgentRequest) -> Any:
        """`"slept"`, after the task's seconds (at most an hour)."""
        task = request.task
        if not isinstance(task, int | float) or isinstance(task, bool):
            raise ValueError(f"the task must be a number of seconds, not {task!r}")
        await anyio.sleep(min(float(task), 3600.0))
        return "slept"


TEST_ROOM_AGENTS: dict[str, Callable[[], RoomAgent]] = {
    "word-count": WordCountAgent,
    "adder": AdderAgent,
    "sleeper": SleeperAgent,
}
"""The agents the suite's checks register, by name: a fresh one for each registration."""


def make_test_agent(name: str) -> RoomAgent:
    """A new test agent by name (`RoomAgentError` for an unknown name)."""
    factory = TEST_ROOM_AGENTS.get(name)
    if factory is None:
        raise RoomAgentError(f"no test room agent {name!r} (one of {sorted(TEST_ROOM_AGENTS)})")
    return factory()


class _Registrar:
    """The control room's agent: a delegation registers a test agent in a room."""

    descriptor = RoomAgentDescriptor(id=REGISTRAR, description="Registers test room agents.")

    def __init__(self, machine: Machine) -> None:
        self._machine = machine

    async def handle(self, request: RoomAgentRequest) -> list[EventInput]:
        return []

    async def delegate(self, request: RoomAgentRequest) -> Any:
        task = request.task
        if not isinstance(task, dict) or not isinstance(task.get("room"), str):
            raise ValueError('the task is {"room": <id>, "agent": <name>}')
        agent = make_test_agent(str(task.get("agent")))
        await self._machine.rooms.register_agent(task["room"], agent)
        return agent.descriptor.id


async def rooms_conformance_extension(machine: Machine) -> None:
    """The `agentkit serve` extension of the remote rooms host: the control room and its
    registrar (`--extension agentkit.testing:rooms_conformance_extension`)."""
    await machine.rooms.ensure_room(CONTROL_ROOM, "Rooms conformance control")
    await machine.rooms.register_agent(CONTROL_ROOM, _Registrar(machine))


async def register_test_agent(owner: RoomsClient, room_id: str, agent: str) -> None:
    """Register the test agent `agent` in `room_id` on the served machine `owner` (a
    machine owner's client) talks to, through the extension's registrar; returns once
    it is registered (an event published after this returns reaches it).

    Raises:
        RoomAgentError: The registration failed (unknown agent or room, or a duplicate).
    """
    record = await owner.delegate(CONTROL_ROOM, REGISTRAR, {"room": room_id, "agent": agent})
    done = await owner.wait_delegation(CONTROL_ROOM, record.id)
    if done.status != "completed":
        raise RoomAgentError(f"registering {agent!r} in room {room_id!r} failed: {done.error}")
