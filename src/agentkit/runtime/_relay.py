"""A run's log read from another process: stored events, plus live ones relayed.

The process executing a run stores its events at each model step's end; text deltas are
never stored. When its store's notifications are shared (PostgreSQL), the runtime relays
the events of the log live (`LiveRelay`), in batches, on the topic `live:<run_id>`:
`[[offset, item], ...]` where an item is a text delta's content, an event's wire object,
or `null` for an event to read from the store (the run's `turn_end`, or one too large for
a notification).

It relays a run only while a reader in another process follows it: such a reader sends
`sync:<run_id>` with the last offset it has (`remote_entries` does, as it starts waiting
and every `SYNC_EVERY` seconds after), and the executing process answers with every
event after that offset, from its own copy of the log (what the step has streamed so far:
a reader that joins mid-step gets the step's text at once, not at the step's end), and
relays the run's new events until `WANTED_FOR` seconds pass without a request. So a run
nobody follows from elsewhere costs no notification per delta, a reader gets the log
without a gap whenever it joins, and a reader that lost relayed events (its listener
reconnected, it fell behind) gets them again with its next request.

`remote_entries` is the reader's side: a cursor over the log made of both. Stored events
are the truth; a relayed event is given only when every offset before it has been given,
so a reader sees the log in order, each offset once. A reader that misses relayed deltas
for good (the executing process died) skips them when the store moves past them: it still
gets every stored event, the complete `text` blocks included.
"""

from __future__ import annotations

import contextlib
import json
import logging
import time
from collections import deque
from collections.abc import AsyncIterator, Sequence
from typing import Any

import anyio

from agentkit.engine import text_delta_event
from agentkit.events import AgentMessage, TurnEnd, from_wire
from agentkit.stores import EventEntry, Notifications, Store

__all__ = ["SYNC_EVERY", "WANTED_FOR", "LiveRelay", "live_topic", "remote_entries", "run_topic"]

_logger = logging.getLogger("agentkit.runtime")

_MAX_PAYLOAD = 7800  # bytes; PostgreSQL's limit is 8000
_MAX_PENDING = 20_000  # relayed events a reader keeps ahead of the store
SYNC_EVERY = 1.0  # seconds between a remote reader's requests while it follows a run
WANTED_FOR = 3.0  # seconds a run is relayed after the last request (three missed requests)
_FLUSH_TIMEOUT = 1.0  # seconds a stopping runtime gives its last relayed events
_GAP_GRACE = 0.5  # seconds a reader waits for relayed deltas before a stored event
_PRUNE_FROM = 256  # requests remembered before the expired ones are dropped


def run_topic(run_id: str) -> str:
    """The topic notified when a run's stored log or record changes."""
    return f"run:{run_id}"


def live_topic(run_id: str) -> str:
    """The topic a run's live events are relayed on."""
    return f"live:{run_id}"


def sync_topic(run_id: str) -> str:
    """The topic a remote reader asks on for a run's events after an offset."""
    return f"sync:{run_id}"


class _Items:
    """The relay's copy of a live run's log: references to the log's own items (a delta's
    `str`, an event), from the first offset it was given."""

    __slots__ = ("base", "items")

    def __init__(self, base: int) -> None:
        self.base = base
        self.items: list[AgentMessage | str | None] = []


