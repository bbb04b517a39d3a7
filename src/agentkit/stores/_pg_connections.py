"""`PostgresStore`'s connections: one way to write an operation, two ways to run it.

An operation is an `async def` taking a `Connection`: `execute` a statement and get its
rows and row count, or open a `transaction()` (nested ones are savepoints). The pool runs
it on a connection of its own:

- on asyncio, on a psycopg `AsyncConnection`, in the calling task: no threads;
- on any other anyio backend (trio), and on Windows' default asyncio loop (a proactor,
  which psycopg's async driver cannot use), on a synchronous psycopg `Connection`, the
  whole operation in one worker-thread hop. That connection's methods never suspend, so the
  operation's coroutine runs to its end in the thread without an event loop
  (`_run_to_end`): the operation is written once, and costs one hop, not one per statement.

psycopg's `AsyncConnection` waits with asyncio primitives of the loop it runs on, so an
idle one is reused only on the loop that opened it (a store may live through several
`asyncio.run` calls: the connections of a loop that is gone are closed); asyncio's and the
threads' idle connections are kept apart. psycopg is imported on first use.
"""

from __future__ import annotations

import select
from collections import deque
from collections.abc import AsyncIterator, Callable, Coroutine, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import anyio

from agentkit._internal.aio import on_asyncio
from agentkit.errors import StoreUnavailableError
from agentkit.stores._base import StoreError

if TYPE_CHECKING:
    from types import ModuleType

    import psycopg

__all__ = [
    "Connection",
    "ConnectionPool",
    "Operation",
    "Result",
    "has_input",
    "import_psycopg",
]

_T = TypeVar("_T")

Params = Sequence[Any] | Mapping[str, Any]
"""A statement's parameters: positional (`%s`) or named (`%(name)s`)."""


def import_psycopg() -> ModuleType:
    """The psycopg module; without the extra, a `StoreError` that says what to install."""
    try:
        import psycopg
    except ImportError:
        raise StoreError(
            "PostgresStore needs psycopg: pip install 'typed-agentkit[postgres]'"
        ) from None
    return psycopg


class Result:
    """What one statement gave: its rows (none for a statement that returns none) and the
    number of rows it returned or changed."""

    __slots__ = ("rowcount", "rows")

    def __init__(self, rows: list[Any], rowcount: int) -> None:
        self.rows = rows
        self.rowcount = rowcount

    def first(self) -> Any:
        """The first row, or `None`."""
        return self.rows[0] if self.rows else None


class Connection(Protocol):
    """The connection an operation sees, whichever driver is under it."""

    async def execute(self, query: str, params: Params | None = None) -> Result:
        """Run one statement."""
        ...

    def transaction(self) -> AbstractAsyncContextManager[object]:
        """A transaction (a savepoint inside another): committed when the block ends,
        rolled back when it raises."""
        ...

    async def batch(self, statements: Sequence[tuple[str, Params]]) -> list[Result]:
        """Run `statements` in one round trip (libpq's pipeline mode) and return their
        results in order. A failing statement raises its error once every statement has
        been sent; the ones after it do not run (inside `BEGIN` ... `COMMIT`, the
        `COMMIT` then rolls the transaction back)."""
        ...


Operation = Callable[[Connection], Coroutine[Any, Any, _T]]
"""An operation: its statements, on the one connection it is given."""


class _AsyncioConnection:
    """A psycopg `AsyncConnection`, and the event loop it belongs to."""

    __slots__ = ("conn", "loop")

    def __init__(self, conn: psycopg.AsyncConnection[Any], loop: object) -> None:
        self.conn = conn
        self.loop = loop

    async def execute(self, query: str, params: Params | None = None) -> Result:
        cursor = await self.conn.execute(query, params)
        rows = await cursor.fetchall() if cursor.description is not None else []
        return Result(rows, cursor.rowcount)

    def transaction(self) -> AbstractAsyncContextManager[object]:
        return self.conn.transaction()

    async def batch(self, statements: Sequence[tuple[str, Params]]) -> list[Result]:
        conn = self.conn
        async with conn.pipeline():
            cursors = [await conn.execute(query, params) for query, params in statements]
        # The pipeline's end waited for every result: these fetches do not wait.
        return [
            Result(await c.fetchall() if c.description is not None else [], c.rowcount)
            for c in cursors
        ]

    async def close(self) -> None:
        await self.conn.close()


