"""Members and agents are records with ids that no name recycles; every list is paged.

Each test runs on the memory store, a SQLite file and PostgreSQL."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from agentkit.conversations import (
    AccessDeniedError,
    AgentDefinition,
    AgentDeletedError,
    ConversationNotFoundError,
    FinalEvent,
    InvalidPageError,
    Machine,
    Member,
    MemberError,
)
from agentkit.rooms import RoomNotFoundError
from agentkit.spec import AgentSpec
from agentkit.stores import MemoryStore
from agentkit.testing import ScriptedProvider
from support.pg import postgres_url

pytestmark = pytest.mark.anyio


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def store_kind(request: pytest.FixtureRequest) -> Iterator[str]:
    if request.param != "postgres":
        yield str(request.param)
        return
    with postgres_url("identities") as url:
        yield url


def _machine(tmp_path: Path, kind: str, provider: Any, **options: Any) -> Machine:
    root = tmp_path / "space"
    root.mkdir(exist_ok=True)
    store: Any = {"memory": MemoryStore(), "sqlite": str(tmp_path / "m.db")}.get(kind, kind)
    return Machine(store=store, provider=provider, attachment_roots=[root], **options)


async def _member(machine: Machine, name: str) -> Member:
    found = await machine.get_member(name)
    assert found is not None
    return found


async def _finish(machine: Machine, member: Member, conversation_id: str, text: str) -> None:
    accepted = await machine.runs.prompt(member, conversation_id, text)
    with anyio.fail_after(30):
        events = [
            e async for e in await machine.runs.follow(member, conversation_id, accepted.run_id)
        ]
    assert isinstance(events[-1], FinalEvent)


async def test_a_name_taken_again_is_someone_else(tmp_path: Path, store_kind: str) -> None:
    async with _machine(tmp_path, store_kind, ScriptedProvider(["Noted."])) as machine:
        await machine.add_member("zed", "editor")
        old_zed = await _member(machine, "zed")
        private = await machine.conversations.create(old_zed, name="Zed's secret")
        await _finish(machine, old_zed, private, "my secret")
        room = await machine.rooms_client(old_zed).create_room("zed's room")

        await machine.remove_member("zed")
        token = await machine.add_member("zed", "viewer")
        new_zed = await machine.authenticate(token)
        assert new_zed.name == "zed" and new_zed.id != old_zed.id

        # Nothing of the old zed's: conversations, runs, rooms.
        assert await machine.conversations.list(new_zed) == []
        with pytest.raises(ConversationNotFoundError):
            await machine.conversations.get(new_zed, private)
        assert list(await machine.runs.list(new_zed)) == []
        rooms = machine.rooms_client(new_zed)
        assert await rooms.list_rooms() == []
        with pytest.raises(RoomNotFoundError):
            await rooms.get_room(room.id)
        # The old zed's client is refused, though the name is a member again.
        with pytest.raises(AccessDeniedError):
            await machine.conversations.list(old_zed)


async def test_a_grant_names_the_member_not_the_name(tmp_path: Path, store_kind: str) -> None:
    async with _machine(tmp_path, store_kind, ScriptedProvider([])) as machine:
        await machine.add_member("olga", "owner")
        await machine.add_member("zed", "editor")
        olga, zed = await _member(machine, "olga"), await _member(machine, "zed")
        room = await machine.rooms_client(olga).create_room("team")
        grant = await machine.rooms_client(olga).set_grant(
            room.id, "member:zed", read=["*"], publish=["chat.*"]
        )
        assert grant.participant == f"member:{zed.id}"
        assert (await machine.rooms_client(zed).get_room(room.id)).id == room.id

        await machine.remove_member("zed")
        await machine.add_member("zed", "editor")
        newcomer = await _member(machine, "zed")
        with pytest.raises(RoomNotFoundError):
            await machine.rooms_client(newcomer).get_room(room.id)


async def test_rotate_keeps_the_identity_and_refuses_the_old_token(
    tmp_path: Path, store_kind: str
) -> None:
    async with _machine(tmp_path, store_kind, ScriptedProvider(["Noted."])) as machine:
        old_token = await machine.add_member("ada", "editor")
        ada = await machine.authenticate(old_token)
        conversation_id = await machine.conversations.create(ada, name="Mine")

        new_token = await machine.rotate_member("ada")
        assert new_token != old_token and new_token.startswith("ak_")
        with pytest.raises(MemberError):
            await machine.authenticate(old_token)
        again = await machine.authenticate(new_token)
        assert again == ada
        assert [c.id for c in await machine.conversations.list(again)] == [conversation_id]
        with pytest.raises(MemberError):
            await machine.rotate_member("nobody")


async def test_a_deleted_agent_s_conversations_stay_readable_and_take_no_prompt(
    tmp_path: Path, store_kind: str
) -> None:
    provider = ScriptedProvider(["First.", "Second."])
    async with _machine(tmp_path, store_kind, provider) as machine:
        await machine.add_member("olga", "owner")
        olga = await _member(machine, "olga")
        created = await machine.agents.create(olga, AgentDefinition(name="helper"))
        replaced = await machine.agents.replace(
            olga, AgentDefinition(name="helper", instructions="Be brief.")
        )
        assert replaced.id == created.id and replaced.version == created.version + 1
        conversation_id = await machine.conversations.create(olga, agent="helper")
        await _finish(machine, olga, conversation_id, "hello")

        await machine.agents.delete(olga, "helper")
        newcomer = await machine.agents.create(
            olga, AgentDefinition(name="helper", tools=("Bash",))
        )
        assert newcomer.id != created.id

        details = await machine.conversations.get(olga, conversation_id)
        assert details.agent == "helper" and details.agent_id == created.id
        assert details.agent_deleted is True
        assert [turn.text for turn in details.turns] == ["hello", "First."]
        with pytest.raises(AgentDeletedError):
            await machine.runs.prompt(olga, conversation_id, "again")


async def test_every_list_is_paged(tmp_path: Path, store_kind: str) -> None:
    async with _machine(tmp_path, store_kind, ScriptedProvider([])) as machine:
        await machine.add_member("olga", "owner")
        olga = await _member(machine, "olga")
        created = [await machine.conversations.create(olga, name=f"c{i}") for i in range(7)]

        seen: list[str] = []
        page = await machine.conversations.list(olga, limit=3)
        assert len(page) == 3 and page.next is not None
        seen.extend(row.id for row in page)
        # Created while paging: never shifts a page's boundary (newest first, it lands
        # before the first page).
        late = await machine.conversations.create(olga, name="late")
        while page.next is not None:
            page = await machine.conversations.list(olga, limit=3, cursor=page.next)
            seen.extend(row.id for row in page)
        assert seen == list(reversed(created))
        assert late not in seen

        for limit in (0, 1001, -1):
            with pytest.raises(InvalidPageError):
                await machine.conversations.list(olga, limit=limit)
        with pytest.raises(InvalidPageError):
            await machine.conversations.list(olga, cursor="not-a-cursor")
        members_cursor = (await machine.list_members(limit=1)).next
        assert members_cursor is None  # one member: one page
        agents = await machine.agents.list(olga, limit=1)
        assert [a.name for a in agents] == ["rool"]


async def test_turns_are_paged(tmp_path: Path, store_kind: str) -> None:
    provider = ScriptedProvider(["One.", "Two.", "Three."])
    async with _machine(tmp_path, store_kind, provider) as machine:
        await machine.add_member("ada", "editor")
        ada = await _member(machine, "ada")
        conversation_id = await machine.conversations.create(ada)
        for text in ("a", "b", "c"):
            await _finish(machine, ada, conversation_id, text)
        texts: list[str] = []
        page = await machine.conversations.turns(ada, conversation_id, limit=4)
        texts.extend(turn.text for turn in page)
        assert page.next is not None
        page = await machine.conversations.turns(ada, conversation_id, limit=4, cursor=page.next)
        texts.extend(turn.text for turn in page)
        assert page.next is None
        assert texts == ["a", "One.", "b", "Two.", "c", "Three."]


async def test_a_follow_ends_when_its_reader_loses_access(tmp_path: Path, store_kind: str) -> None:
    gate = anyio.Event()

    async def slow(messages: Any, **_: Any) -> str:
        await gate.wait()
        return "late"

    from agentkit.testing import FunctionProvider

    async with _machine(tmp_path, store_kind, FunctionProvider(slow)) as machine:
        await machine.add_member("ada", "editor")
        await machine.add_member("vic", "viewer")
        ada, vic = await _member(machine, "ada"), await _member(machine, "vic")
        conversation_id = await machine.conversations.create(ada, visibility="shared")
        accepted = await machine.runs.prompt(ada, conversation_id, "take your time")
        follow = await machine.runs.follow(vic, conversation_id, accepted.run_id)
        with anyio.fail_after(10):
            await machine.conversations.update(ada, conversation_id, visibility="private")
            with pytest.raises(ConversationNotFoundError):
                async for _ in follow:
                    pass
        gate.set()


async def test_configured_agents_get_the_machine_context(tmp_path: Path, store_kind: str) -> None:
    plain = AgentSpec(id="plain", system_prompt="Answer in French.")
    alone = AgentSpec(id="alone", system_prompt="Only me.", metadata={"machineContext": False})
    machine = _machine(tmp_path, store_kind, ScriptedProvider([]), agents=[plain, alone])
    async with machine:
        await machine.add_member("olga", "owner")
        olga = await _member(machine, "olga")
        infos = {info.name: info for info in await machine.agents.list(olga)}
        plain_spec = await machine.agents.spec_of(infos["plain"].id)
        assert plain_spec.system_prompt.startswith("You are an agent on a machine")
        assert plain_spec.system_prompt.endswith("Answer in French.")
        alone_spec = await machine.agents.spec_of(infos["alone"].id)
        assert alone_spec.system_prompt == "Only me."
