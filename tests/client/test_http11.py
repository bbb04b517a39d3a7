"""The client's own HTTP/1.1 connections (`agentkit.client._streams`) with each of their
parsers, httptools and h11 (the fallback where httptools does not install): a real
`agentkit serve` prompted and followed, and loopback servers answering what a server
should not (a head too long, a body cut short, no HTTP at all) or what it may (a body
that ends when the connection closes)."""

from __future__ import annotations

import contextlib
import ssl
import uuid
from collections.abc import AsyncIterator, Callable, Iterator

import anyio
import anyio.abc
import pytest

from agentkit.client import RemoteMachine, _streams
from agentkit.conversations import FinalEvent
from support.serve_process import ServeProcess

PARSERS: dict[str, Callable[[], object]] = {"h11": _streams._H11Parser}
try:
    import httptools  # noqa: F401
except ImportError:  # pragma: no cover (the server extra installs it on CPython)
    pass
else:
    PARSERS["httptools"] = _streams._HttptoolsParser


@pytest.fixture(params=sorted(PARSERS))
def parser(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Every connection made meanwhile parses with this parser."""
    name = str(request.param)
    monkeypatch.setattr(_streams, "_parser", PARSERS[name])
    return name


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServeProcess]:
    process = ServeProcess(tmp_path_factory.mktemp("http11"))
    yield process
    process.stop()


@pytest.mark.anyio
@pytest.mark.usefixtures("parser")
async def test_prompt_and_follow_with_each_parser(server: ServeProcess) -> None:
    token = await server.add_member(f"editor-{uuid.uuid4().hex[:8]}", "editor")
    async with RemoteMachine(server.url, token) as client:
        conversation = await client.create_conversation()
        for round_ in range(2):  # the second on the kept-alive connection
            accepted = await conversation.prompt(f"say round {round_}")
            with anyio.fail_after(30):
                events = [e async for e in client.follow(conversation.id, accepted.run_id)]
            assert isinstance(events[-1], FinalEvent) and events[-1].status == "completed"


@contextlib.asynccontextmanager
async def answering(*answers: bytes) -> AsyncIterator[tuple[str, list[int]]]:
    """A loopback server that reads each request's head and answers the next of
    `answers`, closing the connection after the last: its URL, and a list that counts
    its connections."""
    connections: list[int] = []
    listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)

    async def handle(stream: anyio.abc.SocketStream) -> None:
        connections.append(1)
        # The client may close first (on a head too long): that ends this one too.
        with contextlib.suppress(anyio.BrokenResourceError, anyio.EndOfStream):
            await answer_all(stream)

    async def answer_all(stream: anyio.abc.SocketStream) -> None:
        async with stream:
            received = b""
            for answer in answers:
                while b"\r\n\r\n" not in received:
                    received += await stream.receive()
                received = received.split(b"\r\n\r\n", 1)[1]
                await stream.send(answer)

    async with listener, anyio.create_task_group() as group:
        group.start_soon(listener.serve, handle)
        port = listener.extra(anyio.abc.SocketAttribute.local_port)
        yield f"http://127.0.0.1:{port}", connections
        group.cancel_scope.cancel()


def _connections(url: str) -> _streams.Connections:
    return _streams.Connections(
        url, {}, connect_timeout=5, read_timeout=5, ssl_context=ssl.create_default_context
    )


@pytest.mark.anyio
@pytest.mark.usefixtures("parser")
async def test_a_sized_answer_keeps_the_connection() -> None:
    ok = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello"
    async with answering(ok, ok) as (url, connections):
        streams = _connections(url)
        for _ in range(2):
            head, body = await streams.fetch("GET", "/x", None, {}, None)
            assert (head.status, body) == (200, b"hello")
        await streams.aclose()
    assert len(connections) == 1


@pytest.mark.anyio
@pytest.mark.usefixtures("parser")
async def test_a_body_that_ends_with_the_connection_is_read_whole() -> None:
    answer = b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n" + b"x" * 100_000
    async with answering(answer) as (url, _):
        streams = _connections(url)
        head, body = await streams.fetch("GET", "/x", None, {}, None)
        assert (head.status, body) == (200, b"x" * 100_000)
        assert not streams._idle  # nothing left to reuse
        await streams.aclose()


@pytest.mark.anyio
@pytest.mark.usefixtures("parser")
@pytest.mark.parametrize(
    ("answer", "error"),
    [
        (b"HTTP/1.1 200 OK\r\nX: " + b"a" * 1_000_000 + b"\r\n\r\n", "too long|not an HTTP"),
        (b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nhello", "closed"),
        (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhel", "closed"),
        (b"SSH-2.0-OpenSSH_9.6\r\n\r\n", "not an HTTP"),
        (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", "not an HTTP"),
    ],
    ids=["head-too-long", "sized-body-cut", "chunked-body-cut", "not-http", "bad-chunk"],
)
async def test_what_is_not_a_whole_answer_fails(answer: bytes, error: str) -> None:
    async with answering(answer) as (url, _):
        streams = _connections(url)
        with pytest.raises(_streams.StreamFailed, match=error):
            await streams.fetch("POST", "/x", None, {}, b"{}")
        await streams.aclose()