class _ThreadConnection:
    """A synchronous psycopg `Connection`, used from a worker thread: its coroutines
    never suspend (see `_run_to_end`)."""

    __slots__ = ("conn",)
    loop = None  # usable from any event loop: it has none

    def __init__(self, conn: psycopg.Connection[Any]) -> None:
        self.conn = conn

    async def execute(self, query: str, params: Params | None = None) -> Result:
        cursor = self.conn.execute(query, params)
        rows = cursor.fetchall() if cursor.description is not None else []
        return Result(rows, cursor.rowcount)

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[None]:
        with self.conn.transaction():
            yield

    async def batch(self, statements: Sequence[tuple[str, Params]]) -> list[Result]:
        conn = self.conn
        with conn.pipeline():
            cursors = [conn.execute(query, params) for query, params in statements]
        return [
            Result(c.fetchall() if c.description is not None else [], c.rowcount) for c in cursors
        ]

    async def close(self) -> None:
        self.conn.close()  # no wait worth a thread: libpq says goodbye and closes the socket


_Pooled = _AsyncioConnection | _ThreadConnection
_P = TypeVar("_P", _AsyncioConnection, _ThreadConnection)


def _run_to_end(operation: Operation[_T], conn: _ThreadConnection) -> _T:
    """Run `operation` on `conn` in this (worker) thread. Every await in it ends on
    `conn`'s methods, which never suspend: the first step of the coroutine is its end."""
    coroutine = operation(conn)
    try:
        coroutine.send(None)
    except StopIteration as done:
        result: _T = done.value
        return result
    coroutine.close()
    raise RuntimeError("a PostgreSQL operation awaited something other than its connection")


def async_driver_fits() -> bool:
    """Whether the running loop is one psycopg's `AsyncConnection` can use: asyncio's,
    but not Windows' proactor loop (it needs `add_reader`)."""
    if not on_asyncio():
        return False
    import asyncio

    proactor = getattr(asyncio, "ProactorEventLoop", None)  # Windows only
    return proactor is None or not isinstance(asyncio.get_running_loop(), proactor)


def has_input(fd: int) -> bool:
    """Whether the server sent an idle connection something. A pooled connection listens
    to nothing, so that is almost always its end: the error a terminated backend sends
    before it hangs up, or the hang-up itself."""
    if hasattr(select, "poll"):
        poller = select.poll()
        poller.register(fd, select.POLLIN)
        return bool(poller.poll(0))
    readable, _, _ = select.select([fd], [], [], 0)  # Windows: no poll, but no fd limit
    return bool(readable)


def _reusable(pooled: _Pooled) -> bool:
    """Whether a connection that served an operation can serve another: open, and not
    left inside a transaction (an operation cancelled half-way may leave it so)."""
    from psycopg.pq import TransactionStatus

    conn = pooled.conn
    return not conn.closed and conn.info.transaction_status == TransactionStatus.IDLE


class _Gate:
    """At most `size` holders at once, served in arrival order. Backend-neutral and
    bound to no event loop: a waiter's event is made on the waiter's own loop."""

    def __init__(self, size: int) -> None:
        self._free = size
        self._waiters: deque[anyio.Event] = deque()

    async def acquire(self) -> None:
        if self._free and not self._waiters:
            self._free -= 1
            return
        turn = anyio.Event()
        self._waiters.append(turn)
        try:
            await turn.wait()
        except BaseException:
            if turn.is_set():  # handed a place it will not use: pass it on
                self.release()
            else:
                self._waiters.remove(turn)
            raise

    def release(self) -> None:
        if self._waiters:
            self._waiters.popleft().set()  # the place goes straight to the next in line
        else:
            self._free += 1


