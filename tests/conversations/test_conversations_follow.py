"""follow(): resume at every offset of a run, while it runs (deterministically, with a
model held at a gate) and after it ended, for runs with text, tool calls and structured
output; runs that outlive their readers; runs of other conversations."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest

from agentkit.conversations import (
    AgentDefinition,
    ConversationError,
    FinalEvent,
    FollowEvent,
    Machine,
    OutputEvent,
    RunNotFoundError,
    TextDeltaPart,
    TextPart,
)
from agentkit.providers import (
    Chunk,
    ModelRequest,
    Stop,
    TextChunk,
    ToolCall,
    ToolCallChunk,
    ToolResultMessage,
    Usage,
)
from agentkit.testing import check_resumed

pytestmark = pytest.mark.anyio


class GatedProvider:
    """Calls a tool, then streams `pieces` words and stops at the gate after `hold` of
    them until the test opens it."""

    name = "gated"

    def __init__(self, pieces: int = 6, hold: int = 3) -> None:
        self.pieces = pieces
        self.hold = hold
        self.gate = anyio.Event()

    def resolve_model(self, tier: str | None, model: str | None) -> str:
        return "gated-model"

    def stream(self, request: ModelRequest) -> AsyncIterator[Chunk]:
        return self._stream(request)

    async def _stream(self, request: ModelRequest) -> AsyncIterator[Chunk]:
        if not isinstance(request.messages[-1], ToolResultMessage):
            yield ToolCallChunk(ToolCall(id="c1", name="LS", arguments={"path": "space"}))
            yield Stop("tool_use")
            return
        for index in range(self.pieces):
            if index == self.hold:
                await self.gate.wait()
            yield TextChunk(f"p{index} ")
        yield Usage("gated-model", input_tokens=1, output_tokens=1)
        yield Stop()


async def _collect(stream: AsyncIterator[FollowEvent]) -> list[FollowEvent]:
    with anyio.fail_after(30):
        return [event async for event in stream]


async def test_follow_resumes_at_every_offset_during_and_after(tmp_path: Path) -> None:
    root = tmp_path / "space"
    root.mkdir()
    (root / "a.txt").write_text("a")
    provider = GatedProvider()
    async with Machine(
        store=str(tmp_path / "m.db"), provider=provider, attachment_roots=[root]
    ) as machine:
        await machine.add_member("ada", "editor")
        client = machine.client(await machine.member("ada"))
        conversation = await client.create_conversation()
        accepted = await conversation.prompt("go")
        full: list[FollowEvent] = []
        resumed: dict[int, list[FollowEvent]] = {}

        async def resume(after: int) -> None:
            resumed[after] = await _collect(
                client.follow(conversation.id, accepted.run_id, after=after)
            )

        async with anyio.create_task_group() as group:
            reader = client.follow(conversation.id, accepted.run_id)
            async for event in reader:
                full.append(event)
                deltas = [
                    e
                    for e in full
                    if isinstance(e, OutputEvent) and isinstance(e.part, TextDeltaPart)
                ]
                if len(deltas) == provider.hold:
                    # Held at the gate: resume at every offset seen so far, while it runs.
                    for seen in [-1, *(e.offset for e in full)]:
                        group.start_soon(resume, seen)
                    await anyio.sleep(0.05)
                    assert not resumed, "a resumed follow ended while the run was held"
                    provider.gate.set()
        types = [e.part.type if isinstance(e, OutputEvent) else e.type for e in full]
        assert types == ["tool_call", "tool_result", *["text_delta"] * 6, "text", "final"]
        # While it ran, every resumed follow got the live deltas too: exactly the rest.
        for after, events in resumed.items():
            assert events == [e for e in full if e.offset > after]
            check_resumed(full, events, after)
        # After it ended: from the store, deltas gone, the text part holds their text.
        for after in range(-1, full[-1].offset + 2):
            events = await _collect(client.follow(conversation.id, accepted.run_id, after=after))
            check_resumed(full, events, after)
        stored = await _collect(client.follow(conversation.id, accepted.run_id))
        text = [
            e.part for e in stored if isinstance(e, OutputEvent) and isinstance(e.part, TextPart)
        ]
        assert text == [TextPart(text="p0 p1 p2 p3 p4 p5 ")]
        assert isinstance(stored[-1], FinalEvent) and stored[-1].status == "completed"


async def test_follow_only_finds_runs_of_its_conversation(tmp_path: Path) -> None:
    root = tmp_path / "space"
    root.mkdir()
    from agentkit.testing import conformance_provider

    async with Machine(
        store=str(tmp_path / "m.db"), provider=conformance_provider(), attachment_roots=[root]
    ) as machine:
        await machine.add_member("ada", "editor")
        client = machine.client(await machine.member("ada"))
        one = await client.create_conversation()
        two = await client.create_conversation()
        accepted = await one.prompt("say one")
        await _collect(one.follow(accepted.run_id))
        with pytest.raises(RunNotFoundError):
            await _collect(two.follow(accepted.run_id))
        with pytest.raises(RunNotFoundError):
            await _collect(one.follow("no-such-run"))
        with pytest.raises(ConversationError, match="after must be an offset"):
            await _collect(one.follow(accepted.run_id, after="3"))  # type: ignore[arg-type]
        # A run dropped by replace_turn is gone from the conversation.
        replaced = await one.prompt("say two", replace_turn=accepted.turn_id)
        await _collect(one.follow(replaced.run_id))
        with pytest.raises(RunNotFoundError):
            await _collect(one.follow(accepted.run_id))
        # Following the conversation's latest run needs no id.
        latest = await _collect(one.follow())
        assert latest[-1].offset == (await _collect(one.follow(replaced.run_id)))[-1].offset
        empty = await client.create_conversation()
        with pytest.raises(RunNotFoundError):
            await _collect(empty.follow())


async def test_machine_agents_read_only_inside_the_roots(tmp_path: Path) -> None:
    """By default a machine agent gets read-only file tools confined to the roots."""
    root = tmp_path / "space"
    root.mkdir()
    (root / "in.txt").write_text("inside")
    (tmp_path / "out.txt").write_text("outside")
    from agentkit.testing import ScriptedProvider

    calls = [
        {"name": "Read", "input": {"file_path": str(root / "in.txt")}},
        {"name": "Read", "input": {"file_path": str(tmp_path / "out.txt")}},
        {"name": "Write", "input": {"file_path": str(root / "new.txt"), "content": "x"}},
    ]
    provider = ScriptedProvider([{"tool_calls": calls}, "done"])
    async with Machine(
        store=str(tmp_path / "m.db"), provider=provider, attachment_roots=[root]
    ) as machine:
        await machine.add_member("olga", "owner")
        client = machine.client(await machine.member("olga"))
        await client.create_agent(AgentDefinition(name="reader", instructions="Read files."))
        agents = {a.name: a for a in await client.list_agents()}
        # One root: the runs' working folder, every file tool limited to it.
        assert agents["reader"].tools == ("Read(**)", "Glob(**)", "Grep(**)", "LS(**)")
        conversation = await client.create_conversation(agent="reader")
        accepted = await conversation.prompt("read")
        events = await _collect(conversation.follow(accepted.run_id))
        results = [
            e.part for e in events if isinstance(e, OutputEvent) and e.part.type == "tool_result"
        ]
        assert [r.is_error for r in results] == [False, True, True]  # type: ignore[union-attr]
        assert "inside" in str(results[0].output)  # type: ignore[union-attr]
        assert not (root / "new.txt").exists()
        system = provider.requests[0].system
        assert str(root) in system and "Read files." in system
