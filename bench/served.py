"""A served run, side by side: agentkit's server against its peers' on the same fake model.

    python bench/served.py            # full run: prints a table, writes bench/results-served.json
    python bench/served.py --quick    # a few seconds: checks the benchmark still runs

Systems (each a real server process on loopback):

- `agentkit-sqlite`: `agentkit serve` on a SQLite file;
- `agentkit-postgresql`: `agentkit serve` on PostgreSQL: a throwaway cluster this script
  starts (`initdb`, `pg_ctl`, another port, `pg_stat_statements` preloaded) so that it can
  count the SQL statements of a run from PostgreSQL itself without touching the machine's
  own server; without `initdb`, a fresh schema of `$AGENTKIT_TEST_POSTGRES_DSN`, statements
  not counted;
- `langgraph`: LangGraph's `langgraph dev` (the in-memory Agent Server of
  `langgraph-cli[inmem]`), the graph of `bench/peers/langgraph`;
- `adk`: Google ADK's `adk api_server` with in-memory services (`--no_use_local_storage`),
  the agent of `bench/peers/adk`; `adk-sqlite`: the same with its sessions in a SQLite
  file (`--session_service_uri sqlite:///...`), the peer that persists like agentkit.

The peers run from their own virtual environments (`--langgraph-venv`, `--adk-venv`, by
default `/work/peers/langgraph` and `/work/peers/adk`); a peer that is not installed is
skipped, and the output says so.

Every system gets the same fake model: 20 text deltas of five words, at once for the prompt
"fast", 5 ms apart for the prompt "paced" (live streaming). Every server is pinned to core 1
(`taskset -c 1`), this process (the load generator, one client, one run at a time) to
core 0. A run is started on a fresh conversation, thread or session (created beforehand,
not measured) through the endpoint a client starts a streamed run with, and read to its
end:

- agentkit: `POST /v1/conversations/{id}/runs` (202), then `GET .../runs/{run}/events` (SSE);
- LangGraph: `POST /threads/{id}/runs/stream` with `stream_mode: ["messages-tuple"]`, so
  that each delta is streamed as agentkit streams it;
- ADK: `POST /run_sse` with `"streaming": true`.

Measured, from the server process (its `/proc/PID/stat`, children included) in rounds,
the systems' order rotated each round, medians over rounds:

- server CPU per run, fast and paced model (CPU time over a batch of runs / runs);
- start answered: from sending the start request to its 2xx answer (for the peers' streams,
  their response head), p50 and p99 over every fast run;
- server peak RSS (`VmHWM`) at the end;
- the server's CPU while idle (ms per second), which every batch includes, and the CPU per
  run net of it (LangGraph's in-memory queue polls every 0.5 s, so each of its runs takes
  about a second from start to end, and pays that much idle work);
- a run's wall time, from its start to the end of its stream;
- streaming CPU per delta: (paced - fast) / 20, what live streaming adds per delta;
- for PostgreSQL: SQL statements per run (`pg_stat_statements` calls in the benchmark's
  database over a batch / runs), the most frequent statements, and the throwaway
  cluster's own CPU per run (postmaster and backends).

CPU is read per thread from `/proc/PID/task/TID/schedstat` (nanoseconds); a batch during
which a server thread ended falls back to the process's clock ticks (10 ms), and the
results count such batches (`batches_cpu_to_the_tick`).
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
SRC = ROOT / "src"
# Run as a script, this folder would come first on sys.path, and bench/http.py would shadow
# the standard library's `http` package that httpx imports.
if sys.path and Path(sys.path[0] or ".").resolve() == HERE:
    del sys.path[0]
if str(SRC) not in sys.path:
    sys.path.insert(0, str(SRC))

import argparse  # noqa: E402
import contextlib  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import platform  # noqa: E402
import shutil  # noqa: E402
import signal  # noqa: E402
import socket  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
import uuid  # noqa: E402
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator  # noqa: E402
from dataclasses import asdict, dataclass, field  # noqa: E402
from typing import TYPE_CHECKING, Any  # noqa: E402

import anyio  # noqa: E402

if TYPE_CHECKING:
    import httpx

    from agentkit.providers import ModelRequest

RESULTS = HERE / "results-served.json"
DELTAS = 20
DELTA = "alpha beta gamma delta epsilon "  # five words; the peers' fake models say the same
PACE_S = 0.005
MODES = ("fast", "paced")
SERVER_CORE = "1"
LOAD_CORE = 0
SYSTEMS = ("agentkit-sqlite", "agentkit-postgresql", "langgraph", "adk", "adk-sqlite")
LABELS = {
    "agentkit-sqlite": "agentkit, SQLite",
    "agentkit-postgresql": "agentkit, PostgreSQL",
    "langgraph": "LangGraph `langgraph dev`",
    "adk": "ADK `api_server`",
    "adk-sqlite": "ADK `api_server`, SQLite sessions",
}


# --- the model agentkit's server runs (imported there as `bench.served`) --------------------


class ServedProvider:
    """The benchmark's fake model: 20 five-word deltas, 5 ms apart for the prompt "paced"
    and at once otherwise. Keeps nothing between calls."""

    name = "served-bench"

    def resolve_model(self, tier: str | None, model: str | None) -> str:
        return "bench-fake"

    async def stream(self, request: ModelRequest) -> AsyncIterator[Any]:
        from agentkit.providers import Stop, TextChunk, Usage

        prompt = getattr(request.messages[-1], "content", "") if request.messages else ""
        pace = PACE_S if prompt == "paced" else 0.0
        for index in range(DELTAS):
            if pace and index:
                await anyio.sleep(pace)
            yield TextChunk(DELTA)
        yield Usage(request.model, input_tokens=1, output_tokens=DELTAS * 5)
        yield Stop()


def provider(**options: Any) -> ServedProvider:
    """The factory `agentkit serve --provider bench.served:provider` calls."""
    return ServedProvider()


# --- processes ------------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _stat_fields(pid: int) -> list[str]:
    # The command name may hold spaces and parentheses: the fields follow its last ")".
    return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()


def process_tree(pid: int) -> list[int]:
    """`pid` and its descendants (a server that forks workers is measured whole)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                children.setdefault(int(_stat_fields(int(entry.name))[1]), []).append(
                    int(entry.name)
                )
    tree, todo = [], [pid]
    while todo:
        current = todo.pop()
        tree.append(current)
        todo.extend(children.get(current, []))
    return tree


