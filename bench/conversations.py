"""Conversations on SQLite with the offline test provider: what a prompt costs.

Run: `python bench/conversations.py [--quick] [--json FILE]` (with `src` on PYTHONPATH).

- accept latency: `prompt()` on an idle conversation until it returns (the run accepted
  and stored), p50/p99, beside a bare floor measured in the same run: one INSERT and
  COMMIT on a SQLite file in WAL mode with `synchronous=NORMAL` (the store's settings);
- burst: N conversations prompted at once: accepted runs per second (N / time until the
  last prompt returned) and time from the prompt call to the first output part, p50/p99;
- memory per idle conversation: Python heap (tracemalloc) and RSS growth of the process
  per conversation created and prompted to completion, then left idle.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import resource
import sqlite3
import statistics
import sys
import tempfile
import time
import tracemalloc
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "src"))

from agentkit.conversations import Machine  # noqa: E402
from agentkit.providers import Stop, TextChunk, Usage  # noqa: E402


def _pct(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _rss_kib() -> int:
    try:
        with open("/proc/self/statm") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") // 1024
    except OSError:
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def insert_floor(folder: str, count: int) -> list[float]:
    conn = sqlite3.connect(os.path.join(folder, "floor.db"), isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.execute("CREATE TABLE t (id TEXT PRIMARY KEY, data TEXT)")
    samples = []
    for i in range(count):
        started = time.perf_counter()
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("INSERT INTO t VALUES (?, ?)", (f"row-{i}", "{}"))
        conn.execute("COMMIT")
        samples.append(time.perf_counter() - started)
    conn.close()
    return samples


class _Hello:
    """Answers "Hello there, friend." in three pieces; keeps nothing (the test providers
    of agentkit.testing record every request, which would count as the machine's memory)."""

    name = "hello"

    def resolve_model(self, tier: str | None, model: str | None) -> str:
        return "hello-model"

    async def stream(self, request: Any) -> AsyncIterator[Any]:
        for piece in ("Hello ", "there, ", "friend."):
            yield TextChunk(piece)
        yield Usage(request.model, input_tokens=1, output_tokens=1)
        yield Stop()


def _provider() -> Any:
    return _Hello()


async def _owner(machine: Machine) -> Any:
    await machine.add_member("bench", "owner")
    return machine.client(await machine.member("bench"))


async def accept_latency(folder: str, count: int) -> list[float]:
    async with Machine(
        store=os.path.join(folder, "accept.db"), provider=_provider(), attachment_roots=[folder]
    ) as machine:
        client = await _owner(machine)
        samples = []
        for i in range(count):
            conversation = await client.create_conversation(name=f"c{i}")
            started = time.perf_counter()
            accepted = await conversation.prompt("Hi")
            samples.append(time.perf_counter() - started)
            async for _ in conversation.follow(accepted.run_id):
                pass
        return samples


async def burst(folder: str, count: int) -> dict[str, float]:
    async with Machine(
        store=os.path.join(folder, "burst.db"), provider=_provider(), attachment_roots=[folder]
    ) as machine:
        client = await _owner(machine)
        conversations = [await client.create_conversation() for _ in range(count)]
        accepted_at: list[float] = []
        first_part: list[float] = []
        start = anyio.Event()

        async def one(conversation: Any) -> None:
            await start.wait()
            called = time.perf_counter()
            accepted = await conversation.prompt("Hi")
            accepted_at.append(time.perf_counter())
            async for event in conversation.follow(accepted.run_id):
                if event.type == "output":
                    first_part.append(time.perf_counter() - called)
                    break

        async with anyio.create_task_group() as group:
            for conversation in conversations:
                group.start_soon(one, conversation)
            await anyio.sleep(0.1)
            began = time.perf_counter()
            start.set()
        elapsed = max(accepted_at) - began
        return {
            "conversations": count,
            "accepted_runs_per_s": count / elapsed,
            "first_part_p50_ms": _pct(first_part, 0.5) * 1000,
            "first_part_p99_ms": _pct(first_part, 0.99) * 1000,
        }


async def idle_memory(folder: str, count: int) -> dict[str, float]:
    async with Machine(
        store=os.path.join(folder, "idle.db"), provider=_provider(), attachment_roots=[folder]
    ) as machine:
        client = await _owner(machine)
        warm = await client.create_conversation()
        async for _ in warm.follow((await warm.prompt("Hi")).run_id):
            pass
        gc.collect()
        tracemalloc.start()
        heap_before = tracemalloc.get_traced_memory()[0]
        rss_before = _rss_kib()
        for _ in range(count):
            conversation = await client.create_conversation()
            async for _ in conversation.follow((await conversation.prompt("Hi")).run_id):
                pass
        gc.collect()
        heap_after = tracemalloc.get_traced_memory()[0]
        tracemalloc.stop()
        rss_after = _rss_kib()
        return {
            "conversations": count,
            "heap_bytes_per_conversation": (heap_after - heap_before) / count,
            "rss_bytes_per_conversation": (rss_after - rss_before) * 1024 / count,
        }


async def main(quick: bool) -> dict[str, Any]:
    accept_n, burst_n, idle_n = (50, 100, 100) if quick else (500, 1000, 2000)
    with tempfile.TemporaryDirectory() as folder:
        floor = insert_floor(folder, accept_n)
        accept = await accept_latency(folder, accept_n)
        results: dict[str, Any] = {
            "quick": quick,
            "machine": {
                "python": platform.python_version(),
                "platform": platform.platform(),
                "nproc": os.cpu_count(),
            },
            "accept": {
                "prompts": accept_n,
                "p50_ms": _pct(accept, 0.5) * 1000,
                "p99_ms": _pct(accept, 0.99) * 1000,
                "mean_ms": statistics.fmean(accept) * 1000,
                "floor_p50_ms": _pct(floor, 0.5) * 1000,
                "floor_p99_ms": _pct(floor, 0.99) * 1000,
            },
            "burst": await burst(folder, burst_n),
            "idle": await idle_memory(folder, idle_n),
        }
    return results


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small counts: checks it runs")
    parser.add_argument("--json", metavar="FILE", help="also write the results there")
    args = parser.parse_args()
    results = anyio.run(main, args.quick)
    a, b, i = results["accept"], results["burst"], results["idle"]
    rows = [
        ("prompt() accept p50 / p99", f"{a['p50_ms']:.2f} ms / {a['p99_ms']:.2f} ms"),
        (
            "floor: INSERT + COMMIT p50 / p99",
            f"{a['floor_p50_ms']:.3f} ms / {a['floor_p99_ms']:.3f} ms",
        ),
        (f"{b['conversations']} prompted at once: runs/s", f"{b['accepted_runs_per_s']:.0f}"),
        (
            "time to first part p50 / p99",
            f"{b['first_part_p50_ms']:.1f} ms / {b['first_part_p99_ms']:.1f} ms",
        ),
        (
            "memory per idle conversation (heap / RSS)",
            f"{i['heap_bytes_per_conversation']:.0f} B / {i['rss_bytes_per_conversation']:.0f} B",
        ),
    ]
    print("| measure | value |")
    print("| --- | --- |")
    for name, value in rows:
        print(f"| {name} | {value} |")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))
