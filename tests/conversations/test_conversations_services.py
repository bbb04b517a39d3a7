"""The machine's services: the calls of the in-process client, each taking the acting
member, checked once against its current role and the conversation's visibility."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from agentkit.conversations import (
    AccessDeniedError,
    AgentDefinition,
    AgentService,
    ConversationNotFoundError,
    ConversationService,
    FinalEvent,
    Machine,
    Members,
    RunNotFoundError,
    RunService,
)
from agentkit.spec import AgentSpec
from agentkit.stores import RunRecord
from agentkit.testing import ScriptedProvider

pytestmark = pytest.mark.anyio


def _machine(tmp_path: Path, provider: Any) -> Machine:
    root = tmp_path / "space"
    root.mkdir(exist_ok=True)
    return Machine(store=str(tmp_path / "m.db"), provider=provider, attachment_roots=[root])


async def test_the_services_are_the_machine_s_attributes(tmp_path: Path) -> None:
    machine = _machine(tmp_path, ScriptedProvider([]))
    assert isinstance(machine.members, Members)
    assert isinstance(machine.agents, AgentService)
    assert isinstance(machine.conversations, ConversationService)
    assert isinstance(machine.runs, RunService)


async def test_a_conversation_through_the_services(tmp_path: Path) -> None:
    async with _machine(tmp_path, ScriptedProvider(["Noted."])) as machine:
        await machine.members.add("olga", "owner")
        await machine.members.add("ada", "editor")
        await machine.members.add("vic", "viewer")
        olga = await machine.member("olga")
        ada = await machine.member("ada")
        vic = await machine.member("vic")

        info = await machine.agents.create(olga, AgentDefinition(name="notes"))
        assert info.source == "machine"
        with pytest.raises(AccessDeniedError):
            await machine.agents.create(ada, AgentDefinition(name="other"))
        assert "notes" in [agent.name for agent in await machine.agents.list(vic)]

        conversation_id = await machine.conversations.create(
            ada, agent="notes", name="Shared", visibility="shared"
        )
        with pytest.raises(AccessDeniedError):
            await machine.conversations.create(vic)
        accepted = await machine.runs.prompt(ada, conversation_id, "Remember the milk")
        with pytest.raises(AccessDeniedError):
            await machine.runs.prompt(vic, conversation_id, "No")
        with anyio.fail_after(30):
            events = [
                event
                async for event in await machine.runs.follow(vic, conversation_id, accepted.run_id)
            ]
        assert isinstance(events[-1], FinalEvent) and events[-1].status == "completed"

        # The same calls through the client bound to the member.
        details = await machine.client(vic).get_conversation(conversation_id)
        assert details == await machine.conversations.get(vic, conversation_id)
        assert [turn.text for turn in details.turns] == ["Remember the milk", "Noted."]

        await machine.conversations.update(ada, conversation_id, visibility="private")
        with pytest.raises(ConversationNotFoundError):
            await machine.conversations.get(vic, conversation_id)
        with pytest.raises(ConversationNotFoundError):
            await machine.runs.follow(vic, conversation_id, accepted.run_id)
        with pytest.raises(RunNotFoundError):
            await machine.runs.follow(ada, conversation_id, "no-such-run")
        assert await machine.conversations.list(vic) == []

        await machine.members.remove("ada")
        with pytest.raises(AccessDeniedError):
            await machine.conversations.list(ada)


async def test_a_follow_checks_the_access_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with _machine(tmp_path, ScriptedProvider(["Noted."])) as machine:
        await machine.members.add("ada", "editor")
        ada = await machine.member("ada")
        conversation_id = await machine.conversations.create(ada)
        accepted = await machine.runs.prompt(ada, conversation_id, "Hello")

        reads: list[str] = []
        get_session = machine.store.get_session

        async def counted(session_id: str) -> Any:
            reads.append(session_id)
            return await get_session(session_id)

        monkeypatch.setattr(machine.store, "get_session", counted)

        async def through_the_client() -> list[Any]:
            follow = machine.client(ada).follow(conversation_id, accepted.run_id)
            return [event async for event in follow]

        async def through_the_service() -> list[Any]:
            follow = await machine.runs.follow(ada, conversation_id, accepted.run_id)
            return [event async for event in follow]

        for read in (through_the_client, through_the_service):
            reads.clear()
            with anyio.fail_after(30):
                events = await read()
            assert isinstance(events[-1], FinalEvent)
            assert reads.count(conversation_id) == 1


async def test_private_runs_are_private_to_owners_too(tmp_path: Path) -> None:
    async with _machine(tmp_path, ScriptedProvider(["Mine.", "Ours."])) as machine:
        await machine.members.add("olga", "owner")
        await machine.members.add("bob", "editor")
        olga = await machine.member("olga")
        bob = await machine.member("bob")
        private = await machine.conversations.create(bob, name="Mine")
        shared = await machine.conversations.create(bob, name="Ours", visibility="shared")
        for conversation_id in (private, shared):
            accepted = await machine.runs.prompt(bob, conversation_id, "Hello")
            with anyio.fail_after(30):
                [_ async for _ in await machine.runs.follow(bob, conversation_id, accepted.run_id)]
        # A session of no conversation: a command-line run on the machine's store.
        command_line = await machine.runtime.create_session(AgentSpec(id="cli:agent"))

        assert await machine.runs.readable(bob, private)
        assert not await machine.runs.readable(olga, private)  # owners included
        assert await machine.runs.readable(olga, shared)
        assert await machine.runs.readable(bob, shared)
        assert await machine.runs.readable(olga, command_line.id)
        assert not await machine.runs.readable(bob, command_line.id)
        assert not await machine.runs.readable(olga, "no-such-session")

        cli_run = RunRecord("cli-run", command_line.id, "cli:agent", "completed", 1.0, 2.0)
        await machine.store.create_run(cli_run)
        olga_reads = {run.session_id for run in await machine.runs.list(olga)}
        assert olga_reads == {shared, command_line.id}
        bob_reads = {run.session_id for run in await machine.runs.list(bob)}
        assert bob_reads == {private, shared}
        assert list(await machine.runs.list(bob, session_id=command_line.id)) == []
        assert len(await machine.runs.list(olga, session_id=command_line.id)) == 1
