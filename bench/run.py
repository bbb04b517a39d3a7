"""Run every agentkit benchmark side by side with its bare asyncio floor.

    python bench/run.py            # full run, writes bench/results.json, prints a table
    python bench/run.py --quick    # a few seconds: checks the benchmarks still run

W1-W4 are defined in docs/performance.md. Each workload is measured in the
same run as a hand-written bare asyncio loop doing the same work (the floor), and reported
as a median over repetitions together with the ratio to that floor. W3 and W4 run in fresh
subprocesses (import time, peak RSS).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
SRC = ROOT / "src"
sys.path[:0] = [str(SRC), str(HERE)]


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(SRC), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return env


def _run_async(factory: Callable[[], Coroutine[Any, Any, float]]) -> float:
    import anyio

    result: list[float] = []

    async def main() -> None:
        result.append(await factory())

    anyio.run(main, backend="asyncio")
    return result[0]


def _median_seconds(
    factory: Callable[[], Coroutine[Any, Any, float]], repeats: int
) -> tuple[float, list[float]]:
    samples = [_run_async(factory) for _ in range(repeats)]
    return statistics.median(samples), samples


# --- workloads ------------------------------------------------------------------------------


def bench_w1(quick: bool, store: str = "memory") -> dict[str, Any]:
    import workloads

    runs = 100 if quick else 2000
    repeats = 2 if quick else 7

    def agentkit_factory() -> Coroutine[Any, Any, float]:
        return workloads.w1_agentkit(runs, _make_store(store))

    _run_async(lambda: workloads.w1_agentkit(50, _make_store(store)))  # warm up imports, caches
    _run_async(lambda: workloads.w1_bare(50))
    # Interleave agentkit and floor repetitions so machine noise hits both alike.
    ours, floor = [], []
    for _ in range(repeats):
        ours.append(_run_async(agentkit_factory) / runs * 1e6)
        floor.append(_run_async(lambda: workloads.w1_bare(runs)) / runs * 1e6)
    return _row(
        "W1" if store == "memory" else f"W1 ({store})",
        "tool round trip, zero-latency provider" + ("" if store == "memory" else f", {store}"),
        "us/run",
        ours,
        floor,
        lower_is_better=True,
        target=100.0 if store == "memory" else None,
        runs=runs,
    )


def bench_w1_agent(quick: bool) -> dict[str, Any]:
    """W1 through `Agent.run` with a function tool, beside W1 through `Runtime` in the same
    run (the "floor" column here): the facade's cost (target: at most 15% more)."""
    import workloads

    runs = 100 if quick else 2000
    repeats = 2 if quick else 7
    _run_async(lambda: workloads.w1_agent(50))
    ours, runtime = [], []
    for _ in range(repeats):
        ours.append(_run_async(lambda: workloads.w1_agent(runs)) / runs * 1e6)
        runtime.append(_run_async(lambda: workloads.w1_agentkit(runs)) / runs * 1e6)
    row = _row(
        "W1 (Agent)",
        "W1 through Agent.run and a function tool; floor = W1 through Runtime",
        "us/run",
        ours,
        runtime,
        lower_is_better=True,
        target=None,
        runs=runs,
    )
    row["target_met"] = row["x_floor"] <= 1.15
    return row


def _make_store(kind: str) -> Any:
    if kind == "memory":
        from agentkit.stores import MemoryStore

        return MemoryStore()
    from agentkit.stores import SQLiteStore  # type: ignore[attr-defined]

    path = Path(tempfile.mkdtemp(prefix="agentkit-bench-")) / "bench.db"
    return SQLiteStore(path)


def bench_start(quick: bool) -> list[dict[str, Any]]:
    """`runtime.start()` latency on SQLite (p50 and p99 of each repetition, median over
    repetitions) beside inserting one row and committing, in the same run."""
    import workloads

    runs = 100 if quick else 1000
    repeats = 2 if quick else 7

    def percentile(samples: list[float], q: float) -> float:
        ordered = sorted(samples)
        return ordered[min(int(q * len(ordered)), len(ordered) - 1)] * 1e6

    def ours() -> list[float]:
        return _run_async_list(
            lambda: workloads.start_latency_agentkit(runs, _make_store("sqlite"))
        )

    def bare() -> list[float]:
        path = Path(tempfile.mkdtemp(prefix="agentkit-bench-")) / "floor.db"
        return workloads.start_latency_bare(runs, path)

    ours(), bare()  # warm up
    p50, p99, floor50, floor99 = [], [], [], []
    for _ in range(repeats):
        mine, floor = ours(), bare()
        p50.append(percentile(mine, 0.5))
        p99.append(percentile(mine, 0.99))
        floor50.append(percentile(floor, 0.5))
        floor99.append(percentile(floor, 0.99))
    return [
        _row(
            f"start p{q} (sqlite)",
            f"runtime.start() accept latency, p{q}; floor: insert one row and commit",
            "us",
            mine,
            floor,
            lower_is_better=True,
            target=None,
            runs=runs,
        )
        for q, mine, floor in (("50", p50, floor50), ("99", p99, floor99))
    ]