class LiveRelay:
    """Relays the live events of this process's runs on shared notifications.

    `add` is called as each event is written (no I/O: a list append, and the event's
    encoding when a reader elsewhere follows the run); `run` sends what has gathered, one
    batch while the previous one is on its way, so a busy run costs a notification per
    round trip to the database, not one per delta; and answers readers' requests.

    Args:
        notifications: Where events are relayed and requests come from.
        on_demand: Relay a run only while someone asks for it (see the module). Defaults
            to `notifications.shared`: where a notification costs a round trip to a
            database; process-local notifications are free, and relay every event.
    """

    def __init__(self, notifications: Notifications, *, on_demand: bool | None = None) -> None:
        self._notifications = notifications
        self._on_demand = notifications.shared if on_demand is None else on_demand
        self._logs: dict[str, _Items] = {}
        self._wanted: dict[str, float] = {}  # run id -> until when (monotonic) to relay it
        self._prune_at = _PRUNE_FROM
        self._queue: dict[str, list[str]] = {}
        self._wake: anyio.Event | None = None
        self._failing = False

    def add(self, run_id: str, offset: int, item: AgentMessage | str) -> None:
        """Take the event at `offset` of run `run_id` (a `str`: a text delta's content)."""
        log = self._logs.get(run_id)
        if log is None:
            log = self._logs[run_id] = _Items(offset)
        items = log.items
        if offset != log.base + len(items):
            if offset < log.base + len(items):
                return  # given before
            # Offsets it was not given: only the store can tell what they were.
            items.extend([None] * (offset - log.base - len(items)))
        items.append(item)
        if not self._on_demand or self._relayed(run_id):
            self._queue_item(run_id, offset, item)
        if type(item) is not str and isinstance(item, TurnEnd):
            del self._logs[run_id]  # the run's last event: the store has it all now
            self._wanted.pop(run_id, None)

    def forget(self, run_id: str) -> None:
        """Drop the copy of a run's log that stopped here without ending (it waits for a
        person, and may go on in another process): the store has every event of it."""
        self._logs.pop(run_id, None)

    def _relayed(self, run_id: str) -> bool:
        until = self._wanted.get(run_id)
        if until is None:
            return False
        if time.monotonic() < until:
            return True
        del self._wanted[run_id]  # its readers left (or lost touch: they ask again)
        return False

    def _queue_item(self, run_id: str, offset: int, item: AgentMessage | str | None) -> None:
        encoded = _encoded(offset, item, _MAX_PAYLOAD - len(run_id) - 16)
        queue = self._queue.get(run_id)
        if queue is None:
            queue = self._queue[run_id] = []
        queue.append(encoded)
        wake = self._wake
        if wake is not None:
            self._wake = None
            wake.set()

    def _on_sync(self, topic: str, data: str | None) -> None:
        """A reader elsewhere asks for the run's events after an offset, and to follow."""
        run_id = topic[len("sync:") :]
        try:
            after = int(data or "")
        except ValueError:
            return
        now = time.monotonic()
        if len(self._wanted) >= self._prune_at:
            # Requests for runs another process executes, remembered in case this one
            # starts executing them (a request may come before the run's first event).
            self._wanted = {k: v for k, v in self._wanted.items() if v > now}
            self._prune_at = max(_PRUNE_FROM, 2 * len(self._wanted))
        self._wanted[run_id] = now + WANTED_FOR
        log = self._logs.get(run_id)
        if log is None:
            return  # not executed here (or not yet: its events come as they are written)
        items = log.items
        for index in range(max(after + 1 - log.base, 0), len(items)):
            self._queue_item(run_id, log.base + index, items[index])

    async def run(self) -> None:
        """Send what gathers, and answer readers' requests, until cancelled."""
        stop = self._notifications.handle("sync", self._on_sync)
        try:
            await self._send_forever()
        finally:
            stop()
            if self._queue:
                # The runtime is stopping: the last events of its runs (a step's last
                # deltas, written just before the run ended) still go, if they can soon.
                with anyio.move_on_after(_FLUSH_TIMEOUT, shield=True):
                    await self._send(self._queue)

    async def _send_forever(self) -> None:
        while True:
            if not self._queue:
                wake = self._wake = anyio.Event()
                await wake.wait()
            await self._send(self._queue)

    async def _send(self, queue: dict[str, list[str]]) -> None:
        self._queue = {}
        try:
            await self._notifications.publish(_payloads(queue))
        except BaseException as exc:
            if not isinstance(exc, Exception):  # cancelled: the batch goes with the flush
                for run_id, items in self._queue.items():
                    queue.setdefault(run_id, []).extend(items)
                self._queue = queue
                raise
            # Lost deltas: readers in other processes ask again, and get the stored
            # events in any case.
            if not self._failing:
                _logger.warning("could not relay live events: %s", exc)
            self._failing = True
        else:
            self._failing = False


def _encoded(offset: int, item: AgentMessage | str | None, limit: int) -> str:
    """`[offset, item]` as JSON text of at most `limit` bytes (else `[offset, null]`)."""
    if type(item) is str:
        encoded = f"[{offset},{json.dumps(item)}]"  # ASCII: its length is its size
        size = len(encoded)
    elif item is None or isinstance(item, TurnEnd):
        return f"[{offset},null]"  # the ending is read from the store, with its status
    else:
        event: Any = item
        try:
            wire = type(event).__pydantic_serializer__.to_json(
                event, by_alias=True, exclude_none=True
            )
        except Exception:
            return f"[{offset},null]"
        size = len(wire) + len(str(offset)) + 3
        encoded = f"[{offset},{wire.decode()}]"
    return encoded if size <= limit else f"[{offset},null]"