def tree_cpu_seconds(pid: int) -> float:
    """User and system CPU time `pid` and its descendants used so far."""
    ticks = 0
    for member in process_tree(pid):
        with contextlib.suppress(OSError):
            fields = _stat_fields(member)
            ticks += int(fields[11]) + int(fields[12])
    return ticks / os.sysconf("SC_CLK_TCK")


@dataclass
class CpuSnapshot:
    """A process tree's CPU time so far: in clock ticks (exact over the process's whole
    life, threads that ended included, but only to 10 ms) and per live thread in
    nanoseconds (`/proc/PID/task/TID/schedstat`)."""

    ticks_s: float
    threads_ns: dict[int, int]

    @staticmethod
    def of(pid: int) -> CpuSnapshot:
        threads: dict[int, int] = {}
        for member in process_tree(pid):
            with contextlib.suppress(OSError):
                for task in Path(f"/proc/{member}/task").iterdir():
                    with contextlib.suppress(OSError):
                        threads[int(task.name)] = int((task / "schedstat").read_text().split()[0])
        return CpuSnapshot(tree_cpu_seconds(pid), threads)

    def since(self, before: CpuSnapshot) -> tuple[float, bool]:
        """Seconds of CPU between `before` and this snapshot, and whether they are exact
        to the nanosecond: they are unless a thread ended in between (its time is then
        only in the ticks, and the ticks' figure is returned)."""
        if before.threads_ns.keys() - self.threads_ns.keys():
            return self.ticks_s - before.ticks_s, False
        spent = sum(ns - before.threads_ns.get(tid, 0) for tid, ns in self.threads_ns.items())
        return spent / 1e9, True


def tree_peak_rss_mb(pid: int) -> float:
    """The peak RSS (`VmHWM`) of `pid` and its descendants, added up."""
    total = 0
    for member in process_tree(pid):
        with contextlib.suppress(OSError):
            for line in Path(f"/proc/{member}/status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    total += int(line.split()[1])
    return total / 1024


def _pinned(command: list[str]) -> list[str]:
    """`command` under `taskset -c 1` when the machine has a second core and taskset."""
    if (os.cpu_count() or 1) > 1 and shutil.which("taskset"):
        return ["taskset", "-c", SERVER_CORE, *command]
    return command


@dataclass
class Server:
    """A server process, its URL and its log."""

    process: subprocess.Popen[bytes]
    url: str
    log: Path

    def cpu(self) -> CpuSnapshot:
        return CpuSnapshot.of(self.process.pid)

    def peak_rss_mb(self) -> float:
        return tree_peak_rss_mb(self.process.pid)


@contextlib.contextmanager
def running(
    command: list[str], cwd: Path, port: int, ready_path: str, env: dict[str, str]
) -> Iterator[Server]:
    """Start `command` pinned to the server core, its output to a log file; wait until
    `GET ready_path` answers 2xx; SIGTERM it (then SIGKILL) at the end."""
    import httpx

    log = cwd / "server.log"
    with open(log, "wb") as out:
        process = subprocess.Popen(
            _pinned(command), cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT
        )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 180
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"{command[:3]} exited: {log.read_text()[-2000:]}")
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(url + ready_path, timeout=2).is_success:
                    break
            if time.monotonic() > deadline:
                raise RuntimeError(f"{command[:3]} not ready in 180 s: {log.read_text()[-2000:]}")
            time.sleep(0.2)
        yield Server(process, url, log)
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


