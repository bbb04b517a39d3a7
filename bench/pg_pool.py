"""agentkit's PostgreSQL connection pool beside psycopg_pool's `AsyncConnectionPool`.

    python bench/pg_pool.py            # both pools, if psycopg_pool is importable
    python bench/pg_pool.py --quick    # a few operations: the benchmark still runs

50 tasks on asyncio, each running operations of one statement (a primary-key read of
`pg_class`), through a pool of 10 connections; operations per second and the client's CPU
per operation, medians of `--repeats` samples, the two pools alternating. psycopg_pool is
not a dependency of agentkit: install it beside the benchmark
(`pip install --target DIR psycopg-pool` and DIR on PYTHONPATH) to compare.
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
SRC = HERE.parent / "src"
if str(SRC) not in sys.path:
    sys.path.insert(0, str(SRC))

import argparse  # noqa: E402
import asyncio  # noqa: E402
import importlib.util  # noqa: E402
import os  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402
from collections.abc import Awaitable, Callable  # noqa: E402

QUERY = "SELECT 1 FROM pg_class WHERE oid = %s"
TASKS = 50
POOL = 10


async def _samples(
    one: Callable[[], Awaitable[None]], operations: int, repeats: int
) -> list[tuple[float, float]]:
    """(operations per second, client CPU microseconds per operation) per sample."""

    async def worker() -> None:
        for _ in range(operations):
            await one()

    await asyncio.gather(*(worker() for _ in range(TASKS)))  # warm: every connection open
    found = []
    for _ in range(repeats):
        began, cpu = time.perf_counter(), time.process_time()
        await asyncio.gather(*(worker() for _ in range(TASKS)))
        count = TASKS * operations
        found.append(
            (count / (time.perf_counter() - began), (time.process_time() - cpu) / count * 1e6)
        )
    return found


async def agentkit_samples(dsn: str, operations: int, repeats: int) -> list[tuple[float, float]]:
    from agentkit.stores._pg_connections import Connection, ConnectionPool

    pool = ConnectionPool(dsn, POOL)

    async def read(conn: Connection) -> None:
        await conn.execute(QUERY, (1259,))

    try:
        return await _samples(lambda: pool.run(read), operations, repeats)
    finally:
        await pool.aclose()


async def psycopg_pool_samples(
    dsn: str, operations: int, repeats: int
) -> list[tuple[float, float]]:
    from psycopg_pool import AsyncConnectionPool

    pool = AsyncConnectionPool(
        dsn, min_size=POOL, max_size=POOL, kwargs={"autocommit": True}, open=False
    )
    await pool.open()
    await pool.wait()

    async def one() -> None:
        async with pool.connection() as conn:
            await (await conn.execute(QUERY, (1259,))).fetchall()

    try:
        return await _samples(one, operations, repeats)
    finally:
        await pool.close()


def main(dsn: str, quick: bool) -> None:
    pools = [("agentkit", agentkit_samples)]
    if importlib.util.find_spec("psycopg_pool") is not None:
        pools.append(("psycopg_pool", psycopg_pool_samples))
    operations, repeats = (5, 1) if quick else (40, 5)
    found: dict[str, list[tuple[float, float]]] = {name: [] for name, _ in pools}
    for _ in range(1 if quick else 2):  # alternating: the noise falls on both
        for name, pool in pools:
            found[name] += asyncio.run(pool(dsn, operations, repeats))
    print("| pool | operations/s | client CPU per operation |")
    print("|---|---:|---:|")
    for name, samples in found.items():
        rate = statistics.median(s[0] for s in samples)
        cpu = statistics.median(s[1] for s in samples)
        print(f"| {name} | {rate:.0f} | {cpu:.0f} us |")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--dsn", default=os.environ.get("AGENTKIT_TEST_POSTGRES_DSN"))
    args = parser.parse_args()
    if not args.dsn:
        parser.error("needs a PostgreSQL DSN: --dsn or $AGENTKIT_TEST_POSTGRES_DSN")
    main(args.dsn, args.quick)
