"""The machine over HTTP: a real `agentkit serve` process on loopback, beside a bare floor.

    python bench/http.py            # full run: prints a table, writes bench/results-http.json
    python bench/http.py --quick    # a few seconds: checks the benchmark still runs

Every server runs in its own process, on a fresh SQLite file in a temporary folder, and
prints its URL as its first line. The load is `httpx.AsyncClient`s of `POOL` connections
each, with a connection per concurrent request: for the bursts, in `--load-processes`
processes (`python bench/http.py load SPEC`, 2 by default: one Python process cannot
fire a burst as fast as the server takes it); for the fan-out, in this process.

- burst: N conversations (created first, not timed) prompted at once with
  `POST /v1/conversations/{id}/runs`, each run's SSE stream opened right after its 202.
  Accepted runs per second (N / time from the first request sent to the last 202),
  accept latency p50/p99, time from the POST to the first event of the stream p50/p99,
  the server's peak RSS (`VmHWM`) and its CPU time per prompt (accepting, running and
  streaming it: the figure a busy machine moves least). The floor, in the same run: a
  bare Starlette app on uvicorn (`floor-server` below) whose POST handler inserts one
  row into a SQLite file (WAL, one connection, in a worker thread) and answers 202,
  fired N times the same way.
- fan-out: one run streaming D one-word text deltas as fast as it can, followed over SSE
  from `after=-1` by 1 and by F clients; text deltas per second delivered to all followers
  together and per follower, and the server's CPU time per delta sent. The provider
  streams one "ready" delta, then waits for a gate file, created once every follower has
  received that delta: every follower reads the run live, its deltas included (a
  follower that came after the run's end would get its stored text only), and the time
  counted is the deltas' delivery alone.

The server's provider is `bench.http:provider` (this file, with the repository's root on
the server's PYTHONPATH): a prompt that is a JSON object `{"deltas": D, "gate": PATH}`
gets "ready ", then D deltas once PATH exists; any other prompt gets "Hello there,
friend." in three pieces, with no delay.
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
SRC = ROOT / "src"
# This file shares its name with the standard library's `http` package: run as a script,
# its folder would come first on sys.path and shadow the package httpx and uvicorn import.
if sys.path and Path(sys.path[0] or ".").resolve() == HERE:
    del sys.path[0]
if str(SRC) not in sys.path:
    sys.path.insert(0, str(SRC))

import argparse  # noqa: E402
import contextlib  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import platform  # noqa: E402
import resource  # noqa: E402
import selectors  # noqa: E402
import signal  # noqa: E402
import socket  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from collections.abc import AsyncIterator, Callable, Iterator  # noqa: E402
from dataclasses import asdict, dataclass  # noqa: E402
from typing import TYPE_CHECKING, Any  # noqa: E402

import anyio  # noqa: E402

if TYPE_CHECKING:
    import httpx
    from starlette.applications import Starlette

    from agentkit.providers import ModelRequest

RESULTS = HERE / "results-http.json"
HELLO = ("Hello ", "there, ", "friend.")
SERVER_PROVIDER = "bench.http:provider"


# --- the provider the agentkit server runs (imported there as `bench.http`) ----------------


class BenchProvider:
    """A zero-latency model: "Hello there, friend." in three pieces, or, for a prompt
    `{"deltas": D, "gate": PATH}`, "ready " then D one-word deltas once the file PATH
    exists. Keeps nothing between calls."""

    name = "bench"

    def resolve_model(self, tier: str | None, model: str | None) -> str:
        return "bench-model"

    async def stream(self, request: ModelRequest) -> AsyncIterator[Any]:
        from agentkit.providers import Stop, TextChunk, Usage

        asked = _deltas_asked(request)
        if asked is None:
            for piece in HELLO:
                yield TextChunk(piece)
        elif asked[1] is None:  # paced: a model streaming one delta every `pace` seconds
            count, _, pace = asked
            for index in range(count):
                if index and pace:
                    await anyio.sleep(pace)
                yield TextChunk("five words in one delta ")
        else:
            count, gate, _ = asked
            assert gate is not None
            yield TextChunk("ready ")  # tells each follower it reads the run live
            while not gate.exists():  # noqa: ASYNC110 (another process creates it)
                await anyio.sleep(0.002)
            for _ in range(count):
                yield TextChunk("word ")
        yield Usage(request.model, input_tokens=1, output_tokens=1)
        yield Stop()


def _deltas_asked(request: ModelRequest) -> tuple[int, Path | None, float] | None:
    prompt = getattr(request.messages[-1], "content", "") if request.messages else ""
    if not isinstance(prompt, str) or not prompt.startswith("{"):
        return None
    asked = json.loads(prompt)
    gate = Path(asked["gate"]) if "gate" in asked else None
    return int(asked["deltas"]), gate, float(asked.get("pace", 0.0))


def provider(**options: Any) -> BenchProvider:
    """The factory `agentkit serve --provider bench.http:provider` calls."""
    return BenchProvider()


# --- the floor: a bare Starlette app on uvicorn ---------------------------------------------


def floor_app(db: Path) -> Starlette:
    """`POST /v1/conversations/{id}/runs` inserts one row (WAL, `synchronous=NORMAL`, one
    connection used by one worker thread at a time) and answers 202 with a run id."""
    import sqlite3

    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse, Response
    from starlette.routing import Route

    conn = sqlite3.connect(db, isolation_level=None, check_same_thread=False)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.execute("CREATE TABLE runs (id TEXT PRIMARY KEY, conversation TEXT, prompt TEXT)")
    writer = anyio.CapacityLimiter(1)

    def insert(run_id: str, conversation: str, prompt: str) -> None:
        conn.execute("INSERT INTO runs VALUES (?, ?, ?)", (run_id, conversation, prompt))

    async def start_run(request: Request) -> Response:
        body = await request.json()
        run_id = os.urandom(16).hex()
        conversation = request.path_params["id"]
        await anyio.to_thread.run_sync(insert, run_id, conversation, body["prompt"], limiter=writer)
        return JSONResponse({"conversationId": conversation, "runId": run_id}, 202)

    async def healthz(request: Request) -> Response:
        return JSONResponse({"status": "ok"})

    return Starlette(
        routes=[
            Route("/healthz", healthz, methods=["GET"]),
            Route("/v1/conversations/{id}/runs", start_run, methods=["POST"]),
        ]
    )


def floor_server(db: Path) -> None:
    """Serve `floor_app` like `agentkit serve` does: a socket bound first (port 0), its
    URL printed as the first line, uvicorn with the same settings, until SIGTERM."""
    import uvicorn

    # IPPROTO_TCP named, as `agentkit.server.bind` does: asyncio sets TCP_NODELAY only on
    # sockets whose protocol says TCP (with 0, Nagle's algorithm delays small responses).
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(2048)
    print(f"http://127.0.0.1:{sock.getsockname()[1]}", flush=True)
    config = uvicorn.Config(floor_app(db), lifespan="off", log_level="warning", access_log=False)
    anyio.run(lambda: uvicorn.Server(config).serve(sockets=[sock]), backend="asyncio")


# --- server processes -----------------------------------------------------------------------


@dataclass
class Server:
    """A server process and its URL."""

    process: subprocess.Popen[str]
    url: str

    def status_kib(self, field: str) -> int:
        """A `VmXXX` line of `/proc/PID/status`, in KiB."""
        for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
        raise LookupError(field)

    def cpu_seconds(self) -> float:
        """User and system CPU time the process used so far."""
        fields = Path(f"/proc/{self.process.pid}/stat").read_text().rpartition(")")[2].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _env() -> dict[str, str]:
    paths = [str(ROOT), str(SRC), os.environ.get("PYTHONPATH", "")]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in paths if p)}


@contextlib.contextmanager
def running(command: list[str], cwd: Path) -> Iterator[Server]:
    """Start `command`, read its URL from its first stdout line; SIGTERM it at the end."""
    process = subprocess.Popen(
        command, cwd=cwd, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        assert process.stdout is not None
        selector = selectors.DefaultSelector()
        selector.register(process.stdout, selectors.EVENT_READ)
        if not selector.select(60):
            raise RuntimeError(f"{command[:4]} printed no URL within 60 s")
        url = process.stdout.readline().strip()
        if not url.startswith("http://"):
            error = process.stderr.read() if process.stderr and process.poll() is not None else ""
            raise RuntimeError(f"{command[:4]} did not start: {url!r} {error}")
        yield Server(process, url)
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        for stream in (process.stdout, process.stderr):
            if stream is not None:
                stream.close()


def agentkit_command(folder: Path, db: str | None = None) -> list[str]:
    return [
        sys.executable, "-m", "agentkit", "serve",
        "--db", db or str(folder / "machine.db"),
        "--port", "0",
        "--provider", SERVER_PROVIDER,
        "--attachment-root", str(folder),
    ]  # fmt: skip


def floor_command(folder: Path) -> list[str]:
    return [sys.executable, str(HERE / "http.py"), "floor-server", str(folder / "floor.db")]


async def owner_token(db: Path | str) -> str:
    """A new owner's bearer token, written straight into the server's store."""
    from agentkit.conversations import Members
    from agentkit.stores import open_store

    store = open_store(db)
    try:
        return await Members(store).add("bench", "owner")
    finally:
        await store.aclose()


POOL = 50
"""Connections per `httpx.AsyncClient`: the load spreads over several clients, since
httpcore's pool does work per waiting request and connection on every change, which
grows with the square of a pool's size."""