def _payloads(queue: dict[str, list[str]]) -> list[str]:
    payloads = []
    for run_id, items in queue.items():
        head = f"{live_topic(run_id)}\n["
        body: list[str] = []
        size = len(head.encode())
        for item in items:
            length = len(item) if item.isascii() else len(item.encode())
            if body and size + length + 2 > _MAX_PAYLOAD:
                payloads.append(head + ",".join(body) + "]")
                body, size = [], len(head.encode())
            body.append(item)
            size += length + 1
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
    relayed live from the process executing the run, asked for on `notifications` (see
    the module). The store is read when it is notified, and every `poll_interval` seconds
    in any case.
    """
    subscription = await notifications.subscribe(run_topic(run_id), live_topic(run_id))
    with subscription:
        cursor = after
        pending: dict[int, Any] = {}  # relayed events after `cursor`, by offset
        ahead: deque[EventEntry] = deque()  # stored ones, waiting for relayed ones before
        read, ended_seen, relayed = True, False, False
        next_sync = next_poll = 0.0
        gap_until: float | None = None
        while True:
            if read:
                start = ahead[-1].offset if ahead else cursor
                stored = await store.read_events(run_id, start)
                next_poll = anyio.current_time() + poll_interval
                ahead.extend(entry for entry in stored if entry.offset > start)
                if not stored and not ahead:
                    record = await store.get_run(run_id)
                    # A run waiting for a person has not ended: its reader waits on.
                    if record is None or record.status not in ("running", "waiting"):
                        if ended_seen:
                            return  # ended, its final event at or before `after`
                        ended_seen = True  # its ending may have been stored meanwhile
                        continue
            # Everything that can be given, in log order.
            while True:
                if cursor + 1 in pending and pending[cursor + 1] is not None:
                    cursor += 1
                    yield _entry(cursor, pending.pop(cursor))
                    continue
                if not ahead:
                    break
                entry = ahead[0]
                if entry.offset <= cursor:
                    ahead.popleft()
                    continue
                if relayed and _missing(pending, cursor, entry.offset):
                    # Offsets before a stored event that neither the store nor the relay
                    # gave: deltas, relayed on another connection than the one that
                    # stored the event, so maybe still on their way. Asked for again and
                    # waited for a moment; then skipped (its process died, say).
                    now = anyio.current_time()
                    if gap_until is None:
                        gap_until, next_sync = now + _GAP_GRACE, now
                    if now < gap_until:
                        break
                gap_until = None
                # The store has every other event before this one: what is missing can
                # only be deltas, skipped.
                for offset in sorted(o for o in pending if o < entry.offset):
                    item = pending.pop(offset)
                    if offset > cursor and _is_delta(item):
                        yield _entry(offset, item)
                ahead.popleft()
                cursor = entry.offset
                yield entry
                if isinstance(entry.event, TurnEnd):
                    return
            for offset in [o for o in pending if o <= cursor]:
                del pending[offset]
            now = anyio.current_time()
            if now >= next_sync:
                # Asking (again) for what follows the last offset this reader has: the
                # first time, the step streamed so far; after that, a keep-alive that
                # also brings back whatever relayed events were lost.
                have = cursor
                while have + 1 in pending:
                    have += 1
                await _request(notifications, run_id, have)
                next_sync = now + SYNC_EVERY
            until = min(next_poll, next_sync, gap_until or next_poll)
            came = await subscription.wait(max(until - now, 0.0))
            notified, data = subscription.take()
            relayed = relayed or bool(data)
            for message in data:
                _add_relayed(pending, message, cursor)
            # The store is read when it changed, on every poll, and when relayed events
            # wait for one that only the store has.
            read = (
                notified
                or (not came and anyio.current_time() >= next_poll)
                or (bool(pending) and cursor + 1 not in pending and not ahead)
            )


def _missing(pending: dict[int, Any], cursor: int, offset: int) -> bool:
    """Whether an offset between `cursor` and `offset` is in neither `pending` nor the
    store (which has nothing between them)."""
    return any(o not in pending for o in range(cursor + 1, offset))


async def _request(notifications: Notifications, run_id: str, have: int) -> None:
    # Posted, so that the reader does not wait a round trip to the database, while live
    # events may be coming, each time it asks.
    payloads = [f"{sync_topic(run_id)}\n{have}"]
    if notifications.post(payloads):
        return
    # The store unreachable: the stored events come when it is back, and so does this.
    with contextlib.suppress(Exception):
        await notifications.publish(payloads)


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