# --- PostgreSQL: a throwaway cluster that counts statements ---------------------------------


@dataclass
class Postgres:
    """The database agentkit's server runs on, and how to count its statements."""

    url: str
    admin: str | None
    """A DSN of the cluster's `postgres` database, where `pg_stat_statements` is read;
    None when the statements cannot be counted."""
    database: str
    how: str
    pid: int | None = None
    """The postmaster's process id, when this script started the cluster: its CPU (and
    its backends') is measured beside the server's."""


def _pg_bin() -> Path | None:
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"))
    if found:
        return found[-1].parent
    initdb = shutil.which("initdb")
    return Path(initdb).parent if initdb else None


@contextlib.contextmanager
def throwaway_cluster(settings: list[str]) -> Iterator[Postgres]:
    """A PostgreSQL cluster of its own in a temporary folder, on a free port, with
    `pg_stat_statements` preloaded; stopped and removed at the end. Run as the `postgres`
    user when this process is root (PostgreSQL refuses to run as root)."""
    import psycopg

    bin_dir = _pg_bin()
    if bin_dir is None:
        raise RuntimeError("no initdb found")
    folder = Path(tempfile.mkdtemp(prefix="served-pg-"))
    as_user: list[str] = []
    if os.geteuid() == 0:
        shutil.chown(folder, "postgres", "postgres")
        as_user = ["runuser", "-u", "postgres", "--"]
    data, port = folder / "data", _free_port()
    options = " ".join(
        [
            f"-p {port}",
            f"-k {folder}",
            "-c listen_addresses=127.0.0.1",
            "-c shared_preload_libraries=pg_stat_statements",
            "-c pg_stat_statements.track_utility=on",
            "-c pg_stat_statements.max=10000",
            "-c max_connections=200",
            *(f"-c {setting}" for setting in settings),
        ]
    )
    quiet: dict[str, Any] = {"check": True, "capture_output": True}
    subprocess.run(
        [*as_user, str(bin_dir / "initdb"), "-D", str(data), "-U", "postgres", "-A", "trust"],
        **quiet,
    )
    pg_ctl = [*as_user, str(bin_dir / "pg_ctl"), "-D", str(data)]
    # On every core, as the machine's own PostgreSQL runs: not on the load generator's
    # core, which this process (and so, without this, its children) is pinned to.
    every_core = set(range(os.cpu_count() or 1))
    subprocess.run(
        [*pg_ctl, "-l", str(folder / "log"), "-w", "-o", options, "start"],
        preexec_fn=lambda: os.sched_setaffinity(0, every_core),
        **quiet,
    )
    try:
        admin = f"postgresql://postgres@127.0.0.1:{port}/postgres"
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute("CREATE DATABASE served")
            conn.execute("CREATE EXTENSION pg_stat_statements")
        yield Postgres(
            f"postgresql://postgres@127.0.0.1:{port}/served",
            admin,
            "served",
            f"a throwaway PostgreSQL {bin_dir.parent.name} cluster (initdb, port {port}, "
            "not pinned), statements counted by pg_stat_statements",
            int((data / "postmaster.pid").read_text().split()[0]),
        )
    finally:
        subprocess.run([*pg_ctl, "-m", "fast", "stop"], capture_output=True)
        shutil.rmtree(folder, ignore_errors=True)


@contextlib.contextmanager
def schema_of_test_database(dsn: str) -> Iterator[Postgres]:
    """A fresh schema of `dsn` (dropped at the end); statements are not counted."""
    from urllib.parse import quote

    import psycopg

    schema = f"served_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{schema}"')
    try:
        separator = "&" if "?" in dsn else "?"
        url = f"{dsn}{separator}options={quote(f'-csearch_path={schema}')}"
        yield Postgres(url, None, "", f"schema {schema} of $AGENTKIT_TEST_POSTGRES_DSN")
    finally:
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def statements(pg: Postgres) -> dict[str, int]:
    """Calls per normalised statement in the benchmark's database, since the last reset."""
    import psycopg

    assert pg.admin is not None
    with psycopg.connect(pg.admin, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT s.query, s.calls FROM pg_stat_statements s "
            "JOIN pg_database d ON d.oid = s.dbid WHERE d.datname = %s",
            (pg.database,),
        ).fetchall()
    return {str(query): int(calls) for query, calls in rows}


