"""A waiting run in a conversation, in process: watch shows its request
(`view.pending_requests`) and its approval parts until it is decided; a prompt queued
behind it (`if_busy="enqueue"`) runs once it ends; `interrupt` cancels it; a machine's
`request_timeout` ends an unanswered request as denied (the sweeper resolves the
conversation's agent, which the runtime does not register).

The decisions themselves (allow, deny, 403, 404, 409, 422, answers, remember, cancel) are
conformance checks, run against both clients; across a SIGKILL, a restart and two
PostgreSQL servers: `tests/server/test_decisions_served.py`."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path

import anyio
import pytest

from agentkit.conversations import (
    AgentDefinition,
    ConversationView,
    LocalClient,
    Machine,
    PermissionDecisionPart,
    PermissionRequestPart,
    ToolResultPart,
)
from agentkit.testing import conformance_provider

pytestmark = pytest.mark.anyio

TIMEOUT = 30.0
GATE = AgentDefinition(name="gate", tools=("Bash",), permission_mode="default")


@pytest.fixture
async def machine(tmp_path: Path) -> AsyncIterator[Machine]:
    root = tmp_path / "space"
    root.mkdir()
    async with Machine(
        store=str(tmp_path / "m.db"),
        provider=conformance_provider(),
        attachment_roots=[root],
        request_timeout=60.0,
        heartbeat_interval=0.1,
    ) as machine:
        yield machine


async def _owner(machine: Machine) -> LocalClient:
    await machine.add_member("olga", "owner")
    client = machine.client(await machine.member("olga"))
    await client.create_agent(GATE)
    return client


class _Views:
    """The views a watch delivers, and a way to wait for one."""

    def __init__(self) -> None:
        self.seen: list[ConversationView] = []
        self._changed = anyio.Event()

    def deliver(self, view: ConversationView) -> None:
        self.seen.append(view)
        self._changed.set()

    async def until(self, done: Callable[[ConversationView], bool]) -> ConversationView:
        with anyio.fail_after(TIMEOUT):
            while True:
                for view in self.seen:
                    if not view.loading and done(view):
                        return view
                self._changed = anyio.Event()
                await self._changed.wait()


async def test_watch_shows_the_request_until_it_is_decided(machine: Machine) -> None:
    olga = await _owner(machine)
    conversation = await olga.create_conversation(agent="gate")
    views = _Views()
    stop = await conversation.watch(views.deliver)
    try:
        accepted = await conversation.prompt("bash echo watched")
        waiting = await views.until(
            lambda view: (
                bool(view.pending_requests)
                and bool(view.output)
                and isinstance(view.output[-1], PermissionRequestPart)
            )
        )
        (request,) = waiting.pending_requests
        assert waiting.is_running and waiting.active_run_id == accepted.run_id
        assert (request.kind, request.tool, request.input) == (
            "permission",
            "Bash",
            {"command": "echo watched"},
        )
        assert request.deadline is not None  # the machine's request_timeout
        await conversation.decide(accepted.run_id, request.request_id, allow=True)
        done = await views.until(lambda view: not view.is_running and len(view.turns) == 2)
        assert done.pending_requests == ()
        parts = done.turns[-1].parts
        assert any(isinstance(p, PermissionDecisionPart) and p.decision == "allow" for p in parts)
        assert done.turns[-1].text == "ran"
    finally:
        stop()


async def test_a_waiting_run_queues_prompts_behind_it_and_is_interrupted(
    machine: Machine,
) -> None:
    olga = await _owner(machine)
    conversation = await olga.create_conversation(agent="gate")
    first = await conversation.prompt("bash echo first")
    views = _Views()
    stop = await conversation.watch(views.deliver)
    try:
        await views.until(lambda view: bool(view.pending_requests))
        queued = await olga.prompt(conversation.id, "say queued", if_busy="enqueue")
        assert queued.status == "queued"
        interrupting = await olga.prompt(conversation.id, "say now", if_busy="interrupt")
        done = await views.until(
            lambda view: not view.is_running and not view.queued and len(view.turns) == 6
        )
    finally:
        stop()
    statuses = [(turn.run_id, turn.status) for turn in done.turns if turn.role == "agent"]
    assert statuses == [
        (first.run_id, "cancelled"),
        (interrupting.run_id, "completed"),
        (queued.run_id, "completed"),
    ]


async def test_a_machines_request_timeout_denies_an_unanswered_request(tmp_path: Path) -> None:
    root = tmp_path / "space"
    root.mkdir()
    async with Machine(
        store=str(tmp_path / "m.db"),
        provider=conformance_provider(),
        attachment_roots=[root],
        request_timeout=0.3,
        heartbeat_interval=0.05,
    ) as machine:
        olga = await _owner(machine)
        conversation = await olga.create_conversation(agent="gate")
        accepted = await conversation.prompt("bash echo late")
        with anyio.fail_after(TIMEOUT):
            events = [event async for event in conversation.follow(accepted.run_id)]
        result = next(
            e.part for e in events if e.type == "output" and isinstance(e.part, ToolResultPart)
        )
        assert result.is_error
        assert result.output == "permission denied: no decision within 0.3 seconds"
        assert events[-1].type == "final" and events[-1].status == "completed"
