"""Per-call cost of the store backends on the engine's hot path, and why SQLite runs inline.

Run: `python bench/store_overhead.py [--postgres DSN]` (with `src` on PYTHONPATH).

For each backend and event loop (asyncio, trio) it times `append_events` with a batch of
four events (what the engine writes after a model call) and `read_events` of the last
eight, best of several rounds. For SQLite it also times the same work pushed to a worker
thread with `anyio.to_thread.run_sync`, the alternative to running it inline.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import anyio

from agentkit.events import Result, Text, ToolResult, ToolUse
from agentkit.stores import EventEntry, PostgresStore, RunRecord, SQLiteStore, Store
from agentkit.stores._sql import event_columns

ROUNDS, CALLS = 5, 400


def batch(base: int) -> list[EventEntry]:
    return [
        EventEntry(base, Text(content="Let me add those numbers for you.")),
        EventEntry(base + 1, ToolUse(id="c1", tool="add", input={"a": 1, "b": 2})),
        EventEntry(base + 2, ToolResult(tool_use_id="c1", tool="add", output=3)),
        EventEntry(base + 3, Result(content="3")),
    ]


def threaded(store: SQLiteStore) -> tuple[Callable[..., Awaitable[None]], Callable[..., Any]]:
    """append/read doing exactly the inline work, but in a worker thread."""

    def locked(fn: Callable[..., Any], *args: Any) -> Any:
        with store._lock:
            return fn(store._conn, *args)

    async def append(run_id: str, entries: list[EventEntry]) -> None:
        offsets, data = event_columns(run_id, entries)
        await anyio.to_thread.run_sync(locked, store._ops.append_events, run_id, offsets, data)

    async def read(run_id: str, after: int) -> Any:
        return await anyio.to_thread.run_sync(locked, store._ops.read_events, run_id, after)

    return append, read


async def measure(store: Store, mode: str) -> tuple[float, float]:
    session = uuid.uuid4().hex
    await store.create_session(session, "bench:agent")
    append: Callable[..., Awaitable[Any]] = store.append_events
    read: Callable[..., Awaitable[Any]] = store.read_events
    if mode == "thread":
        assert isinstance(store, SQLiteStore)
        append, read = threaded(store)
    best_append = best_read = float("inf")
    batches = [batch(i * 10) for i in range(CALLS)]  # built outside the timed loop
    for _ in range(ROUNDS):
        run_id = uuid.uuid4().hex
        await store.create_run(RunRecord(run_id, session, "bench:agent", "running", time.time()))
        started = time.perf_counter()
        for entries in batches:
            await append(run_id, entries)
        best_append = min(best_append, (time.perf_counter() - started) / CALLS)
        started = time.perf_counter()
        for _ in range(CALLS):
            await read(run_id, (CALLS - 2) * 10)
        best_read = min(best_read, (time.perf_counter() - started) / CALLS)
        await store.finish_run(run_id, "completed", time.time())  # one running run a session
    return best_append * 1e6, best_read * 1e6


async def main(postgres: str | None, backend: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        cases: list[tuple[str, Callable[[], Store], str]] = [
            ("sqlite :memory:", lambda: SQLiteStore(":memory:"), "inline"),
            ("sqlite :memory:", lambda: SQLiteStore(":memory:"), "thread"),
            ("sqlite file", lambda: SQLiteStore(os.path.join(tmp, f"{backend}.db")), "inline"),
            ("sqlite file", lambda: SQLiteStore(os.path.join(tmp, f"{backend}2.db")), "thread"),
        ]
        schema = f"bench_{uuid.uuid4().hex[:8]}"
        if postgres:
            cases.append(("postgres", lambda: PostgresStore(postgres, schema=schema), "pool"))
        try:
            for name, make, mode in cases:
                store = make()
                append_us, read_us = await measure(store, mode)
                await store.aclose()
                print(
                    f"| {backend:7} | {name:15} | {mode:6} "
                    f"| {append_us:8.1f} us | {read_us:8.1f} us |"
                )
        finally:
            if postgres:
                import psycopg

                with psycopg.connect(postgres, autocommit=True) as conn:
                    conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--postgres", metavar="DSN", default=None)
    args = parser.parse_args()
    print("| loop    | backend         | calls  | append 4 events | read last 8 |")
    print("|---------|-----------------|--------|-----------------|-------------|")
    for loop in ("asyncio", "trio"):
        anyio.run(main, args.postgres, loop, backend=loop)
