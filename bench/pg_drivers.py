"""PostgreSQL drivers on this machine: what `PostgresStore` should run its statements on.

    .venv/bin/python bench/pg_drivers.py [--dsn DSN] [--reps 5]

The database is `--dsn`, else `$AGENTKIT_TEST_POSTGRES_DSN`, else
`postgresql://postgres@127.0.0.1:5432/test`. Everything happens in a scratch schema,
dropped at the end.

Drivers (columns):

- `psycopg async`: psycopg 3's `AsyncConnection`, on asyncio;
- `asyncpg`: asyncpg's connections, on asyncio. Not a project dependency: install it into
  the venv for this script only (`.venv/bin/pip install asyncpg`); skipped when missing;
- `threads/op (asyncio)` and `threads/op (trio)`: synchronous psycopg, each operation in
  an anyio worker thread (one hop per operation: the store before the async driver);
- `threads/stmt (asyncio)`: synchronous psycopg, one worker-thread hop per statement (what
  a thread adapter that hops per call would cost).

Workloads (rows), each sequential (one task on one connection) and concurrent (16 tasks
over a pool of 8 connections):

- `select`: a one-row SELECT by primary key, one round trip;
- `append`: a transaction shaped like the store's `append_events`: BEGIN; an advisory
  transaction lock on the run; SELECT max(pos); INSERT of 4 events with unnest; COMMIT
  (each task appends to a run of its own, as concurrent runs do);
- `append+notify stmt`: the same with a `pg_notify` in the transaction, as a statement of
  its own (one more round trip);
- `append+notify cte`: the notification riding on the INSERT instead (`WITH changed AS
  (INSERT ... RETURNING 1) SELECT pg_notify(...) FROM changed ...`): what the store does;
- `insert`, `insert cte+notify`, `insert tx+notify`: a single-row INSERT alone, as one
  statement with the notification in a CTE (the store's way), and wrapped in
  BEGIN/.../pg_notify/COMMIT.

Each cell is the median of `--reps` repetitions, in operations per second (the drivers
take turns within each repetition, after a first warm-up round).
"""

from __future__ import annotations

import argparse
import functools
import os
import re
import statistics
import time
import uuid
from collections.abc import Callable
from typing import Any

import anyio
import psycopg

DEFAULT_DSN = "postgresql://postgres@127.0.0.1:5432/test"
CONCURRENT_TASKS, POOL = 16, 8
OPS = {"select": 2000, "append": 640}  # per repetition; the other writes count as append
EVENTS = ["x" * 200] * 4  # four events of a model step, about the size of text deltas

Statements = list[tuple[str, tuple[Any, ...]]]


class Scratch:
    """The scratch schema's statements, each a list of (SQL with %s, parameters)."""

    def __init__(self, schema: str) -> None:
        self.schema = schema
        self.items = f'"{schema}".items'
        self.events = f'"{schema}".events'
        self.singles = f'"{schema}".singles'
        self.channel = f"bench.{schema}"

    def setup(self) -> list[str]:
        return [
            f'CREATE SCHEMA "{self.schema}"',
            f"CREATE TABLE {self.items} (id integer PRIMARY KEY, data text NOT NULL)",
            f"INSERT INTO {self.items} SELECT i, md5(i::text) FROM generate_series(0, 999) i",
            f"CREATE TABLE {self.events} (run_id text, pos bigint, data text NOT NULL, "
            "PRIMARY KEY (run_id, pos))",
            f"CREATE TABLE {self.singles} (id text PRIMARY KEY, data text NOT NULL)",
        ]

    def select(self, i: int) -> Statements:
        return [(f"SELECT id, data FROM {self.items} WHERE id = %s", (i % 1000,))]

    def append(self, run_id: str, base: int, notify: str = "") -> Statements:
        """The body of an append transaction (without BEGIN and COMMIT); `notify` is
        where the notification goes: nowhere (""), a statement of its own ("stmt"), or
        the INSERT ("cte")."""
        offsets = [base + k for k in range(len(EVENTS))]
        insert = (
            f"INSERT INTO {self.events} (run_id, pos, data) "
            "SELECT %s, p, d FROM unnest(%s::bigint[], %s::text[]) AS u (p, d)"
        )
        params: tuple[Any, ...] = (run_id, offsets, EVENTS)
        topics = (self.channel, [f"run:{run_id}"])
        if notify == "cte":
            insert = (
                f"WITH changed AS ({insert} RETURNING 1) SELECT 1, pg_notify(%s, topic) "
                "FROM changed CROSS JOIN unnest(%s::text[]) AS topic"
            )
            params += topics
        body: Statements = [
            ("SELECT pg_advisory_xact_lock(hashtext('bench ' || %s))", (run_id,)),
            (f"SELECT coalesce(max(pos), -1) FROM {self.events} WHERE run_id = %s", (run_id,)),
            (insert, params),
        ]
        if notify == "stmt":
            body.append(("SELECT pg_notify(%s, topic) FROM unnest(%s::text[]) AS topic", topics))
        return body

    def insert(self, key: str) -> Statements:
        return [(f"INSERT INTO {self.singles} (id, data) VALUES (%s, %s)", (key, "{}"))]

    def insert_cte_notify(self, key: str) -> Statements:
        return [
            (
                f"WITH new AS (INSERT INTO {self.singles} (id, data) VALUES (%s, %s) "
                "RETURNING 1) SELECT pg_notify(%s, %s) FROM new",
                (key, "{}", self.channel, f"session:{key}"),
            )
        ]

    def insert_notify(self, key: str) -> Statements:
        """The body of a transaction: the INSERT, then the notification."""
        return [
            *self.insert(key),
            ("SELECT pg_notify(%s, %s)", (self.channel, f"session:{key}")),
        ]


