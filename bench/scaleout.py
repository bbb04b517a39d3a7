"""Scale-out: one and two `agentkit serve` processes on one PostgreSQL database, beside SQLite.

    python bench/scaleout.py          # full run: prints a table, writes results-scaleout.json
    python bench/scaleout.py --quick  # under half a minute: checks the benchmark still runs

The PostgreSQL database is `--dsn`, else `$AGENTKIT_TEST_POSTGRES_DSN` (exit 2 without
one). Three configurations, each repetition on fresh servers and a fresh database:

- `sqlite/1`: one `agentkit serve` on a SQLite file in a temporary folder;
- `postgresql/1`: one `agentkit serve` on PostgreSQL;
- `postgresql/2`: two `agentkit serve` on the same PostgreSQL database, the load spread
  round-robin over their two URLs, as a load balancer without sticky sessions does.

Each set of PostgreSQL servers gets a schema of its own, created before the servers start
and dropped at the end: the DSN they are given carries `options=-csearch_path=SCHEMA`.
The servers are real processes (`bench.http`'s `running`), their provider is this file's
(`bench.scaleout:provider`), their owner's token comes from
`agentkit members add bench --role owner --db URL`. Everything goes through the public
HTTP API.

- runs: N conversations created first (not timed), then prompted at once with
  `POST /v1/conversations/{id}/runs` from `--load-processes` processes (bench/http.py's
  load processes; the requests of process `j` go to server `j % servers`), each run's SSE
  stream opened right after its 202 on the server that accepted it and read to its final
  event. Accepted runs per second (N / time from the first POST sent to the last 202),
  accept latency p50/p99, the time from the first POST to the end of the last run's
  stream (read when the load processes exit: a few milliseconds late), and the servers'
  CPU time per run (all server processes together; PostgreSQL's own not counted).
- room events: one room, P publishers (tasks of this process) posting one event at a time
  to `POST /v1/rooms/{room}/events`, publisher `p` through server `p % servers`. Stored
  events per second (events / time from the first POST to the last 201) and publish
  latency p50/p99; then the room is read back page by page through the last server: the
  positions must be 1..total with no gap and no duplicate, each published event must be
  there exactly once at the position its publisher was given (printed OK or FAIL; the
  script exits with status 1 on FAIL).
- follow latency: R runs, one after another, whose provider streams K text pieces
  `INTERVAL` apart, each piece the time it was produced (`time.time()` and a `;`).
  Each run is started through server A and followed over SSE from its start
  (`?after=-1`) by a follower on A and, with two servers, one on B; the provider waits
  for a gate file, created once both followers' streams are open. Per text delta piece
  received: arrival - produced; per stored `text` block: arrival - the time its last piece
  was produced (the block is complete then, and stored at the model step's end). p50/p99
  over the samples of every repetition; the script prints which kinds each follower saw.
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
SRC = ROOT / "src"
# Run as a script, this folder would come first on sys.path, and its http.py would shadow
# the standard library's `http` package (which httpx and uvicorn import).
if sys.path and Path(sys.path[0] or ".").resolve() == HERE:
    del sys.path[0]
for _path in (str(SRC), str(ROOT)):
    if _path not in sys.path:
        sys.path.insert(0, _path)

import argparse  # noqa: E402
import concurrent.futures  # noqa: E402
import contextlib  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
import uuid  # noqa: E402
from collections.abc import AsyncIterator, Iterator  # noqa: E402
from dataclasses import asdict, dataclass, field  # noqa: E402
from datetime import UTC, datetime  # noqa: E402
from typing import TYPE_CHECKING, Any  # noqa: E402

import anyio  # noqa: E402
from bench.http import (  # noqa: E402
    POOL,
    BenchProvider,
    Load,
    Server,
    _env,
    _pct,
    create_conversations,
    first_event,
    machine_info,
    run_loads,
    running,
)

if TYPE_CHECKING:
    from agentkit.providers import ModelRequest

RESULTS = HERE / "results-scaleout.json"
SERVER_PROVIDER = "bench.scaleout:provider"
CONFIGS = ("sqlite/1", "postgresql/1", "postgresql/2")


# --- the provider the servers run (imported there as `bench.scaleout`) ---------------------


class ScaleoutProvider(BenchProvider):
    """bench/http.py's zero-latency model ("Hello there, friend." in three pieces), and,
    for a prompt `{"stamps": K, "interval": S, "gate": PATH}`: once the file PATH exists
    (30 s at most), K text pieces S seconds apart, each the time it was produced
    (`time.time()`, six decimals) followed by `;`."""

    name = "bench-scaleout"

    async def stream(self, request: ModelRequest) -> AsyncIterator[Any]:
        from agentkit.providers import Stop, TextChunk, Usage

        asked = _stamps_asked(request)
        if asked is None:
            async for item in super().stream(request):
                yield item
            return
        count, interval, gate = asked
        deadline = time.monotonic() + 30
        while not gate.exists() and time.monotonic() < deadline:  # noqa: ASYNC110
            await anyio.sleep(0.002)
        for index in range(count):
            if index:
                await anyio.sleep(interval)
            yield TextChunk(f"{time.time():.6f};")
        yield Usage(request.model, input_tokens=1, output_tokens=count)
        yield Stop()


def _stamps_asked(request: ModelRequest) -> tuple[int, float, Path] | None:
    prompt = getattr(request.messages[-1], "content", "") if request.messages else ""
    if not isinstance(prompt, str) or not prompt.startswith('{"stamps"'):
        return None
    asked = json.loads(prompt)
    return int(asked["stamps"]), float(asked["interval"]), Path(asked["gate"])


def provider(**options: Any) -> ScaleoutProvider:
    """The factory `agentkit serve --provider bench.scaleout:provider` calls."""
    return ScaleoutProvider()


# --- databases and servers ------------------------------------------------------------------


def with_search_path(dsn: str, schema: str) -> str:
    """`dsn` whose connections use `schema` first (libpq's `options`)."""
    if "://" in dsn:
        return f"{dsn}{'&' if '?' in dsn else '?'}options=-csearch_path%3D{schema}"
    return f"{dsn} options=-csearch_path={schema}"


@contextlib.contextmanager
def database(config: str, dsn: str | None, folder: Path) -> Iterator[str]:
    """The URL the servers of `config` share: a SQLite file in `folder`, or a fresh schema
    of the PostgreSQL database (dropped at the end, with everything in it)."""
    if config.startswith("sqlite"):
        yield str(folder / "machine.db")
        return
    import psycopg

    assert dsn is not None
    schema = f"bench_scaleout_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    try:
        yield with_search_path(dsn, schema)
    finally:
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")


def add_owner(db: str) -> str:
    """A new owner's token, from `agentkit members add` (it prints the token alone)."""
    command = [sys.executable, "-m", "agentkit", "members", "add", "bench", "--role", "owner"]
    done = subprocess.run(
        [*command, "--db", db],
        env=_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    if done.returncode != 0:
        raise RuntimeError(f"agentkit members add failed: {done.stderr}")
    return done.stdout.strip()


def serve_command(db: str, folder: Path) -> list[str]:
    return [
        sys.executable, "-m", "agentkit", "serve",
        "--db", db,
        "--port", "0",
        "--provider", SERVER_PROVIDER,
        "--attachment-root", str(folder),
    ]  # fmt: skip


@contextlib.contextmanager
def servers_of(config: str, dsn: str | None) -> Iterator[tuple[list[Server], str]]:
    """The running servers of `config` on a fresh database, and an owner's token. The
    servers and `agentkit members add` start at once (each takes a second or so to
    import); whichever opens the database first creates its tables, the others wait."""
    count = int(config.rsplit("/", 1)[1])
    with (
        tempfile.TemporaryDirectory(prefix="agentkit-bench-scaleout-") as name,
        database(config, dsn, Path(name)) as db,
        contextlib.ExitStack() as stack,
        concurrent.futures.ThreadPoolExecutor(count + 1) as pool,
    ):
        folder = Path(name)
        starting = [running(serve_command(db, folder), folder) for _ in range(count)]
        owner = pool.submit(add_owner, db)
        started = [pool.submit(server.__enter__) for server in starting]
        for server, future in zip(starting, started, strict=True):
            if future.exception() is None:
                stack.push(server.__exit__)  # stopped at the end, even if another failed
        servers = [future.result() for future in started]
        yield servers, owner.result()


# --- runs accepted and ended ----------------------------------------------------------------


@dataclass
class Runs:
    """N prompts at once, spread over the servers."""

    requests: int
    accepted_per_s: float
    accept_p50_ms: float
    accept_p99_ms: float
    all_ended_s: float
    ended_per_s: float
    server_cpu_ms_per_run: float


def burst(servers: list[Server], token: str, paths: list[str], processes: int) -> Runs:
    """Fire `paths` from `processes` load processes of bench/http.py at once (request `i`
    from process `i % processes`, which sends to server `process % len(servers)`), each
    run followed on the server that accepted it."""
    processes = max(processes, len(servers))
    specs = [
        {
            "url": servers[n % len(servers)].url,
            "token": token,
            "paths": paths[n::processes],
            "follow": True,
        }
        for n in range(processes)
    ]
    loads = run_loads(specs, lambda: sum(server.cpu_seconds() for server in servers))
    ended, cpu = loads.ended, loads.server_cpu
    sent, accepted = loads.times("sent"), loads.times("accepted")
    loads.check_completed(len(paths))
    accept = loads.accept_ms()
    return Runs(
        requests=len(paths),
        accepted_per_s=len(paths) / (max(accepted) - min(sent)),
        accept_p50_ms=_pct(accept, 0.5),
        accept_p99_ms=_pct(accept, 0.99),
        all_ended_s=ended - min(sent),
        ended_per_s=len(paths) / (ended - min(sent)),
        server_cpu_ms_per_run=cpu / len(paths) * 1000,
    )


def runs_burst(servers: list[Server], token: str, count: int, processes: int) -> Runs:
    """`count` conversations created (not timed), 10 runs on each server, each followed to
    its end, to warm them up (the first runs import more), then the burst."""

    async def prepare() -> list[str]:
        async with Load(servers[0].url, token, min(count, 200)) as load:
            ids = await create_conversations(load, count + 10 * len(servers))
        paths = [f"/v1/conversations/{c}/runs" for c in ids]
        for number, server in enumerate(servers):
            async with Load(server.url, token, 10) as load, anyio.create_task_group() as group:
                for index in range(10):
                    group.start_soon(_run_to_end, load[index], paths[10 * number + index])
        return paths[10 * len(servers) :]

    paths = anyio.run(prepare, backend="asyncio")
    return burst(servers, token, paths, processes=processes)


async def _run_to_end(client: Any, path: str) -> None:
    response = await client.post(path, json={"prompt": "Hi"})
    if response.status_code != 202:
        raise RuntimeError(f"POST {path}: {response.status_code} {response.text}")
    async with client.stream("GET", f"{path}/{response.json()['runId']}/events") as stream:
        _, completed = await first_event(stream)
    if not completed:
        raise RuntimeError(f"{path}: a warm-up run did not complete")


# --- room events ----------------------------------------------------------------------------


@dataclass
class RoomEvents:
    """P publishers, one event at a time each, into one room over every server."""

    events: int
    events_per_s: float
    publish_p50_ms: float
    publish_p99_ms: float
    gap_free: bool
    check: str


async def publish_burst(
    servers: list[Server], token: str, publishers: int, per_publisher: int
) -> RoomEvents:
    loads = [Load(server.url, token, publishers) for server in servers]
    try:
        response = await loads[0][0].post("/v1/rooms", json={"name": "bench"})
        response.raise_for_status()
        room = response.json()["id"]
        path = f"/v1/rooms/{room}/events"
        warm: dict[tuple[int, int], int] = {}
        for number, load in enumerate(loads):  # each server's first publication
            event = {"type": "bench.warm", "payload": {"publisher": -1 - number, "index": 0}}
            (warm[(-1 - number, 0)],) = (await _post(load[0], path, event))["positions"]
        given: dict[tuple[int, int], int] = {}
        latencies: list[float] = []
        go = anyio.Event()

        async def publisher(number: int) -> None:
            client = loads[number % len(loads)][number // len(loads)]
            await go.wait()
            for index in range(per_publisher):
                event = {"type": "bench.tick", "payload": {"publisher": number, "index": index}}
                began = time.perf_counter()
                (given[(number, index)],) = (await _post(client, path, event))["positions"]
                latencies.append((time.perf_counter() - began) * 1000)

        async with anyio.create_task_group() as group:
            for number in range(publishers):
                group.start_soon(publisher, number)
            await anyio.sleep(0.1)  # every publisher waits at `go`
            started = time.perf_counter()
            go.set()
        elapsed = time.perf_counter() - started
        ok, check = await _read_back(loads[-1][0], room, {**warm, **given})
    finally:
        for load in loads:
            await load.__aexit__(None, None, None)
    total = publishers * per_publisher
    return RoomEvents(
        events=total,
        events_per_s=total / elapsed,
        publish_p50_ms=_pct(latencies, 0.5),
        publish_p99_ms=_pct(latencies, 0.99),
        gap_free=ok,
        check=check,
    )


async def _post(client: Any, path: str, body: dict[str, Any]) -> dict[str, Any]:
    response = await client.post(path, json=body)
    if response.status_code != 201:
        raise RuntimeError(f"POST {path}: {response.status_code} {response.text}")
    result: dict[str, Any] = response.json()
    return result


async def _read_back(client: Any, room: str, given: dict[tuple[int, int], int]) -> tuple[bool, str]:
    """Read the whole room; whether its positions are 1..N, each published event once, at
    the position its publisher was given."""
    positions: list[int] = []
    found: dict[tuple[int, int], list[int]] = {}
    after = 0
    while True:
        response = await client.get(
            f"/v1/rooms/{room}/events", params={"after": after, "limit": 1000}
        )
        response.raise_for_status()
        page = response.json()["events"]
        if not page:
            break
        for event in page:
            positions.append(event["position"])
            key = (event["payload"]["publisher"], event["payload"]["index"])
            found.setdefault(key, []).append(event["position"])
        after = page[-1]["position"]
    problems: list[str] = []
    if positions != list(range(1, len(given) + 1)):
        duplicates = len(positions) - len(set(positions))
        missing = sorted(set(range(1, len(given) + 1)) - set(positions))
        problems.append(
            f"{len(positions)} positions read for {len(given)} published,"
            f" {duplicates} duplicated, missing {missing[:5]}"
        )
    wrong = [key for key, at in given.items() if found.get(key) != [at]]
    if wrong:
        problems.append(f"{len(wrong)} events not found once at their position, e.g. {wrong[0]}")
    if sorted(given.values()) != list(range(1, len(given) + 1)):
        problems.append("the positions given to the publishers are not 1..N")
    if problems:
        return False, "; ".join(problems)
    return True, f"positions 1..{len(given)}, no gap, no duplicate, each event once"


# --- follow latency -------------------------------------------------------------------------


@dataclass
class Followed:
    """What one follower received of one run: per kind, arrival - produced, in ms."""

    deltas_ms: list[float] = field(default_factory=list)
    blocks_ms: list[float] = field(default_factory=list)
    kinds: dict[str, int] = field(default_factory=dict)
    pieces_in_blocks: int = 0


async def _follow(
    client: Any, events: str, opened: anyio.Event, into: Followed, pending: str = ""
) -> None:
    """Read a run's SSE stream to its final event, timing every piece as it arrives."""
    kind = ""
    async with client.stream("GET", events, params={"after": -1}) as stream:
        if stream.status_code != 200:
            raise RuntimeError(f"GET {events}: {stream.status_code}")
        async for line in stream.aiter_lines():
            arrived = time.time()
            if line.startswith(":"):
                opened.set()
            elif line.startswith("event: "):
                kind = line[len("event: ") :]
                into.kinds[kind] = into.kinds.get(kind, 0) + 1
                if kind in ("completed", "cancelled", "error"):
                    return
            elif line.startswith("data: ") and kind in ("text_delta", "text"):
                text = json.loads(line[len("data: ") :])["part"]["text"]
                if kind == "text_delta":
                    pending += text
                    *pieces, pending = pending.split(";")
                    into.deltas_ms += [(arrived - float(p)) * 1000 for p in pieces]
                else:
                    stamps = [float(p) for p in text.split(";") if p]
                    into.pieces_in_blocks += len(stamps)
                    if stamps:
                        into.blocks_ms.append((arrived - stamps[-1]) * 1000)
    raise RuntimeError(f"{events}: the stream ended without a final event")


async def follow_latency(
    servers: list[Server], token: str, runs: int, pieces: int, interval: float, gates: Path
) -> dict[str, Followed]:
    """`runs` runs started through server A, each followed on A and (with two servers) on
    B; what every follower received, all runs together. The gate files go in `gates`."""
    names = ["A", "B"][: len(servers)]
    seen = {name: Followed() for name in names}
    loads = [Load(server.url, token, 2) for server in servers]
    try:
        conversations = await create_conversations(loads[0], runs)
        for number, conversation in enumerate(conversations):
            gate = gates / f"open-{number}"
            prompt = json.dumps({"stamps": pieces, "interval": interval, "gate": str(gate)})
            path = f"/v1/conversations/{conversation}/runs"
            response = await loads[0][0].post(path, json={"prompt": prompt})
            if response.status_code != 202:
                raise RuntimeError(f"POST {path}: {response.status_code} {response.text}")
            events = f"{path}/{response.json()['runId']}/events"
            opened = [anyio.Event() for _ in names]
            with anyio.fail_after(60):
                async with anyio.create_task_group() as group:
                    for index, name in enumerate(names):
                        group.start_soon(
                            _follow, loads[index][0], events, opened[index], seen[name]
                        )
                    for event in opened:
                        await event.wait()
                    await anyio.sleep(0.02)  # the followers' reads have begun
                    gate.touch()
    finally:
        for load in loads:
            await load.__aexit__(None, None, None)
    for name, followed in seen.items():
        if followed.pieces_in_blocks != runs * pieces:
            raise RuntimeError(
                f"follower {name}: {followed.pieces_in_blocks} pieces in text blocks,"
                f" {runs * pieces} produced"
            )
    return seen


# --- the run --------------------------------------------------------------------------------


@dataclass
class Sample:
    """One repetition of one configuration."""

    runs: Runs
    rooms: RoomEvents
    follow: dict[str, Followed]


def one_sample(config: str, dsn: str | None, settings: dict[str, Any]) -> Sample:
    began = time.monotonic()
    with servers_of(config, dsn) as (servers, token):
        ready = time.monotonic()
        runs = runs_burst(servers, token, settings["runs"], settings["load_processes"])
        burst_done = time.monotonic()
        rooms = anyio.run(
            publish_burst,
            servers,
            token,
            settings["publishers"],
            settings["events_per_publisher"],
            backend="asyncio",
        )
        rooms_done = time.monotonic()
        with tempfile.TemporaryDirectory(prefix="agentkit-bench-gates-") as gates:
            follow = anyio.run(
                follow_latency,
                servers,
                token,
                settings["follow_runs"],
                settings["pieces"],
                settings["interval"],
                Path(gates),
                backend="asyncio",
            )
        follow_done = time.monotonic()
    print(
        f"  {config} (seconds: servers {ready - began:.1f}, runs {burst_done - ready:.1f},"
        f" rooms {rooms_done - burst_done:.1f}, follow {follow_done - rooms_done:.1f},"
        f" stop {time.monotonic() - follow_done:.1f})\n"
        f"    {runs.accepted_per_s:,.0f} runs/s accepted, all ended in"
        f" {runs.all_ended_s:.2f} s; {rooms.events_per_s:,.0f} room events/s"
        f" ({'OK' if rooms.gap_free else 'FAIL'}); follow "
        + ", ".join(
            f"{name}: {', '.join(f'{k} x{n}' for k, n in sorted(f.kinds.items()))}"
            for name, f in follow.items()
        ),
        file=sys.stderr,
        flush=True,
    )
    return Sample(runs, rooms, follow)


def _median(values: list[float]) -> float:
    return statistics.median(values)


def _latency(samples: list[float]) -> dict[str, float | int | None]:
    if not samples:
        return {"samples": 0, "p50_ms": None, "p99_ms": None}
    return {"samples": len(samples), "p50_ms": _pct(samples, 0.5), "p99_ms": _pct(samples, 0.99)}


def summarise(config: str, samples: list[Sample]) -> dict[str, Any]:
    runs_fields = [f for f in Runs.__dataclass_fields__ if f != "requests"]
    room_fields = ["events_per_s", "publish_p50_ms", "publish_p99_ms"]
    follow: dict[str, Any] = {}
    for name in samples[0].follow:
        followed = [s.follow[name] for s in samples]
        kinds: dict[str, int] = {}
        for f in followed:
            for kind, n in f.kinds.items():
                kinds[kind] = kinds.get(kind, 0) + n
        follow[name] = {
            "server": "same process as the run" if name == "A" else "the other process",
            "kinds_seen": kinds,
            "text_delta": _latency([ms for f in followed for ms in f.deltas_ms]),
            "text_block": _latency([ms for f in followed for ms in f.blocks_ms]),
        }
    return {
        "servers": int(config.rsplit("/", 1)[1]),
        "runs": {f: _median([getattr(s.runs, f) for s in samples]) for f in runs_fields},
        "rooms": {
            **{f: _median([getattr(s.rooms, f) for s in samples]) for f in room_fields},
            "gap_free": all(s.rooms.gap_free for s in samples),
            "checks": [s.rooms.check for s in samples],
        },
        "follow": follow,
        "samples": [{"runs": asdict(s.runs), "rooms": asdict(s.rooms)} for s in samples],
    }


def main(quick: bool, repeats: int | None, processes: int, dsn: str) -> dict[str, Any]:
    settings: dict[str, Any] = {
        "runs": 40 if quick else 200,
        "load_processes": processes,
        "publishers": 4 if quick else 8,
        "events_per_publisher": 15 if quick else 60,
        "follow_runs": 3 if quick else 10,
        "pieces": 10,
        "interval": 0.02,
    }
    repeats = repeats or (1 if quick else 3)
    load_before = os.getloadavg()
    started = time.monotonic()
    samples: dict[str, list[Sample]] = {config: [] for config in CONFIGS}
    for repeat in range(repeats):  # interleaved, so that machine noise hits each alike
        print(f"repetition {repeat + 1} of {repeats}", file=sys.stderr, flush=True)
        for config in CONFIGS:
            samples[config].append(one_sample(config, dsn, settings))
    configs = {config: summarise(config, samples[config]) for config in CONFIGS}
    base = configs["postgresql/1"]
    ratios = {
        config: {
            "accepted_per_s": configs[config]["runs"]["accepted_per_s"]
            / base["runs"]["accepted_per_s"],
            "ended_per_s": configs[config]["runs"]["ended_per_s"] / base["runs"]["ended_per_s"],
            "room_events_per_s": configs[config]["rooms"]["events_per_s"]
            / base["rooms"]["events_per_s"],
        }
        for config in CONFIGS
    }
    return {
        "quick": quick,
        "repeats": repeats,
        "date": datetime.now(UTC).strftime("%Y-%m-%d"),
        "settings": {
            **settings,
            "load": f"runs: {max(processes, 2)} load processes of bench/http.py (httpx"
            f" AsyncClients of {POOL} connections each, one connection per request);"
            " rooms and follow: httpx AsyncClients in the benchmark's process; loopback",
            "database": "sqlite/1: a SQLite file; postgresql/N: a fresh schema of"
            " the --dsn database per repetition",
        },
        "code": _code_version(),
        "machine": machine_info(load_before),
        "seconds": time.monotonic() - started,
        "configs": configs,
        "ratios_to_postgresql_1": ratios,
        "gap_free": all(c["rooms"]["gap_free"] for c in configs.values()),
    }


def _code_version() -> dict[str, Any]:
    """The commit measured, and the files changed since (figures of a tree being edited
    say so)."""

    def git(*args: str) -> str:
        done = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True)
        return done.stdout if done.returncode == 0 else ""

    changed = git("status", "--porcelain", "--untracked-files=no", "--", "src").splitlines()
    return {
        "commit": git("rev-parse", "HEAD").strip() or None,
        "src_changed": [line[3:] for line in changed],
    }


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:,.1f}"


def table(results: dict[str, Any]) -> str:
    """The results as Markdown tables; "x pg/1" is the figure over PostgreSQL's with one
    process, in the same run."""
    configs, ratios = results["configs"], results["ratios_to_postgresql_1"]
    n = results["settings"]["runs"]
    events = results["settings"]["publishers"] * results["settings"]["events_per_publisher"]

    def row(name: str, unit: str, part: str, key: str, ratio: str | None = None) -> str:
        cells = [f"{configs[c][part][key]:,.1f}" for c in CONFIGS]
        x = f"{ratios['postgresql/2'][ratio]:.2f}" if ratio else ""
        return f"| {name} | {unit} | {' | '.join(cells)} | {x} |"

    lines = [
        "| measure | unit | sqlite/1 | postgresql/1 | postgresql/2 | pg/2 x pg/1 |",
        "|---|---|---:|---:|---:|---:|",
        row(f"{n:,} prompted at once: accepted", "runs/s", "runs", "accepted_per_s",
            "accepted_per_s"),
        row("accept latency p50", "ms", "runs", "accept_p50_ms"),
        row("accept latency p99", "ms", "runs", "accept_p99_ms"),
        row(f"{n:,} prompted at once: all ended", "runs/s", "runs", "ended_per_s",
            "ended_per_s"),
        row("first POST to the last run's end", "s", "runs", "all_ended_s"),
        row("server CPU per run (all processes)", "ms", "runs", "server_cpu_ms_per_run"),
        row(f"room events ({events:,} from {results['settings']['publishers']} publishers)",
            "events/s", "rooms", "events_per_s", "room_events_per_s"),
        row("publish latency p50", "ms", "rooms", "publish_p50_ms"),
        row("publish latency p99", "ms", "rooms", "publish_p99_ms"),
        "| room positions read back: 1..N, no gap, no duplicate | | "
        + " | ".join("OK" if configs[c]["rooms"]["gap_free"] else "FAIL" for c in CONFIGS)
        + " | |",
    ]  # fmt: skip
    lines += [
        "",
        "| follow latency (produced to arrival) | follower | kind | samples | p50 ms | p99 ms |",
        "|---|---|---|---:|---:|---:|",
    ]
    for config in CONFIGS:
        for name, follow in configs[config]["follow"].items():
            where = f"{name}, {follow['server']}"
            for kind in ("text_delta", "text_block"):
                figures = follow[kind]
                lines.append(
                    f"| {config} | {where} | {kind} | {figures['samples']} |"
                    f" {_ms(figures['p50_ms'])} | {_ms(figures['p99_ms'])} |"
                )
    lines.append("")
    for config in CONFIGS:
        for name, follow in configs[config]["follow"].items():
            kinds = ", ".join(f"{k} x{v}" for k, v in sorted(follow["kinds_seen"].items()))
            lines.append(f"kinds seen by follower {name} on {config}: {kinds}")
    lines.append(f"gap-free room check: {'OK' if results['gap_free'] else 'FAIL'}")
    return "\n".join(lines)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small counts: checks it runs")
    parser.add_argument("--repeats", type=int, help="repetitions of each configuration")
    parser.add_argument(
        "--load-processes", type=int, default=2, help="processes the run bursts are fired from"
    )
    parser.add_argument(
        "--dsn",
        default=os.environ.get("AGENTKIT_TEST_POSTGRES_DSN"),
        help="the PostgreSQL database (default: $AGENTKIT_TEST_POSTGRES_DSN)",
    )
    parser.add_argument("--json", metavar="FILE", help=f"where to write the results ({RESULTS})")
    args = parser.parse_args()
    if not args.dsn:
        parser.error("no PostgreSQL database: give --dsn or set AGENTKIT_TEST_POSTGRES_DSN")
    results = main(args.quick, args.repeats, args.load_processes, args.dsn)
    print(table(results))
    out = Path(args.json) if args.json else (None if args.quick else RESULTS)
    if out is not None:
        out.write_text(json.dumps(results, indent=2) + "\n")
    sys.exit(0 if results["gap_free"] else 1)
