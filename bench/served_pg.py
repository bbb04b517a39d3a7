"""A served conversation run on SQLite and on PostgreSQL, side by side: SQL statements
(counted by PostgreSQL itself) and server CPU per run.

    python bench/served_pg.py          # full run: a table, and bench/results-served-pg.json
    python bench/served_pg.py --quick    # a few seconds: checks the benchmark still runs

One `agentkit serve` process per store (`bench/http.py`'s zero-latency provider: "Hello
there, friend." in three pieces), on a fresh SQLite file and on a fresh PostgreSQL
database. One client, sequential: each run is `POST /v1/conversations/{id}/runs` (the
accept), then its SSE stream read to the end (one model step, then the end), on
conversations created beforehand (not counted). Per run: the server's CPU time, the
accept's latency, and on PostgreSQL the statements the server sent.

The statements are counted by PostgreSQL: the server's store connects with
`options=-c log_statement=all` (a setting of its own sessions only), so PostgreSQL logs
every statement the server runs (a pipelined or extended-protocol one as `execute`, a
simple one as `statement`); the benchmark reads its server log (`pg_read_file`, as a
superuser, `--pg-log`) before and after, and counts this database's lines. The store
itself carries no counter. Without a readable log, the count is left out.

The floor is SQLite: the goal is PostgreSQL's CPU per run at most 1.5x SQLite's, in the
same run, medians of `--repeats` samples.
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
SRC = ROOT / "src"
if sys.path and Path(sys.path[0] or ".").resolve() == HERE:
    del sys.path[0]  # `bench/http.py` would shadow the standard library's `http`
for entry in (str(SRC), str(ROOT)):
    if entry not in sys.path:
        sys.path.insert(0, entry)

import argparse  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import re  # noqa: E402
import statistics  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from collections import Counter  # noqa: E402
from collections.abc import Iterator  # noqa: E402
from contextlib import contextmanager  # noqa: E402
from typing import Any  # noqa: E402
from urllib.parse import quote  # noqa: E402

import anyio  # noqa: E402
from bench.http import (  # noqa: E402
    SERVER_PROVIDER,
    Load,
    Server,
    _pct,
    first_event,
    running,
)

RESULTS = HERE / "results-served-pg.json"
PG_LOG = "/var/log/postgresql/postgresql-15-main.log"
_LOGGED = re.compile(r"@(\S+) LOG:  (?:statement|execute [^:]*): (.*)")


def serve_command(folder: Path, store_url: str) -> list[str]:
    return [
        sys.executable, "-m", "agentkit", "serve",
        "--db", store_url,
        "--port", "0",
        "--provider", SERVER_PROVIDER,
        "--attachment-root", str(folder),
    ]  # fmt: skip


class StatementLog:
    """The statements PostgreSQL logged for one database, read through `pg_read_file`."""

    def __init__(self, admin_dsn: str, path: str, database: str) -> None:
        self.admin_dsn = admin_dsn
        self.path = path
        self.database = database

    def _query(self, sql: str, *params: Any) -> Any:
        import psycopg

        with psycopg.connect(self.admin_dsn, autocommit=True) as conn:
            row = conn.execute(sql, params).fetchone()
            return None if row is None else row[0]

    def size(self) -> int | None:
        try:
            return int(self._query("SELECT size FROM pg_stat_file(%s)", self.path))
        except Exception:
            return None

    def since(self, offset: int) -> list[str]:
        """The statements of this database logged after byte `offset`."""
        end = self.size() or offset
        text = self._query("SELECT pg_read_file(%s, %s, %s)", self.path, offset, end - offset)
        found = []
        for line in (text or "").splitlines():
            match = _LOGGED.search(line)
            if match and match.group(1) == self.database:
                found.append(match.group(2))
        return found


@contextmanager
def fresh_database(admin_dsn: str) -> Iterator[tuple[str, str]]:
    """A new database on the admin DSN's server: its name and a URL whose sessions log
    every statement."""
    import psycopg
    from psycopg.conninfo import conninfo_to_dict, make_conninfo

    name = f"agentkit_bench_served_{os.getpid()}_{time.monotonic_ns() % 100000}"
    with psycopg.connect(admin_dsn, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        parts = conninfo_to_dict(admin_dsn)
        user = parts.get("user", "postgres")
        host = str(parts.get("host", "127.0.0.1"))
        port = parts.get("port", "5432")
        auth = f"{user}:{quote(str(parts['password']))}" if parts.get("password") else user
        options = f"options={quote('-c log_statement=all')}"
        if host.startswith("/"):  # a Unix socket's folder: a query parameter
            yield name, f"postgresql://{auth}@/{name}?host={quote(host)}&port={port}&{options}"
        else:
            yield name, f"postgresql://{auth}@{host}:{port}/{name}?{options}"
    finally:
        with psycopg.connect(make_conninfo(admin_dsn), autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


async def owner_token(store_url: str) -> str:
    from agentkit.conversations import Members
    from agentkit.stores import open_store

    store = open_store(store_url)
    try:
        return await Members(store).add("bench", "owner")
    finally:
        await store.aclose()


async def conversations(load: Load, count: int) -> list[str]:
    ids = []
    for _ in range(count):
        created = await load[0].post("/v1/conversations", json={})
        created.raise_for_status()
        ids.append(created.json()["id"])
    return ids


async def served_runs(load: Load, server: Server, ids: list[str]) -> dict[str, Any]:
    """One run on each conversation, one after another: accept, then read its events to
    the end. The server's CPU per run and the accept's latency."""
    client = load[0]
    accept_ms: list[float] = []
    cpu = server.cpu_seconds()
    for conversation in ids:
        path = f"/v1/conversations/{conversation}/runs"
        began = time.perf_counter()
        response = await client.post(path, json={"prompt": "Hi"})
        accept_ms.append((time.perf_counter() - began) * 1000)
        if response.status_code != 202:
            raise RuntimeError(f"POST {path}: {response.status_code} {response.text}")
        async with client.stream("GET", f"{path}/{response.json()['runId']}/events") as s:
            _, done = await first_event(s)
        if not done:
            raise RuntimeError(f"the run of {conversation} did not complete")
    cpu = server.cpu_seconds() - cpu
    return {
        "server_cpu_ms_per_run": cpu / len(ids) * 1000,
        "accept_p50_ms": _pct(accept_ms, 0.5),
        "accept_p99_ms": _pct(accept_ms, 0.99),
    }


def sample(
    store_url: str, folder: Path, count: int, warm: int, log: StatementLog | None
) -> dict[str, Any]:
    """A server on `store_url`: `warm` runs, then `count` measured ones (their statements
    counted in `log`)."""
    token = anyio.run(owner_token, store_url, backend="asyncio")
    with running(serve_command(folder, store_url), folder) as server:

        async def measured() -> tuple[dict[str, Any], list[str] | None]:
            async with Load(server.url, token, 1) as load:
                await served_runs(load, server, await conversations(load, warm))
                ids = await conversations(load, count)
                offset = None if log is None else log.size()
                result = await served_runs(load, server, ids)
            if log is None or offset is None:
                return result, None
            await anyio.sleep(0.2)  # the backends write the log: let the last lines land
            return result, log.since(offset)

        result, statements = anyio.run(measured, backend="asyncio")
    if statements is not None:
        result["statements_per_run"] = len(statements) / count
        kinds = Counter(_kind(statement) for statement in statements)
        result["statements_by_kind"] = {k: v / count for k, v in kinds.most_common()}
    return result


def sqlite_sample(count: int, warm: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="agentkit-bench-served-") as name:
        return sample(str(Path(name) / "machine.db"), Path(name), count, warm, None)


def postgres_sample(admin_dsn: str, log_path: str, count: int, warm: int) -> dict[str, Any]:
    with (
        tempfile.TemporaryDirectory(prefix="agentkit-bench-served-") as name,
        fresh_database(admin_dsn) as (database, url),
    ):
        log = StatementLog(admin_dsn, log_path, database)
        return sample(url, Path(name), count, warm, log)


def _kind(statement: str) -> str:
    """A statement's first words and table, to say where the statements go."""
    words = re.sub(r"\s+", " ", statement).strip()
    table = re.search(r"agentkit_\w+", words)
    return f"{words[:40]}... [{table.group(0) if table else '-'}]"


