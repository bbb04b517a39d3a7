"""Helpers for the tests of a run executed in another process: a run recorded as running
elsewhere (its lease held by another owner), a reader collecting what it yields, and a
wait for a condition."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable

import anyio

from agentkit.events import SessionInit, TurnStart
from agentkit.stores import EventEntry, MemoryStore, RunRecord


async def running_elsewhere(store: MemoryStore) -> None:
    """Session `s` with run `r`, running under another owner's lease, with its first two
    events stored."""
    await store.create_session("s", "agent")
    now = time.time()
    record = RunRecord("r", "s", "agent", "running", now, None, "elsewhere", now, now + 60)
    await store.create_run(
        record,
        [
            EventEntry(0, TurnStart(turn_id="t", session_id="s", user_prompt="hi")),
            EventEntry(1, SessionInit(session_id="s")),
        ],
    )


async def collect(entries: AsyncIterator[EventEntry], into: list[EventEntry]) -> None:
    """Append every entry `entries` yields to `into`, as it comes."""
    async for entry in entries:
        into.append(entry)


async def until(predicate: Callable[[], object], limit: float = 10.0) -> None:
    """Wait until `predicate()` is true, at most `limit` seconds."""
    with anyio.fail_after(limit):
        while not predicate():  # noqa: ASYNC110 (what it looks at grows without an event)
            await anyio.sleep(0.005)
