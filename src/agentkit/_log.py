"""An in-memory append-only event log with any number of followers.

Writers never wait for readers: `append` is a list append plus, when someone is waiting, one
event set. Readers are cursors: each holds its own offset, drains everything already
written without suspending, and only then waits. A reader that stops or is cancelled affects
nothing but itself.

The log is kept compact, because a process may hold many runs and the garbage collector
walks every object they hold, again and again, as the heap grows:

- a text delta is kept as its bare string, and becomes a `TextDelta` as a reader reaches it;
- when the run ends, every other event is turned into its wire JSON, and a reader of the
  finished log gets each event parsed anew (equal to the one the run emitted, not the same
  object).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any, cast

from agentkit.events import (
    _CONTENT_ONLY,
    AgentMessage,
    TextDelta,
    _set_dict,
    _set_extra,
    _set_fields_set,
    _set_private,
    _text_delta,
    _wire_json,
    from_wire,
)
from agentkit.stores._base import EventEntry

__all__ = ["RunLog"]

# An item of the log: an event; a text delta as its `str` content; or, once the log is
# closed, an event as its wire JSON (`bytes`).
_Item = AgentMessage | str | bytes


def _event_of(item: _Item) -> AgentMessage:
    if isinstance(item, str):
        return _text_delta(item)
    if isinstance(item, bytes):
        return from_wire(item)
    return item


def _compact(event: AgentMessage) -> _Item:
    try:
        return _wire_json(event)
    except Exception:
        # JSON cannot hold everything a `str` can (a lone surrogate, from a file name that
        # is not UTF-8): such an event stays as it is rather than failing the close.
        return event


class RunLog:
    """The events of one run, in order. Offsets are list indexes."""

    __slots__ = ("_closed", "_events", "_new_event", "_waiter")

    def __init__(self, new_event: Callable[[], Any]) -> None:
        self._events: list[_Item] = []
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
        """Mark the log complete and compact it; readers finish after draining it."""
        # A new list: readers part-way through the old one finish it as it is.
        self._events = [
            item if isinstance(item, str | bytes) else _compact(item) for item in self._events
        ]
        self._closed = True
        waiter = self._waiter
        if waiter is not None:
            self._waiter = None
            waiter.set()

    def snapshot(self) -> list[AgentMessage]:
        """Every event written so far."""
        return [_event_of(item) for item in self._events]

    async def _wait(self) -> None:
        if self._waiter is None:
            self._waiter = self._new_event()
        await self._waiter.wait()

    async def events(self, after: int = -1) -> AsyncIterator[AgentMessage]:
        """Events with offset greater than `after`: the past first, then live ones."""
        index = max(after, -1) + 1
        # `_text_delta`, inlined with its names bound locally: a streamed answer is mostly
        # deltas, and this loop is what a reader of one pays per delta.
        new, delta_class, only_content = object.__new__, TextDelta, _CONTENT_ONLY
        set_dict, set_fields_set = _set_dict, _set_fields_set
        set_extra, set_private = _set_extra, _set_private
        while True:
            events = self._events  # replaced by its compact form when the log closes
            while index < len(events):
                item = events[index]
                index += 1
                if type(item) is str:
                    delta = new(delta_class)
                    set_dict(delta, {"agent": None, "type": "text_delta", "content": item})
                    set_fields_set(delta, only_content)
                    set_extra(delta, None)
                    set_private(delta, None)
                    yield delta
                elif type(item) is bytes:
                    yield from_wire(item)
                else:
                    yield cast(AgentMessage, item)
            if self._closed:
                if events is self._events:
                    return
                continue  # the log closed while this reader was on the old list
            await self._wait()

    async def entries(self, after: int = -1) -> AsyncIterator[EventEntry]:
        """Like `events`, with each event's offset."""
        offset = max(after, -1)
        async for event in self.events(offset):
            offset += 1
            yield EventEntry(offset, event)
