"""An in-memory append-only event log with any number of followers.

Writers never wait for readers: `append` is a list append plus, when someone is waiting, one
event set. Readers are cursors: each holds its own offset, drains everything already
written without suspending, and only then waits. A reader that stops or is cancelled affects
nothing but itself.

A text delta is kept as its bare string and turned into a `TextDelta` as a reader reaches
it: a streamed answer of thousands of deltas then holds no objects the garbage collector
has to walk again and again while the run is alive.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

from agentkit.events import AgentMessage, TextDelta, _text_delta
from agentkit.stores._base import EventEntry

__all__ = ["RunLog"]


class RunLog:
    """The events of one run, in order. Offsets are list indexes."""

    __slots__ = ("_closed", "_events", "_new_event", "_waiter")

    def __init__(self, new_event: Callable[[], Any]) -> None:
        # Items: events, and text deltas as their `str` content.
        self._events: list[AgentMessage | str] = []
        self._closed = False
        self._new_event = new_event  # anyio.Event or asyncio.Event: set(), async wait()
        self._waiter: Any = None

    def __len__(self) -> int:
        return len(self._events)

    @property
    def closed(self) -> bool:
        """Whether the run has written its last event."""
        return self._closed

    def append(self, event: AgentMessage) -> int:
        """Append an event and wake the readers; returns its offset."""
        if type(event) is TextDelta and event.agent is None:
            self._events.append(event.content)
        else:
            self._events.append(event)
        waiter = self._waiter
        if waiter is not None:
            self._waiter = None
            waiter.set()
        return len(self._events) - 1

    def append_delta(self, content: str) -> None:
        """Append a `text_delta` event with this content and wake the readers."""
        self._events.append(content)
        waiter = self._waiter
        if waiter is not None:
            self._waiter = None
            waiter.set()

    def close(self) -> None:
        """Mark the log complete; readers finish after draining it."""
        self._closed = True
        waiter = self._waiter
        if waiter is not None:
            self._waiter = None
            waiter.set()

    def snapshot(self) -> list[AgentMessage]:
        """Every event written so far."""
        return [_text_delta(e) if isinstance(e, str) else e for e in self._events]

    async def _wait(self) -> None:
        if self._waiter is None:
            self._waiter = self._new_event()
        await self._waiter.wait()

    async def events(self, after: int = -1) -> AsyncIterator[AgentMessage]:
        """Events with offset greater than `after`: the past first, then live ones."""
        index = max(after, -1) + 1
        events = self._events
        delta = _text_delta
        while True:
            while index < len(events):
                event = events[index]
                index += 1
                yield delta(event) if isinstance(event, str) else event
            if self._closed:
                return
            await self._wait()

    async def entries(self, after: int = -1) -> AsyncIterator[EventEntry]:
        """Like `events`, with each event's offset."""
        offset = max(after, -1)
        async for event in self.events(offset):
            offset += 1
            yield EventEntry(offset, event)