def reset_statements(pg: Postgres) -> None:
    import psycopg

    assert pg.admin is not None
    with psycopg.connect(pg.admin, autocommit=True) as conn:
        conn.execute("SELECT pg_stat_statements_reset()")


# --- the systems ----------------------------------------------------------------------------


Prepare = Callable[["httpx.AsyncClient", int], Awaitable[list[str]]]
Run = Callable[["httpx.AsyncClient", str, str], Awaitable[float]]
"""Starts a run on a context (conversation, thread, session) with a mode's prompt and reads
it to its end; returns the seconds until the start was answered."""


@dataclass
class Target:
    """A running system: its server and how a client drives it."""

    name: str
    server: Server
    headers: dict[str, str]
    prepare: Prepare
    run: Run
    postgres: Postgres | None = None


def _check_stream(system: str, body: bytes) -> None:
    """Every system streams each delta once (agentkit also sends the text whole at the
    end, ADK in its final event): a stream with fewer did not stream the model's answer."""
    if body.count(DELTA.strip().encode()) < DELTAS:
        raise RuntimeError(
            f"{system}: the stream carried fewer than {DELTAS} deltas: {body[-500:]!r}"
        )


async def _read(response: httpx.Response) -> bytes:
    return b"".join([chunk async for chunk in response.aiter_raw()])


async def _created(client: httpx.AsyncClient, path: str, key: str, count: int) -> list[str]:
    """The ids of `count` resources made by `POST path {}` (the id under `key`)."""
    ids = []
    for _ in range(count):
        response = await client.post(path, json={})
        response.raise_for_status()
        ids.append(response.json()[key])
    return ids


async def agentkit_prepare(client: httpx.AsyncClient, count: int) -> list[str]:
    return await _created(client, "/v1/conversations", "id", count)


async def agentkit_run(client: httpx.AsyncClient, conversation: str, prompt: str) -> float:
    path = f"/v1/conversations/{conversation}/runs"
    started = time.perf_counter()
    response = await client.post(path, json={"prompt": prompt})
    answered = time.perf_counter() - started
    if response.status_code != 202:
        raise RuntimeError(f"agentkit: POST {path}: {response.status_code} {response.text}")
    async with client.stream("GET", f"{path}/{response.json()['runId']}/events") as events:
        body = await _read(events)
    if b"\nevent: completed\n" not in body and not body.startswith(b"event: completed\n"):
        raise RuntimeError(f"agentkit: the run did not complete: {body[-500:]!r}")
    _check_stream("agentkit", body)
    return answered


async def langgraph_prepare(client: httpx.AsyncClient, count: int) -> list[str]:
    return await _created(client, "/threads", "thread_id", count)


async def langgraph_run(client: httpx.AsyncClient, thread: str, prompt: str) -> float:
    body = {
        "assistant_id": "agent",
        "input": {"messages": [{"role": "human", "content": prompt}]},
        "stream_mode": ["messages-tuple"],
    }
    started = time.perf_counter()
    async with client.stream("POST", f"/threads/{thread}/runs/stream", json=body) as response:
        answered = time.perf_counter() - started
        response.raise_for_status()
        streamed = await _read(response)
    if b"event: error" in streamed:
        raise RuntimeError(f"langgraph: the run failed: {streamed[-500:]!r}")
    _check_stream("langgraph", streamed)
    return answered


ADK_APP, ADK_USER = "served_agent", "bench"


async def adk_prepare(client: httpx.AsyncClient, count: int) -> list[str]:
    ids = []
    for _ in range(count):
        session = uuid.uuid4().hex
        response = await client.post(
            f"/apps/{ADK_APP}/users/{ADK_USER}/sessions/{session}", json={}
        )
        response.raise_for_status()
        ids.append(session)
    return ids


async def adk_run(client: httpx.AsyncClient, session: str, prompt: str) -> float:
    body = {
        "app_name": ADK_APP,
        "user_id": ADK_USER,
        "session_id": session,
        "new_message": {"role": "user", "parts": [{"text": prompt}]},
        "streaming": True,
    }
    started = time.perf_counter()
    async with client.stream("POST", "/run_sse", json=body) as response:
        answered = time.perf_counter() - started
        response.raise_for_status()
        streamed = await _read(response)
    if b'"error' in streamed:
        raise RuntimeError(f"adk: the run failed: {streamed[-500:]!r}")
    _check_stream("adk", streamed)
    return answered


def _agentkit_env() -> dict[str, str]:
    paths = [str(ROOT), str(SRC), os.environ.get("PYTHONPATH", "")]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in paths if p)}


