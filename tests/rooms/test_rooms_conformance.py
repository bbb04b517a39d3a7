"""The rooms client conformance suite against the in-process client (a `Machine`) and the
remote one (`RemoteMachine(...).rooms` over a real `agentkit serve`), under asyncio and
trio; and what only the remote client has: reconnection of a subscription, its error
mapping, and the suite's runner."""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import anyio
import pytest
from anyio.abc import TaskGroup, TaskStatus

from agentkit.client import RemoteMachine, RemoteRoomsClient
from agentkit.conversations import Members
from agentkit.rooms import (
    EventInput,
    LocalRoomsClient,
    Role,
    RoomAgentError,
    RoomEvent,
    RoomNotFoundError,
    RoomsClient,
)
from agentkit.stores import open_store
from agentkit.testing import (
    ROOMS_CHECKS,
    MachineRoomsHost,
    RoomsConformance,
    RoomsHost,
    register_test_agent,
    rooms_conformance,
)
from support.pg import postgres_url
from support.proxy import dropping_proxy
from support.served import Served, served

EXTENSION = "agentkit.testing:rooms_conformance_extension"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """One server for the module: each host adds members of its own (unique names) and
    checks only look at the rooms they create."""
    with served(tmp_path_factory.mktemp("rooms"), "--extension", EXTENSION) as running:
        yield running


class RemoteRoomsHost:
    """The conformance host of `RemoteRoomsClient`: members added straight into the
    server's database, each client a `RemoteMachine` entered by a task of the host (so
    it outlives the check), agents registered through the extension's registrar by a
    machine owner of the host's own."""

    def __init__(self, served: Served, members: Members, group: TaskGroup) -> None:
        self.url = served.url
        self._members = members
        self._group = group
        self._suffix = uuid.uuid4().hex[:6]
        self._closing = anyio.Event()
        self._registrar: RoomsClient | None = None

    @classmethod
    @contextlib.asynccontextmanager
    async def open(cls, served: Served) -> AsyncIterator[RemoteRoomsHost]:
        store = open_store(served.db)
        try:
            async with anyio.create_task_group() as group:
                host = cls(served, Members(store), group)
                try:
                    yield host
                finally:
                    host._closing.set()
        finally:
            await store.aclose()

    async def client(self, name: str, role: Role) -> RoomsClient:
        token = await self._members.add(f"{name}-{self._suffix}", role)
        machine = RemoteMachine(self.url, token)
        await self._group.start(self._hold, machine)
        return machine.rooms

    async def register_agent(self, room_id: str, agent: str) -> None:
        if self._registrar is None:
            self._registrar = await self.client("registrar", "owner")
        await register_test_agent(self._registrar, room_id, agent)

    async def _hold(self, machine: RemoteMachine, *, task_status: TaskStatus[None]) -> None:
        async with machine:
            task_status.started()
            await self._closing.wait()


class TestLocalRooms(RoomsConformance):
    @pytest.fixture
    async def rooms_host(self, tmp_path: Path) -> AsyncIterator[MachineRoomsHost]:
        async with MachineRoomsHost.open(tmp_path) as host:
            yield host


@pytest.mark.postgres
class TestLocalRoomsOnPostgres(RoomsConformance):
    @pytest.fixture
    async def rooms_host(self, tmp_path: Path) -> AsyncIterator[MachineRoomsHost]:
        with postgres_url("rooms") as url:
            async with MachineRoomsHost.open(tmp_path, store=url) as host:
                yield host


class TestRemoteRooms(RoomsConformance):
    @pytest.fixture
    async def rooms_host(self, server: Served) -> AsyncIterator[RemoteRoomsHost]:
        async with RemoteRoomsHost.open(server) as host:
            yield host


# --- what only the remote client has --------------------------------------------------------


@pytest.mark.anyio
async def test_the_rooms_property_and_types(server: Served) -> None:
    async with RemoteRoomsHost.open(server) as host:
        rooms = await host.client("ada", "editor")
        assert isinstance(rooms, RemoteRoomsClient) and isinstance(rooms, RoomsClient)
        assert not isinstance(rooms, LocalRoomsClient)
        # Members appear by their ids, which no later member of the same name shares.
        assert rooms.participant == f"member:{rooms._machine.member.id}"
        await _expect_room_not_found(rooms, "a/b")
        await _expect_room_not_found(rooms, "")
        room = await rooms.create_room("ids")
        with pytest.raises(RoomAgentError):
            await register_test_agent(await host.client("olga", "owner"), room.id, "nobody")


async def _expect_room_not_found(rooms: RoomsClient, room_id: str) -> None:
    with pytest.raises(RoomNotFoundError):
        await rooms.get_room(room_id)
    with pytest.raises(RoomNotFoundError):
        await rooms.read(room_id)


@pytest.mark.anyio
async def test_subscribe_reconnects_after_a_drop(server: Served) -> None:
    """A subscriber whose connection drops reconnects with Last-Event-ID and yields every
    event exactly once, in order, while events keep being published."""
    port = int(server.url.rsplit(":", 1)[1])
    async with (
        RemoteRoomsHost.open(server) as host,
        dropping_proxy(port) as proxy,
    ):
        direct = await host.client("ada", "editor")
        room = await direct.create_room("drops")
        token = await host._members.add(f"proxied-{host._suffix}", "editor")
        await direct.set_grant(room.id, f"member:proxied-{host._suffix}", read=["*"], publish=[])
        seen: list[RoomEvent] = []
        async with RemoteMachine(proxy.url, token) as proxied:
            before = proxy.connections

            async def publish() -> None:
                for index in range(30):
                    await direct.publish(room.id, EventInput(type="chat.message", payload=index))
                    await anyio.sleep(0.01)

            with anyio.fail_after(30):
                async with anyio.create_task_group() as group:
                    group.start_soon(publish)
                    subscription = proxied.rooms.subscribe(room.id)
                    try:
                        async for event in subscription:
                            seen.append(event)
                            if len(seen) in (5, 15):
                                proxy.drop()
                            if len(seen) == 30:
                                break
                    finally:
                        await subscription.aclose()  # type: ignore[attr-defined]
    assert proxy.connections - before >= 2, "the subscriber did not reconnect"
    assert [e.position for e in seen] == list(range(1, 31))
    assert [e.payload for e in seen] == list(range(30))


# --- the runner outside pytest --------------------------------------------------------------


class _NoClients(MachineRoomsHost):
    async def client(self, name: str, role: Role) -> RoomsClient:
        raise RuntimeError("this host makes no clients")


@pytest.mark.anyio
async def test_rooms_conformance_names_failing_checks(tmp_path: Path) -> None:
    @contextlib.asynccontextmanager
    async def broken() -> AsyncIterator[RoomsHost]:
        async with MachineRoomsHost.open(tmp_path) as host:
            yield _NoClients(host.machine)

    with pytest.raises(ExceptionGroup) as info:
        await rooms_conformance(broken)
    notes = "\n".join(n for e in info.value.exceptions for n in getattr(e, "__notes__", []))
    assert "'publish_and_read' failed" in notes
    assert f"{len(ROOMS_CHECKS)} of {len(ROOMS_CHECKS)} rooms" in str(info.value)


@pytest.mark.anyio
async def test_rooms_conformance_passes_for_the_local_client(tmp_path: Path) -> None:
    await rooms_conformance(lambda: MachineRoomsHost.open(tmp_path))
