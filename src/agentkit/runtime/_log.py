"""An in-memory append-only event log with any number of followers.

Writers never wait for readers: `append` is a list append plus, when someone is waiting, one
event set. Readers are cursors: each holds its own offset, drains everything already
written without suspending, and only then waits. A reader that stops or is cancelled affects
nothing but itself.

The log is kept compact, because a process may hold many runs and the garbage collector
walks every object they hold, again and again, as the heap grows:

- a text delta is kept as its bare string, and becomes a `TextDelta` as a reader reaches it;
- every other event is turned into its wire JSON once it is saved (the store gets the
  same bytes, so the event is encoded once) or when the run ends, and a reader gets such
  an event parsed anew (equal to the one the run emitted, not the same object).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

from agentkit._internal.models import (
    new_model,
    set_dict,
    set_extra,
    set_fields_set,
    set_private,
    shared_fields_set,
)
from agentkit.engine import text_delta_event
from agentkit.events import AgentMessage, TextDelta, from_wire, wire_json
from agentkit.stores import EventEntry

__all__ = ["RunLog"]

_CONTENT_ONLY = shared_fields_set(("content",))  # the fields set of a text delta

# An item of the log: an event; a text delta as its `str` content; or, once the log is
# closed, an event as its wire JSON (`bytes`).
_Item = AgentMessage | str | bytes


def _event_of(item: _Item) -> AgentMessage:
    if isinstance(item, str):
        return text_delta_event(item)
    if isinstance(item, bytes):
        return from_wire(item)
    return item


def _compact(event: AgentMessage) -> _Item:
    try:
        return wire_json(event)
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

    def saved(self, offsets: list[int]) -> list[EventEntry]:
        """Entries for the store of the events at `offsets` (no text deltas), each with its
        wire JSON, which the log keeps from now on instead of the event: encoded once, for
        both. An event that cannot be encoded stays as it is, and its entry has no wire."""
        events = self._events
        entries = []
        for offset in offsets:
            item = events[offset]
            if type(item) is bytes:  # saved before (a store that failed, retried)
                entries.append(EventEntry(offset, from_wire(item), item))
                continue
            event: Any = item
            try:
                wire = type(event).__pydantic_serializer__.to_json(
                    event, by_alias=True, exclude_none=True
                )
            except Exception:  # a lone surrogate, say: see `_compact`
                entries.append(EventEntry(offset, event))
                continue
            events[offset] = wire
            entries.append(EventEntry(offset, event, wire))
        return entries

    def restore(self, entries: list[EventEntry]) -> None:
        """Fill an empty log with stored events (a run resumed in another process than the
        one that began it); the offsets the store does not have (text deltas) are kept as
        empty deltas, which readers skip."""
        items: list[_Item] = []
        for entry in entries:
            if entry.offset > len(items):
                items.extend([""] * (entry.offset - len(items)))
            wire = entry.wire
            items.append(wire if wire is not None else _compact(entry.event))
        self._events = items

    def close(self) -> None:
        """Mark the log complete and compact it; readers finish after draining it."""
        self._events = [
            item if isinstance(item, str | bytes) else _compact(item) for item in self._events
        ]
        self._closed = True
        waiter = self._waiter
        if waiter is not None:
            self._waiter = None
            waiter.set()

    async def _wait(self) -> None:
        if self._waiter is None:
            self._waiter = self._new_event()
        await self._waiter.wait()

    def events(self, after: int = -1) -> AsyncIterator[AgentMessage]:
        """Events with offset greater than `after`: the past first, then live ones."""
        return _Cursor(self, after, False)

    def entries(self, after: int = -1) -> AsyncIterator[EventEntry]:
        """Like `events`, with each event's offset."""
        return _Cursor(self, after, True)


class _Cursor:
    """A reader of a `RunLog`: an async iterator holding nothing but its position.

    Not an async generator, on purpose: a reader that stops early (`break`, an error, a
    cancelled task) leaves nothing to finalise, on any backend.
    """

    __slots__ = ("_entries", "_log", "_next")

    def __init__(self, log: RunLog, after: int, entries: bool) -> None:
        self._log = log
        self._next = max(after, -1) + 1
        self._entries = entries

    def __aiter__(self) -> _Cursor:
        return self

    async def aclose(self) -> None:
        """Nothing to release; here so `contextlib.aclosing(run.events())` works."""

    async def __anext__(self) -> Any:
        log = self._log
        while True:
            # Offsets are indexes of the log's list, which keeps them when it is compacted.
            events = log._events
            index = self._next
            if index < len(events):
                self._next = index + 1
                item = events[index]
                if type(item) is str:
                    if not item:  # a delta only the process that began the run had
                        continue
                    # `text_delta_event`, inlined: a streamed answer is mostly deltas, and
                    # this is what a reader pays per delta.
                    event: Any = new_model(TextDelta)
                    set_dict(event, {"agent": None, "type": "text_delta", "content": item})
                    set_fields_set(event, _CONTENT_ONLY)
                    set_extra(event, None)
                    set_private(event, None)
                elif type(item) is bytes:
                    event = from_wire(item)
                else:
                    event = item
                return EventEntry(index, event) if self._entries else event
            if log._closed:
                raise StopAsyncIteration
            await log._wait()
