"""A late joiner on another process: how far behind the live text deltas of a run it gets.

    python bench/follow_across.py            # full run: a table, bench/results-follow.json
    python bench/follow_across.py --quick    # a few seconds: checks the benchmark runs

Two processes on one PostgreSQL database (`AGENTKIT_TEST_POSTGRES_DSN`, a fresh schema,
dropped after): the run's process (`python bench/follow_across.py owner URL SCENARIO`, a
`Runtime` whose model streams a first piece after FIRST seconds, then PIECES pieces GAP
seconds apart) and this one, a `Runtime` on the same store whose readers
(`Runtime.follow`) join the run at several points after its start, mid-step: before the
first token, after a few pieces, late in the answer. Every piece carries its index and
the wall-clock time it was produced (one machine, one clock), so each reader measures:

- catch-up: from joining to holding every piece produced before it joined (the step
  so far, which no store has: text deltas are never stored);
- live lag: for each piece produced after it joined, its arrival minus its production,
  p50 and p99 over every reader and repeat;
- that it got the whole log: offsets 0, 1, 2, ... each once, pieces in order.

The floor, in the same run: a reader in the run's own process (`run.events()`), which
reads the log in memory.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

HERE = Path(__file__).resolve().parent
SRC = HERE.parent / "src"
if str(SRC) not in sys.path:  # this checkout's agentkit, in this process and the run's
    sys.path.insert(0, str(SRC))

import anyio  # noqa: E402

RESULTS = HERE / "results-follow.json"

# name: (first token after, seconds between pieces, pieces, join points, repeats)
SCENARIOS: dict[str, tuple[float, float, int, list[float], int]] = {
    # The case: a 1 s first token, then 40 pieces 0.25 s apart.
    "slow": (1.0, 0.25, 40, [0.5, 1.5, 4.0, 8.0], 2),
    # A fast model: 400 pieces 5 ms apart.
    "paced": (0.2, 0.005, 400, [0.1, 0.4, 1.0, 1.6], 3),
}
QUICK: dict[str, tuple[float, float, int, list[float], int]] = {
    "quick": (0.2, 0.02, 20, [0.1, 0.35], 1),
}


# --- the run's process ---------------------------------------------------------------------


async def owner(url: str, first: float, gap: float, pieces: int) -> None:
    """Execute one run; print `run <id> <start>`, then the floor's lags as JSON."""
    from agentkit import AgentSpec, Runtime
    from agentkit.events import TextDelta
    from agentkit.testing import FunctionProvider

    async def model(request: Any) -> AsyncIterator[str]:
        await anyio.sleep(first)
        for index in range(pieces):
            if index:
                await anyio.sleep(gap)
            yield f"{index}@{time.time():.6f} "

    spec = AgentSpec(id="bench:follow", system_prompt="You stream.")
    lags: list[float] = []
    async with Runtime(provider=FunctionProvider(model), store=url) as runtime:
        run = await runtime.start(spec, "stream")
        print("run", run.id, f"{time.time():.6f}", flush=True)
        async for event in run.events():
            if isinstance(event, TextDelta):
                lags.append(time.time() - float(event.content.split("@")[1]))
        await run.wait()
    print(json.dumps({"floor_lags": lags}), flush=True)


# --- the reader's process ------------------------------------------------------------------


@dataclass
class Joiner:
    """What one reader that joined at `join` seconds after the run's start saw."""

    join: float
    catch_up: float | None = None  # seconds from joining to the last earlier piece
    lags: list[float] = field(default_factory=list)  # live pieces: arrival - production
    offsets: list[int] = field(default_factory=list)
    indexes: list[int] = field(default_factory=list)
    complete: bool = False


async def follow(runtime: Any, run_id: str, started: float, joiner: Joiner) -> None:
    from agentkit.events import TextDelta

    await anyio.sleep(max(started + joiner.join - time.time(), 0))
    joined = time.time()
    async for entry in runtime.follow(run_id, -1):
        now = time.time()
        joiner.offsets.append(entry.offset)
        if isinstance(entry.event, TextDelta):
            index, produced = entry.event.content.split("@")
            joiner.indexes.append(int(index))
            if float(produced) < joined:
                joiner.catch_up = now - joined
            else:
                joiner.lags.append(now - float(produced))


