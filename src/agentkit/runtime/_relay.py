"""A run's log read from another process: stored events, plus live ones relayed.

The process executing a run stores its events at each model step's end; text deltas are
never stored. When its store's notifications are shared (PostgreSQL), the runtime also
relays every event of the log as it is written (`LiveRelay`), in batches, on the topic
`live:<run_id>`: `[[offset, item], ...]` where an item is a text delta's content, an
event's wire object, or `null` for an event to read from the store (the run's
`turn_end`, or one too large for a notification).

`remote_entries` is the reader's side: a cursor over the log made of both. Stored events
are the truth; a relayed event is given only when every offset before it has been given,
so a reader sees the log in order. A reader that misses relayed deltas (it fell behind,
the listener reconnected) skips them when the store has moved past them: it still gets
every stored event, the complete `text` blocks included.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator, Sequence
from typing import Any

import anyio

from agentkit.engine import text_delta_event
from agentkit.events import AgentMessage, TurnEnd, from_wire
from agentkit.stores import EventEntry, Notifications, Store

__all__ = ["LiveRelay", "live_topic", "remote_entries", "run_topic"]

_logger = logging.getLogger("agentkit.runtime")

_MAX_PAYLOAD = 7800  # bytes; PostgreSQL's limit is 8000
_MAX_PENDING = 20_000  # relayed events a reader keeps ahead of the store


def run_topic(run_id: str) -> str:
    """The topic notified when a run's stored log or record changes."""
    return f"run:{run_id}"


def live_topic(run_id: str) -> str:
    """The topic a run's live events are relayed on."""
    return f"live:{run_id}"


class LiveRelay:
    """Relays the live events of this process's runs on shared notifications.

    `add` is called as each event is written (no I/O); `run` sends what has gathered,
    one batch while the previous one is on its way, so a busy run costs a notification
    per round trip to the database, not one per delta.
    """

    def __init__(self, notifications: Notifications) -> None:
        self._notifications = notifications
        self._queue: dict[str, list[str]] = {}
        self._wake: anyio.Event | None = None
        self._failing = False

    def add(self, run_id: str, offset: int, item: AgentMessage | str) -> None:
        """Queue the event at `offset` of run `run_id` (a `str`: a text delta's content)."""
        if type(item) is str:
            encoded = f"[{offset},{json.dumps(item)}]"
        elif isinstance(item, TurnEnd):
            encoded = f"[{offset},null]"  # the ending is read from the store, with its status
        else:
            event: Any = item
            try:
                wire = type(event).__pydantic_serializer__.to_json(
                    event, by_alias=True, exclude_none=True
                )
            except Exception:
                encoded = f"[{offset},null]"
            else:
                encoded = f"[{offset},{wire.decode()}]"
        if len(encoded) > _MAX_PAYLOAD - len(run_id) - 16:
            encoded = f"[{offset},null]"
        queue = self._queue.get(run_id)
        if queue is None:
            queue = self._queue[run_id] = []
        queue.append(encoded)
        wake = self._wake
        if wake is not None:
            self._wake = None
            wake.set()

    async def run(self) -> None:
        """Send what gathers, until cancelled."""
        while True:
            if not self._queue:
                wake = self._wake = anyio.Event()
                await wake.wait()
            queue, self._queue = self._queue, {}
            try:
                await self._notifications.publish(_payloads(queue))
            except Exception as exc:
                # Lost deltas: readers in other processes still get the stored events.
                if not self._failing:
                    _logger.warning("could not relay live events: %s", exc)
                self._failing = True
            else:
                self._failing = False


def _payloads(queue: dict[str, list[str]]) -> list[str]:
    payloads = []
    for run_id, items in queue.items():
        head = f"{live_topic(run_id)}\n["
        body: list[str] = []
        size = len(head)
        for item in items:
            if body and size + len(item) + 2 > _MAX_PAYLOAD:
                payloads.append(head + ",".join(body) + "]")
                body, size = [], len(head)
            body.append(item)
            size += len(item) + 1
        if body:
            payloads.append(head + ",".join(body) + "]")
    return payloads


def _entry(offset: int, item: Any) -> EventEntry:
    if isinstance(item, str):
        return EventEntry(offset, text_delta_event(item))
    return EventEntry(offset, from_wire(item))


async def remote_entries(
    store: Store,
    notifications: Notifications,
    run_id: str,
    after: int = -1,
    poll_interval: float = 1.0,
) -> AsyncIterator[EventEntry]:
    """The run's events after offset `after`, in order, until its `turn_end` (or, when
    the run has ended and its `turn_end` is at or before `after`, nothing).

    Stored events come from `store`; text deltas and the events not stored yet come
    relayed live when `notifications` are shared. The store is read when it is notified,
    and every `poll_interval` seconds in any case.
    """
    subscription = await notifications.subscribe(run_topic(run_id), live_topic(run_id))
    with subscription:
        cursor = after
        pending: dict[int, Any] = {}
        read, ended_seen = True, False
        while True:
            if read:
                stored = await store.read_events(run_id, cursor)
                for entry in stored:
                    if entry.offset <= cursor:
                        continue
                    # Relayed deltas before a stored event: the store has every other
                    # event before it, so what is missing can only be deltas: skipped.
                    for offset in sorted(o for o in pending if o < entry.offset):
                        item = pending.pop(offset)
                        if offset > cursor and _is_delta(item):
                            yield _entry(offset, item)
                    cursor = entry.offset
                    yield entry
                    if isinstance(entry.event, TurnEnd):
                        return
                for offset in [o for o in pending if o <= cursor]:
                    del pending[offset]
                if not stored:
                    record = await store.get_run(run_id)
                    if record is None or record.status != "running":
                        if ended_seen:
                            return  # ended, its final event at or before `after`
                        ended_seen = True  # its ending may have been stored meanwhile
                        continue
            while cursor + 1 in pending and pending[cursor + 1] is not None:
                cursor += 1
                yield _entry(cursor, pending.pop(cursor))
            came = await subscription.wait(poll_interval)
            notified, data = subscription.take()
            for message in data:
                _add_relayed(pending, message, cursor)
            # The store is read when it changed, on every poll, and when relayed events
            # wait for one that only the store has.
            read = notified or not came or (bool(pending) and cursor + 1 not in pending)


def _is_delta(item: Any) -> bool:
    return isinstance(item, str) or (isinstance(item, dict) and item.get("type") == "text_delta")


def _add_relayed(pending: dict[int, Any], message: str, cursor: int) -> None:
    try:
        items: Sequence[Any] = json.loads(message)
    except ValueError:
        return
    if len(pending) > _MAX_PENDING:
        pending.clear()  # far behind: the store has it all but the deltas
    for pair in items:
        valid = isinstance(pair, list) and len(pair) == 2 and isinstance(pair[0], int)
        if valid and pair[0] > cursor:
            pending[pair[0]] = pair[1]

