"""An `agentkit serve --extension` for the scale-out tests: the room `lab` with the
persisted agent `seen`, which answers each `chat.message` with `measurements.seen`
naming the position and the process (its pid) that handled it. Every server on the
database registers it; one at a time runs it."""

from __future__ import annotations

import os
from typing import Any

from agentkit.rooms import EventInput, RoomAgentDescriptor, RoomAgentRequest

ROOM = "lab"


class Seen:
    descriptor = RoomAgentDescriptor(
        id="seen",
        read=("chat.*",),
        publish=("measurements.*",),
        selects=("chat.message",),
        start="persisted",
    )

    async def handle(self, request: RoomAgentRequest) -> list[EventInput]:
        seen = {"position": request.event.position, "pid": os.getpid()}
        return [EventInput(type="measurements.seen", payload=seen)]


async def setup(machine: Any) -> None:
    await machine.rooms.ensure_room(ROOM, "lab")
    await machine.rooms.register_agent(ROOM, Seen())
