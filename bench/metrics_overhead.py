"""What the server's metrics cost: per store call and per HTTP request, with and without.

Run: `python bench/metrics_overhead.py [--postgres DSN] [--json FILE] [--quick]` (needs
the `metrics` extra; `--quick`: a few calls of each, to check that it runs).

Store calls: `append_events` with a batch of four events and `read_events` of the last
eight on SQLite (and PostgreSQL with `--postgres`), best of several rounds, three ways:
`_execute`, the backend's own work (the floor, what a call cost before the hook); `_call`
with no observer (every store pays this: metrics off); `_call` timed for the metrics'
histogram (`agentkit serve --metrics`).

HTTP: `GET /healthz` and `GET /v1/me` (a member read from the store) through the ASGI
application, no socket, with and without the metrics' middleware.
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
if sys.path and Path(sys.path[0] or ".").resolve() == HERE:
    del sys.path[0]  # `bench/http.py` would shadow the standard library's `http`
if str(HERE.parent / "src") not in sys.path:
    sys.path.insert(0, str(HERE.parent / "src"))

import argparse  # noqa: E402
import contextlib  # noqa: E402
import json  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
import uuid  # noqa: E402
from collections.abc import Awaitable, Callable  # noqa: E402
from typing import Any  # noqa: E402

import anyio  # noqa: E402

from agentkit._internal import observe  # noqa: E402
from agentkit.events import Result, Text, ToolResult, ToolUse  # noqa: E402
from agentkit.stores import EventEntry, PostgresStore, RunRecord, SQLiteStore  # noqa: E402
from agentkit.stores._sql import SQLStore, event_columns  # noqa: E402

ROUNDS, CALLS = 7, 1000
WAYS = ("floor", "off", "on")


def batch(base: int) -> list[EventEntry]:
    return [
        EventEntry(base, Text(content="Let me add those numbers for you.")),
        EventEntry(base + 1, ToolUse(id="c1", tool="add", input={"a": 1, "b": 2})),
        EventEntry(base + 2, ToolResult(tool_use_id="c1", tool="add", output=3)),
        EventEntry(base + 3, Result(content="3")),
    ]


async def store_calls(store: SQLStore) -> dict[str, dict[str, float]]:
    """Best µs per append and per read for each way, the ways taking turns in every
    round (so that a busy machine slows them alike)."""
    from agentkit.server._metrics import Metrics

    session = uuid.uuid4().hex
    await store.create_session(session, "bench:agent")
    ops = store._ops
    encoded = [event_columns("x", batch(i * 10)) for i in range(CALLS)]
    best = {way: {"append_us": float("inf"), "read_us": float("inf")} for way in WAYS}
    metrics = Metrics()
    for _ in range(ROUNDS):
        for way in WAYS:
            call: Callable[..., Awaitable[Any]] = store._execute if way == "floor" else store._call
            run_id = uuid.uuid4().hex
            record = RunRecord(run_id, session, "bench:agent", "running", time.time())
            await store.create_run(record)
            with observe.observing(metrics) if way == "on" else contextlib.nullcontext():
                started = time.perf_counter()
                for offsets, data in encoded:
                    await call(ops.append_events, run_id, offsets, data)
                appended = time.perf_counter()
                for _ in range(CALLS):
                    await call(ops.read_events, run_id, (CALLS - 2) * 10)
                read = time.perf_counter()
            await store.finish_run(run_id, "completed", time.time())
            mine = best[way]
            mine["append_us"] = min(mine["append_us"], (appended - started) / CALLS * 1e6)
            mine["read_us"] = min(mine["read_us"], (read - appended) / CALLS * 1e6)
    return best


async def isolated() -> dict[str, dict[str, float]]:
    """The added work alone, on a busy machine where whole calls vary more than it: µs per
    SQLite call of an operation that does nothing (`_execute`, `_call` off, `_call` on),
    and per request of an ASGI application that answers at once (bare, in the middleware)."""
    from agentkit.server._metrics import HTTPMetrics, Metrics

    def nothing(conn: Any) -> None:
        return None

    async def answer(scope: Any, receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    async def receive() -> dict[str, Any]:
        return {"type": "http.request"}

    async def send(message: Any) -> None:
        pass

    metrics = Metrics()
    wrapped = HTTPMetrics(answer, metrics)
    route = type("Route", (), {"path": "/v1/me"})()
    scope = {"type": "http", "method": "GET", "route": route}
    best: dict[str, dict[str, float]] = {"store call": {}, "http request": {}}
    with tempfile.TemporaryDirectory() as folder:
        store = SQLiteStore(Path(folder) / "n.db")
        await store.create_session("s", "bench:agent")  # opened
        ways: dict[str, Callable[[], Awaitable[Any]]] = {
            "floor": lambda: store._execute(nothing),
            "off": lambda: store._call(nothing),
        }
        try:
            for _ in range(ROUNDS * 3):
                for way in (*ways, "on"):
                    call = ways.get(way, ways["off"])
                    with observe.observing(metrics) if way == "on" else contextlib.nullcontext():
                        started = time.perf_counter()
                        for _ in range(CALLS):
                            await call()
                        took = (time.perf_counter() - started) / CALLS * 1e6
                    mine = best["store call"]
                    mine[way] = min(mine.get(way, float("inf")), took)
                for way, app in (("bare", answer), ("middleware", wrapped)):
                    started = time.perf_counter()
                    for _ in range(CALLS):
                        await app(scope, receive, send)
                    took = (time.perf_counter() - started) / CALLS * 1e6
                    mine = best["http request"]
                    mine[way] = min(mine.get(way, float("inf")), took)
        finally:
            await store.aclose()
    return best


async def http_requests() -> dict[str, dict[str, float]]:
    """Best µs per request of `GET /healthz` and `GET /v1/me` through the ASGI
    application, without and with the metrics' middleware, taking turns."""
    from agentkit.conversations import Machine
    from agentkit.server import create_app

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            assert message["status"] == 200, message

    best: dict[str, dict[str, float]] = {"off": {}, "on": {}}
    async with Machine(store=":memory:") as machine:
        token = await machine.add_member("ada", "owner")
        apps = {
            "off": create_app(machine, metrics="off"),
            "on": create_app(machine, metrics="owners"),
        }
        for _ in range(ROUNDS * 5):  # short turns: a busy machine slows both alike
            for path in ("/healthz", "/v1/me"):
                scope = {
                    "type": "http",
                    "asgi": {"version": "3.0"},
                    "http_version": "1.1",
                    "method": "GET",
                    "scheme": "http",
                    "path": path,
                    "raw_path": path.encode(),
                    "query_string": b"",
                    "root_path": "",
                    "headers": [(b"authorization", f"Bearer {token}".encode())],
                    "client": ("127.0.0.1", 1),
                    "server": ("127.0.0.1", 8400),
                }
                for way, app in apps.items():
                    started = time.perf_counter()
                    for _ in range(CALLS // 5):
                        await app(dict(scope), receive, send)
                    took = (time.perf_counter() - started) / (CALLS // 5) * 1e6
                    best[way][path] = min(best[way].get(path, float("inf")), took)
    return best


async def main(postgres: str | None) -> dict[str, Any]:
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as folder:
        stores: list[tuple[str, SQLStore]] = [("sqlite", SQLiteStore(Path(folder) / "b.db"))]
        if postgres:
            stores.append(("postgres", PostgresStore(postgres)))
        for name, store in stores:
            try:
                for way, best in (await store_calls(store)).items():
                    results[f"{name} {way}"] = best
            finally:
                await store.aclose()
    for way, best in (await http_requests()).items():
        results[f"http metrics {way}"] = best
    for what, best in (await isolated()).items():
        results[f"alone: {what}"] = best
    return results


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--postgres", metavar="DSN")
    parser.add_argument("--json", metavar="FILE")
    parser.add_argument("--quick", action="store_true", help="a few calls of each")
    args = parser.parse_args()
    if args.quick:
        ROUNDS, CALLS = 1, 25
    measured = anyio.run(main, args.postgres)
    for key, value in measured.items():
        print(f"{key:24} " + "  ".join(f"{k} {v:8.2f}" for k, v in value.items()))
    if args.json:
        Path(args.json).write_text(json.dumps(measured, indent=2) + "\n")