def _median(samples: list[dict[str, Any]], key: str) -> float | None:
    values = [s[key] for s in samples if s.get(key) is not None]
    return statistics.median(values) if values else None


def main(quick: bool, repeats: int, count: int, dsn: str | None, log_path: str) -> dict[str, Any]:
    warm = 3 if quick else 10
    results: dict[str, Any] = {"quick": quick, "runs_per_sample": count, "repeats": repeats}
    sqlite, postgres = [], []
    for _ in range(repeats):  # interleaved: the machine's noise falls on both alike
        sqlite.append(sqlite_sample(count, warm))
        if dsn:
            postgres.append(postgres_sample(dsn, log_path, count, warm))
    results["sqlite"] = {"samples": sqlite}
    for key in ("server_cpu_ms_per_run", "accept_p50_ms", "accept_p99_ms"):
        results["sqlite"][key] = _median(sqlite, key)
    if postgres:
        results["postgresql"] = {"samples": postgres}
        for key in (
            "server_cpu_ms_per_run",
            "accept_p50_ms",
            "accept_p99_ms",
            "statements_per_run",
        ):
            results["postgresql"][key] = _median(postgres, key)
        results["postgresql"]["statements_by_kind"] = postgres[-1].get("statements_by_kind")
        ratio = (
            results["postgresql"]["server_cpu_ms_per_run"]
            / results["sqlite"]["server_cpu_ms_per_run"]
        )
        results["cpu_pg_over_sqlite"] = ratio
    return results


