"""RemoteMachine's stream on create against a real `agentkit serve` on loopback, under
asyncio and trio: one request that starts the run and streams it, resumed on the run's
events route when its connection drops, event for event what a follower without a drop
reads; and the run's ids before any event."""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import AsyncIterator, Iterator

import anyio
import pytest

from agentkit.client import RemoteMachine
from agentkit.conversations import (
    ConversationBusyError,
    FinalEvent,
    FollowEvent,
    OutputEvent,
    RunStream,
    TextDeltaPart,
)
from support.proxy import dropping_proxy
from support.serve_process import ServeProcess

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServeProcess]:
    process = ServeProcess(tmp_path_factory.mktemp("serve-runs"))
    yield process
    process.stop()


@contextlib.asynccontextmanager
async def _client(server: ServeProcess, url: str | None = None) -> AsyncIterator[RemoteMachine]:
    token = await server.add_member(f"ed-{uuid.uuid4().hex[:8]}", "editor")
    async with RemoteMachine(url or server.url, token) as client:
        yield client


async def test_a_stream_on_create_resumes_after_drops(server: ServeProcess) -> None:
    async with dropping_proxy(server.port) as proxy, _client(server, proxy.url) as proxied:
        conversation = await proxied.create_conversation()
        before = proxy.connections
        seen: list[FollowEvent] = []
        with anyio.fail_after(30):
            async with await conversation.stream("slow 30") as stream:
                async for event in stream:
                    seen.append(event)
                    if len(seen) in (5, 15):
                        proxy.drop()
        full = [event async for event in proxied.follow(conversation.id, stream.run_id)]
    assert proxy.connections - before >= 2, "the stream was not resumed after each drop"
    offsets = [event.offset for event in seen]
    assert offsets == sorted(set(offsets)) and offsets[0] == 2  # from the first output
    assert isinstance(seen[-1], FinalEvent) and seen[-1].status == "completed"
    assert seen[-1] == full[-1]
    assert [e for e in seen if e in full] == full  # every stored part, once
    deltas = [e for e in seen if isinstance(e, OutputEvent) and isinstance(e.part, TextDeltaPart)]
    if len(deltas) == 30:  # resumed while still streaming: nothing missed
        assert "".join(e.part.text for e in deltas) == "".join(f"w{i} " for i in range(30))


async def test_the_run_is_known_before_its_first_event(server: ServeProcess) -> None:
    async with _client(server) as client:
        conversation = await client.create_conversation()
        stream = await conversation.stream("hang")
        assert isinstance(stream, RunStream)
        assert (await conversation.get()).active_run_id == stream.run_id
        with pytest.raises(ConversationBusyError):
            await conversation.stream("say no")
        async with stream:
            first = await stream.__anext__()  # the model's first words
            assert isinstance(first, OutputEvent) and first.part == TextDeltaPart(
                text="partial answer"
            )
            assert await conversation.cancel()
            rest = [event async for event in stream]
        assert isinstance(rest[-1], FinalEvent) and rest[-1].status == "cancelled"
        # Leaving a stream unread closes its connection and leaves the run alone.
        unread = await client.stream_run("rool", "slow 5")
        await unread.aclose()
        events = [e async for e in client.follow(unread.conversation_id, unread.run_id)]
        assert isinstance(events[-1], FinalEvent) and events[-1].status == "completed"
