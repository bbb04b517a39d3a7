"""The machine: configured agents (Markdown definitions, app folders), roots and tools,
conversation instructions, stores, cancel with a tool's background processes, and the
errors a caller's mistakes get."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from agentkit.apps import example_app_path
from agentkit.conversations import (
    AgentDefinition,
    ConversationError,
    FinalEvent,
    FollowEvent,
    LocalClient,
    Machine,
    Member,
    default_machine_store,
)
from agentkit.stores import SQLiteStore
from agentkit.testing import ScriptedProvider, conformance_provider
from support.paths import ROOT

pytestmark = pytest.mark.anyio

EXAMPLES = ROOT / "examples"


async def _collect(stream: AsyncIterator[FollowEvent]) -> list[FollowEvent]:
    with anyio.fail_after(30):
        return [event async for event in stream]


async def _owner(machine: Machine) -> LocalClient:
    await machine.add_member("olga", "owner")
    return machine.client(await machine.member("olga"))


async def test_definition_and_app_agents_in_conversations(tmp_path: Path) -> None:
    root = tmp_path / "space"
    root.mkdir()
    provider = ScriptedProvider(["Reviewed.", "Researched."])
    async with Machine(
        store=str(tmp_path / "m.db"),
        provider=provider,
        attachment_roots=[root],
        definitions=[EXAMPLES / "defs" / "security-review.md"],
        apps=[example_app_path()],
    ) as machine:
        client = await _owner(machine)
        agents = {a.name: a for a in await client.list_agents()}
        assert agents["rool"].source == "builtin"
        assert agents["security-review"].source == "configured"
        assert agents["research-app:researcher"].source == "configured"
        review = await client.create_conversation(agent="security-review")
        events = await _collect(review.follow((await review.prompt("Review it")).run_id))
        assert isinstance(events[-1], FinalEvent) and events[-1].status == "completed"
        assert "Do not modify files." in provider.requests[0].system
        research = await client.create_conversation(agent="research-app:researcher")
        await _collect(research.follow((await research.prompt("Otters")).run_id))
        assert "researcher agent" in provider.requests[1].system
        for name in ("security-review", "rool"):
            with pytest.raises(ConversationError, match=r"cannot be changed|configured"):
                await client.replace_agent(AgentDefinition(name=name))
            with pytest.raises(ConversationError):
                await client.delete_agent(name)


async def test_two_roots_tools_attachments_and_instructions(tmp_path: Path) -> None:
    space, drive = tmp_path / "space", tmp_path / "rool-drive"
    space.mkdir()
    drive.mkdir()
    (drive / "report.txt").write_text("report")
    provider = ScriptedProvider(["ok"])
    async with Machine(
        store=str(tmp_path / "m.db"), provider=provider, attachment_roots=[space, drive]
    ) as machine:
        client = await _owner(machine)
        (rool,) = [a for a in await client.list_agents() if a.name == "rool"]
        assert "Read(space/**)" in rool.tools and "Read(rool-drive/**)" in rool.tools
        conversation = await client.create_conversation(instructions="Answer in French.")
        accepted = await conversation.prompt(
            "Summarise", attachments=[str(drive / "report.txt")], effort="low"
        )
        await _collect(conversation.follow(accepted.run_id))
        request = provider.requests[0]
        assert request.system.endswith("Answer in French.")
        assert str(space) in request.system and str(drive) in request.system
        assert request.reasoning_effort == "low"
        assert str(drive / "report.txt") in request.messages[-1].content  # type: ignore[union-attr]


async def test_cancel_kills_a_tools_background_processes(tmp_path: Path) -> None:
    root = tmp_path / "space"
    root.mkdir()
    pid_file = root / "pid"
    async with Machine(
        store=str(tmp_path / "m.db"), provider=conformance_provider(), attachment_roots=[root]
    ) as machine:
        client = await _owner(machine)
        await client.create_agent(
            AgentDefinition(name="shell", tools=("Bash",), permission_mode="bypassPermissions")
        )
        conversation = await client.create_conversation(agent="shell")
        accepted = await conversation.prompt(f"bash sleep 600 & echo $! > {pid_file}; wait")
        with anyio.fail_after(30):
            while not (pid_file.exists() and pid_file.read_text().strip()):  # noqa: ASYNC110
                await anyio.sleep(0.02)
        pid = int(pid_file.read_text())
        os.kill(pid, 0)  # running
        assert await conversation.cancel()
        with anyio.fail_after(10):
            while _alive(pid):  # noqa: ASYNC110
                await anyio.sleep(0.02)
        events = await _collect(conversation.follow(accepted.run_id))
        assert isinstance(events[-1], FinalEvent) and events[-1].status == "cancelled"
        turn = (await conversation.list_turns())[-1]
        assert turn.status == "cancelled" and [p.type for p in turn.parts] == ["tool_call"]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split(") ")[-1][:1] != "Z"
    except OSError:
        return False


async def test_stores_by_url_or_object_and_the_default_location(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "space"
    root.mkdir()
    url = f"sqlite:///{tmp_path / 'url.db'}"
    async with Machine(store=url, provider=conformance_provider(), attachment_roots=[root]) as m:
        client = await _owner(m)
        await client.create_conversation(name="kept")
    async with Machine(store=url, provider=conformance_provider(), attachment_roots=[root]) as m:
        client = m.client(await m.member("olga"))
        assert [r.name for r in await client.list_conversations()] == ["kept"]
    store = SQLiteStore(tmp_path / "object.db")
    async with Machine(store=store, provider=conformance_provider(), attachment_roots=[root]):
        pass
    assert await store.list_sessions() == []  # still open: the caller closes it
    await store.aclose()
    monkeypatch.setenv("AGENTKIT_MACHINE_STORE", str(tmp_path / "env.db"))
    assert default_machine_store() == str(tmp_path / "env.db")
    monkeypatch.delenv("AGENTKIT_MACHINE_STORE")
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    assert default_machine_store() == str(tmp_path / "state" / "agentkit" / "machine.db")


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda c, cid: c.prompt(cid, "   "), "needs text or an attachment"),
        (lambda c, cid: c.prompt(cid, "x", attachments="/etc/passwd"), "list of paths"),
        (lambda c, cid: c.prompt(cid, "x", output_schema={"type": 12}), "options are not valid"),
        (lambda c, cid: c.prompt(cid, "x", effort="huge"), "options are not valid"),
        (lambda c, cid: c.set_visibility(cid, "public"), "visibility"),
        (lambda c, cid: c.rename_conversation(cid, "x" * 201), "at most 200"),
        (lambda c, cid: c.prompt(cid, "x", replace_turn="u-none"), "no user turn"),
        (lambda c, cid: c.create_agent(AgentDefinition(name="Bad Name")), "lowercase"),
        (lambda c, cid: c.create_conversation(visibility="public"), "visibility"),
    ],
)
async def test_a_callers_mistakes_are_clear_errors(tmp_path: Path, call: Any, message: str) -> None:
    root = tmp_path / "space"
    root.mkdir()
    async with Machine(
        store=str(tmp_path / "m.db"), provider=conformance_provider(), attachment_roots=[root]
    ) as machine:
        client = await _owner(machine)
        conversation = await client.create_conversation()
        with pytest.raises(ConversationError, match=message) as info:
            await call(client, conversation.id)
        assert "\n" not in str(info.value)
        assert await conversation.list_turns() == []


async def test_a_machine_outside_its_block_says_so(tmp_path: Path) -> None:
    machine = Machine(store=str(tmp_path / "m.db"), attachment_roots=[tmp_path])
    client = machine.client(Member(id="0" * 32, name="olga", role="owner"))
    with pytest.raises(RuntimeError, match="async with Machine"):
        await client.rename_conversation("x", "y")
    with pytest.raises(ValueError, match="two configured agents"):
        Machine(
            store=str(tmp_path / "n.db"),
            attachment_roots=[tmp_path],
            definitions=[EXAMPLES / "defs" / "worker.md", EXAMPLES / "defs" / "worker.md"],
        )


async def test_closing_the_machine_cancels_its_runs(tmp_path: Path) -> None:
    root = tmp_path / "space"
    root.mkdir()
    db = str(tmp_path / "m.db")
    async with Machine(store=db, provider=conformance_provider(), attachment_roots=[root]) as m:
        client = await _owner(m)
        conversation = await client.create_conversation()
        await conversation.prompt("hang")
    async with Machine(store=db, provider=conformance_provider(), attachment_roots=[root]) as m:
        details = await m.client(await m.member("olga")).get_conversation(conversation.id)
        assert not details.is_running and details.turns[-1].status == "cancelled"


async def test_interrupting_the_runs_ends_them_as_a_crash_would(tmp_path: Path) -> None:
    # What `agentkit serve` does on SIGTERM: followers get an `error` final event with
    # the crash's reason, the turn is `interrupted` and keeps what was streamed.
    root = tmp_path / "space"
    root.mkdir()
    db = str(tmp_path / "m.db")
    async with Machine(store=db, provider=conformance_provider(), attachment_roots=[root]) as m:
        client = await _owner(m)
        conversation = await client.create_conversation()
        accepted = await conversation.prompt("hang")
        async for _ in client.follow(conversation.id, accepted.run_id):
            break  # the partial answer has been streamed
        await m.interrupt_runs()
        events = await _collect(client.follow(conversation.id, accepted.run_id))
        final = events[-1]
        assert isinstance(final, FinalEvent) and final.status == "error"
        assert final.error == "interrupted: its process stopped"
        await m.interrupt_runs()  # nothing left to interrupt: returns at once
    async with Machine(store=db, provider=conformance_provider(), attachment_roots=[root]) as m:
        turns = await m.client(await m.member("olga")).list_turns(conversation.id)
    assert turns[-1].status == "interrupted" and turns[-1].text == "partial answer"