def _peer_env(venv: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["PATH"] = os.pathsep.join([str(venv / "bin"), env.get("PATH", "")])
    env["VIRTUAL_ENV"] = str(venv)
    # No tracing service, no telemetry: the peers stay on this machine, as agentkit does.
    env.update(
        LANGSMITH_TRACING="false",
        LANGCHAIN_TRACING_V2="false",
        LANGGRAPH_CLI_NO_ANALYTICS="1",
        ADK_DISABLE_TELEMETRY="1",
        OTEL_SDK_DISABLED="true",
    )
    return env


async def _owner_token(db: str) -> str:
    from agentkit.conversations import Members
    from agentkit.stores import open_store

    store = open_store(db)
    try:
        return await Members(store).add("bench", "owner")
    finally:
        await store.aclose()


@contextlib.contextmanager
def start_system(
    name: str, folder: Path, pg: Postgres | None, venvs: dict[str, Path]
) -> Iterator[Target]:
    """System `name` running, on a store or working folder under `folder`."""
    folder.mkdir(parents=True)
    port = _free_port()
    if name.startswith("agentkit"):
        db = str(folder / "machine.db") if pg is None else pg.url
        token = anyio.run(_owner_token, db)
        command = [
            sys.executable, "-m", "agentkit", "serve",
            "--db", db,
            "--port", str(port),
            "--provider", "bench.served:provider",
            "--attachment-root", str(folder),
        ]  # fmt: skip
        with running(command, folder, port, "/healthz", _agentkit_env()) as server:
            yield Target(
                name,
                server,
                {"Authorization": f"Bearer {token}"},
                agentkit_prepare,
                agentkit_run,
                pg,
            )
    elif name == "langgraph":
        venv = venvs["langgraph"]
        shutil.copytree(HERE / "peers" / "langgraph", folder, dirs_exist_ok=True)
        command = [
            str(venv / "bin" / "langgraph"), "dev",
            "--no-browser", "--no-reload",
            "--host", "127.0.0.1", "--port", str(port),
            "--config", "langgraph.json",
        ]  # fmt: skip
        with running(command, folder, port, "/ok", _peer_env(venv)) as server:
            yield Target(name, server, {}, langgraph_prepare, langgraph_run)
    else:
        venv = venvs["adk"]
        shutil.copytree(HERE / "peers" / "adk", folder, dirs_exist_ok=True)
        storage = (
            ["--session_service_uri", f"sqlite:///{folder / 'sessions.db'}"]
            if name == "adk-sqlite"
            else ["--no_use_local_storage"]
        )
        command = [
            str(venv / "bin" / "adk"), "api_server",
            "--host", "127.0.0.1", "--port", str(port),
            "--no-reload", *storage, str(folder),
        ]  # fmt: skip
        with running(command, folder, port, "/list-apps", _peer_env(venv)) as server:
            yield Target(name, server, {}, adk_prepare, adk_run)


# --- measuring ------------------------------------------------------------------------------


@dataclass
class Measures:
    """What the rounds measured of one system."""

    cpu_ms: dict[str, list[float]] = field(default_factory=lambda: {m: [] for m in MODES})
    statements: dict[str, list[float]] = field(default_factory=lambda: {m: [] for m in MODES})
    wall_ms: dict[str, list[float]] = field(default_factory=lambda: {m: [] for m in MODES})
    database_cpu_ms: dict[str, list[float]] = field(default_factory=lambda: {m: [] for m in MODES})
    start_s: list[float] = field(default_factory=list)
    cpu_to_the_tick: int = 0
    """Batches whose CPU time is only known to 10 ms (a thread of the server ended)."""
    counted: dict[str, int] = field(default_factory=dict)


def _client(target: Target) -> httpx.AsyncClient:
    import httpx

    return httpx.AsyncClient(
        base_url=target.server.url,
        headers=target.headers,
        limits=httpx.Limits(max_connections=1, max_keepalive_connections=1, keepalive_expiry=2),
        timeout=httpx.Timeout(120.0),
    )


async def batch(target: Target, mode: str, runs: int, into: Measures | None) -> None:
    """`runs` runs of `mode`, one after the other, on fresh contexts; into `into` (unless
    a warm-up): the server's CPU per run, its start times, its statements per run."""
    counting = into is not None and target.postgres is not None and target.postgres.admin
    async with _client(target) as client:
        contexts = await target.prepare(client, runs)
        if counting:
            assert target.postgres is not None
            await anyio.to_thread.run_sync(reset_statements, target.postgres)
        database = target.postgres.pid if target.postgres else None
        db_before = CpuSnapshot.of(database) if database else None
        before, wall = target.server.cpu(), time.perf_counter()
        starts = [await target.run(client, context, mode) for context in contexts]
        (cpu, exact), wall = target.server.cpu().since(before), time.perf_counter() - wall
        db_cpu = CpuSnapshot.of(database).since(db_before)[0] if database and db_before else None
    if into is None:
        return
    into.cpu_ms[mode].append(cpu / runs * 1000)
    into.cpu_to_the_tick += not exact
    into.wall_ms[mode].append(wall / runs * 1000)
    if db_cpu is not None:
        into.database_cpu_ms[mode].append(db_cpu / runs * 1000)
    if mode == "fast":
        into.start_s.extend(starts)
    if counting:
        assert target.postgres is not None
        # Read after the client closed: the count covers the whole of each run, its end
        # and the server's bookkeeping after the stream, and none of the reading.
        await anyio.sleep(0.2)
        counted = await anyio.to_thread.run_sync(statements, target.postgres)
        into.statements[mode].append(sum(counted.values()) / runs)
        for query, calls in counted.items():
            into.counted[query] = into.counted.get(query, 0) + calls


def idle_cpu_ms_per_s(target: Target, seconds: float) -> float:
    before = target.server.cpu()
    time.sleep(seconds)
    return target.server.cpu().since(before)[0] / seconds * 1000


def _pct(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _median(samples: list[float]) -> float | None:
    return statistics.median(samples) if samples else None


def summarise(target: Target, measures: Measures, idle: float, runs: int) -> dict[str, Any]:
    row: dict[str, Any] = {
        "label": LABELS[target.name],
        "server_cpu_ms_fast": _median(measures.cpu_ms["fast"]),
        "server_cpu_ms_paced": _median(measures.cpu_ms["paced"]),
        "server_cpu_ms_fast_samples": measures.cpu_ms["fast"],
        "server_cpu_ms_paced_samples": measures.cpu_ms["paced"],
        "wall_ms_fast": _median(measures.wall_ms["fast"]),
        "wall_ms_paced": _median(measures.wall_ms["paced"]),
        "start_answered_p50_ms": _pct(measures.start_s, 0.5) * 1000,
        "start_answered_p99_ms": _pct(measures.start_s, 0.99) * 1000,
        "server_peak_rss_mb": target.server.peak_rss_mb(),
        "server_idle_cpu_ms_per_s": idle,
        "batches_cpu_to_the_tick": measures.cpu_to_the_tick,
    }
    fast, paced = row["server_cpu_ms_fast"], row["server_cpu_ms_paced"]
    # What the server would spend on a run if it did nothing while idle: a server whose
    # runs wait (LangGraph's in-memory queue polls every 0.5 s) pays its idle work longer.
    for mode in MODES:
        row[f"server_cpu_ms_{mode}_net_of_idle"] = row[f"server_cpu_ms_{mode}"] - idle * (
            row[f"wall_ms_{mode}"] / 1000
        )
    row["streaming_cpu_us_per_delta"] = (paced - fast) / DELTAS * 1000
    if target.postgres is not None:
        row["postgres"] = target.postgres.how
    if measures.database_cpu_ms["fast"]:
        for mode in MODES:
            row[f"database_cpu_ms_{mode}"] = _median(measures.database_cpu_ms[mode])
    if measures.statements["fast"]:
        row["statements_per_run_fast"] = _median(measures.statements["fast"])
        row["statements_per_run_paced"] = _median(measures.statements["paced"])
        total_runs = sum(len(v) for v in measures.statements.values()) * runs
        top = sorted(measures.counted.items(), key=lambda item: -item[1])[:25]
        row["statements_top"] = [
            {"calls_per_run": calls / total_runs, "query": " ".join(query.split())[:300]}
            for query, calls in top
        ]
    return row


# --- the run --------------------------------------------------------------------------------


def find_peers(args: argparse.Namespace, wanted: list[str]) -> tuple[list[str], list[str]]:
    """The systems to run and why any wanted one is skipped."""
    chosen, skipped = [], []
    for name in wanted:
        if name == "langgraph" and not (args.langgraph_venv / "bin" / "langgraph").exists():
            skipped.append(f"langgraph: no `langgraph` in {args.langgraph_venv}/bin")
        elif name.startswith("adk") and not (args.adk_venv / "bin" / "adk").exists():
            skipped.append(f"{name}: no `adk` in {args.adk_venv}/bin")
        else:
            chosen.append(name)
    return chosen, skipped


@contextlib.contextmanager
def postgres_for(args: argparse.Namespace, notes: list[str]) -> Iterator[Postgres | None]:
    if args.postgres == "none":
        notes.append("agentkit-postgresql: skipped (--postgres none)")
        yield None
        return
    if args.postgres == "cluster":
        try:
            with throwaway_cluster(args.pg_setting) as pg:
                yield pg
            return
        except (RuntimeError, OSError, subprocess.CalledProcessError, LookupError) as error:
            notes.append(f"no throwaway PostgreSQL cluster ({error}); trying the test database")
    dsn = os.environ.get("AGENTKIT_TEST_POSTGRES_DSN")
    if not dsn:
        notes.append("agentkit-postgresql: skipped (no cluster, no $AGENTKIT_TEST_POSTGRES_DSN)")
        yield None
        return
    with schema_of_test_database(dsn) as pg:
        notes.append(
            "agentkit-postgresql: statements not counted (pg_stat_statements needs "
            "a cluster that preloads it)"
        )
        yield pg


@dataclass
class Settings:
    """How much is measured: rounds, runs per batch, warm-up runs, the idle window."""

    rounds: int
    runs: int
    warmup: int
    idle_s: float


PEER_PACKAGES = {
    "langgraph": ("langgraph-cli", "langgraph-api", "langgraph-runtime-inmem", "langgraph"),
    "adk": ("google-adk",),
}


def peer_versions(venvs: dict[str, Path], names: list[str]) -> dict[str, str]:
    """The measured peers' package versions, asked of their own interpreters."""
    versions: dict[str, str] = {}
    for peer, packages in PEER_PACKAGES.items():
        if not any(name.startswith(peer) for name in names):
            continue
        script = "import importlib.metadata as m, sys; print(*map(m.version, sys.argv[1:]))"
        done = subprocess.run(
            [str(venvs[peer] / "bin" / "python"), "-c", script, *packages],
            capture_output=True,
            text=True,
        )
        versions.update(zip(packages, done.stdout.split(), strict=False))
    return versions


def measure(args: argparse.Namespace) -> dict[str, Any]:
    with contextlib.suppress(AttributeError, OSError):
        os.sched_setaffinity(0, {LOAD_CORE})
    settings = (
        Settings(rounds=1, runs=4, warmup=2, idle_s=0.5)
        if args.quick
        else Settings(rounds=args.rounds, runs=args.runs, warmup=20, idle_s=10.0)
    )
    wanted = list(args.systems or SYSTEMS)
    if args.no_peers:
        wanted = [name for name in wanted if name.startswith("agentkit")]
    names, notes = find_peers(args, wanted)
    venvs = {"langgraph": args.langgraph_venv, "adk": args.adk_venv}
    load_before = os.getloadavg()
    with contextlib.ExitStack() as stack:
        pg: Postgres | None = None
        if "agentkit-postgresql" in names:
            pg = stack.enter_context(postgres_for(args, notes))
            if pg is None:
                names.remove("agentkit-postgresql")
        for note in notes:
            print(note, flush=True)
        folder = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="served-")))
        targets = []
        for name in names:
            started = time.monotonic()
            target = stack.enter_context(
                start_system(
                    name, folder / name, pg if name == "agentkit-postgresql" else None, venvs
                )
            )
            print(f"{name}: ready in {time.monotonic() - started:.1f} s", flush=True)
            targets.append(target)
        measures = {target.name: Measures() for target in targets}

        for target in targets:
            for mode in MODES:
                anyio.run(batch, target, mode, settings.warmup, None)
        idle = {t.name: idle_cpu_ms_per_s(t, settings.idle_s) for t in targets}
        for index in range(settings.rounds):
            # The order rotates each round, so that a slow spell of the machine does not
            # fall on the same system every time.
            order = targets[index % len(targets) :] + targets[: index % len(targets)]
            for target in order:
                for mode in MODES:
                    anyio.run(batch, target, mode, settings.runs, measures[target.name])
            print(f"round {index + 1}/{settings.rounds} done", flush=True)
        rows = {
            t.name: summarise(t, measures[t.name], idle[t.name], settings.runs) for t in targets
        }
    return {
        "quick": args.quick,
        "settings": {
            **asdict(settings),
            "model": f"{DELTAS} deltas of five words; fast: no delay; paced: {PACE_S * 1000:g} ms"
            " between deltas",
            "pinning": f"servers on core {SERVER_CORE} (taskset), load on core {LOAD_CORE}",
            "client": "one httpx client, one connection, one run at a time",
        },
        "skipped": notes,
        "peer_versions": peer_versions(venvs, names),
        "machine": {
            "nproc": os.cpu_count(),
            "python": platform.python_version(),
            "loadavg_before": load_before,
            "loadavg_after": os.getloadavg(),
            "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        },
        "systems": rows,
        "goals": goals(rows),
    }


def goals(rows: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Issue 31's goals this benchmark measures, with the measured figures."""
    out: dict[str, Any] = {}
    sqlite, pg, lg = (rows.get(n) for n in ("agentkit-sqlite", "agentkit-postgresql", "langgraph"))
    if pg and "statements_per_run_fast" in pg:
        out["pg_statements_per_run<=10"] = {
            "measured": pg["statements_per_run_fast"],
            "met": pg["statements_per_run_fast"] <= 10,
        }
    if pg and sqlite:
        ratio = pg["server_cpu_ms_fast"] / sqlite["server_cpu_ms_fast"]
        out["pg_cpu_x_sqlite<=1.5"] = {"measured": ratio, "met": ratio <= 1.5}
    for row in (r for r in (sqlite, pg) if r):
        for_store = "sqlite" if row is sqlite else "postgresql"
        us = row["streaming_cpu_us_per_delta"]
        out[f"{for_store}_streaming_us_per_delta<=60"] = {"measured": us, "met": us <= 60}
        if lg:
            ratio = row["server_cpu_ms_paced"] / lg["server_cpu_ms_paced"]
            out[f"{for_store}_paced_cpu_x_langgraph<=0.5"] = {
                "measured": ratio,
                "met": ratio <= 0.5,
            }
    return out


def table(results: dict[str, Any]) -> str:
    rows = results["systems"]
    names = list(rows)

    def line(title: str, key: str, fmt: str) -> str:
        cells = [fmt.format(rows[n][key]) if rows[n].get(key) is not None else "" for n in names]
        return f"| {title} | " + " | ".join(cells) + " |"

    lines = [
        "| per run | " + " | ".join(rows[n]["label"] for n in names) + " |",
        "|---|" + "---:|" * len(names),
        line("server CPU, fast model", "server_cpu_ms_fast", "{:.1f} ms"),
        line("server CPU, 5 ms between deltas", "server_cpu_ms_paced", "{:.1f} ms"),
        line("server CPU net of idle, fast", "server_cpu_ms_fast_net_of_idle", "{:.1f} ms"),
        line("server CPU net of idle, paced", "server_cpu_ms_paced_net_of_idle", "{:.1f} ms"),
        line("streaming CPU per delta", "streaming_cpu_us_per_delta", "{:.0f} us"),
        line("run, start to end of stream, fast", "wall_ms_fast", "{:.1f} ms"),
        line("run, start to end of stream, paced", "wall_ms_paced", "{:.1f} ms"),
        line("start answered p50, one client", "start_answered_p50_ms", "{:.1f} ms"),
        line("start answered p99, one client", "start_answered_p99_ms", "{:.1f} ms"),
        line("server peak RSS", "server_peak_rss_mb", "{:.0f} MB"),
        line("server CPU while idle", "server_idle_cpu_ms_per_s", "{:.2f} ms/s"),
        line("PostgreSQL CPU, fast model", "database_cpu_ms_fast", "{:.1f} ms"),
        line("PostgreSQL CPU, paced model", "database_cpu_ms_paced", "{:.1f} ms"),
        line("SQL statements, fast model", "statements_per_run_fast", "{:.1f}"),
        line("SQL statements, paced model", "statements_per_run_paced", "{:.1f}"),
    ]
    goal_lines = [
        f"- {name}: {goal['measured']:.2f} -> {'met' if goal['met'] else 'not met'}"
        for name, goal in results["goals"].items()
    ]
    return "\n".join(lines + (["", *goal_lines] if goal_lines else []))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="a smoke run of a few seconds")
    parser.add_argument("--rounds", type=int, default=5, help="rounds (default 5)")
    parser.add_argument("--runs", type=int, default=40, help="runs per batch (default 40)")
    parser.add_argument("--systems", nargs="+", choices=SYSTEMS, help="default: all")
    parser.add_argument("--no-peers", action="store_true", help="agentkit's systems only")
    parser.add_argument(
        "--postgres",
        choices=("cluster", "test", "none"),
        default="cluster",
        help="cluster: a throwaway cluster counting statements, else the test database "
        "(default); test: $AGENTKIT_TEST_POSTGRES_DSN; none: no PostgreSQL",
    )
    parser.add_argument(
        "--pg-setting",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a setting of the throwaway cluster (repeat it for several)",
    )
    parser.add_argument(
        "--langgraph-venv",
        type=Path,
        default=Path(os.environ.get("AGENTKIT_BENCH_LANGGRAPH_VENV", "/work/peers/langgraph")),
    )
    parser.add_argument(
        "--adk-venv",
        type=Path,
        default=Path(os.environ.get("AGENTKIT_BENCH_ADK_VENV", "/work/peers/adk")),
    )
    parser.add_argument(
        "--json", type=Path, help=f"where to write (default {RESULTS.name}; quick: none)"
    )
    args = parser.parse_args()
    # SIGTERM ends the benchmark as Ctrl-C does: through every `finally`, so that the servers
    # and the throwaway cluster it started are stopped, not left behind.
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    results = measure(args)
    print(table(results))
    output = args.json or (None if args.quick else RESULTS)
    if output is not None:
        output.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
