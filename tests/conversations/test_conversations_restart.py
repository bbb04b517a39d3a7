"""Restart: a machine whose process was killed (SIGKILL) is reopened on the same store;
every saved turn is there, and the run that was executing is ended as interrupted by the
core's leases and shows so in get(), follow() and watch()."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import anyio
import pytest

from agentkit.conversations import (
    INTERRUPTED_REASON,
    ConversationView,
    FinalEvent,
    Machine,
)
from agentkit.runtime._lease import INTERRUPTED_REASON as CORE_REASON
from agentkit.testing import conformance_provider
from support.paths import SRC
from support.pg import postgres_url

pytestmark = pytest.mark.anyio

HERE = Path(__file__).resolve().parent
CHILD = HERE / "conversations_child.py"


def test_the_interrupted_reason_is_the_cores() -> None:
    assert INTERRUPTED_REASON == CORE_REASON


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield str(tmp_path / "machine.db")
        return
    with postgres_url("conv") as url:
        yield url


async def _until(predicate: Callable[[], bool]) -> None:
    with anyio.fail_after(30):
        while not predicate():  # noqa: ASYNC110 (a watch callback sets no event)
            await anyio.sleep(0.02)


def _killed_child(store_url: str, root: Path) -> tuple[str, str]:
    """Run the child until its second run streams, then SIGKILL it."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(SRC), env.get("PYTHONPATH", "")])
    child = subprocess.Popen(
        [sys.executable, str(CHILD), store_url, str(root)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert child.stdout is not None
        line = child.stdout.readline()
        assert line, child.stderr.read() if child.stderr else "the child printed nothing"
        conversation_id, run_id = line.split()
    finally:
        os.kill(child.pid, signal.SIGKILL)
        child.wait(timeout=30)
    assert child.returncode == -signal.SIGKILL
    return conversation_id, run_id


async def test_restart_after_sigkill_shows_the_run_interrupted(
    store_url: str, tmp_path: Path
) -> None:
    root = tmp_path / "space"
    root.mkdir()
    conversation_id, run_id = _killed_child(store_url, root)
    async with Machine(
        store=store_url,
        provider=conformance_provider(),
        attachment_roots=[root],
        heartbeat_interval=0.2,
        lease_duration=1.5,
        poll_interval=0.05,
    ) as machine:
        client = machine.client(await machine.member("ada"))
        conversation = client.conversation(conversation_id)
        # Every saved turn is there at once, the killed run's prompt included.
        details = await conversation.get()
        assert [t.text for t in details.turns[:3]] == ["say first", "first", "hang"]
        views: list[ConversationView] = []
        stop = await conversation.watch(views.append)
        with anyio.fail_after(30):
            events = [event async for event in conversation.follow(run_id)]
        final = events[-1]
        assert isinstance(final, FinalEvent)
        assert (final.status, final.error) == ("error", INTERRUPTED_REASON)
        details = await conversation.get()
        assert not details.is_running
        agent = details.turns[-1]
        assert (agent.role, agent.status, agent.error) == ("agent", "interrupted", CORE_REASON)
        await _until(lambda: bool(views) and not views[-1].is_running and len(views[-1].turns) == 4)
        assert views[-1].turns[-1].status == "interrupted"
        assert [r.is_running for r in await client.list_conversations()] == [False]
        # The conversation goes on; the model sees the interrupted prompt too.
        accepted = await conversation.prompt("count")
        with anyio.fail_after(30):
            events = [event async for event in conversation.follow(accepted.run_id)]
        assert events[-1].type == "final" and events[-1].status == "completed"
        assert (await conversation.list_turns())[-1].text == "users=3"
        stop()
