"""The remote client over HTTPS: its own connections (`agentkit.client._streams`) carry
JSON requests and event streams through TLS to a real TLS server on loopback, whose
certificate a test authority (trustme) issued, trusted the way httpx users trust one:
`SSL_CERT_FILE`. The TLS server terminates TLS in front of a real `agentkit serve` (as a
reverse proxy would), since `agentkit serve` itself speaks plain HTTP."""

from __future__ import annotations

import contextlib
import ssl
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import anyio
import anyio.abc
import pytest
from anyio.streams.tls import TLSListener

from agentkit.client import RemoteMachine, _transport
from agentkit.conversations import ConversationError, FinalEvent, OutputEvent, TextPart
from support.serve_process import ServeProcess

pytest.importorskip("trustme", reason="the dev extra installs trustme")
import trustme


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServeProcess]:
    process = ServeProcess(tmp_path_factory.mktemp("https"))
    yield process
    process.stop()


@pytest.fixture(scope="module")
def authority() -> trustme.CA:
    return trustme.CA()


@pytest.fixture
def trusted(
    authority: trustme.CA, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[None]:
    """The test authority trusted through `SSL_CERT_FILE`, for the clients made meanwhile
    (the client keeps one SSL context per process: it is made again with the variable
    set, and again once it is gone)."""
    pem = tmp_path / "ca.pem"
    authority.cert_pem.write_to_path(str(pem))
    monkeypatch.setenv("SSL_CERT_FILE", str(pem))
    _transport._ssl_context.cache_clear()
    try:
        yield
    finally:
        monkeypatch.delenv("SSL_CERT_FILE")
        _transport._ssl_context.cache_clear()


@contextlib.asynccontextmanager
async def tls_front(authority: trustme.CA, port: int) -> AsyncIterator[str]:
    """A TLS server on loopback (certificate for 127.0.0.1) that forwards each
    connection's plain bytes to `port`: its `https://` URL, until the block ends."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    authority.issue_cert("127.0.0.1").configure_cert(context)
    tcp = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)
    listener = TLSListener(tcp, context, standard_compatible=False)

    async def forward(client: anyio.abc.ByteStream) -> None:
        upstream = await anyio.connect_tcp("127.0.0.1", port)
        async with client, upstream, anyio.create_task_group() as group:
            group.start_soon(_pipe, client, upstream, group.cancel_scope)
            group.start_soon(_pipe, upstream, client, group.cancel_scope)

    async with listener, anyio.create_task_group() as group:
        group.start_soon(listener.serve, forward)
        yield f"https://127.0.0.1:{tcp.extra(anyio.abc.SocketAttribute.local_port)}"
        group.cancel_scope.cancel()


async def _pipe(
    source: anyio.abc.ByteStream, sink: anyio.abc.ByteStream, scope: anyio.CancelScope
) -> None:
    closed = (anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError)
    with contextlib.suppress(*closed):
        async for chunk in source:
            await sink.send(chunk)
    scope.cancel()  # one side closed: close both


@pytest.mark.anyio
@pytest.mark.usefixtures("trusted")
async def test_prompt_and_follow_over_https(server: ServeProcess, authority: trustme.CA) -> None:
    """A client trusting the server's authority prompts and follows runs over TLS, run
    after run on its kept-alive connection, as over plain HTTP."""
    token = await server.add_member(f"https-{uuid.uuid4().hex[:8]}", "editor")
    async with tls_front(authority, server.port) as url, RemoteMachine(url, token) as client:
        conversation = await client.create_conversation()
        for round_ in range(2):
            accepted = await conversation.prompt(f"say round {round_}")
            with anyio.fail_after(30):
                events = [e async for e in client.follow(conversation.id, accepted.run_id)]
            assert isinstance(events[-1], FinalEvent) and events[-1].status == "completed"
            text = "".join(
                e.part.text
                for e in events
                if isinstance(e, OutputEvent) and isinstance(e.part, TextPart)
            )
            assert f"round {round_}" in text


@pytest.mark.anyio
async def test_a_server_whose_certificate_is_not_trusted_is_unreachable(
    server: ServeProcess, authority: trustme.CA
) -> None:
    """Without the authority trusted, the certificate is refused: the request fails
    (naming the verification) instead of going on unverified."""
    _transport._ssl_context.cache_clear()  # the default trust, whatever came before
    token = await server.add_member(f"untrusting-{uuid.uuid4().hex[:8]}", "editor")
    async with tls_front(authority, server.port) as url:
        with pytest.raises(ConversationError, match="CERTIFICATE_VERIFY_FAILED"):
            async with RemoteMachine(url, token) as client:  # its first request fails
                await client.create_conversation()
