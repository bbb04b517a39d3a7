"""The full access matrix: every actor (the creator as owner or editor, another owner,
editor or viewer) x visibility x operation, one test each, under asyncio and trio."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentkit.conversations import (
    AccessDeniedError,
    AgentDefinition,
    ConversationNotFoundError,
    Member,
    MemberError,
)
from agentkit.testing import ACCESS_OPERATIONS, MachineHost, expected_access
from agentkit.testing._conversation_conformance import ACTORS, VISIBILITIES, check_access_case

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("operation", list(ACCESS_OPERATIONS))
@pytest.mark.parametrize("visibility", VISIBILITIES)
@pytest.mark.parametrize("actor", ACTORS)
async def test_access(tmp_path: Path, actor: str, visibility: str, operation: str) -> None:
    async with MachineHost.open(tmp_path) as host:
        await check_access_case(host, actor, visibility, operation)  # type: ignore[arg-type]


def test_the_matrix_rules() -> None:
    """The rules the matrix checks, said once: hidden conversations do not exist for the
    member; viewers read shared ones and change nothing."""
    assert expected_access("owner", "private", "get") == "not_found"
    assert expected_access("viewer", "private", "delete") == "not_found"
    assert expected_access("viewer", "shared", "follow") == "ok"
    assert expected_access("viewer", "shared", "prompt") == "denied"
    assert expected_access("editor", "shared", "delete") == "ok"
    assert expected_access("creator-editor", "private", "visibility") == "ok"


async def test_viewers_and_editors_cannot_manage_agents_or_create_as_viewer(
    tmp_path: Path,
) -> None:
    async with MachineHost.open(tmp_path) as host:
        viewer = await host.client("vic", "viewer")
        editor = await host.client("ed", "editor")
        with pytest.raises(AccessDeniedError, match="viewers cannot create"):
            await viewer.create_conversation()
        for client in (viewer, editor):
            with pytest.raises(AccessDeniedError, match="only owners"):
                await client.create_agent(AgentDefinition(name="x"))
        assert [a.name for a in await viewer.list_agents()] == ["rool"]


async def test_a_role_change_applies_at_once_and_removed_members_lose_access(
    tmp_path: Path,
) -> None:
    async with MachineHost.open(tmp_path) as host:
        ed = await host.client("ed", "editor")
        conversation = await ed.create_conversation(visibility="shared")
        ed_member = await host.machine.member("ed")
        changed = await host.machine.set_role("ed", "viewer")
        assert changed == Member(id=ed_member.id, name="ed", role="viewer")
        assert await host.machine.list_members() == [changed]
        with pytest.raises(AccessDeniedError):
            await conversation.prompt("say x")
        assert (await conversation.get()).turns == ()  # reading is still allowed
        await host.machine.remove_member("ed")
        with pytest.raises(AccessDeniedError, match="not a member"):
            await conversation.get()
        with pytest.raises(MemberError):
            await host.machine.remove_member("ed")


async def test_tokens_are_stored_hashed_and_authenticate(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    async with MachineHost.open(tmp_path, store=str(db)) as host:
        token = await host.machine.add_member("ada", "owner")
        assert await host.machine.authenticate(token) == await host.machine.member("ada")
        assert (await host.machine.member("ada")).role == "owner"
        with pytest.raises(MemberError, match="no member has this token"):
            await host.machine.authenticate(token + "x")
        with pytest.raises(MemberError, match="exists already"):
            await host.machine.add_member("ada", "viewer")
        with pytest.raises(MemberError, match="role"):
            await host.machine.add_member("bob", "admin")  # type: ignore[arg-type]
    data = b"".join(p.read_bytes() for p in tmp_path.glob("m.db*"))  # noqa: ASYNC240
    assert token.encode() not in data


async def test_ids_that_are_not_strings_are_not_found(tmp_path: Path) -> None:
    async with MachineHost.open(tmp_path) as host:
        ada = await host.client("ada", "owner")
        with pytest.raises(ConversationNotFoundError):
            await ada.get_conversation(42)  # type: ignore[arg-type]
        # A member, an agent: sessions of the store, never conversations.
        with pytest.raises(ConversationNotFoundError):
            await ada.get_conversation("agentkit-member:ada")
