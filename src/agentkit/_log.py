"""An in-memory append-only event log with any number of followers.

Writers never wait for readers: `append` is a list append plus, when someone is waiting, one
event set. Readers are cursors: each holds its own offset, drains everything already
written without suspending, and only then waits. A reader that stops or is cancelled affects
nothing but itself.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import anyio

from agentkit.events import AgentMessage
from agentkit.stores._base import EventEntry

__all__ = ["RunLog"]


class RunLog:
    """The events of one run, in order. Offsets are list indexes."""

    __slots__ = ("_closed", "_events", "_waiter")

    def __init__(self) -> None:
        self._events: list[AgentMessage] = []
        self._closed = False
        self._waiter: anyio.Event | None = None

    def __len__(self) -> int:
        return len(self._events)

    @property
    def closed(self) -> bool:
        """Whether the run has written its last event."""
        return self._closed

    def append(self, event: AgentMessage) -> int:
        """Append an event and wake the readers; returns its offset."""
        self._events.append(event)
        waiter = self._waiter
        if waiter is not None:
            self._waiter = None
            waiter.set()
        return len(self._events) - 1

    def close(self) -> None:
        """Mark the log complete; readers finish after draining it."""
        self._closed = True
        waiter = self._waiter
        if waiter is not None:
            self._waiter = None
            waiter.set()

    def snapshot(self) -> list[AgentMessage]:
        """Every event written so far."""
        return list(self._events)

    async def _wait(self) -> None:
        if self._waiter is None:
            self._waiter = anyio.Event()
        await self._waiter.wait()

    async def events(self, after: int = -1) -> AsyncIterator[AgentMessage]:
        """Events with offset greater than `after`: the past first, then live ones."""
        index = max(after, -1) + 1
        events = self._events
        while True:
            while index < len(events):
                yield events[index]
                index += 1
            if self._closed:
                return
            await self._wait()

    async def entries(self, after: int = -1) -> AsyncIterator[EventEntry]:
        """Like `events`, with each event's offset."""
        offset = max(after, -1)
        async for event in self.events(offset):
            offset += 1
            yield EventEntry(offset, event)