def _run_async_list(factory: Callable[[], Coroutine[Any, Any, list[float]]]) -> list[float]:
    import anyio

    result: list[list[float]] = []

    async def main() -> None:
        result.append(await factory())

    anyio.run(main, backend="asyncio")
    return result[0]


def sqlite_available() -> bool:
    import agentkit.stores

    return hasattr(agentkit.stores, "SQLiteStore")


def bench_w2(quick: bool) -> dict[str, Any]:
    import workloads

    repeats = 3 if quick else 21
    deltas = workloads.W2_DELTAS
    # A sample lasts about 2 ms, so the first ones (cold caches, lazy imports, the first
    # gen-2 collection) would weigh on the median: warm both sides up for a few.
    for _ in range(1 if quick else 5):
        _run_async(lambda: workloads.w2_agentkit(deltas))
        _run_async(lambda: workloads.w2_bare(deltas))
    ours, floor = [], []
    for _ in range(repeats):
        ours.append(deltas / _run_async(lambda: workloads.w2_agentkit(deltas)))
        floor.append(deltas / _run_async(lambda: workloads.w2_bare(deltas)))
    return _row(
        "W2",
        f"one answer as {deltas} deltas read through run.events()",
        "deltas/s",
        ours,
        floor,
        lower_is_better=False,
        target=1_000_000.0,
    )


def _wall_ms(code: str, repeats: int) -> list[float]:
    # The bytecode cache is what a program's import reads: a shell that sets
    # PYTHONDONTWRITEBYTECODE would otherwise have every sample compile agentkit's sources.
    env = _env()
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    samples = []
    for _ in range(repeats):
        started = time.perf_counter()
        subprocess.run([sys.executable, "-c", code], env=env, check=True)
        samples.append((time.perf_counter() - started) * 1000)
    return samples


# What a program that runs agents imports: the package's names load on first use, so the
# runtime's import is measured through the name, not the package.
_RUNTIME_IMPORT = "from agentkit.runtime import Runtime"
# pydantic's own import, the part of W3b agentkit cannot make lazier while its events are
# pydantic models: W3b's distance to it is agentkit's own share.
_PYDANTIC_IMPORT = "from pydantic import BaseModel, Field, TypeAdapter"
# The import and one W1 run: the models' schemas are built on first use, so this is what
# a program that runs one agent pays before its first answer (the provider costs nothing).
_FIRST_RUN = (
    f"import sys; sys.path.insert(0, {str(HERE)!r}); import anyio, workloads; "
    "anyio.run(workloads.w1_agentkit, 1)"
)


def bench_w3(quick: bool) -> list[dict[str, Any]]:
    repeats = 2 if quick else 21
    _wall_ms("import agentkit", 1)  # warm the bytecode cache
    _wall_ms(_RUNTIME_IMPORT, 1)
    _wall_ms(_FIRST_RUN, 1)
    ours, floor, full, pydantic, first = [], [], [], [], []
    for _ in range(repeats):  # interleaved, as for W1
        ours += _wall_ms("import agentkit", 1)
        floor += _wall_ms("pass", 1)
        full += _wall_ms(_RUNTIME_IMPORT, 1)
        pydantic += _wall_ms(_PYDANTIC_IMPORT, 1)
        first += _wall_ms(_FIRST_RUN, 1)
    return [
        _row(
            "W3",
            "python -c 'import agentkit' wall time",
            "ms",
            ours,
            floor,
            lower_is_better=True,
            target=150.0,
        ),
        _row(
            "W3b",
            "python -c 'from agentkit.runtime import Runtime' (engine, events, pydantic)",
            "ms",
            full,
            floor,
            lower_is_better=True,
            target=100.0,
        ),
        _row(
            "W3b (pydantic)",
            "python -c 'from pydantic import BaseModel, ...': pydantic alone, no agentkit",
            "ms",
            pydantic,
            floor,
            lower_is_better=True,
            target=None,
        ),
        _row(
            "W3c",
            "python -c: import, then one W1 run (the schemas built on first use included)",
            "ms",
            first,
            floor,
            lower_is_better=True,
            target=None,
        ),
    ]


CHILD_CODE = """
import json, resource, sys
sys.path[:0] = {paths!r}
import anyio, workloads
seconds = []
async def main():
    seconds.append(await workloads.{func}({runs}))
anyio.run(main, backend="asyncio")
print(json.dumps({{"seconds": seconds[0],
                  "max_rss_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}}))
"""


