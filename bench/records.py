"""Records: what authenticating a member and reading the first page of conversations cost
as a machine grows.

Run: `python bench/records.py [--quick] [--json FILE]` (with `src` on PYTHONPATH; the
PostgreSQL rows need `AGENTKIT_TEST_POSTGRES_DSN`). A full run writes
`bench/results-records.json`.

- authentication: `store.member_by_token(hash)` on a store of 1 member and on one of
  10,000 (a random live member's hash each time), microseconds per lookup; the two
  stores are measured in alternation so that machine noise hits both alike. Beside it, on
  SQLite, what version 3 did for the same answer (list every member session and compare
  each hash), on the same 10,000 members;
- first page: `store.list_conversations(viewer, limit=50)` with 10 conversations, with 100
  and with 100,000 (half shared, half private among 100 creators, the viewer one of
  them), and a page from the middle of the 100,000 (its `after` key), milliseconds per
  page. The viewer sees 6 of the 10, so that page is 6 records; the others are full (50):
  the ratio that says whether a page's cost grows with the total is 100,000 against 100,
  pages of the same size.

The big stores are filled with plain SQL (the benchmark is of the reads); the reads go
through the store. Reported: medians over the rounds, and the ratio big / small (the
target is 1.2 at most: a lookup or a page costs the same however many records there are).
"""

from __future__ import annotations

import argparse
import hashlib
import hmac
import json
import os
import platform
import random
import sqlite3
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "src"))

from agentkit.stores import PostgresStore, SQLiteStore, Store  # noqa: E402

TARGET = 1.2


def _hash(i: int) -> str:
    return hashlib.sha256(f"ak_token_{i}".encode()).hexdigest()


def _member_rows(count: int) -> list[tuple[Any, ...]]:
    return [
        (f"member{i:06}", f"name{i}", "editor", _hash(i), 1000.0 + i, None) for i in range(count)
    ]


def _conversation_rows(count: int) -> list[tuple[Any, ...]]:
    rows = []
    for i in range(count):
        visibility = "shared" if i % 2 else "private"
        rows.append(
            (
                f"c-{uuid.UUID(int=i)}",
                "agent",
                f"creator{i % 100}",
                visibility,
                f"talk {i}",
                1000.0 + i * 0.5,
                1000.0 + i * 0.5,
                None,
            )
        )
    return rows


class _Backend:
    """Opens stores on one database kind and fills their tables with SQL."""

    name: str

    def store(self, label: str) -> Store:
        raise NotImplementedError

    def fill(self, store: Store, table: str, rows: list[tuple[Any, ...]]) -> None:
        raise NotImplementedError

    def done(self) -> None:
        """Drop what the backend made."""


_COLUMNS = {
    "agentkit_members": "id, name, role, token_hash, created_at, removed_at",
    "agentkit_conversations": (
        "id, agent_id, creator_id, visibility, name, created_at, updated_at, instructions"
    ),
}


class _SQLite(_Backend):
    name = "SQLite"

    def __init__(self, folder: str) -> None:
        self.folder = folder

    def store(self, label: str) -> Store:
        return SQLiteStore(os.path.join(self.folder, f"{label}.db"))

    def fill(self, store: Store, table: str, rows: list[tuple[Any, ...]]) -> None:
        assert isinstance(store, SQLiteStore)
        conn = sqlite3.connect(store.path, isolation_level=None)
        conn.execute("BEGIN")
        if table == "agentkit_conversations":  # each conversation is a session too
            conn.executemany(
                "INSERT INTO agentkit_sessions (id, agent_id, created_at, updated_at, "
                "metadata) VALUES (?, 'agent', ?, ?, '{}')",
                [(row[0], row[5], row[6]) for row in rows],
            )
        marks = ", ".join("?" * len(rows[0]))
        conn.executemany(f"INSERT INTO {table} ({_COLUMNS[table]}) VALUES ({marks})", rows)
        conn.execute("COMMIT")
        conn.execute("ANALYZE")
        conn.close()

    def v3_sessions(self, store: Store, count: int) -> None:
        """Version 3's members: one session each, the record in the metadata."""
        assert isinstance(store, SQLiteStore)
        conn = sqlite3.connect(store.path, isolation_level=None)
        conn.execute("BEGIN")
        conn.executemany(
            "INSERT INTO agentkit_sessions (id, agent_id, created_at, updated_at, metadata) "
            "VALUES (?, 'agentkit-machine:member', ?, ?, ?)",
            [
                (
                    f"agentkit-member:name{i}",
                    1000.0 + i,
                    1000.0 + i,
                    json.dumps(
                        {
                            "agentkit.member": {
                                "name": f"name{i}",
                                "role": "editor",
                                "tokenHash": _hash(i),
                            }
                        }
                    ),
                )
                for i in range(count)
            ],
        )
        conn.execute("COMMIT")
        conn.close()


