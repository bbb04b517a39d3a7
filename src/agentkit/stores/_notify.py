"""Notifications: what wakes a reader when the store changes, in this process or another.

A notification says "look": it names a topic (`run:<id>`, `session:<id>`, `room:<id>`)
and the reader reads the store again; the store is the truth. A notification may also
carry data (`topic\\ndata`): live text deltas relayed from the process executing a run,
and cancel requests. Those are never stored, so a reader must cope with missing some.

Every store has notifications (`notifications_of`): a store that other processes share
and that can notify them (PostgreSQL, with LISTEN/NOTIFY) has `shared` ones, fed by a
listener that runs beside the runtime; any other has process-local ones, which nothing
outside the process feeds, and readers fall back on reading the store every poll
interval.
"""

from __future__ import annotations

import contextlib
import weakref
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from typing import Any

import anyio
import anyio.lowlevel

__all__ = [
    "Notifications",
    "Subscription",
    "notifications_of",
]

_MAX_DATA = 1000  # data messages a subscription keeps unread; more are dropped


class Subscription:
    """Topics a reader listens to. Take it before reading the store (no change made after
    that read is missed), then `wait` and read again.

    Use it as a context manager, or `close` it.
    """

    def __init__(self, hub: Notifications, topics: Sequence[str]) -> None:
        self._hub = hub
        self.topics = tuple(topics)
        self._notified: set[str] = set()
        self._data: list[str] = []
        self._waiter: anyio.Event | None = None
        self.dropped = 0
        """Data messages dropped because nobody took them in time."""

    def __enter__(self) -> Subscription:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop listening (idempotent)."""
        self._hub._remove(self)

    def _deliver(self, topic: str, data: str | None) -> None:
        if data is None:
            self._notified.add(topic)
        elif len(self._data) < _MAX_DATA:
            self._data.append(data)
        else:
            self.dropped += 1
        waiter = self._waiter
        if waiter is not None:
            self._waiter = None
            waiter.set()

    @property
    def pending(self) -> bool:
        """Whether something came since the last `take`."""
        return bool(self._notified or self._data)

    @property
    def notified(self) -> frozenset[str]:
        """The topics notified since the last `take`."""
        return frozenset(self._notified)

    async def wait(self, seconds: float) -> bool:
        """Wait until something comes (at once when something came since the last
        `take`) or `seconds` pass; returns whether something came."""
        if self.pending:
            await anyio.lowlevel.checkpoint()  # a loop of waits always yields
        else:
            waiter = self._waiter = anyio.Event()
            with anyio.move_on_after(seconds):
                await waiter.wait()
        return self.pending

    def take(self) -> tuple[bool, list[str]]:
        """Whether a topic was notified since the last call, and the data messages that
        came, in order; both are cleared."""
        notified, data = bool(self._notified), self._data
        self._notified, self._data = set(), []
        return notified, data


class Notifications:
    """A process's notifications for one store: subscriptions by topic.

    This class is the process-local kind (`shared` is `False`): `publish` reaches this
    process's subscribers only. `PostgresStore` has shared ones.
    """

    shared = False
    """Whether notifications cross processes (and `publish` reaches other processes)."""

    def __init__(self) -> None:
        self._topics: dict[str, set[Subscription]] = {}
        self._handlers: dict[str, Callable[[str, str | None], None]] = {}

    def handle(self, kind: str, handler: Callable[[str, str | None], None]) -> Callable[[], None]:
        """Call `handler(topic, data)` for every payload whose topic is `kind:<name>`, as it
        is received, and return what stops it. One handler per kind: a service of this
        process (the relay of live events answers `sync:<run_id>` requests this way), not a
        reader, so nothing is queued and a handler must not block."""
        self._handlers[kind] = handler

        def stop() -> None:
            if self._handlers.get(kind) is handler:
                del self._handlers[kind]

        return stop

    async def subscribe(self, *topics: str) -> Subscription:
        """A subscription to `topics`, listening once this returns."""
        subscription = Subscription(self, topics)
        for topic in topics:
            self._topics.setdefault(topic, set()).add(subscription)
        return subscription

    def _remove(self, subscription: Subscription) -> None:
        for topic in subscription.topics:
            found = self._topics.get(topic)
            if found is not None:
                found.discard(subscription)
                if not found:
                    del self._topics[topic]

    def dispatch(self, payloads: Iterable[str]) -> None:
        """Hand received payloads (`topic` or `topic\\ndata`) to their subscribers. A topic
        `kind:*` reaches every subscriber of a topic starting with `kind:`."""
        handlers = self._handlers
        for payload in payloads:
            topic, newline, data = payload.partition("\n")
            if handlers:
                handler = handlers.get(topic.partition(":")[0])
                if handler is not None:
                    handler(topic, data if newline else None)
                    continue
            if topic.endswith(":*"):
                prefix = topic[:-1]
                found: set[Subscription] = set()
                for name, subscriptions in self._topics.items():
                    if name.startswith(prefix):
                        found.update(subscriptions)
            else:
                found = self._topics.get(topic, set())
            for subscription in list(found):
                subscription._deliver(topic, data if newline else None)

    def wake_all(self) -> None:
        """Wake every subscriber (as a "look again": after notifications may have been
        lost, say while the listener reconnected)."""
        for subscriptions in list(self._topics.values()):
            for subscription in list(subscriptions):
                subscription._deliver("*", None)

    async def publish(self, payloads: Sequence[str]) -> None:
        """Send payloads (`topic` or `topic\\ndata`) to the subscribers."""
        self.dispatch(payloads)

    def post(self, payloads: Sequence[str]) -> bool:
        """Send payloads without waiting for them to go out (a request a reader repeats
        anyway, which must not hold its reading up); whether they were taken. Not taken
        when nothing would send them (shared notifications that are not running): then
        `publish` them."""
        self.dispatch(payloads)
        return True

    async def run(self) -> None:
        """Receive notifications until cancelled (the runtime runs this beside its runs);
        nothing to do for process-local ones."""
        await anyio.sleep_forever()

    # --- claims: what one process at a time may do -------------------------------------

    async def try_claim(self, name: str) -> bool:
        """Claim `name` for this process; whether it is now held. Process-local
        notifications have no other process to exclude: always granted."""
        return True

    def holds(self, name: str) -> bool:
        """Whether this process still holds the claim `name` (a shared claim is lost with
        the session that held it)."""
        return True

    async def release(self, name: str) -> None:
        """Give the claim `name` up (no error when not held)."""

    @contextlib.asynccontextmanager
    async def lock(self, name: str) -> AsyncIterator[None]:
        """Hold `name` against every other process for the block, waiting for it as long
        as another holds it. Tasks of this process must take turns by themselves (the
        claim is the process's). Process-local notifications: nothing to exclude."""
        yield


_local: weakref.WeakKeyDictionary[Any, Notifications] = weakref.WeakKeyDictionary()


def notifications_of(store: Any) -> Notifications:
    """The notifications of `store`: its own (`store.notifications`) when it has some,
    else process-local ones, the same for every caller in this process."""
    own = getattr(store, "notifications", None)
    if isinstance(own, Notifications):
        return own
    try:
        found = _local.get(store)
        if found is None:
            found = _local[store] = Notifications()
    except TypeError:  # not weakly referenceable: a fresh one (nothing shares it)
        return Notifications()
    return found
