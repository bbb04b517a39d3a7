"""RemoteMachine against real `agentkit serve` processes on loopback: the whole client
conformance suite, reconnection of follow and watch through a TCP proxy that drops its
connections, the error codes, the SSE parser, and that httpx stays an optional import."""

from __future__ import annotations

import contextlib
import itertools
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import anyio
import anyio.lowlevel
import pytest
from anyio.abc import TaskGroup, TaskStatus

from agentkit.client import RemoteMachine
from agentkit.client.contract import SseEvent, SseParser
from agentkit.conversations import (
    AccessDeniedError,
    AgentDefinition,
    AgentExistsError,
    ConversationBusyError,
    ConversationClient,
    ConversationError,
    ConversationNotFoundError,
    ConversationView,
    FinalEvent,
    FollowEvent,
    MachineAgentNotFoundError,
    Members,
    OutputEvent,
    Role,
    RunNotFoundError,
    TextPart,
)
from agentkit.stores import open_store
from agentkit.testing import ConversationConformance
from support.proxy import dropping_proxy
from support.serve_process import ServeProcess, ServerPool

# --- servers and the conformance host ---------------------------------------------------------


@pytest.fixture(scope="module")
def serve_pool(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerPool]:
    pool = ServerPool(tmp_path_factory.mktemp("serve"))
    yield pool
    pool.close()


@pytest.fixture(scope="module")
def server(serve_pool: ServerPool) -> Iterator[ServeProcess]:
    """One server for this module's own tests (each adds members of its own)."""
    process = serve_pool.take()
    yield process
    process.stop()


def _name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


class RemoteHost:
    """The conformance host of RemoteMachine: a fresh `agentkit serve` process; each
    client is entered (and later left) by a task of the host, so it outlives the check
    that asked for it."""

    def __init__(self, server: ServeProcess, members: Members, group: TaskGroup) -> None:
        self.server = server
        self.attachment_root = server.attachment_root
        self._members = members
        self._group = group
        self._closing = anyio.Event()

    @classmethod
    @contextlib.asynccontextmanager
    async def open(cls, server: ServeProcess) -> AsyncIterator[RemoteHost]:
        store = open_store(server.db)  # members go straight into the server's database
        try:
            async with anyio.create_task_group() as group:
                host = cls(server, Members(store), group)
                try:
                    yield host
                finally:
                    host._closing.set()
        finally:
            await store.aclose()

    async def client(self, name: str, role: Role) -> ConversationClient:
        token = await self._members.add(name, role)
        machine = RemoteMachine(self.server.url, token)
        await self._group.start(self._hold, machine)
        return machine

    async def _hold(self, machine: RemoteMachine, *, task_status: TaskStatus[None]) -> None:
        async with machine:
            task_status.started()
            await self._closing.wait()


class TestRemoteClient(ConversationConformance):
    @pytest.fixture
    async def conversation_host(self, serve_pool: ServerPool) -> AsyncIterator[RemoteHost]:
        server = serve_pool.take()
        try:
            async with RemoteHost.open(server) as host:
                yield host
        finally:
            server.terminate()


async def _until(predicate: Callable[[], bool], limit: float = 30) -> None:
    with anyio.fail_after(limit):
        while not predicate():  # noqa: ASYNC110 (a watch callback sets no event)
            await anyio.sleep(0.01)


@contextlib.asynccontextmanager
async def _member(
    server: ServeProcess, role: Role = "editor", url: str | None = None, **options: Any
) -> AsyncIterator[RemoteMachine]:
    token = await server.add_member(_name(role), role)
    async with RemoteMachine(url or server.url, token, **options) as client:
        yield client


# --- reconnection ---------------------------------------------------------------------------


@pytest.mark.anyio
async def test_follow_reconnects_after_a_drop(server: ServeProcess) -> None:
    """A follower whose connection drops mid-run reconnects and yields every remaining
    event exactly once: what a follower with no drop yields, event for event."""
    async with _member(server) as direct, dropping_proxy(server.port) as proxy:
        token = await server.add_member(_name("proxied"), "editor")
        async with RemoteMachine(proxy.url, token) as proxied:
            conversation = await direct.create_conversation(visibility="shared")
            accepted = await conversation.prompt("slow 30")
            full: list[FollowEvent] = []
            seen: list[FollowEvent] = []

            async def follow_directly() -> None:
                async for event in direct.follow(conversation.id, accepted.run_id):
                    full.append(event)

            with anyio.fail_after(30):
                async with anyio.create_task_group() as group:
                    group.start_soon(follow_directly)
                    before = proxy.connections
                    async for event in proxied.follow(conversation.id, accepted.run_id):
                        seen.append(event)
                        if len(seen) in (5, 15):
                            proxy.drop()
    assert proxy.connections - before >= 2, "the follower did not reconnect"
    assert seen == full
    assert isinstance(seen[-1], FinalEvent) and seen[-1].status == "completed"
    text = "".join(
        e.part.text for e in seen if isinstance(e, OutputEvent) and isinstance(e.part, TextPart)
    )
    assert text == "".join(f"w{i} " for i in range(30))


