"""Rooms: events per second through one room with 1, 4 and 16 message-statistics agents.

Run: `python bench/rooms.py [--quick] [--json FILE]` (with `src` on PYTHONPATH; the
PostgreSQL figures need `AGENTKIT_TEST_POSTGRES_DSN`).

- throughput: M chat messages published one at a time while N agents each publish a word
  count for every one; the time from the first publication to the last derived event
  stored gives input messages per second and committed events (M + N*M) per second;
- latency: from a message's publication to each agent's derived event, as a subscriber of
  the room sees it, p50/p99: under that saturating load (mostly queueing), and at a
  paced 20 messages per second;
- the floor, in the same run: a bare loop appending the same number of rows (one
  transaction each, the next position read and bumped like the store does) to the same
  kind of database, with the same driver;
- memory: Python heap (tracemalloc) per idle room and per idle agent worker.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
import tracemalloc
import uuid
from pathlib import Path
from typing import Any

import anyio

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "src"))

from agentkit.rooms import (  # noqa: E402
    EventInput,
    RoomAgentDescriptor,
    RoomAgentRequest,
    Rooms,
)


class WordCount:
    def __init__(self, index: int) -> None:
        self.descriptor = RoomAgentDescriptor(
            id=f"stats-{index}",
            read=("chat.message",),
            publish=("measurements.word_count",),
            selects=("chat.message",),
        )

    async def handle(self, request: RoomAgentRequest) -> list[EventInput]:
        text = request.event.payload["text"]
        payload = {"position": request.event.position, "words": len(text.split())}
        return [EventInput(type="measurements.word_count", payload=payload)]


def _pct(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def through_room(
    location: str, agents: int, messages: int, interval: float = 0.0
) -> dict[str, float]:
    """Publish `messages` chat messages with `agents` agents at work, `interval` seconds
    apart (0: as fast as it goes); wait for every derived event."""
    async with Rooms(store=location, poll_interval=0.5) as rooms:
        owner = rooms.client("bench", role="owner")
        room = await owner.create_room(f"bench-{uuid.uuid4().hex[:6]}")
        for index in range(agents):
            await rooms.register_agent(room.id, WordCount(index))
        sent: dict[int, float] = {}
        latencies: list[float] = []
        expected = agents * messages
        done = anyio.Event()

        async def watch() -> None:
            async for event in owner.subscribe(room.id, types=["measurements.*"]):
                latencies.append(time.perf_counter() - sent[event.payload["position"]])
                if len(latencies) == expected:
                    done.set()
                    return

        async with anyio.create_task_group() as group:
            group.start_soon(watch)
            started = time.perf_counter()
            for index in range(messages):
                message = EventInput(type="chat.message", payload={"text": f"word {index} here"})
                at = time.perf_counter()
                (position,) = await owner.publish(room.id, message)
                sent[position] = at
                if interval:
                    await anyio.sleep(interval)
            with anyio.fail_after(300):
                await done.wait()
            elapsed = time.perf_counter() - started
            group.cancel_scope.cancel()
    return {
        "messages_per_s": messages / elapsed,
        "events_per_s": (messages + expected) / elapsed,
        "latency_p50_ms": statistics.median(latencies) * 1000,
        "latency_p99_ms": _pct(latencies, 0.99) * 1000,
        "events": messages + expected,
        "seconds": elapsed,
    }


async def floor(location: str, rows: int) -> float:
    """Rows per second of a bare loop doing what an append does at the least: in one
    transaction, bump the room's head and insert the row at it."""
    if location.startswith("postgresql://"):
        import psycopg

        def run() -> float:
            with psycopg.connect(location, autocommit=True) as conn:
                table = f"floor_{uuid.uuid4().hex[:8]}"
                conn.execute(f"CREATE TABLE {table}_head (id int PRIMARY KEY, head bigint)")
                conn.execute(
                    f"CREATE TABLE {table} (position bigint PRIMARY KEY, type text, data text)"
                )
                conn.execute(f"INSERT INTO {table}_head VALUES (1, 0)")
                started = time.perf_counter()
                for _ in range(rows):
                    with conn.transaction():
                        (head,) = conn.execute(
                            f"UPDATE {table}_head SET head = head + 1 WHERE id = 1 RETURNING head"
                        ).fetchone()  # type: ignore[misc]
                        conn.execute(
                            f"INSERT INTO {table} VALUES (%s, %s, %s)",
                            (head, "chat.message", '{"text": "x"}'),
                        )
                elapsed = time.perf_counter() - started
                conn.execute(f"DROP TABLE {table}")
                conn.execute(f"DROP TABLE {table}_head")
                return rows / elapsed

        return await anyio.to_thread.run_sync(run)
    import sqlite3

    def run_sqlite() -> float:
        conn = sqlite3.connect(location + ".floor", isolation_level=None)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute("CREATE TABLE head (id INTEGER PRIMARY KEY, head INTEGER)")
        conn.execute("CREATE TABLE events (position INTEGER PRIMARY KEY, type TEXT, data TEXT)")
        conn.execute("INSERT INTO head VALUES (1, 0)")
        started = time.perf_counter()
        for _ in range(rows):
            conn.execute("BEGIN IMMEDIATE")
            (head,) = conn.execute(
                "UPDATE head SET head = head + 1 WHERE id = 1 RETURNING head"
            ).fetchone()
            conn.execute("INSERT INTO events VALUES (?, ?, ?)", (head, "chat.message", "{}"))
            conn.execute("COMMIT")
        elapsed = time.perf_counter() - started
        conn.close()
        return rows / elapsed

    # The same way the store runs its SQLite calls: in a worker thread.
    return await anyio.to_thread.run_sync(run_sqlite)


