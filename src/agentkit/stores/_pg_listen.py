"""PostgreSQL's notifications and claims for one store, shared by every process on it.

Two dedicated connections per process, beside the store's pool:

- the listener, `LISTEN`ing on the store's channel; where the store's pool uses the async
  driver (asyncio) it is an `AsyncConnection` read by a task, elsewhere a connection read
  in a worker thread. When
  it breaks it is opened again, and every subscriber is woken to read the store again
  (notifications sent meanwhile are lost: the store is the truth);
- the claims connection, whose session holds the advisory locks of the claims (a room
  agent's worker, run by one process at a time). A lock lives as long as that session:
  a process that dies, or loses the connection, loses its claims at once and another
  process can take them. The process knows it too: `holds` answers `False` as soon as the
  server has said goodbye on that connection (it sends its last words, or hangs up, on a
  connection that otherwise never hears from it), and the next `try_claim` opens a new
  session.

What is `post`ed (a remote reader's request for a run's live events) is sent by a task of
`run` through the store, what gathered meanwhile in one round trip: the poster does not
wait for the database.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
from collections.abc import AsyncIterator, Sequence
from typing import TYPE_CHECKING, Any, Protocol

import anyio

from agentkit.stores._notify import Notifications, Subscription
from agentkit.stores._pg_connections import async_driver_fits, has_input

if TYPE_CHECKING:
    import psycopg

__all__ = ["NotifyingDatabase", "PostgresNotifications"]

_logger = logging.getLogger("agentkit.stores")

_READY_TIMEOUT = 5.0  # how long a subscriber waits for the listener before polling instead
_RECEIVE_TIMEOUT = 0.5  # a listener thread's longest block: how soon it sees a stop
_CLAIMS_CHECK = 2.0  # seconds between two checks that the claims' session is alive
_RETRY_FIRST = 0.1  # the listener's first wait before connecting again, doubled after each
_RETRY_MAX = 5.0  # failure up to this; back to the first once it listened again


def _quote(identifier: str) -> str:
    return '"' + identifier.replace('"', '""') + '"'


class NotifyingDatabase(Protocol):
    """What the notifications need of their store (a `PostgresStore` is one)."""

    @property
    def dsn(self) -> str: ...

    @property
    def channel(self) -> str: ...

    async def connected_channel(self) -> str: ...

    async def notify(self, topic_payloads: Sequence[str]) -> None: ...


class PostgresNotifications(Notifications):
    """Shared notifications over LISTEN/NOTIFY, and claims over advisory locks."""

    shared = True

    def __init__(self, store: NotifyingDatabase) -> None:
        super().__init__()
        self._store = store
        self._running = False
        self._ready: anyio.Event | None = None
        self._claims_conn: psycopg.Connection[Any] | None = None
        self._claims_lock: anyio.Lock | None = None
        self._held: set[str] = set()
        self._failing = False
        self._outbox: list[str] = []  # posted, not sent yet
        self._outbox_wake: anyio.Event | None = None

    # --- subscriptions --------------------------------------------------------------

    async def subscribe(self, *topics: str) -> Subscription:
        subscription = await super().subscribe(*topics)
        if self._running:
            # Listening before the caller reads the store: nothing committed after that
            # read goes unnoticed. A listener that cannot connect does not hold readers
            # up for long: they read the store every poll interval meanwhile.
            ready = self._ready_event()
            if not ready.is_set():
                with anyio.move_on_after(_READY_TIMEOUT):
                    await ready.wait()
        return subscription

    async def publish(self, payloads: Any) -> None:
        await self._store.notify(list(payloads))

    def post(self, payloads: Sequence[str]) -> bool:
        if not self._running:
            return False
        self._outbox.extend(payloads)
        wake = self._outbox_wake
        if wake is not None:
            self._outbox_wake = None
            wake.set()
        return True

    async def _send_posted(self) -> None:
        """Send what is posted, what gathered meanwhile in one round trip."""
        while True:
            if not self._outbox:
                wake = self._outbox_wake = anyio.Event()
                await wake.wait()
            batch, self._outbox = self._outbox, []
            try:
                await self._store.notify(batch)
            except Exception as exc:  # lost: whoever posted it posts it again
                _logger.debug("posted notifications lost: %s", exc)

    def _ready_event(self) -> anyio.Event:
        if self._ready is None:
            self._ready = anyio.Event()
        return self._ready

    def _listening(self, ready: bool) -> None:
        if ready:
            self._ready_event().set()
            self._failing = False
        elif self._ready is not None and self._ready.is_set():
            self._ready = None

    async def run(self) -> None:
        """Listen, reconnecting when the connection breaks, until cancelled; a second
        caller while one listens just waits."""
        if self._running:
            await anyio.sleep_forever()
        self._running = True
        try:
            async with anyio.create_task_group() as group:
                group.start_soon(self._watch_claims)
                group.start_soon(self._send_posted)
                await self._listen_forever()
        finally:
            self._running = False
            self._ready = None
            self._outbox.clear()
            with anyio.CancelScope(shield=True):
                await self._close_claims()

    async def _listen_forever(self) -> None:
        delay = _RETRY_FIRST
        while True:
            try:
                if async_driver_fits():
                    await self._listen_async()
                else:
                    await self._listen_in_thread()
            except Exception as exc:
                if not self._failing:
                    _logger.warning("PostgreSQL notifications lost (%s); reconnecting", exc)
                self._failing = True
            finally:
                listened = self._ready is not None and self._ready.is_set()
                self._listening(False)
            # Whatever was sent while nobody listened is lost: everyone reads again.
            self.wake_all()
            if listened:  # a connection that worked and then broke: retry soon
                delay = _RETRY_FIRST
            await anyio.sleep(delay)
            delay = min(delay * 2, _RETRY_MAX)

    async def _listen_async(self) -> None:
        import psycopg

        channel = await self._store.connected_channel()
        conn = await psycopg.AsyncConnection.connect(
            self._store.dsn, autocommit=True, application_name=_name("listen", channel)
        )
        try:
            await conn.execute(f"LISTEN {_quote(channel)}")
            self._listening(True)
            self.wake_all()
            async for notify in conn.notifies():
                self.dispatch((notify.payload,))
        finally:
            with anyio.CancelScope(shield=True):
                await conn.close()

    async def _listen_in_thread(self) -> None:
        state = _ThreadState()
        channel = await self._store.connected_channel()
        conn = await anyio.to_thread.run_sync(self._connect_listener, channel)
        try:
            self._listening(True)
            self.wake_all()
            while True:
                # Abandoned when cancelled: the thread sees `stop` within
                # `_RECEIVE_TIMEOUT` and closes its connection itself.
                payloads = await anyio.to_thread.run_sync(
                    _receive, conn, state, abandon_on_cancel=True
                )
                if payloads:
                    self.dispatch(payloads)
        finally:
            state.stop = True
            if not state.busy:  # else the thread closes it as it returns
                conn.close()

    def _connect_listener(self, channel: str) -> psycopg.Connection[Any]:
        import psycopg

        conn = psycopg.connect(
            self._store.dsn, autocommit=True, application_name=_name("listen", channel)
        )
        conn.execute(f"LISTEN {_quote(channel)}")
        return conn

    # --- claims ---------------------------------------------------------------------

    def _lock(self) -> anyio.Lock:
        if self._claims_lock is None:
            self._claims_lock = anyio.Lock()
        return self._claims_lock

    def _key(self, name: str) -> int:
        digest = hashlib.blake2b(f"{self._store.channel} {name}".encode(), digest_size=8)
        return int.from_bytes(digest.digest(), "big", signed=True)

    async def try_claim(self, name: str) -> bool:
        await self._store.connected_channel()  # the keys are the channel's
        async with self._lock():
            if name in self._held:
                return True
            try:
                claimed = await anyio.to_thread.run_sync(self._try_lock, self._key(name))
            except Exception as exc:
                _logger.warning("could not claim %s: %s", name, exc)
                return False
            if claimed:
                self._held.add(name)
            return claimed

    def holds(self, name: str) -> bool:
        if name not in self._held:
            return False
        if self._claims_gone():
            self._held.clear()  # the next `try_claim` opens a new session
            return False
        return True

    def _claims_gone(self) -> bool:
        """Whether the claims session has ended (terminated, server restarted): the
        connection is closed, or the server sent it something, which it only does to
        end it. Not while a claims operation runs: its answer is on the way."""
        conn = self._claims_conn
        if conn is None or conn.closed or conn.broken:
            return True
        if self._claims_lock is not None and self._claims_lock.locked():
            return False
        return has_input(conn.fileno())

    async def release(self, name: str) -> None:
        async with self._lock():
            if name not in self._held:
                return
            self._held.discard(name)
            # A session that broke has let go of every lock already.
            with contextlib.suppress(Exception):
                await anyio.to_thread.run_sync(self._unlock, self._key(name))

    @contextlib.asynccontextmanager
    async def lock(self, name: str) -> AsyncIterator[None]:
        delay = 0.002
        while not await self.try_claim(name):
            await anyio.sleep(delay)
            delay = min(delay * 2, 0.05)
        try:
            yield
        finally:
            with anyio.CancelScope(shield=True):
                await self.release(name)

    def _claims_session(self) -> psycopg.Connection[Any]:
        import psycopg

        conn = self._claims_conn
        if conn is None or conn.closed or conn.broken or has_input(conn.fileno()):
            # A new session holds nothing: the claims of the old one are gone.
            self._held.clear()
            if conn is not None:
                conn.close()
            conn = self._claims_conn = psycopg.connect(
                self._store.dsn,
                autocommit=True,
                application_name=_name("claims", self._store.channel),
            )
        return conn

    def _try_lock(self, key: int) -> bool:
        row = self._claims_session().execute("SELECT pg_try_advisory_lock(%s)", (key,)).fetchone()
        return bool(row and row[0])

    def _unlock(self, key: int) -> None:
        conn = self._claims_conn
        if conn is not None and not conn.closed and not conn.broken:
            conn.execute("SELECT pg_advisory_unlock(%s)", (key,))

    def _ping_claims(self) -> None:
        conn = self._claims_conn
        if conn is None:
            return
        try:
            conn.execute("SELECT 1")
        except Exception:
            conn.close()
            self._claims_conn = None
            self._held.clear()

    async def _watch_claims(self) -> None:
        """Notice a claims session that broke (the database restarted, the network
        failed): its locks are gone, so its claims are no longer held."""
        while True:
            await anyio.sleep(_CLAIMS_CHECK)
            if self._held:
                async with self._lock():
                    await anyio.to_thread.run_sync(self._ping_claims)

    async def _close_claims(self) -> None:
        conn, self._claims_conn = self._claims_conn, None
        self._held.clear()
        if conn is not None:
            await anyio.to_thread.run_sync(conn.close)


def _name(role: str, channel: str) -> str:
    """The `application_name` of a dedicated connection (what `pg_stat_activity` shows):
    `agentkit-listen <channel>`, `agentkit-claims <channel>`, within PostgreSQL's 63 bytes."""
    return f"agentkit-{role} {channel}".encode()[:63].decode(errors="ignore")


class _ThreadState:
    """Between a listener task and its thread: whether to stop, whether it is reading."""

    __slots__ = ("busy", "stop")

    def __init__(self) -> None:
        self.stop = False
        self.busy = False


def _receive(conn: psycopg.Connection[Any], state: _ThreadState) -> list[str]:
    """The payloads that come within `_RECEIVE_TIMEOUT` (at most one packet's worth);
    closes the connection once told to stop."""
    state.busy = True
    try:
        if state.stop:
            return []
        return [n.payload for n in conn.notifies(timeout=_RECEIVE_TIMEOUT, stop_after=1)]
    finally:
        state.busy = False
        if state.stop:
            conn.close()
