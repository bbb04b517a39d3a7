"""A process hosting one `persisted` room agent, `counter`, for the exactly-once tests:
for each chat message it publishes one `measurements.count` event naming the position it
answers and its idempotency key, after a short random pause (so that a SIGKILL lands
anywhere: in the handler, in the commit, between two events). Every call of the handler
is appended to `calls` (one line each, flushed) before it returns. Prints `ready` once the
worker runs.

Usage: python rooms_counter_process.py STORE ROOM CALLS
"""

from __future__ import annotations

import os
import random
import sys

import anyio

from agentkit.rooms import EventInput, RoomAgentDescriptor, RoomAgentRequest, Rooms


class Counter:
    def __init__(self, calls: str) -> None:
        self.descriptor = RoomAgentDescriptor(
            id="counter",
            read=("chat.*",),
            publish=("measurements.*",),
            selects=("chat.message",),
            start="persisted",
        )
        self.calls = open(calls, "a", buffering=1)  # noqa: SIM115 (open for the process's life)

    async def handle(self, request: RoomAgentRequest) -> list[EventInput]:
        await anyio.sleep(random.uniform(0, 0.004))
        position = request.event.position
        self.calls.write(f"{position}\n")
        os.fsync(self.calls.fileno())
        count = {"position": position, "key": request.idempotency_key}
        return [EventInput(type="measurements.count", payload=count)]


async def main(store: str, room_id: str, calls: str) -> None:
    async with Rooms(store=store, poll_interval=0.05) as rooms:
        await rooms.ensure_room(room_id, "exactly once")
        await rooms.register_agent(room_id, Counter(calls))
        print("ready", flush=True)
        await anyio.sleep_forever()


if __name__ == "__main__":
    anyio.run(main, *sys.argv[1:4])