async def one_run(url: str, scenario: tuple[float, float, int, list[float], int]) -> dict[str, Any]:
    from agentkit import Runtime
    from agentkit.testing import FunctionProvider

    first, gap, pieces, joins, _ = scenario
    command = [sys.executable, __file__, "owner", url, str(first), str(gap), str(pieces)]
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    async with (
        Runtime(provider=FunctionProvider(lambda request: ""), store=url) as runtime,
        await anyio.open_process(command, env=env) as process,
    ):
        assert process.stdout is not None
        out = b""
        while b"\n" not in out:
            out += await process.stdout.receive()
        line, _, rest = out.partition(b"\n")
        _, run_id, started = line.decode().split()
        joiners = [Joiner(join) for join in joins]
        async with anyio.create_task_group() as group:
            for joiner in joiners:
                group.start_soon(follow, runtime, run_id, float(started), joiner)
        async for chunk in process.stdout:
            rest += chunk
        await process.wait()
    floor = json.loads(rest.decode().strip().splitlines()[-1])["floor_lags"]
    for joiner in joiners:
        # The whole log: every offset once, in order, every piece.
        joiner.complete = joiner.offsets == list(range(len(joiner.offsets))) and (
            joiner.indexes == list(range(pieces))
        )
        if not joiner.complete:
            missing = sorted(set(range(pieces)) - set(joiner.indexes))
            print(
                f"the reader that joined at {joiner.join:g} s missed {len(missing)} pieces"
                f" (first: {missing[:5]}); offsets received: {len(joiner.offsets)}",
                file=sys.stderr,
            )
    return {"joiners": joiners, "floor": floor}


def _pct(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


def measure(url: str, scenarios: dict[str, Any]) -> dict[str, Any]:
    results: dict[str, Any] = {}
    for name, scenario in scenarios.items():
        runs = [anyio.run(one_run, url, scenario) for _ in range(scenario[4])]
        lags = [lag for run in runs for joiner in run["joiners"] for lag in joiner.lags]
        floor = [lag for run in runs for lag in run["floor"]]
        joins = {}
        for index, join in enumerate(scenario[3]):
            joined = [run["joiners"][index] for run in runs]
            catch_ups = [j.catch_up for j in joined if j.catch_up is not None]
            own = [lag for j in joined for lag in j.lags]
            joins[f"{join:g}s"] = {
                "catch_up_ms": 1000 * max(catch_ups) if catch_ups else None,
                "lag_p50_ms": 1000 * _pct(own, 0.5),
                "lag_p99_ms": 1000 * _pct(own, 0.99),
                "live_pieces": len(own),
                "complete": all(j.complete for j in joined),
            }
        results[name] = {
            "first_s": scenario[0],
            "gap_s": scenario[1],
            "pieces": scenario[2],
            "repeats": scenario[4],
            "lag_p50_ms": 1000 * _pct(lags, 0.5),
            "lag_p99_ms": 1000 * _pct(lags, 0.99),
            "lag_max_ms": 1000 * max(lags, default=float("nan")),
            "floor_lag_p50_ms": 1000 * _pct(floor, 0.5),
            "floor_lag_p99_ms": 1000 * _pct(floor, 0.99),
            "joins": joins,
            "complete": all(row["complete"] for row in joins.values()),
        }
    return results


def table(results: dict[str, Any]) -> str:
    lines = [
        "| scenario | join | catch-up ms | live lag p50 ms | live lag p99 ms | live pieces "
        "| whole log |",
        "|---|---|---:|---:|---:|---:|---|",
    ]
    for name, found in results.items():
        for join, row in found["joins"].items():
            catch_up = "-" if row["catch_up_ms"] is None else f"{row['catch_up_ms']:.1f}"
            lines.append(
                f"| {name} | {join} | {catch_up} | {row['lag_p50_ms']:.1f} | "
                f"{row['lag_p99_ms']:.1f} | {row['live_pieces']} | "
                f"{'yes' if row['complete'] else 'NO: gaps'} |"
            )
        lines.append(
            f"| {name} | all joiners | | {found['lag_p50_ms']:.1f} | {found['lag_p99_ms']:.1f} "
            f"| max {found['lag_max_ms']:.1f} | |"
        )
        lines.append(
            f"| {name} | floor: reader in the run's process | | {found['floor_lag_p50_ms']:.1f} "
            f"| {found['floor_lag_p99_ms']:.1f} | | |"
        )
    return "\n".join(lines)


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "owner":
        url, first, gap, pieces = sys.argv[2:6]
        anyio.run(owner, url, float(first), float(gap), int(pieces))
        return
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one short run: checks it runs")
    parser.add_argument("--json", metavar="FILE", help=f"where to write the results ({RESULTS})")
    args = parser.parse_args()
    dsn = os.environ.get("AGENTKIT_TEST_POSTGRES_DSN")
    if not dsn:
        sys.exit("set AGENTKIT_TEST_POSTGRES_DSN to a PostgreSQL database")
    import psycopg

    schema = f"agentkit_follow_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{schema}"')
    try:
        separator = "&" if "?" in dsn else "?"
        url = f"{dsn}{separator}options={quote(f'-csearch_path={schema}')}"
        results = measure(url, QUICK if args.quick else SCENARIOS)
    finally:
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
    print(table(results))
    output = Path(args.json) if args.json else (None if args.quick else RESULTS)
    if output is not None:
        output.write_text(json.dumps({"quick": args.quick, "results": results}, indent=2) + "\n")
    if not all(found["complete"] for found in results.values()):
        sys.exit("a reader missed part of the log")


if __name__ == "__main__":
    main()
