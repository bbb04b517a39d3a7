"""A durable start on PostgreSQL: agentkit's `Runtime.start` beside DBOS's workflow start.

    python bench/durable_start.py          # full run: a table, bench/results-durable-start.json
    python bench/durable_start.py --quick  # agentkit only, a few runs: the benchmark still runs

Each system gets a fresh database of its own on the same PostgreSQL server
(`--dsn`, default `$AGENTKIT_TEST_POSTGRES_DSN`, a user that may create databases):

- agentkit: `Runtime.start` of a run with one tool call (`bench/workloads.py`'s W1: the
  model asks for `add(a=1, b=2)`, then answers "3") on a `PostgresStore`. Accepted when
  `start` returns: the run's record and its `turn_start` are stored.
- DBOS: `DBOS.start_workflow_async` of a workflow of two steps (`step_one`, then
  `step_two`) on its system database. Accepted when it returns: the workflow's status row
  is stored. DBOS runs in its own virtual environment (`--dbos-python`, default
  /work/peers-dbos/bin/python: `python -m venv /work/peers-dbos &&
  /work/peers-dbos/bin/pip install dbos`), so that it shares no package with agentkit.

Measured: the start's latency (call to return), one start at a time (each run awaited to
its end before the next start), and 50 starts at once (each start's own latency, the 50
then awaited); p50 and p99 per sample, medians of `--repeats` samples, the two systems
interleaved sample by sample so that the machine's noise falls on both. Completed runs
per second come along (the time from the first start to the last end).
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
import statistics  # noqa: E402
import subprocess  # noqa: E402
import time  # noqa: E402
from collections.abc import Awaitable, Callable, Iterator  # noqa: E402
from contextlib import contextmanager  # noqa: E402
from typing import Any  # noqa: E402

RESULTS = HERE / "results-durable-start.json"
DBOS_PYTHON = "/work/peers-dbos/bin/python"
CONCURRENT = 50

# The DBOS side, run by DBOS's own interpreter: `python -c SCRIPT URL SEQUENTIAL CONCURRENT`
# with the kinds of sample on stdin; prints one JSON line per sample
# (`{"kind": ..., "latencies": [...], "seconds": ...}`).
DBOS_SCRIPT = r"""
import asyncio, json, sys, time
from dbos import DBOS

url, sequential, concurrent = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
DBOS(config={"name": "durable-start-bench", "system_database_url": url})


@DBOS.step()
async def step_one(x: int) -> int:
    return x + 1


@DBOS.step()
async def step_two(x: int) -> int:
    return x * 2


@DBOS.workflow()
async def two_steps(x: int) -> int:
    return await step_two(await step_one(x))


async def timed_start():
    began = time.perf_counter()
    handle = await DBOS.start_workflow_async(two_steps, 1)
    return time.perf_counter() - began, handle


async def main() -> None:
    for _ in range(20):  # warm up, one at a time and then all at once (the pool fills)
        _, handle = await timed_start()
        assert await handle.get_result() == 4
    for _, handle in await asyncio.gather(*(timed_start() for _ in range(concurrent))):
        assert await handle.get_result() == 4
    for kind in sys.stdin:
        kind = kind.strip()
        began = time.perf_counter()
        if kind == "sequential":
            latencies = []
            for _ in range(sequential):
                latency, handle = await timed_start()
                latencies.append(latency)
                assert await handle.get_result() == 4
        else:
            started = await asyncio.gather(*(timed_start() for _ in range(concurrent)))
            latencies = [latency for latency, _ in started]
            for _, handle in started:
                assert await handle.get_result() == 4
        seconds = time.perf_counter() - began
        print(json.dumps({"kind": kind, "latencies": latencies, "seconds": seconds}), flush=True)


DBOS.launch()
try:
    asyncio.run(main())
finally:
    DBOS.destroy()
