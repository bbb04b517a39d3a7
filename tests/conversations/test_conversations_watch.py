"""watch(): async callbacks, a failing callback, and work done by another machine sharing
the store (followed and watched by polling the store)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import anyio
import anyio.lowlevel
import pytest

from agentkit.conversations import ConversationView, FinalEvent, Machine
from agentkit.testing import conformance_provider

pytestmark = pytest.mark.anyio


async def _until(predicate: Callable[[], bool]) -> None:
    with anyio.fail_after(30):
        while not predicate():  # noqa: ASYNC110 (a watch callback sets no event)
            await anyio.sleep(0.01)


async def test_async_and_failing_callbacks(tmp_path: Path) -> None:
    root = tmp_path / "space"
    root.mkdir()
    async with Machine(
        store=str(tmp_path / "m.db"), provider=conformance_provider(), attachment_roots=[root]
    ) as machine:
        await machine.add_member("ada", "editor")
        client = machine.client(await machine.member("ada"))
        conversation = await client.create_conversation()
        seen: list[ConversationView] = []
        calls = {"failing": 0}

        async def record(view: ConversationView) -> None:
            await anyio.lowlevel.checkpoint()
            seen.append(view)

        def failing(view: ConversationView) -> None:
            calls["failing"] += 1
            raise RuntimeError("a broken screen")

        stop_one = await conversation.watch(record)
        stop_two = await conversation.watch(failing)
        accepted = await conversation.prompt("slow 5")
        async for _ in conversation.follow(accepted.run_id):
            pass
        await _until(lambda: bool(seen) and len(seen[-1].turns) == 2)
        assert calls["failing"] > 2  # the watch went on after its callback failed
        assert seen[0].loading and not any(v.loading for v in seen[1:])
        assert [p.type for v in seen for p in v.output if v.is_running] != []
        stop_one()
        stop_two()


async def test_another_machine_on_the_same_store(tmp_path: Path) -> None:
    """Machine B runs a prompt; machine A (another runtime on the same database, as
    another process would be) follows and watches it from the store."""
    root = tmp_path / "space"
    root.mkdir()
    db = str(tmp_path / "shared.db")
    options = {"attachment_roots": [root], "poll_interval": 0.02}
    async with (
        Machine(store=db, provider=conformance_provider(), **options) as a,  # type: ignore[arg-type]
        Machine(store=db, provider=conformance_provider(), **options) as b,  # type: ignore[arg-type]
    ):
        await a.add_member("ada", "editor")
        ada_on_a = a.client(await a.member("ada"))
        ada_on_b = b.client(await b.member("ada"))
        conversation = await ada_on_a.create_conversation()
        views: list[ConversationView] = []
        stop = await conversation.watch(views.append)
        await _until(lambda: any(not v.loading for v in views))
        accepted = await ada_on_b.prompt(conversation.id, "slow 20")
        await _until(lambda: views[-1].is_running and views[-1].active_run_id == accepted.run_id)
        assert not await conversation.cancel()  # B executes it: A cannot stop it
        events = [e async for e in conversation.follow(accepted.run_id)]
        assert isinstance(events[-1], FinalEvent) and events[-1].status == "completed"
        await _until(lambda: not views[-1].is_running and len(views[-1].turns) == 2)
        assert views[-1].turns[-1].text == "".join(f"w{i} " for i in range(20))
        stop()