async def idle_memory(count: int) -> dict[str, float]:
    """Heap per idle room (rooms live in the store: a host keeps nothing per room) and
    per idle agent worker (a task waiting for the room's next publication)."""
    async with Rooms(store=":memory:", poll_interval=60) as rooms:
        owner = rooms.client("bench", role="owner")
        tracemalloc.start()
        before = tracemalloc.get_traced_memory()[0]
        ids = [(await owner.create_room(f"r{i}")).id for i in range(count)]
        per_room = (tracemalloc.get_traced_memory()[0] - before) / count
        before = tracemalloc.get_traced_memory()[0]
        for index, room_id in enumerate(ids):
            await rooms.register_agent(room_id, WordCount(index))
        per_worker = (tracemalloc.get_traced_memory()[0] - before) / count
        tracemalloc.stop()
    return {"heap_per_room_bytes": per_room, "heap_per_worker_bytes": per_worker}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a few seconds: it still runs")
    parser.add_argument("--json", help="write the results to this file")
    args = parser.parse_args()
    messages = 20 if args.quick else 300
    repeats = 1 if args.quick else 3
    counts = (1, 4) if args.quick else (1, 4, 16)
    results: dict[str, Any] = {
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count()},
        "messages": messages,
        "repeats": repeats,
    }
    backends = {"sqlite": None}
    dsn = os.environ.get("AGENTKIT_TEST_POSTGRES_DSN")
    if dsn:
        backends["postgresql"] = dsn
    with tempfile.TemporaryDirectory() as folder:
        for backend, dsn_or_none in backends.items():
            for agents in counts:
                runs = []
                floors = []
                for repeat in range(repeats):
                    location = dsn_or_none or os.path.join(folder, f"r-{agents}-{repeat}.db")
                    runs.append(anyio.run(through_room, location, agents, messages))
                    rows = messages * (agents + 1)
                    floors.append(anyio.run(floor, location, rows))
                key = f"{backend}/{agents}"
                median = {name: statistics.median(run[name] for run in runs) for name in runs[0]}
                median["floor_rows_per_s"] = statistics.median(floors)
                median["ratio_to_floor"] = median["floor_rows_per_s"] / median["events_per_s"]
                results[key] = median
                print(
                    f"{key:>14}: {median['messages_per_s']:8.0f} msg/s "
                    f"{median['events_per_s']:8.0f} events/s  "
                    f"p50 {median['latency_p50_ms']:6.1f} ms  "
                    f"p99 {median['latency_p99_ms']:6.1f} ms"
                    f"  floor {median['floor_rows_per_s']:8.0f} rows/s "
                    f"(x{median['ratio_to_floor']:.1f})",
                    flush=True,
                )
        for backend, dsn_or_none in backends.items():
            for agents in counts:
                location = dsn_or_none or os.path.join(folder, f"paced-{agents}.db")
                paced = anyio.run(through_room, location, agents, messages // 3, 0.05)
                key = f"{backend}/{agents}/paced"
                results[key] = {k: paced[k] for k in ("latency_p50_ms", "latency_p99_ms")}
                print(
                    f"{key:>21}: p50 {paced['latency_p50_ms']:6.1f} ms  "
                    f"p99 {paced['latency_p99_ms']:6.1f} ms (20 msg/s)",
                    flush=True,
                )
    results["idle"] = anyio.run(idle_memory, 200 if args.quick else 1000)
    print(
        f"idle: {results['idle']['heap_per_room_bytes']:.0f} B per room, "
        f"{results['idle']['heap_per_worker_bytes']:.0f} B per agent worker"
    )
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