def _child(func: str, runs: int) -> dict[str, float]:
    code = CHILD_CODE.format(paths=[str(SRC), str(HERE)], func=func, runs=runs)
    out = subprocess.run(
        [sys.executable, "-c", code], env=_env(), check=True, capture_output=True, text=True
    )
    data: dict[str, float] = json.loads(out.stdout.strip().splitlines()[-1])
    return data


def bench_w4(quick: bool) -> list[dict[str, Any]]:
    runs = 200 if quick else 10_000
    repeats = 1 if quick else 5
    ours, floor = [], []
    for _ in range(repeats):
        ours.append(_child("w4_agentkit", runs))
        floor.append(_child("w4_bare", runs))
    return [
        _row(
            "W4",
            f"{runs:,} concurrent W1 runs in one process",
            "runs/s",
            [runs / s["seconds"] for s in ours],
            [runs / s["seconds"] for s in floor],
            lower_is_better=False,
            target=10_000.0,
            runs=runs,
        ),
        _row(
            "W4 RSS",
            f"peak RSS of the {runs:,}-run process (fresh subprocess)",
            "MB",
            [s["max_rss_kb"] / 1024 for s in ours],
            [s["max_rss_kb"] / 1024 for s in floor],
            lower_is_better=True,
            target=300.0,
            runs=runs,
        ),
    ]


# --- reporting ------------------------------------------------------------------------------


def _row(
    workload: str,
    what: str,
    unit: str,
    ours: list[float],
    floor: list[float],
    *,
    lower_is_better: bool,
    target: float | None,
    **extra: Any,
) -> dict[str, Any]:
    mine = statistics.median(ours)
    bare = statistics.median(floor)
    # "x floor": how many times worse than the bare loop (1.0 = as fast as the floor).
    ratio = mine / bare if lower_is_better else bare / mine
    met = None
    if target is not None:
        met = mine <= target if lower_is_better else mine >= target
    return {
        "workload": workload,
        "what": what,
        "unit": unit,
        "agentkit": mine,
        "floor": bare,
        "x_floor": ratio,
        "target": target,
        "lower_is_better": lower_is_better,
        "target_met": met,
        "samples": {"agentkit": ours, "floor": floor},
        **extra,
    }


def _fmt(value: float, unit: str) -> str:
    if unit in ("deltas/s", "runs/s"):
        return f"{value:,.0f}"
    if value >= 100:
        return f"{value:,.0f}"
    return f"{value:,.1f}"


def table(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| Workload | Unit | agentkit (median) | bare floor (median) | x floor | target | met |",
        "|---|---|---:|---:|---:|---:|:---:|",
    ]
    for r in rows:
        target = (
            ""
            if r["target"] is None
            else (("<= " if r["lower_is_better"] else ">= ") + _fmt(r["target"], r["unit"]))
        )
        met = {True: "yes", False: "no", None: ""}[r["target_met"]]
        lines.append(
            f"| {r['workload']} | {r['unit']} | {_fmt(r['agentkit'], r['unit'])} | "
            f"{_fmt(r['floor'], r['unit'])} | {r['x_floor']:.1f} | {target} | {met} |"
        )
    return "\n".join(lines)


def machine() -> dict[str, Any]:
    return {
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "platform": platform.platform(),
        "nproc": os.cpu_count(),
        "loadavg_at_start": os.getloadavg(),
        "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a fast smoke run")
    parser.add_argument(
        "--only",
        nargs="*",
        default=None,
        help="workloads to run (W1 W1-agent W2 W3 W4 W1-sqlite start-sqlite)",
    )
    parser.add_argument(
        "--output", type=Path, default=None, help="where to write JSON (bench/results.json)"
    )
    args = parser.parse_args(argv)
    only = {w.lower() for w in args.only} if args.only else None
    output = args.output or (HERE / ("results-quick.json" if args.quick else "results.json"))

    def wanted(name: str) -> bool:
        return only is None or name.lower() in only

    info = machine()
    rows: list[dict[str, Any]] = []
    if wanted("W1"):
        rows.append(bench_w1(args.quick))
    if wanted("W1-agent"):
        rows.append(bench_w1_agent(args.quick))
    if wanted("W1-sqlite"):
        if sqlite_available():
            rows.append(bench_w1(args.quick, store="sqlite"))
        else:
            print("W1 (sqlite): skipped, agentkit.stores.SQLiteStore does not exist yet")
    if wanted("start-sqlite"):
        rows.extend(bench_start(args.quick))
    if wanted("W2"):
        rows.append(bench_w2(args.quick))
    if wanted("W3"):
        rows.extend(bench_w3(args.quick))
    if wanted("W4"):
        rows.extend(bench_w4(args.quick))
    info["loadavg_at_end"] = os.getloadavg()
    info["max_rss_mb_of_runner"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    output.write_text(
        json.dumps({"quick": args.quick, "machine": info, "results": rows}, indent=2) + "\n"
    )
    print(table(rows))
    print(f"\nmachine: {info['nproc']} cores, Python {info['python']}; results in {output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