class Load:
    """The benchmark's HTTP clients: `ceil(connections / POOL)` `httpx.AsyncClient`s of
    `POOL` connections each; request `i` goes through client `i % len(clients)`."""

    def __init__(self, url: str, token: str, connections: int) -> None:
        import httpx

        self.clients = [
            httpx.AsyncClient(
                base_url=url,
                headers={"Authorization": f"Bearer {token}"},
                # Idle connections dropped well before uvicorn's 5 s keep-alive timeout
                # closes them: reusing one the server is closing fails the request.
                limits=httpx.Limits(
                    max_connections=POOL, max_keepalive_connections=POOL, keepalive_expiry=2.0
                ),
                timeout=httpx.Timeout(300.0),
            )
            for _ in range(-(-connections // POOL))
        ]

    def __getitem__(self, index: int) -> httpx.AsyncClient:
        return self.clients[index % len(self.clients)]

    async def __aenter__(self) -> Load:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        for client in self.clients:
            await client.aclose()


# --- measures -------------------------------------------------------------------------------


def _pct(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _client_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


@dataclass
class Burst:
    """One burst of N prompts, as the client saw it."""

    requests: int
    accepted_per_s: float
    accept_p50_ms: float
    accept_p99_ms: float
    first_event_p50_ms: float | None
    first_event_p99_ms: float | None
    server_cpu_ms_per_request: float
    server_cpu_share: float
    client_cpu_share: float
    server_peak_rss_mb: float


async def create_conversations(load: Load, count: int) -> list[str]:
    ids: list[str] = []

    async def one(index: int) -> None:
        response = await load[index].post("/v1/conversations", json={})
        response.raise_for_status()
        ids.append(response.json()["id"])

    async with anyio.create_task_group() as group:
        for index in range(count):
            group.start_soon(one, index)
    return ids


async def first_event(response: httpx.Response) -> tuple[float, bool]:
    """Read an SSE response to its end: when the first event (an `id:` line, not the
    opening `: stream` comment) arrived, and whether the run completed (its `completed`
    event came: looked for in each chunk with the tail of the one before, since the
    server may send the first event and the last in one write)."""
    tail: bytes = b""
    first: float | None = None
    completed = False
    async for chunk in response.aiter_raw():
        data = tail + chunk
        if first is None and (data.startswith(b"id: ") or b"\nid: " in data):
            first = time.monotonic()
        completed = completed or b"\nevent: completed\n" in data
        tail = data[-64:]
    assert first is not None, "the stream ended before any event"
    return first, completed


@dataclass
class Fired:
    """What one load process saw of its share of a burst (monotonic clock, seconds:
    CLOCK_MONOTONIC, the same in every process of the machine)."""

    sent: list[float]
    accepted: list[float]
    first: list[float]
    completed: int
    cpu_seconds: float


async def fire(spec: dict[str, Any], go: anyio.Event) -> Fired:
    """POST every path of `spec` at once when `go` is set, each request on a connection of
    its own, opened by the request (as that many separate clients would); when
    `spec["follow"]`, open each run's SSE stream right after its 202."""
    paths: list[str] = spec["paths"]
    sent, accepted, first = [0.0] * len(paths), [0.0] * len(paths), [0.0] * len(paths)
    completed = 0

    async def one(load: Load, index: int, path: str) -> None:
        nonlocal completed
        await go.wait()
        client = load[index]
        sent[index] = time.monotonic()
        response = await client.post(path, json={"prompt": "Hi"})
        accepted[index] = time.monotonic()
        if response.status_code != 202:
            raise RuntimeError(f"POST {path}: {response.status_code} {response.text}")
        if spec["follow"]:
            events = f"{path}/{response.json()['runId']}/events"
            async with client.stream("GET", events) as stream:
                first[index], done = await first_event(stream)
            completed += done

    async with (
        Load(spec["url"], spec["token"], len(paths)) as load,
        anyio.create_task_group() as group,
    ):
        for index, path in enumerate(paths):
            group.start_soon(one, load, index, path)
        await go.wait()
        cpu = _client_cpu()
    return Fired(sent, accepted, first, completed, _client_cpu() - cpu)


async def load_process(spec: dict[str, Any]) -> None:
    """`python bench/http.py load SPEC_FILE`: one load process. Prints "ready" once its
    tasks wait, fires at the "go" line on stdin, prints what it saw as JSON."""
    go = anyio.Event()

    async def start_on_go() -> None:
        await anyio.sleep(0.2)  # every task waits at `go`
        print("ready", flush=True)
        await anyio.to_thread.run_sync(sys.stdin.readline)
        go.set()

    async with anyio.create_task_group() as group:
        group.start_soon(start_on_go)
        fired = await fire(spec, go)
    print(json.dumps(asdict(fired)), flush=True)


def machine_info(load_before: tuple[float, float, float]) -> dict[str, Any]:
    """What a results file says of the machine: Python, platform, cores, load around it."""
    return {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "nproc": os.cpu_count(),
        "loadavg_before": load_before,
        "loadavg_after": os.getloadavg(),
    }


def run_loads(specs: list[dict[str, Any]], cpu_seconds: Callable[[], float]) -> Loads:
    """Start one load process per spec (`{url, token, paths, follow}`), let them all go
    at once, and wait for their reports; the servers' CPU (`cpu_seconds()`, a total) is
    counted from the go to the last report."""
    with tempfile.TemporaryDirectory(prefix="agentkit-bench-load-") as name:
        loads: list[subprocess.Popen[str]] = []
        try:
            for number, content in enumerate(specs):
                spec = Path(name) / f"load-{number}.json"
                spec.write_text(json.dumps(content))
                command = [sys.executable, str(HERE / "http.py"), "load", str(spec)]
                loads.append(
                    subprocess.Popen(
                        command,
                        env=_env(),
                        stdin=subprocess.PIPE,
                        stdout=subprocess.PIPE,
                        text=True,
                    )
                )
            for process in loads:
                assert process.stdout is not None
                if process.stdout.readline().strip() != "ready":
                    raise RuntimeError("a load process failed to start")
            cpu = cpu_seconds()
            began = time.monotonic()
            for process in loads:
                assert process.stdin is not None
                process.stdin.write("go\n")
                process.stdin.flush()
            outputs = [process.communicate(timeout=600)[0] for process in loads]
            ended = time.monotonic()
            cpu = cpu_seconds() - cpu
        finally:
            for process in loads:
                if process.poll() is None:
                    process.kill()
                    process.wait()
    if any(process.returncode for process in loads):
        raise RuntimeError("a load process failed (its error is above)")
    return Loads([Fired(**json.loads(output)) for output in outputs], began, ended, cpu)


@dataclass
class Loads:
    """What the load processes of one burst reported, and when and at what CPU cost."""

    fired: list[Fired]
    began: float
    ended: float
    server_cpu: float

    def times(self, kind: str) -> list[float]:
        """Every load process's `sent`, `accepted` or `first` times, in request order."""
        return [t for f in self.fired for t in getattr(f, kind)]

    def accept_ms(self) -> list[float]:
        """Each request's time from sent to accepted, in milliseconds."""
        pairs = zip(self.times("sent"), self.times("accepted"), strict=True)
        return [(a - s) * 1000 for s, a in pairs]

    def check_completed(self, expected: int) -> None:
        completed = sum(f.completed for f in self.fired)
        if completed != expected:
            raise RuntimeError(f"{expected - completed} of {expected} runs did not complete")


def burst(server: Server, token: str, paths: list[str], follow: bool, processes: int) -> Burst:
    """Fire `paths` from `processes` load processes at once (request `i` from process
    `i % processes`); the server's CPU is counted from the go to the last response."""
    specs = [
        {"url": server.url, "token": token, "paths": paths[n::processes], "follow": follow}
        for n in range(processes)
    ]
    loads = run_loads(specs, server.cpu_seconds)
    fired, began, ended, server_cpu = loads.fired, loads.began, loads.ended, loads.server_cpu
    sent, accepted, first = loads.times("sent"), loads.times("accepted"), loads.times("first")
    if follow:
        loads.check_completed(len(paths))
    accept = loads.accept_ms()
    first_ms = [(f - s) * 1000 for s, f in zip(sent, first, strict=True)]
    return Burst(
        requests=len(paths),
        accepted_per_s=len(paths) / (max(accepted) - min(sent)),
        accept_p50_ms=_pct(accept, 0.5),
        accept_p99_ms=_pct(accept, 0.99),
        first_event_p50_ms=_pct(first_ms, 0.5) if follow else None,
        first_event_p99_ms=_pct(first_ms, 0.99) if follow else None,
        server_cpu_ms_per_request=server_cpu / len(paths) * 1000,
        server_cpu_share=server_cpu / (ended - began),
        client_cpu_share=sum(f.cpu_seconds for f in fired) / (ended - began),
        server_peak_rss_mb=server.status_kib("VmHWM") / 1024,
    )


def agentkit_burst(count: int, processes: int) -> Burst:
    """N conversations created (not timed), 10 runs to warm the server up, then the
    burst: N prompts at once, each run followed."""
    with tempfile.TemporaryDirectory(prefix="agentkit-bench-http-") as name:
        folder = Path(name)
        with running(agentkit_command(folder), folder) as server:

            async def prepare() -> tuple[str, list[str]]:
                token = await owner_token(folder / "machine.db")
                async with Load(server.url, token, min(count, 200)) as load:
                    ids = await create_conversations(load, count + 10)
                return token, [f"/v1/conversations/{c}/runs" for c in ids]

            token, paths = anyio.run(prepare, backend="asyncio")
            burst(server, token, paths[:10], follow=True, processes=1)  # first runs import more
            return burst(server, token, paths[10:], follow=True, processes=processes)


def floor_burst(count: int, processes: int) -> Burst:
    """The floor's burst, after 10 requests to warm it up."""
    with tempfile.TemporaryDirectory(prefix="agentkit-bench-http-") as name:
        folder = Path(name)
        with running(floor_command(folder), folder) as server:
            warm = [f"/v1/conversations/w{i}/runs" for i in range(10)]
            burst(server, "floor", warm, follow=False, processes=1)
            paths = [f"/v1/conversations/c{i}/runs" for i in range(count)]
            return burst(server, "floor", paths, follow=False, processes=processes)


@dataclass
class FanOut:
    """One run's deltas delivered to F followers."""

    followers: int
    deltas: int
    deltas_per_s: float
    per_follower_per_s: float
    fewest_deltas_received: int
    seconds: float
    server_cpu_us_per_delta: float
    server_cpu_share: float
    client_cpu_share: float


class _DeltaCounter:
    """Counts `event: text_delta` lines in an SSE byte stream, across chunk edges."""

    MARK = b"\nevent: text_delta\n"

    def __init__(self) -> None:
        self.count = 0
        self.ended = False
        self._tail = b""

    def feed(self, chunk: bytes) -> int:
        data = self._tail + chunk
        found = data.count(self.MARK)
        self.count += found
        if b"\nevent: completed\n" in data:
            self.ended = True
        self._tail = data[-(len(self.MARK) - 1) :]
        return found


async def fan_out(server: Server, token: str, followers: int, deltas: int) -> FanOut:
    """Start a run that waits for a gate, attach the followers (each has received the
    run's first delta), open the gate, count the deltas every follower receives."""
    async with Load(server.url, token, followers) as load:
        return await _fan_out(server, load, followers, deltas)


async def _fan_out(server: Server, load: Load, followers: int, deltas: int) -> FanOut:
    conversation = (await create_conversations(load, 1))[0]
    gate = Path(tempfile.mkdtemp(prefix="agentkit-bench-gate-")) / "open"
    prompt = json.dumps({"deltas": deltas, "gate": str(gate)})
    path = f"/v1/conversations/{conversation}/runs"
    response = await load[0].post(path, json={"prompt": prompt})
    if response.status_code != 202:
        raise RuntimeError(f"POST {path}: {response.status_code} {response.text}")
    events = f"{path}/{response.json()['runId']}/events"
    counters = [_DeltaCounter() for _ in range(followers)]
    spans: list[tuple[float, float]] = [(0.0, 0.0)] * followers
    attached = 0
    all_attached = anyio.Event()

    async def follow(index: int) -> None:
        nonlocal attached
        counter = counters[index]
        first = last = 0.0
        async with load[index].stream("GET", events, params={"after": -1}) as stream:
            async for chunk in stream.aiter_raw():
                if not counter.feed(chunk):
                    continue
                if counter.count == 1:  # the "ready" delta: this follower reads the run live
                    attached += 1
                    if attached == followers:
                        all_attached.set()
                    continue
                last = time.perf_counter()
                first = first or last
        spans[index] = (first, last)

    async with anyio.create_task_group() as group:
        for index in range(followers):
            group.start_soon(follow, index)
        await all_attached.wait()
        server_cpu, client_cpu = server.cpu_seconds(), _client_cpu()
        began = time.perf_counter()
        gate.touch()
    ended = time.perf_counter()
    gate.unlink()
    gate.parent.rmdir()
    received = [c.count - 1 for c in counters]  # the "ready" delta aside
    if not all(c.ended for c in counters) or min(received) != deltas:
        raise RuntimeError(f"followers received {min(received)} to {max(received)} deltas")
    total = sum(received)
    start = min(first for first, _ in spans)
    end = max(last for _, last in spans)
    if end <= start:  # everything came in one read: count from the gate's opening
        start = began
    return FanOut(
        followers=followers,
        deltas=deltas,
        deltas_per_s=total / (end - start),
        per_follower_per_s=total / (end - start) / followers,
        fewest_deltas_received=min(received),
        seconds=end - start,
        server_cpu_us_per_delta=(server.cpu_seconds() - server_cpu) / total * 1e6,
        server_cpu_share=(server.cpu_seconds() - server_cpu) / (ended - began),
        client_cpu_share=(_client_cpu() - client_cpu) / (ended - began),
    )


async def fan_outs(fanouts: list[tuple[int, int]], repeats: int) -> dict[int, list[FanOut]]:
    """Every (followers, deltas) case `repeats` times, interleaved, on one server."""
    samples: dict[int, list[FanOut]] = {followers: [] for followers, _ in fanouts}
    with tempfile.TemporaryDirectory(prefix="agentkit-bench-http-") as name:
        folder = Path(name)
        with running(agentkit_command(folder), folder) as server:
            token = await owner_token(folder / "machine.db")
            await fan_out(server, token, 1, 100)  # warm up
            for _ in range(repeats):
                for followers, deltas in fanouts:
                    samples[followers].append(await fan_out(server, token, followers, deltas))
    return samples


@dataclass
class Paced:
    """Sequential runs of D deltas each, every run followed over SSE by one client as it
    streams: the server's CPU per run."""

    store: str
    deltas: int
    runs: int
    fast_ms_per_run: float  # the model streams its deltas with no pause
    paced_ms_per_run: float  # the model pauses `pace_ms` between two deltas
    pace_ms: float
    live_us_per_delta: float  # (paced - fast) / deltas: what streaming live adds per delta
    fast_deltas_received: float  # per fast run: it may end before its stream opens
    per_follower_us_per_delta: float  # CPU per delta per follower (see `_fan_cpu`)


async def _one_paced(
    load: Load, conversation: str, deltas: int, pace: float, followers: int = 1
) -> int:
    """Prompt, follow the run from its start to its end with `followers` streams; the
    deltas one received (all of a paced run; of a fast one, those it had not ended
    before the stream opened: a run that has ended is read from the store, its text
    whole)."""
    path = f"/v1/conversations/{conversation}/runs"
    prompt = json.dumps({"deltas": deltas, "pace": pace})
    response = await load[0].post(path, json={"prompt": prompt})
    if response.status_code != 202:
        raise RuntimeError(f"POST {path}: {response.status_code} {response.text}")
    counters = [_DeltaCounter() for _ in range(followers)]
    events = f"{path}/{response.json()['runId']}/events"

    async def follow(index: int) -> None:
        async with load[index].stream("GET", events, params={"after": -1}) as stream:
            async for chunk in stream.aiter_raw():
                counters[index].feed(chunk)

    async with anyio.create_task_group() as group:
        for index in range(followers):
            group.start_soon(follow, index)
    for counter in counters:
        if not counter.ended or (pace and counter.count != deltas):
            raise RuntimeError(f"a follower received {counter.count} of {deltas} deltas")
    return counters[0].count


async def _fan_cpu(server: Server, load: Load, runs: int, followers: int) -> float:
    """The server's CPU microseconds per delta per follower beyond the first, over
    `runs` runs of `FAN_DELTAS` deltas `FAN_PACE` seconds apart followed by 1 and by
    `followers` streams (interleaved)."""
    conversations = await create_conversations(load, 2 * runs)
    one = many = 0.0
    for index in range(runs):
        for count in (1, followers):
            before = server.cpu_seconds()
            await _one_paced(
                load, conversations[2 * index + (count > 1)], FAN_DELTAS, FAN_PACE, count
            )
            spent = server.cpu_seconds() - before
            if count == 1:
                one += spent
            else:
                many += spent
    return (many - one) / runs / (followers - 1) / FAN_DELTAS * 1e6


FAN_DELTAS = 200  # a run long enough that opening a stream weighs little per delta
FAN_PACE = 0.002
FAN_FOLLOWERS = 5


async def _paced_cpu(
    server: Server, load: Load, runs: int, deltas: int, pace: float
) -> tuple[float, float]:
    """The server's CPU milliseconds per run, over `runs` runs one after the other, and
    the deltas the follower received per run."""
    conversations = await create_conversations(load, runs)
    before = server.cpu_seconds()
    received = 0
    for conversation in conversations:
        received += await _one_paced(load, conversation, deltas, pace)
    return (server.cpu_seconds() - before) / runs * 1000, received / runs


async def paced(
    store: str, db: str | None, runs: int, deltas: int, pace: float, rounds: int
) -> Paced:
    """Fast and paced runs, interleaved in rounds, on one server on `store`."""
    fast: list[tuple[float, float]] = []
    slow: list[tuple[float, float]] = []
    with tempfile.TemporaryDirectory(prefix="agentkit-bench-paced-") as name:
        folder = Path(name)
        with running(agentkit_command(folder, db), folder) as server:
            token = await owner_token(db or folder / "machine.db")
            async with Load(server.url, token, 1) as load:
                await _paced_cpu(server, load, 5, deltas, 0.0)  # warm up
                for _ in range(rounds):
                    fast.append(await _paced_cpu(server, load, runs // rounds, deltas, 0.0))
                    slow.append(await _paced_cpu(server, load, runs // rounds, deltas, pace))
            async with Load(server.url, token, FAN_FOLLOWERS) as load:
                per_follower = [
                    await _fan_cpu(server, load, max(runs // 40, 1), FAN_FOLLOWERS)
                    for _ in range(rounds)
                ]
    fast_ms, paced_ms = statistics.median(f[0] for f in fast), statistics.median(f[0] for f in slow)
    return Paced(
        store=store,
        deltas=deltas,
        runs=runs,
        fast_ms_per_run=fast_ms,
        paced_ms_per_run=paced_ms,
        pace_ms=pace * 1000,
        live_us_per_delta=(paced_ms - fast_ms) / deltas * 1000,
        fast_deltas_received=statistics.mean(f[1] for f in fast),
        per_follower_us_per_delta=statistics.median(per_follower),
    )


@contextlib.contextmanager
def postgres_schema() -> Iterator[str | None]:
    """A store URL of a new schema of `AGENTKIT_TEST_POSTGRES_DSN`'s database, dropped
    after; `None` without one."""
    dsn = os.environ.get("AGENTKIT_TEST_POSTGRES_DSN")
    if not dsn:
        yield None
        return
    import uuid
    from urllib.parse import quote

    import psycopg

    schema = f"agentkit_http_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{schema}"')
    try:
        separator = "&" if "?" in dsn else "?"
        yield f"{dsn}{separator}options={quote(f'-csearch_path={schema}')}"
    finally:
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def paced_all(quick: bool) -> list[Paced]:
    """The paced measure on SQLite, and on PostgreSQL when a database is given."""
    runs, deltas, pace, rounds = (10, 20, 0.005, 2) if quick else (200, 20, 0.005, 5)
    found = [anyio.run(paced, "sqlite", None, runs, deltas, pace, rounds, backend="asyncio")]
    with postgres_schema() as url:
        if url is not None:
            found.append(
                anyio.run(paced, "postgresql", url, runs, deltas, pace, rounds, backend="asyncio")
            )
    return found


def paced_table(found: list[Paced]) -> str:
    lines = [
        "| store | deltas per run | server CPU per run, no pause | server CPU per run, "
        "paced | paced - no pause, per delta | deltas streamed, no pause "
        f"| per delta per follower ({FAN_DELTAS} deltas {FAN_PACE * 1000:g} ms apart, 1 vs "
        f"{FAN_FOLLOWERS} followers) |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for p in found:
        lines.append(
            f"| {p.store} | {p.deltas} | {p.fast_ms_per_run:.2f} ms | {p.paced_ms_per_run:.2f} ms"
            f" ({p.pace_ms:g} ms between deltas) | {p.live_us_per_delta:.0f} us |"
            f" {p.fast_deltas_received:.1f} | {p.per_follower_us_per_delta:.0f} us |"
        )
    return "\n".join(lines)


# --- the run --------------------------------------------------------------------------------


def _median_of(samples: list[Burst] | list[FanOut], field: str) -> float | None:
    values: list[float | None] = [getattr(s, field) for s in samples]
    present = [v for v in values if v is not None]
    return statistics.median(present) if len(present) == len(values) else None


def main(quick: bool, repeats: int | None, processes: int) -> dict[str, Any]:
    count = 50 if quick else 1000
    repeats = repeats or (1 if quick else 3)
    fanouts = [(1, 1000), (10, 200)] if quick else [(1, 20_000), (100, 2_000)]
    load_before = os.getloadavg()
    ours: list[Burst] = []
    floor: list[Burst] = []
    for _ in range(repeats):  # interleaved, so that machine noise hits both alike
        ours.append(agentkit_burst(count, processes))
        floor.append(floor_burst(count, processes))
    followed = anyio.run(fan_outs, fanouts, repeats, backend="asyncio")
    burst_fields = [f for f in Burst.__dataclass_fields__ if f != "requests"]
    fan_fields = [f for f in FanOut.__dataclass_fields__ if f not in ("followers", "deltas")]
    return {
        "quick": quick,
        "repeats": repeats,
        "load": {
            "burst": f"{processes} load processes of httpx.AsyncClients ({POOL} connections"
            " each), one connection per request, on loopback",
            "fan_out": "httpx.AsyncClients in the benchmark's process, one connection per"
            " follower, on loopback",
        },
        "machine": machine_info(load_before),
        "burst": {
            "requests": count,
            "agentkit": {f: _median_of(ours, f) for f in burst_fields},
            "floor": {f: _median_of(floor, f) for f in burst_fields},
            "samples": {
                "agentkit": [asdict(s) for s in ours],
                "floor": [asdict(s) for s in floor],
            },
        },
        "fan_out": [
            {
                "followers": followers,
                "deltas": deltas,
                **{f: _median_of(followed[followers], f) for f in fan_fields},
                "samples": [asdict(s) for s in followed[followers]],
            }
            for followers, deltas in fanouts
        ],
    }


def table(results: dict[str, Any]) -> str:
    """The results as a Markdown table; "x floor" is how many times the floor's figure
    agentkit's is (slower, or bigger)."""
    ours, floor = results["burst"]["agentkit"], results["burst"]["floor"]
    n = results["burst"]["requests"]

    def row(name: str, unit: str, key: str, higher_is_better: bool = False) -> str:
        mine, bare = ours[key], floor[key]
        if bare is None:
            return f"| {name} | {unit} | {mine:,.1f} | | |"
        ratio = bare / mine if higher_is_better else mine / bare
        return f"| {name} | {unit} | {mine:,.1f} | {bare:,.1f} | {ratio:.1f} |"

    lines = [
        "| measure | unit | agentkit | floor | x floor |",
        "|---|---|---:|---:|---:|",
        row(f"{n:,} prompted at once: accepted", "runs/s", "accepted_per_s", True),
        row("accept latency p50", "ms", "accept_p50_ms"),
        row("accept latency p99", "ms", "accept_p99_ms"),
        row("POST sent to first SSE event p50", "ms", "first_event_p50_ms"),
        row("POST sent to first SSE event p99", "ms", "first_event_p99_ms"),
        row("server peak RSS (VmHWM)", "MB", "server_peak_rss_mb"),
        row(
            "server CPU per prompt (agentkit: accept, run, stream)",
            "ms",
            "server_cpu_ms_per_request",
        ),
        row("server CPU during the burst", "cores", "server_cpu_share"),
        row("client CPU during the burst", "cores", "client_cpu_share"),
    ]
    for case in results["fan_out"]:
        followers, deltas = case["followers"], case["deltas"]
        label = f"{deltas:,} deltas to {followers} follower{'s' if followers > 1 else ''}"
        lines += [
            f"| {label}: all together | deltas/s | {case['deltas_per_s']:,.0f} | | |",
            f"| {label}: per follower | deltas/s | {case['per_follower_per_s']:,.0f} | | |",
            f"| {label}: server CPU per delta sent | us |"
            f" {case['server_cpu_us_per_delta']:,.0f} | | |",
            f"| {label}: server / client CPU | cores | {case['server_cpu_share']:.2f}"
            f" / {case['client_cpu_share']:.2f} | | |",
        ]
    return "\n".join(lines)


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "floor-server":
        floor_server(Path(sys.argv[2]))
        sys.exit(0)
    if len(sys.argv) == 3 and sys.argv[1] == "load":
        anyio.run(load_process, json.loads(Path(sys.argv[2]).read_text()), backend="asyncio")
        sys.exit(0)
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small counts: checks it runs")
    parser.add_argument("--repeats", type=int, help="repetitions of each measure")
    parser.add_argument(
        "--load-processes", type=int, default=2, help="processes the bursts are fired from"
    )
    parser.add_argument("--json", metavar="FILE", help=f"where to write the results ({RESULTS})")
    parser.add_argument(
        "--paced-only",
        action="store_true",
        help="only the paced measure (and into bench/results-paced.json)",
    )
    args = parser.parse_args()
    if args.paced_only:
        found = paced_all(args.quick)
        print(paced_table(found))
        out = (
            Path(args.json) if args.json else (None if args.quick else HERE / "results-paced.json")
        )
        if out is not None:
            out.write_text(json.dumps([asdict(p) for p in found], indent=2) + "\n")
        sys.exit(0)
    results = main(args.quick, args.repeats, args.load_processes)
    results["paced"] = [asdict(p) for p in paced_all(args.quick)]
    print(table(results))
    print()
    print(paced_table([Paced(**p) for p in results["paced"]]))
    out = Path(args.json) if args.json else (None if args.quick else RESULTS)
    if out is not None:
        out.write_text(json.dumps(results, indent=2) + "\n")