class _Postgres(_Backend):
    name = "PostgreSQL"

    def __init__(self, dsn: str) -> None:
        self.dsn = dsn
        self.schemas: list[str] = []

    def store(self, label: str) -> Store:
        schema = f"agentkit_bench_{label}_{uuid.uuid4().hex[:8]}"
        self.schemas.append(schema)
        return PostgresStore(self.dsn, schema=schema)

    def fill(self, store: Store, table: str, rows: list[tuple[Any, ...]]) -> None:
        import psycopg

        assert isinstance(store, PostgresStore)
        p = f'"{store.schema}".'
        with psycopg.connect(self.dsn) as conn:
            if table == "agentkit_conversations":
                with conn.cursor().copy(
                    f"COPY {p}agentkit_sessions (id, agent_id, created_at, updated_at, "
                    "metadata) FROM STDIN"
                ) as copy:
                    for row in rows:
                        copy.write_row((row[0], "agent", row[5], row[6], "{}"))
            with conn.cursor().copy(f"COPY {p}{table} ({_COLUMNS[table]}) FROM STDIN") as copy:
                for row in rows:
                    copy.write_row(row)
        with psycopg.connect(self.dsn, autocommit=True) as conn:
            conn.execute(f"VACUUM ANALYZE {p}{table}")

    def done(self) -> None:
        import psycopg

        with psycopg.connect(self.dsn, autocommit=True) as conn:
            for schema in self.schemas:
                conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


async def _per_call(call: Callable[[], Awaitable[Any]], calls: int) -> float:
    """Seconds per call, over `calls` calls in a row."""
    started = time.perf_counter()
    for _ in range(calls):
        await call()
    return (time.perf_counter() - started) / calls


async def _alternate(
    calls: dict[str, Callable[[], Awaitable[Any]]], per_round: int, rounds: int
) -> dict[str, list[float]]:
    """Each call measured `rounds` times, the calls taking turns round by round."""
    for call in calls.values():  # warm up: connections, statement caches, pages
        await _per_call(call, per_round)
    samples: dict[str, list[float]] = {name: [] for name in calls}
    for _ in range(rounds):
        for name, call in calls.items():
            samples[name].append(await _per_call(call, per_round))
    return samples


def _ready(store: Store) -> Awaitable[Any]:
    return store.list_members(limit=1)  # opens the store and creates its tables


async def authentication(backend: _Backend, big: int, quick: bool) -> dict[str, Any]:
    stores = {1: backend.store("auth1"), big: backend.store(f"auth{big}")}
    for count, store in stores.items():
        await _ready(store)
        backend.fill(store, "agentkit_members", _member_rows(count))
    pick = random.Random(7)

    def lookup(store: Store, count: int) -> Callable[[], Awaitable[Any]]:
        async def call() -> None:
            found = await store.member_by_token(_hash(pick.randrange(count)))
            assert found is not None

        return call

    calls = {str(count): lookup(store, count) for count, store in stores.items()}
    samples = await _alternate(calls, 50, 3 if quick else 201)
    for store in stores.values():
        await store.aclose()
    small, large = (statistics.median(samples[str(n)]) * 1e6 for n in (1, big))
    result = {
        "backend": backend.name,
        "members": [1, big],
        "us_per_lookup": [small, large],
        "ratio": large / small,
        "samples_us": {k: [v * 1e6 for v in vs] for k, vs in samples.items()},
    }
    if isinstance(backend, _SQLite):
        result["v3_us_per_lookup"] = await _v3_authentication(backend, big, quick)
    return result