# Not psycopg_pool: its `AsyncConnectionPool` is asyncio's, and its upkeep (the workers
# that open, check and close connections) runs as tasks of the event loop it is opened
# in; a store serves trio too (a second, threaded `ConnectionPool` then) and one event
# loop after another (`asyncio.run` twice). Measured side by side (bench/pg_pool.py: 50
# tasks, 10 connections, one statement per operation), this pool is no slower and spends
# a little less CPU per operation (about 96 against 104 us, at about 9,000 operations a
# second each).
class ConnectionPool:
    """At most `max_connections` operations at once, each on a connection of its own;
    connections open on first need and are kept for the next operation unless broken.

    psycopg's errors come out as `StoreError`s (`PostgreSQL: <message>`): those of a
    connection or a server that fails (cannot connect, connection lost, backend
    terminated, server shutting down, disk full) as `StoreUnavailableError`s, after which
    the connection is dropped, never reused.
    """

    def __init__(self, dsn: str, max_connections: int) -> None:
        self._dsn = dsn
        self._gate = _Gate(max_connections)
        self._idle_asyncio: list[_AsyncioConnection] = []
        self._idle_threads: list[_ThreadConnection] = []
        self._closed = False

    async def run(self, operation: Operation[_T]) -> _T:
        """Run `operation` on a pooled connection and return what it returns."""
        psycopg = import_psycopg()
        await self._gate.acquire()
        try:
            if async_driver_fits():
                return await self._run_on_asyncio(operation)
            return await self._run_in_thread(operation)
        except (psycopg.OperationalError, psycopg.InterfaceError) as exc:
            raise StoreUnavailableError(f"PostgreSQL: {exc}") from exc
        except psycopg.Error as exc:
            raise StoreError(f"PostgreSQL: {exc}") from exc
        finally:
            self._gate.release()

    async def _run_on_asyncio(self, operation: Operation[_T]) -> _T:
        import asyncio

        import psycopg

        loop = asyncio.get_running_loop()
        conn = await self._take(self._idle_asyncio, loop)
        if conn is None:
            raw = await psycopg.AsyncConnection.connect(self._dsn, autocommit=True)
            conn = _AsyncioConnection(raw, loop)
        try:
            # Shielded: a caller cancelled half-way (a follower that went away) would have
            # psycopg cancel the query and drop the connection, and log it; an operation
            # is a few statements, so it ends first and the connection is kept.
            with anyio.CancelScope(shield=True):
                result = await operation(conn)
            return result
        finally:
            await self._put_back(self._idle_asyncio, conn)

    async def _run_in_thread(self, operation: Operation[_T]) -> _T:
        conn = await self._take(self._idle_threads, None)
        if conn is None:
            conn = await anyio.to_thread.run_sync(self._connect_sync)
        try:
            return await anyio.to_thread.run_sync(_run_to_end, operation, conn)
        finally:
            await self._put_back(self._idle_threads, conn)

    def _connect_sync(self) -> _ThreadConnection:
        import psycopg

        return _ThreadConnection(psycopg.connect(self._dsn, autocommit=True))

    async def _take(self, idle: list[_P], loop: object) -> _P | None:
        """The idle connection used last that can serve on `loop`, or `None`; the ones
        that cannot (closed, hung up on, or of another loop) are closed on the way."""
        while idle:
            pooled = idle.pop()
            conn = pooled.conn
            if pooled.loop is loop and not conn.closed and not has_input(conn.fileno()):
                return pooled
            await pooled.close()
        return None

    async def _put_back(self, idle: list[_P], pooled: _P) -> None:
        if self._closed or not _reusable(pooled):
            await pooled.close()
        else:
            idle.append(pooled)

    async def aclose(self) -> None:
        """Close the idle connections, and the busy ones as their operations end."""
        self._closed = True
        idle: list[_Pooled] = [*self._idle_asyncio, *self._idle_threads]
        self._idle_asyncio, self._idle_threads = [], []
        for pooled in idle:
            await pooled.close()
