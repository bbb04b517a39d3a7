"""Start policies across a real process restart: a `persisted` agent resumes after its
stored cursor (at-least-once: what it was handling when killed is handled again); a
`current` agent starts at the head and replays nothing."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import anyio
import pytest

from agentkit.rooms import EventInput, Rooms
from support.paths import SUPPORT

ROOM = "restarts"


@contextmanager
def _host(db: Path) -> Iterator[subprocess.Popen[str]]:
    process = subprocess.Popen(
        [sys.executable, str(SUPPORT / "rooms_process.py"), str(db), ROOM],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        assert process.stdout.readline().strip() == "ready"
        yield process
    finally:
        if process.poll() is None:
            process.kill()
        process.wait()
        if process.stdout is not None:
            process.stdout.close()


def _publish(db: Path, *texts: str) -> list[int]:
    async def publish() -> list[int]:
        async with Rooms(store=str(db)) as rooms:
            client = rooms.client("ada", role="owner")
            events = [EventInput(type="chat.message", payload={"text": t}) for t in texts]
            return await client.publish(ROOM, events)

    return anyio.run(publish)


def _seen(db: Path) -> dict[str, list[int]]:
    async def read() -> dict[str, list[int]]:
        async with Rooms(store=str(db)) as rooms:
            client = rooms.client("ada", role="owner")
            found: dict[str, list[int]] = {"seen-p": [], "seen-c": []}
            for event in await client.read(ROOM, types=["measurements.seen"], limit=1000):
                found[event.payload["agent"]].append(event.payload["position"])
            return found

    return anyio.run(read)


def _until(db: Path, agent: str, positions: list[int]) -> dict[str, list[int]]:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        seen = _seen(db)
        if seen[agent][-len(positions) :] == positions:
            return seen
        time.sleep(0.05)
    raise AssertionError(f"{agent} did not handle {positions}: {seen}")


@pytest.mark.timeout(120)
def test_start_policies_across_a_process_restart(tmp_path: Path) -> None:
    db = tmp_path / "rooms.db"
    with _host(db) as first:
        assert _publish(db, "one", "two") == [1, 2]
        _until(db, "seen-p", [1, 2])
        _until(db, "seen-c", [1, 2])
        first.kill()  # SIGKILL: no cleanup at all
    missed = _publish(db, "three", "four")  # nobody runs (after the agents' 4 outputs)
    assert missed == [7, 8]
    with _host(db):
        _until(db, "seen-p", missed)  # resumed after its cursor
        (later,) = _publish(db, "five")
        _until(db, "seen-c", [later])
        seen = _until(db, "seen-p", [later])
    assert seen["seen-p"] == [1, 2, 7, 8, later]
    assert seen["seen-c"] == [1, 2, later]  # `current`: 7 and 8 were not replayed


@pytest.mark.timeout(120)
def test_a_persisted_agent_handles_again_what_it_was_handling_when_killed(
    tmp_path: Path,
) -> None:
    db = tmp_path / "rooms.db"
    with _host(db) as first:
        (slow,) = _publish(db, "slow")
        time.sleep(0.5)  # the handler is in its 2-second pause
        first.kill()
    assert _seen(db)["seen-p"] == []
    with _host(db):
        seen = _until(db, "seen-p", [slow])  # at-least-once
    assert seen["seen-p"] == [slow]


@pytest.mark.anyio
async def test_a_restart_keeps_the_owners_grant_of_an_agent(tmp_path: Path) -> None:
    """The descriptor proposes an agent's first grant; a registration after a restart never
    overwrites what an owner changed since (a revoke included)."""
    from agentkit.testing import make_test_agent

    db = tmp_path / "rooms.db"
    async with Rooms(store=db) as rooms:
        room = await rooms.ensure_room("r", "restart")
        agent = make_test_agent("adder")
        await rooms.register_agent(room.id, agent)
        owner = rooms.client("olga", role="owner")
        participant = agent.descriptor.participant
        proposed = {g.participant: g for g in await owner.list_grants(room.id)}[participant]
        assert proposed.read == agent.descriptor.read
        await owner.set_grant(room.id, participant, read=[], publish=[])
    async with Rooms(store=db) as rooms:
        await rooms.register_agent("r", make_test_agent("adder"))
        owner = rooms.client("olga", role="owner")
        kept = {g.participant: g for g in await owner.list_grants("r")}[participant]
        assert (kept.read, kept.publish) == ((), ())
