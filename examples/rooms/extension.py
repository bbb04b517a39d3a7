"""The extension of `agentkit serve`: a `lobby` room with both agents.

agentkit serve --provider test --extension examples.rooms.extension:setup
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from agentkit.conversations import Machine
from examples.rooms.agents import MessageStatistics, question_answerer

LOBBY = "lobby"


@asynccontextmanager
async def setup(machine: Machine) -> AsyncIterator[None]:
    """Validation and registration at start-up; cleanup at shutdown."""
    rooms = machine.rooms
    await rooms.ensure_room(LOBBY, "Lobby")
    # Every member may chat, ask and read what is said; machine owners own the room.
    await rooms.set_grant(
        LOBBY,
        "member:*",
        read=["chat.*", "measurements.*"],
        publish=["chat.message", "chat.question"],
    )
    agents = [MessageStatistics(), question_answerer()]
    for agent in agents:
        await rooms.register_agent(LOBBY, agent)
    try:
        yield
    finally:
        for agent in agents:
            await rooms.remove_agent(LOBBY, agent.descriptor.id)
