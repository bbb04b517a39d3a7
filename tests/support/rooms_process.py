"""A process hosting two room agents on a SQLite file, for the restart tests: `seen-p`
(persisted) and `seen-c` (current) publish `measurements.seen` for each chat message,
after a pause of 2 s for the text `slow`. Prints `ready` once both workers run."""

from __future__ import annotations

import sys

import anyio

from agentkit.rooms import EventInput, RoomAgentDescriptor, RoomAgentRequest, Rooms


class Seen:
    def __init__(self, agent_id: str, start: str) -> None:
        self.descriptor = RoomAgentDescriptor(
            id=agent_id,
            read=("chat.*",),
            publish=("measurements.*",),
            selects=("chat.message",),
            start=start,  # type: ignore[arg-type]
        )

    async def handle(self, request: RoomAgentRequest) -> list[EventInput]:
        if request.event.payload.get("text") == "slow":
            await anyio.sleep(2)
        seen = {"agent": self.descriptor.id, "position": request.event.position}
        return [EventInput(type="measurements.seen", payload=seen)]


async def main(db: str, room_id: str) -> None:
    async with Rooms(store=db, poll_interval=0.05) as rooms:
        await rooms.ensure_room(room_id, "restarts")
        await rooms.register_agent(room_id, Seen("seen-p", "persisted"))
        await rooms.register_agent(room_id, Seen("seen-c", "current"))
        print("ready", flush=True)
        await anyio.sleep_forever()


if __name__ == "__main__":
    anyio.run(main, sys.argv[1], sys.argv[2])
