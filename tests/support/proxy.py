"""A TCP proxy on loopback that drops its connections on demand, for the tests of the
remote clients' reconnection."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

import anyio
import anyio.abc
from anyio.abc import SocketStream, TaskGroup, TaskStatus


class DroppingProxy:
    """Forwards loopback connections to `target_port`; `drop()` closes every open one,
    `refuse()` stops listening as well."""

    def __init__(self, target_port: int) -> None:
        self._target = target_port
        self._scopes: set[anyio.CancelScope] = set()
        self._listening = anyio.CancelScope()
        self.port = 0
        self.connections = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def serve(self, *, task_status: TaskStatus[None]) -> None:
        with self._listening:
            listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)
            async with listener:
                self.port = listener.extra(anyio.abc.SocketAttribute.local_port)
                task_status.started()
                await listener.serve(self._handle)

    def drop(self) -> None:
        for scope in self._scopes:
            scope.cancel()

    def refuse(self) -> None:
        self._listening.cancel()
        self.drop()

    async def _handle(self, client: SocketStream) -> None:
        self.connections += 1
        with anyio.CancelScope() as scope:
            self._scopes.add(scope)
            try:
                upstream = await anyio.connect_tcp("127.0.0.1", self._target)
                async with client, upstream, anyio.create_task_group() as group:
                    group.start_soon(_pipe, client, upstream, group)
                    group.start_soon(_pipe, upstream, client, group)
            finally:
                self._scopes.discard(scope)


async def _pipe(source: SocketStream, sink: SocketStream, group: TaskGroup) -> None:
    closed = (anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError)
    with contextlib.suppress(*closed):
        async for chunk in source:
            await sink.send(chunk)
    group.cancel_scope.cancel()  # one side closed: close both


@contextlib.asynccontextmanager
async def dropping_proxy(port: int) -> AsyncIterator[DroppingProxy]:
    """A `DroppingProxy` to the loopback `port`, listening until the block ends."""
    proxy = DroppingProxy(port)
    async with anyio.create_task_group() as group:
        await group.start(proxy.serve)
        yield proxy
        group.cancel_scope.cancel()