def dollar_params(query: str) -> str:
    """`%s` placeholders as asyncpg's `$1`, `$2`, ..."""
    counter = iter(range(1, 1000))
    return re.sub(r"%s", lambda _: f"${next(counter)}", query)


# --- drivers: connect, run statements (in a transaction or not), close -------------------


class AsyncDriver:
    """An asyncio driver whose connections have `transaction()`, as both here do."""

    backend = "asyncio"

    def __init__(self, dsn: str) -> None:
        self.dsn = dsn

    async def run(self, conn: Any, statements: Statements, transaction: bool) -> None:
        if transaction:
            async with conn.transaction():
                await self._each(conn, statements)
        else:
            await self._each(conn, statements)

    async def _each(self, conn: Any, statements: Statements) -> None:
        raise NotImplementedError

    async def close(self, conn: Any) -> None:
        await conn.close()


class PsycopgAsync(AsyncDriver):
    name = "psycopg async"

    async def connect(self) -> Any:
        return await psycopg.AsyncConnection.connect(self.dsn, autocommit=True)

    async def _each(self, conn: Any, statements: Statements) -> None:
        for query, params in statements:
            cur = await conn.execute(query, params)
            if cur.description is not None:
                await cur.fetchall()


class Asyncpg(AsyncDriver):
    name = "asyncpg"

    def __init__(self, dsn: str) -> None:
        super().__init__(dsn)
        self._sql: dict[str, str] = {}

    async def connect(self) -> Any:
        import asyncpg

        return await asyncpg.connect(self.dsn)

    async def _each(self, conn: Any, statements: Statements) -> None:
        for query, params in statements:
            sql = self._sql.get(query)
            if sql is None:
                sql = self._sql[query] = dollar_params(query)
            await conn.fetch(sql, *params)


def _run_sync(conn: psycopg.Connection[Any], statements: Statements, transaction: bool) -> None:
    def each() -> None:
        for query, params in statements:
            cur = conn.execute(query, params)
            if cur.description is not None:
                cur.fetchall()

    if transaction:
        with conn.transaction():
            each()
    else:
        each()


class ThreadPerOperation:
    """The store's approach before the async driver: the whole operation in one hop."""

    def __init__(self, dsn: str, backend: str) -> None:
        self.dsn = dsn
        self.backend = backend
        self.name = f"threads/op ({backend})"

    async def connect(self) -> Any:
        return await anyio.to_thread.run_sync(lambda: psycopg.connect(self.dsn, autocommit=True))

    async def run(self, conn: Any, statements: Statements, transaction: bool) -> None:
        await anyio.to_thread.run_sync(_run_sync, conn, statements, transaction)

    async def close(self, conn: Any) -> None:
        await anyio.to_thread.run_sync(conn.close)


class ThreadPerStatement(ThreadPerOperation):
    """Synchronous psycopg with a worker-thread hop for every statement, BEGIN and COMMIT."""

    def __init__(self, dsn: str, backend: str) -> None:
        super().__init__(dsn, backend)
        self.name = f"threads/stmt ({backend})"

    async def run(self, conn: Any, statements: Statements, transaction: bool) -> None:
        if transaction:
            await anyio.to_thread.run_sync(conn.execute, "BEGIN")
        try:
            for statement in statements:
                await anyio.to_thread.run_sync(_run_sync, conn, [statement], False)
        except BaseException:
            if transaction:
                await anyio.to_thread.run_sync(conn.execute, "ROLLBACK")
            raise
        if transaction:
            await anyio.to_thread.run_sync(conn.execute, "COMMIT")


Driver = AsyncDriver | ThreadPerOperation


# --- workloads ---------------------------------------------------------------------------

# name -> (ops per repetition, whether in a transaction, statements of op `i` of task `t`)
Workload = tuple[int, bool, Callable[[Scratch, str, int], Statements]]


def workloads() -> dict[str, Workload]:
    writes = OPS["append"]
    return {
        "select": (OPS["select"], False, lambda s, task, i: s.select(i)),
        "append": (writes, True, lambda s, task, i: s.append(task, 4 * i)),
        "append+notify stmt": (writes, True, lambda s, task, i: s.append(task, 4 * i, "stmt")),
        "append+notify cte": (writes, True, lambda s, task, i: s.append(task, 4 * i, "cte")),
        "insert": (writes, False, lambda s, task, i: s.insert(f"{task}.{i}")),
        "insert cte+notify": (writes, False, lambda s, task, i: s.insert_cte_notify(f"{task}.{i}")),
        "insert tx+notify": (writes, True, lambda s, task, i: s.insert_notify(f"{task}.{i}")),
    }


