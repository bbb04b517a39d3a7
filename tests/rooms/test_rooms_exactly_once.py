"""Exactly-once for persisted agents, across SIGKILLs at random instants, on SQLite and
PostgreSQL: the agent's publications and its cursor's move commit in one transaction, so
every event is answered once, none twice, none skipped."""

from __future__ import annotations

import random
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from agentkit.rooms import AGENT_FAILED, EventInput, Rooms
from support.paths import SUPPORT
from support.pg import postgres_url

ROOM = "once"
EVENTS = 120
KILLS = 8


def _start(store: str, calls: Path) -> subprocess.Popen[str]:
    process = subprocess.Popen(
        [sys.executable, str(SUPPORT / "rooms_counter_process.py"), store, ROOM, str(calls)],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    assert process.stdout.readline().strip() == "ready"
    return process


def _kill(process: subprocess.Popen[str]) -> None:
    if process.poll() is None:
        process.kill()  # SIGKILL: no cleanup, no flush, wherever it is
    process.wait()
    if process.stdout is not None:
        process.stdout.close()


def _publish(store: str, count: int) -> list[int]:
    async def publish() -> list[int]:
        async with Rooms(store=store) as rooms:
            await rooms.ensure_room(ROOM, "exactly once")
            ada = rooms.client("ada", role="owner")
            positions: list[int] = []
            for start in range(0, count, 20):
                batch = [
                    EventInput(type="chat.message", payload={"n": n})
                    for n in range(start, min(count, start + 20))
                ]
                positions += await ada.publish(ROOM, batch)
            return positions

    return anyio.run(publish)


def _answers(store: str) -> tuple[list[dict[str, object]], int]:
    async def read() -> tuple[list[dict[str, object]], int]:
        async with Rooms(store=store) as rooms:
            ada = rooms.client("ada", role="owner")
            found: list[dict[str, object]] = []
            failures = 0
            cursor = None
            while True:
                page = await ada.read(
                    ROOM, types=["measurements.count", AGENT_FAILED], limit=1000, cursor=cursor
                )
                found += [e.payload for e in page if e.type == "measurements.count"]
                failures += sum(1 for e in page if e.type == AGENT_FAILED)
                if page.next is None:
                    return found, failures
                cursor = page.next

    return anyio.run(read)


@pytest.fixture(params=["sqlite", "postgres"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield str(tmp_path / "rooms.db")
    else:
        with postgres_url("once") as url:
            yield url


@pytest.mark.timeout(240)
def test_sigkill_at_random_instants_loses_and_repeats_nothing(store: str, tmp_path: Path) -> None:
    seed = random.randrange(1 << 30)
    chance = random.Random(seed)
    calls = tmp_path / "calls.txt"
    # The agent's first start puts its cursor at the head (0); then the events come.
    process = _start(store, calls)
    asked = _publish(store, EVENTS)
    time.sleep(chance.uniform(0.0, 0.25))
    _kill(process)
    for _ in range(KILLS):
        process = _start(store, calls)
        time.sleep(chance.uniform(0.0, 0.25))
        _kill(process)
    process = _start(store, calls)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            answers, failures = _answers(store)
            if len(answers) >= EVENTS:
                break
            time.sleep(0.1)
    finally:
        _kill(process)
    answers, failures = _answers(store)
    answered = Counter(a["position"] for a in answers)
    twice = sorted(p for p, n in answered.items() if n > 1)
    skipped = sorted(set(asked) - set(answered))
    assert (twice, skipped, failures) == ([], [], 0), f"seed {seed}"
    assert sorted(answered) == asked
    # Each answer carries its event's idempotency key (the same at every attempt).
    assert {a["key"] for a in answers} == {f"{ROOM}/counter/{p}" for p in asked}
    handled = Counter(int(line) for line in calls.read_text().split())
    # The handler ran for every event; more than once only for one a kill interrupted.
    assert set(handled) == set(asked), f"seed {seed}"
    assert sum(handled.values()) - EVENTS <= KILLS + 1, f"seed {seed}: {handled}"