async def _v3_authentication(backend: _SQLite, count: int, quick: bool) -> float:
    """What version 3's `Members.authenticate` did: every member session, each hash
    compared in constant time."""
    store = backend.store("v3")
    await _ready(store)
    backend.v3_sessions(store, count)
    pick = random.Random(7)

    async def call() -> None:
        digest = _hash(pick.randrange(count))
        found = None
        for session in await store.list_sessions("agentkit-machine:member"):
            if hmac.compare_digest(str(session.metadata["agentkit.member"]["tokenHash"]), digest):
                found = session
        assert found is not None

    samples = await _alternate({"v3": call}, 2 if quick else 5, 3 if quick else 7)
    await store.aclose()
    return statistics.median(samples["v3"]) * 1e6


async def first_page(backend: _Backend, big: int, quick: bool) -> dict[str, Any]:
    stores = {count: backend.store(f"page{count}") for count in (10, 100, big)}
    for count, store in stores.items():
        await _ready(store)
        backend.fill(store, "agentkit_conversations", _conversation_rows(count))
    viewer = "creator0"
    middle_rows = _conversation_rows(big)[big // 2]
    middle = (middle_rows[5], middle_rows[0])

    def page(store: Store, after: tuple[float, str] | None) -> Callable[[], Awaitable[Any]]:
        async def call() -> None:
            assert await store.list_conversations(viewer, after, 50)

        return call

    calls = {str(count): page(store, None) for count, store in stores.items()}
    calls[f"{big}-middle"] = page(stores[big], middle)
    samples = await _alternate(calls, 20, 3 if quick else 151)
    for store in stores.values():
        await store.aclose()
    medians = {name: statistics.median(values) * 1e3 for name, values in samples.items()}
    return {
        "backend": backend.name,
        "conversations": [10, 100, big],
        "ms_per_page": [medians["10"], medians["100"], medians[str(big)]],
        "ms_per_middle_page": medians[f"{big}-middle"],
        "ratio": medians[str(big)] / medians["100"],
        "ratio_to_10": medians[str(big)] / medians["10"],
        "samples_ms": {k: [v * 1e3 for v in vs] for k, vs in samples.items()},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a few seconds: it still runs")
    parser.add_argument("--json", help="write the results to this file")
    args = parser.parse_args()
    members = 1000 if args.quick else 10_000
    conversations = 2000 if args.quick else 100_000
    results: dict[str, Any] = {
        "quick": args.quick,
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count()},
        "authentication": [],
        "first_page": [],
    }
    with tempfile.TemporaryDirectory() as folder:
        backends: list[_Backend] = [_SQLite(folder)]
        dsn = os.environ.get("AGENTKIT_TEST_POSTGRES_DSN")
        if dsn:
            backends.append(_Postgres(dsn))
        for backend in backends:
            try:
                auth = anyio.run(authentication, backend, members, args.quick)
                page = anyio.run(first_page, backend, conversations, args.quick)
            finally:
                backend.done()
            results["authentication"].append(auth)
            results["first_page"].append(page)
    print("| backend | measure | small | big | big / small | target |")
    print("|---|---|---:|---:|---:|---:|")
    for auth in results["authentication"]:
        small, large = auth["us_per_lookup"]
        print(
            f"| {auth['backend']} | member_by_token, 1 vs {members:,} members | "
            f"{small:.1f} us | {large:.1f} us | {auth['ratio']:.2f} | <= {TARGET} |"
        )
        if "v3_us_per_lookup" in auth:
            print(
                f"| {auth['backend']} | version 3: every member session, {members:,} members "
                f"| | {auth['v3_us_per_lookup']:,.0f} us | | |"
            )
    for page in results["first_page"]:
        ten, small, large = page["ms_per_page"]
        print(
            f"| {page['backend']} | list_conversations first page of 50, 100 vs "
            f"{conversations:,} | {small:.3f} ms | {large:.3f} ms | {page['ratio']:.2f} "
            f"| <= {TARGET} |"
        )
        print(
            f"| {page['backend']} | the same, 10 conversations (a page of 6) vs "
            f"{conversations:,} | {ten:.3f} ms | {large:.3f} ms | {page['ratio_to_10']:.2f} | |"
        )
        print(
            f"| {page['backend']} | a page from the middle of {conversations:,} | | "
            f"{page['ms_per_middle_page']:.3f} ms | | |"
        )
    output = args.json or (None if args.quick else HERE / "results-records.json")
    if output:
        Path(output).write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