async def measure(
    driver: Driver, scratch: Scratch, workload: Workload, tasks: int, pool_size: int
) -> float:
    """Operations per second of one repetition: `tasks` tasks sharing `pool_size`
    connections, each doing its share of the workload's operations."""
    ops, transaction, statements = workload
    conns = [await driver.connect() for _ in range(pool_size)]
    send, receive = anyio.create_memory_object_stream[Any](pool_size)
    for conn in conns:
        send.send_nowait(conn)
    share = ops // tasks
    # Made before the clock starts: ids of their own for this repetition's tasks.
    plans = [
        [statements(scratch, f"{uuid.uuid4().hex[:12]}", i) for i in range(share)]
        for _ in range(tasks)
    ]

    async def worker(plan: list[Statements]) -> None:
        for body in plan:
            conn = await receive.receive()
            try:
                await driver.run(conn, body, transaction)
            finally:
                send.send_nowait(conn)

    started = time.perf_counter()
    async with anyio.create_task_group() as group:
        for plan in plans:
            group.start_soon(worker, plan)
    elapsed = time.perf_counter() - started
    for conn in conns:
        await driver.close(conn)
    return share * tasks / elapsed


async def one_round(
    driver: Driver, scratch: Scratch, names: list[str], warm_up: bool
) -> dict[tuple[str, str], float]:
    """One repetition of every workload, sequential and concurrent, on `driver`."""
    results: dict[tuple[str, str], float] = {}
    table = workloads()
    for name in names:
        for mode, tasks, pool_size in (("seq", 1, 1), ("16/8", CONCURRENT_TASKS, POOL)):
            if warm_up:
                await measure(driver, scratch, table[name], tasks, pool_size)
            results[(name, mode)] = await measure(driver, scratch, table[name], tasks, pool_size)
    return results


def print_table(
    names: list[str], columns: list[str], cells: dict[str, dict[tuple[str, str], float]]
) -> None:
    rows = [(name, mode) for name in names for mode in ("seq", "16/8")]
    widths = [max(len(c), 9) for c in columns]
    head = f"| {'workload':18} | {'tasks':5} | " + " | ".join(
        c.rjust(w) for c, w in zip(columns, widths, strict=True)
    )
    print(head + " |")
    print("|" + "|".join("-" * (len(part) + 2) for part in head[2:].split(" | ")) + "|")
    for name, mode in rows:
        values = [
            f"{cells[c][(name, mode)]:,.0f}" if (name, mode) in cells.get(c, {}) else "-"
            for c in columns
        ]
        print(
            f"| {name:18} | {mode:5} | "
            + " | ".join(v.rjust(w) for v, w in zip(values, widths, strict=True))
            + " |"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dsn", default=os.environ.get("AGENTKIT_TEST_POSTGRES_DSN", DEFAULT_DSN))
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument(
        "--only", nargs="*", choices=list(workloads()), help="workloads to run (default: all)"
    )
    args = parser.parse_args()
    names = args.only or list(workloads())
    scratch = Scratch(f"bench_drivers_{uuid.uuid4().hex[:8]}")
    drivers: list[Driver] = [PsycopgAsync(args.dsn)]
    try:
        import asyncpg  # noqa: F401
    except ImportError:
        print("asyncpg is not installed: skipped (`.venv/bin/pip install asyncpg` to include it)")
    else:
        drivers.append(Asyncpg(args.dsn))
    drivers += [
        ThreadPerOperation(args.dsn, "asyncio"),
        ThreadPerOperation(args.dsn, "trio"),
        ThreadPerStatement(args.dsn, "asyncio"),
    ]
    with psycopg.connect(args.dsn, autocommit=True) as conn:
        version = conn.execute("SHOW server_version").fetchone()
        for statement in scratch.setup():
            conn.execute(statement)
    runs: dict[str, list[dict[tuple[str, str], float]]] = {d.name: [] for d in drivers}
    try:
        # Repetitions outermost, the drivers taking turns within each: a machine whose
        # load changes during the benchmark weighs on every driver alike.
        for rep in range(args.reps):
            for driver in drivers:
                run = functools.partial(one_round, driver, scratch, names, rep == 0)
                runs[driver.name].append(anyio.run(run, backend=driver.backend))
    finally:
        with psycopg.connect(args.dsn, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{scratch.schema}" CASCADE')
    print(
        f"PostgreSQL {version[0] if version else '?'} on loopback, {os.cpu_count()} CPUs, "
        f"psycopg {psycopg.__version__}; operations/s, median of {args.reps}"
    )
    cells = {
        name: {cell: statistics.median(rep[cell] for rep in reps) for cell in reps[0]}
        for name, reps in runs.items()
    }
    print_table(names, [d.name for d in drivers], cells)


if __name__ == "__main__":
    main()