@pytest.mark.anyio
async def test_prompts_and_follows_one_after_another_share_one_connection(
    server: ServeProcess,
) -> None:
    """Requests and event streams go over kept-alive connections: a follow read to its
    final event gives its connection back, so a client that prompts and follows run after
    run opens one connection, not one per follow."""
    async with dropping_proxy(server.port) as proxy:
        token = await server.add_member(_name("proxied"), "editor")
        async with RemoteMachine(proxy.url, token) as client:
            conversation = await client.create_conversation()
            for round_ in range(3):
                accepted = await conversation.prompt(f"say round {round_}")
                events = [e async for e in client.follow(conversation.id, accepted.run_id)]
                assert isinstance(events[-1], FinalEvent) and events[-1].status == "completed"
        assert proxy.connections == 1


@pytest.mark.anyio
async def test_a_kept_alive_connection_the_server_closed_is_not_used_again(
    server: ServeProcess,
) -> None:
    """A prompt after the server (here: the proxy) closed the idle connection goes on a
    new one instead of failing on the closed one."""
    async with dropping_proxy(server.port) as proxy:
        token = await server.add_member(_name("proxied"), "editor")
        async with RemoteMachine(proxy.url, token) as client:
            conversation = await client.create_conversation()
            for round_ in range(2):
                proxy.drop()  # closes the kept-alive connection of the round before
                await anyio.sleep(0.05)  # the close reaches the client
                accepted = await conversation.prompt(f"say round {round_}")
                events = [e async for e in client.follow(conversation.id, accepted.run_id)]
                assert isinstance(events[-1], FinalEvent) and events[-1].status == "completed"
        assert proxy.connections == 3  # entering, then one per round


@pytest.mark.anyio
async def test_follow_gives_up_when_the_server_stays_away(server: ServeProcess) -> None:
    async with _member(server) as direct, dropping_proxy(server.port) as proxy:
        token = await server.add_member(_name("proxied"), "editor")
        async with RemoteMachine(proxy.url, token, reconnect_timeout=0.5) as proxied:
            conversation = await direct.create_conversation(visibility="shared")
            accepted = await conversation.prompt("hang")
            seen: list[FollowEvent] = []
            unreachable = pytest.raises(ConversationError, match="could not be reached")
            with anyio.fail_after(20), unreachable:
                async for event in proxied.follow(conversation.id, accepted.run_id):
                    seen.append(event)
                    proxy.refuse()
            assert [type(e) for e in seen] == [OutputEvent]
            assert await conversation.cancel()


@pytest.mark.anyio
async def test_watch_reconnects_after_a_drop(server: ServeProcess) -> None:
    """A watch whose connection drops goes on by itself, delivering no view twice in a
    row and no second `loading` view, and ends with the saved turns."""
    async with _member(server) as direct, dropping_proxy(server.port) as proxy:
        token = await server.add_member(_name("proxied"), "editor")
        async with RemoteMachine(proxy.url, token) as proxied:
            conversation = await direct.create_conversation(visibility="shared")
            views: list[ConversationView] = []
            before = proxy.connections
            stop = await proxied.watch(conversation.id, views.append)
            await _until(lambda: any(not v.loading for v in views))
            accepted = await conversation.prompt("slow 20")
            await _until(lambda: any(v.is_running and v.output for v in views))
            proxy.drop()
            async for _ in direct.follow(conversation.id, accepted.run_id):
                pass
            await _until(lambda: not views[-1].is_running and len(views[-1].turns) == 2)
            proxy.drop()
            await conversation.rename("after the drops")
            await _run(direct, conversation.id, "say again")
            await _until(lambda: len(views[-1].turns) == 4)
            stop()
            count = len(views)
            await _run(direct, conversation.id, "say stopped")
            await anyio.sleep(0.2)
            assert len(views) == count, "a stopped watch delivered a view"
    assert proxy.connections - before >= 2, "the watch did not reconnect"
    assert views[0].loading and not any(v.loading for v in views[1:])
    assert all(a != b for a, b in itertools.pairwise(views))
    assert views[-1].turns[1].text == "".join(f"w{i} " for i in range(20))


async def _run(client: ConversationClient, conversation_id: str, text: str) -> None:
    accepted = await client.prompt(conversation_id, text)
    with anyio.fail_after(30):
        async for _ in client.follow(conversation_id, accepted.run_id):
            pass


@pytest.mark.anyio
async def test_async_watch_callback_and_closing_ends_watches(server: ServeProcess) -> None:
    seen: list[ConversationView] = []

    async def record(view: ConversationView) -> None:
        await anyio.lowlevel.checkpoint()
        seen.append(view)

    async with _member(server) as ada:
        conversation = await ada.create_conversation()
        await conversation.watch(record)
        await _until(lambda: any(not v.loading for v in seen))
    # Leaving the client ended its watch's task (else leaving would not have returned).
    count = len(seen)
    await anyio.sleep(0.1)
    assert len(seen) == count


