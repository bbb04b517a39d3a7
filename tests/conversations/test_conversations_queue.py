"""Queued prompts in process: the member who queued one is checked again when it starts
(removed, demoted, an attachment gone: dropped with the reason, not run); a queue is
bounded; a machine closed with prompts queued starts them when it opens again.

Through both clients and a real server: the conformance suite's enqueue, cancel_queued
and interrupt checks, and `tests/server/test_busy_served.py`."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from agentkit.conversations import (
    MAX_QUEUED,
    ConversationBusyError,
    LocalClient,
    Machine,
)
from agentkit.testing import conformance_provider
from support.views import view_where

pytestmark = pytest.mark.anyio


@pytest.fixture
async def machine(tmp_path: Path) -> AsyncIterator[Machine]:
    root = tmp_path / "space"
    root.mkdir()
    async with Machine(
        store=str(tmp_path / "m.db"), provider=conformance_provider(), attachment_roots=[root]
    ) as machine:
        yield machine


async def _client(machine: Machine, name: str) -> LocalClient:
    await machine.add_member(name, "editor")
    return machine.client(await machine.member(name))


async def test_a_queued_prompt_that_may_no_longer_run_is_dropped(
    machine: Machine, tmp_path: Path
) -> None:
    ada, bob, cy = [await _client(machine, name) for name in ("ada", "bob", "cy")]
    conversation = await ada.create_conversation(visibility="shared")
    await conversation.prompt("hang")
    attached = tmp_path / "space" / "notes.txt"
    attached.write_text("notes")
    demoted = await bob.prompt(conversation.id, "say bob", if_busy="enqueue")
    removed = await cy.prompt(conversation.id, "say cy", if_busy="enqueue")
    gone = await ada.prompt(
        conversation.id, "say file", attachments=[str(attached)], if_busy="enqueue"
    )
    kept = await ada.prompt(conversation.id, "say ada", if_busy="enqueue")
    await machine.set_role("bob", "viewer")
    await machine.remove_member("cy")
    attached.unlink()
    assert await conversation.cancel()
    view = await view_where(ada, conversation.id, lambda v: len(v.turns) == 4 and not v.is_running)
    assert view.turns[2].run_id == kept.run_id and view.turns[3].text == "ada"
    dropped = {q.id: q for q in view.queued}
    assert list(dropped) == [demoted.run_id, removed.run_id, gone.run_id]
    assert all(q.status == "dropped" for q in dropped.values())
    assert "viewer" in (dropped[demoted.run_id].error or "")
    assert "not a member" in (dropped[removed.run_id].error or "")
    assert "notes.txt" in (dropped[gone.run_id].error or "")
    assert dropped[demoted.run_id].member == "bob"
    await conversation.cancel_queued(demoted.run_id)  # a dropped one is dismissed
    assert [q.id for q in (await conversation.get()).queued] == [removed.run_id, gone.run_id]


async def test_a_queue_is_bounded(machine: Machine) -> None:
    ada = await _client(machine, "ada")
    conversation = await ada.create_conversation()
    await conversation.prompt("hang")
    for n in range(MAX_QUEUED):
        assert (await conversation.prompt(f"say {n}", if_busy="enqueue")).status == "queued"
    with pytest.raises(ConversationBusyError, match="queued already"):
        await conversation.prompt("one too many", if_busy="enqueue")
    assert len((await conversation.get()).queued) == MAX_QUEUED
    assert await conversation.cancel()


async def test_a_machine_reopened_starts_what_was_queued(tmp_path: Path) -> None:
    root = tmp_path / "space"
    root.mkdir()
    options = {
        "store": str(tmp_path / "m.db"),
        "provider": conformance_provider(),
        "attachment_roots": [root],
    }
    async with Machine(**options) as machine:  # type: ignore[arg-type]
        ada = await _client(machine, "ada")
        conversation = await ada.create_conversation()
        await conversation.prompt("hang")
        queued = [await conversation.prompt(t, if_busy="enqueue") for t in ("say a", "count")]
    # closed: its run ended cancelled, and nothing queued started
    async with Machine(**options) as machine:  # type: ignore[arg-type]
        ada = machine.client(await machine.member("ada"))
        view = await view_where(
            ada, conversation.id, lambda v: len(v.turns) == 6 and not v.is_running
        )
    assert [t.run_id for t in view.turns[2::2]] == [q.run_id for q in queued]
    assert [t.text for t in view.turns[3::2]] == ["a", "users=3"]
    assert view.queued == ()