def table(results: dict[str, Any]) -> str:
    pg = results.get("postgresql", {})
    lite = results["sqlite"]

    def cell(value: float | None) -> str:
        return "-" if value is None else f"{value:.2f}"

    rows = [
        "| per served run | SQLite | PostgreSQL |",
        "|---|---:|---:|",
        f"| server CPU, ms | {cell(lite['server_cpu_ms_per_run'])} "
        f"| {cell(pg.get('server_cpu_ms_per_run'))} |",
        f"| accept p50, ms | {cell(lite['accept_p50_ms'])} | {cell(pg.get('accept_p50_ms'))} |",
        f"| accept p99, ms | {cell(lite['accept_p99_ms'])} | {cell(pg.get('accept_p99_ms'))} |",
        f"| SQL statements (PostgreSQL's log) | - | {cell(pg.get('statements_per_run'))} |",
    ]
    if "cpu_pg_over_sqlite" in results:
        rows.append(
            f"\nPostgreSQL CPU / SQLite CPU: {results['cpu_pg_over_sqlite']:.2f}x "
            "(goal: at most 1.5x)"
        )
    if pg.get("statements_by_kind"):
        rows.append("\nstatements per run, by kind:")
        rows += [f"  {v:5.2f}  {k}" for k, v in pg["statements_by_kind"].items()]
    return "\n".join(rows)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--repeats", type=int, default=None)
    parser.add_argument("--runs", type=int, default=None, help="runs per sample")
    parser.add_argument(
        "--dsn",
        default=os.environ.get("AGENTKIT_TEST_POSTGRES_DSN"),
        help="a PostgreSQL superuser's DSN (default $AGENTKIT_TEST_POSTGRES_DSN); "
        "without it, SQLite only",
    )
    parser.add_argument("--pg-log", default=PG_LOG, help="the PostgreSQL server's log file")
    parser.add_argument("--json", default=None, help="where to write the results")
    args = parser.parse_args()
    repeats = args.repeats or (1 if args.quick else 5)
    count = args.runs or (5 if args.quick else 100)
    found = main(args.quick, repeats, count, args.dsn, args.pg_log)
    print(table(found))
    output = Path(args.json) if args.json else (None if args.quick else RESULTS)
    if output is not None:
        output.write_text(json.dumps(found, indent=2) + "\n")