# --- errors ---------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_error_codes_map_to_the_local_exceptions(server: ServeProcess) -> None:
    with pytest.raises(AccessDeniedError, match="does not accept this token"):
        async with RemoteMachine(server.url, "not-a-token"):
            pass
    async with _member(server, "owner") as owner, _member(server, "viewer") as viewer:
        assert owner.member.role == "owner" and viewer.member.role == "viewer"
        missing = str(uuid.uuid4())
        with pytest.raises(ConversationNotFoundError) as info:
            await owner.get_conversation(missing)
        assert str(info.value) == f"no conversation {missing!r}"
        conversation = await owner.create_conversation(visibility="shared")
        with pytest.raises(RunNotFoundError):
            async for _ in owner.follow(conversation.id, "no-such-run"):
                pass
        with pytest.raises(AccessDeniedError):
            await viewer.prompt(conversation.id, "say x")
        await conversation.prompt("hang")
        with pytest.raises(ConversationBusyError):
            await conversation.prompt("say again")
        with pytest.raises(AccessDeniedError):
            await viewer.cancel(conversation.id)
        assert await conversation.cancel()
        assert not await conversation.cancel()
        name = _name("agent")
        await owner.create_agent(AgentDefinition(name=name))
        with pytest.raises(AgentExistsError):
            await owner.create_agent(AgentDefinition(name=name))
        with pytest.raises(MachineAgentNotFoundError):
            await owner.replace_agent(AgentDefinition(name=_name("nobody")))
        with pytest.raises(ConversationError):
            await owner.delete_agent("rool")


@pytest.mark.anyio
async def test_unreachable_server() -> None:
    with anyio.fail_after(10), pytest.raises(ConversationError, match="could not be reached"):
        async with RemoteMachine("http://127.0.0.1:9", "token", timeout=2):
            pass


def test_importing_the_client_does_not_import_httpx() -> None:
    code = (
        "import sys, agentkit, agentkit.conversations\n"
        "from agentkit.client import RemoteMachine\n"
        "assert 'httpx' not in sys.modules, 'httpx imported'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


# --- the SSE parser -------------------------------------------------------------------------

_STREAM = (
    ": stream\r\n"
    "id: 7\r\n"
    "event: text_delta\r\n"
    'data: {"a": 1}\r\n'
    "\r\n"
    ": keep-alive\n"
    "\n"
    "event: nothing\n"
    "\n"
    "data:first\r"
    "data: second é\r"
    "data\r"
    "retry: 10\r"
    "\r"
    "id: 9\n"
    "event: completed\n"
    "data:  two spaces\n"
    "\n"
    "data: unfinished"
)
_EXPECTED = [
    SseEvent(event="text_delta", data='{"a": 1}', id="7"),
    SseEvent(event="message", data="first\nsecond é\n", id="7"),
    SseEvent(event="completed", data=" two spaces", id="9"),
]


def test_sse_parser_whole() -> None:
    assert SseParser().feed(_STREAM.encode()) == _EXPECTED


def test_sse_parser_split_at_every_byte() -> None:
    """Events are the same however the bytes are cut (CRLF, multi-byte characters)."""
    data = _STREAM.encode()
    for cut in range(len(data) + 1):
        parser = SseParser()
        assert parser.feed(data[:cut]) + parser.feed(data[cut:]) == _EXPECTED, cut
    parser = SseParser()
    assert [e for i in range(len(data)) for e in parser.feed(data[i : i + 1])] == _EXPECTED


# --- uploads over the limits -------------------------------------------------------------


@pytest.fixture(scope="module")
def small_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServeProcess]:
    """A server with small upload limits: 100 kB a file, 150 kB a member."""
    args = ("--max-upload-bytes", "100000", "--upload-quota-bytes", "150000")
    process = ServeProcess(tmp_path_factory.mktemp("small"), args=args)
    yield process
    process.stop()


@pytest.mark.anyio
async def test_upload_over_the_limits_raises_their_errors_and_stores_nothing(
    small_server: ServeProcess, tmp_path: Any
) -> None:
    from agentkit.conversations import UploadQuotaError, UploadTooLargeError

    name = _name("up")
    token = await small_server.add_member(name, "editor")
    big = tmp_path / "big.bin"
    big.write_bytes(b"x" * 5_000_000)  # far more than the sockets' buffers hold
    async with RemoteMachine(small_server.url, token) as client:
        with pytest.raises(UploadTooLargeError, match="100000 bytes"):
            await client.upload(big)
        stored = await client.upload(b"y" * 100_000, filename="full.bin")
        assert stored.size == 100_000
        with pytest.raises(UploadQuotaError, match="150000"):
            await client.upload(b"z" * 50_001, filename="over.bin")
        with pytest.raises(UploadTooLargeError):
            await client.upload(big)
        member_id = client.member.id
    folder = small_server.attachment_root / "uploads" / member_id
    assert sorted(p.name for p in folder.iterdir()) == ["full.bin"]