"""


@contextmanager
def fresh_database(admin_dsn: str, prefix: str) -> Iterator[str]:
    """A new database on the admin DSN's server, dropped at the end: its URL."""
    import psycopg
    from psycopg.conninfo import conninfo_to_dict, make_conninfo

    name = f"{prefix}_{os.getpid()}"
    with psycopg.connect(admin_dsn, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        parts = conninfo_to_dict(admin_dsn)
        parts["dbname"] = name
        yield make_conninfo("", **parts)
    finally:
        with psycopg.connect(admin_dsn, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def as_url(conninfo: str) -> str:
    """A libpq key/value string as a `postgresql://` URL (what DBOS takes)."""
    from urllib.parse import quote

    from psycopg.conninfo import conninfo_to_dict

    parts = conninfo_to_dict(conninfo)
    auth = parts.get("user", "postgres")
    if parts.get("password"):
        auth += ":" + quote(str(parts["password"]))
    host, port = str(parts.get("host", "127.0.0.1")), parts.get("port", "5432")
    if host.startswith("/"):  # a Unix socket's folder: a query parameter
        return f"postgresql://{auth}@/{parts['dbname']}?host={quote(host)}&port={port}"
    return f"postgresql://{auth}@{host}:{port}/{parts['dbname']}"


async def burst(
    timed_start: Callable[[], Awaitable[tuple[float, Any]]],
    check: Callable[[Any], Awaitable[None]],
) -> list[float]:
    """`CONCURRENT` starts at once, then each run awaited to its end: the latencies."""
    import anyio

    latencies: list[float] = []
    runs: list[Any] = []

    async def one() -> None:
        latency, run = await timed_start()
        latencies.append(latency)
        runs.append(run)

    async with anyio.create_task_group() as group:
        for _ in range(CONCURRENT):
            group.start_soon(one)
    for run in runs:
        await check(run)
    return latencies


class AgentkitSide:
    """A runtime on a fresh database, started once and sampled many times."""

    def __init__(self, conninfo: str) -> None:
        self.conninfo = conninfo

    async def samples(self, kinds: list[str], sequential: int) -> list[dict[str, Any]]:
        from bench.workloads import ADD_SPEC, w1_runtime

        from agentkit.stores import PostgresStore

        store = PostgresStore(
            self.conninfo,
        )  # the default pool
        found = []
        try:
            async with w1_runtime(store) as runtime:

                async def timed_start() -> tuple[float, Any]:
                    began = time.perf_counter()
                    run = await runtime.start(ADD_SPEC, "What is 1 + 2?")
                    return time.perf_counter() - began, run

                async def check(run: Any) -> None:
                    outcome = await run.wait()
                    if outcome.text != "3":
                        raise AssertionError(f"W1 answered {outcome.text!r}: {outcome.error}")

                for _ in range(20):  # warm up, one at a time and then all at once
                    await check((await timed_start())[1])
                await burst(timed_start, check)
                for kind in kinds:
                    began = time.perf_counter()
                    latencies: list[float] = []
                    if kind == "sequential":
                        for _ in range(sequential):
                            latency, run = await timed_start()
                            latencies.append(latency)
                            await check(run)
                    else:
                        latencies = await burst(timed_start, check)
                    seconds = time.perf_counter() - began
                    found.append({"kind": kind, "latencies": latencies, "seconds": seconds})
        finally:
            await store.aclose()
        return found


def dbos_samples(python: str, url: str, kinds: list[str], sequential: int) -> list[dict[str, Any]]:
    done = subprocess.run(
        [python, "-c", DBOS_SCRIPT, url, str(sequential), str(CONCURRENT)],
        input="".join(f"{kind}\n" for kind in kinds),
        capture_output=True,
        text=True,
        timeout=900,
    )
    if done.returncode != 0:
        raise RuntimeError(f"the DBOS side failed: {done.stderr[-3000:]}")
    return [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def summary(samples: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    """Medians over the samples of `kind` of each sample's p50 and p99 (ms) and runs/s."""
    chosen = [s for s in samples if s["kind"] == kind]
    if not chosen:
        return {}
    return {
        "samples": len(chosen),
        "start_p50_ms": statistics.median(_pct(s["latencies"], 0.5) * 1000 for s in chosen),
        "start_p99_ms": statistics.median(_pct(s["latencies"], 0.99) * 1000 for s in chosen),
        "completed_per_s": statistics.median(len(s["latencies"]) / s["seconds"] for s in chosen),
    }


def main(dsn: str, repeats: int, sequential: int, dbos_python: str | None) -> dict[str, Any]:
    import anyio

    kinds = ["sequential", "concurrent"] * repeats
    results: dict[str, Any] = {"sequential_runs": sequential, "concurrent": CONCURRENT}
    agentkit_samples: list[dict[str, Any]] = []
    dbos: list[dict[str, Any]] = []
    with (
        fresh_database(dsn, "agentkit_bench_durable") as ours,
        fresh_database(dsn, "dbos_bench_durable") as theirs,
    ):
        side = AgentkitSide(ours)
        # Interleaved: one sample of each kind per system, then again.
        for kind in kinds:
            agentkit_samples += anyio.run(side.samples, [kind], sequential, backend="asyncio")
            if dbos_python is not None:
                dbos += dbos_samples(dbos_python, as_url(theirs), [kind], sequential)
    for name, samples in (("agentkit", agentkit_samples), ("dbos", dbos)):
        if samples:
            results[name] = {kind: summary(samples, kind) for kind in ("sequential", "concurrent")}
    return results


def table(results: dict[str, Any]) -> str:
    rows = [
        "| PostgreSQL, start accepted | agentkit p50 | DBOS p50 | agentkit p99 | DBOS p99 "
        "| agentkit runs/s | DBOS runs/s |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for kind, label in (
        ("sequential", "one at a time"),
        ("concurrent", f"{CONCURRENT} at once"),
    ):
        ours = results["agentkit"][kind]
        theirs = results.get("dbos", {}).get(kind, {})

        def cell(found: dict[str, Any], key: str) -> str:
            return f"{found[key]:.2f}" if key in found else "-"

        rows.append(
            f"| {label} | {cell(ours, 'start_p50_ms')} ms | {cell(theirs, 'start_p50_ms')} ms "
            f"| {cell(ours, 'start_p99_ms')} ms | {cell(theirs, 'start_p99_ms')} ms "
            f"| {cell(ours, 'completed_per_s')} | {cell(theirs, 'completed_per_s')} |"
        )
    return "\n".join(rows)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="agentkit only, a few runs")
    parser.add_argument("--repeats", type=int, default=None)
    parser.add_argument("--runs", type=int, default=None, help="sequential runs per sample")
    parser.add_argument("--dsn", default=os.environ.get("AGENTKIT_TEST_POSTGRES_DSN"))
    parser.add_argument("--dbos-python", default=DBOS_PYTHON)
    parser.add_argument("--json", default=None, help="where to write the results")
    args = parser.parse_args()
    if not args.dsn:
        parser.error("needs a PostgreSQL DSN: --dsn or $AGENTKIT_TEST_POSTGRES_DSN")
    dbos_python = None if args.quick or not Path(args.dbos_python).exists() else args.dbos_python
    repeats = args.repeats or (1 if args.quick else 5)
    sequential = args.runs or (10 if args.quick else 200)
    found = main(args.dsn, repeats, sequential, dbos_python)
    found["quick"] = args.quick
    print(table(found))
    output = Path(args.json) if args.json else (None if args.quick else RESULTS)
    if output is not None:
        output.write_text(json.dumps(found, indent=2) + "\n")
