"""The remote client's CPU per streamed run, beside plain httpx and a bare socket client.

    python bench/client.py            # full run: prints a table, writes bench/results-client.json
    python bench/client.py --quick    # a few seconds: checks the benchmark still runs

A real `agentkit serve` process on loopback (a fresh SQLite file in a temporary folder)
runs `bench.client:provider`: a model answering every prompt with 20 text deltas of five
words each (the issue's fake model), `PACE` seconds apart, so that the clients read the
deltas live (a run that ended before its stream opened would be read as one stored
text). In this process, three clients do the same thing one run at a time, each on
conversations of its own made beforehand (not timed): prompt
(`POST /v1/conversations/{id}/runs`), then read the run's event stream
(`GET .../runs/{run_id}/events`) to its final event.

- **agentkit**: `RemoteMachine.prompt`, then `async for event in client.follow(...)` to
  the `FinalEvent` (every event parsed into the client's models).
- **httpx** (the peer: the HTTP library the client is built on, used bare): `post`, then
  `stream("GET", ...)` read with `aiter_raw` to the end of the response.
- **floor**: one kept-alive connection of asyncio streams, the HTTP/1.1 requests written
  by hand, the 202's body read by its length and the stream's chunks to the last one:
  the least a Python client can spend on the exchange.

The figure is the client process's CPU time (user + system, `time.process_time`) per
run, median over interleaved samples (one sample = `RUNS` runs of each client in turn),
so that the server's and the machine's load move all three alike. The server's CPU per
run is reported too (from `/proc`), as a check that every client asked the same work.
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
SRC = ROOT / "src"
# Run as a script, this folder would come first on sys.path, and bench/http.py would
# shadow the standard library's `http` package that httpx imports.
if sys.path and Path(sys.path[0] or ".").resolve() == HERE:
    del sys.path[0]
for _path in (str(SRC), str(ROOT)):
    if _path not in sys.path:
        sys.path.insert(0, _path)

import argparse  # noqa: E402
import asyncio  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import statistics  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from collections.abc import AsyncIterator, Awaitable, Callable  # noqa: E402
from typing import TYPE_CHECKING, Any  # noqa: E402

import anyio  # noqa: E402
from bench.http import Server, machine_info, owner_token, running  # noqa: E402

if TYPE_CHECKING:
    from agentkit.providers import ModelRequest

RESULTS = HERE / "results-client.json"
SERVER_PROVIDER = "bench.client:provider"
DELTAS = 20
DELTA = "one two three four five "
PACE = 0.002
"""Seconds between two deltas: a stream opened right after the prompt's answer reads the
run live. Waiting costs no CPU, so the figures do not depend on it."""


class StreamingProvider:
    """A model whose every answer is `DELTAS` text deltas of five words, `PACE` s apart."""

    name = "bench"

    def resolve_model(self, tier: str | None, model: str | None) -> str:
        return "bench-model"

    async def stream(self, request: ModelRequest) -> AsyncIterator[Any]:
        from agentkit.providers import Stop, TextChunk, Usage

        for index in range(DELTAS):
            if index:
                await anyio.sleep(PACE)
            yield TextChunk(DELTA)
        yield Usage(request.model, input_tokens=1, output_tokens=DELTAS * 5)
        yield Stop()


def provider(**options: Any) -> StreamingProvider:
    """The factory `agentkit serve --provider bench.client:provider` calls."""
    return StreamingProvider()


def serve_command(folder: Path) -> list[str]:
    return [
        sys.executable, "-m", "agentkit", "serve",
        "--db", str(folder / "machine.db"),
        "--port", "0",
        "--provider", SERVER_PROVIDER,
        "--attachment-root", str(folder),
    ]  # fmt: skip


# --- the three clients ----------------------------------------------------------------------
# Each is `make(url, token) -> (run(conversation_id) -> None, close() -> None)`.

Client = tuple[Callable[[str], Awaitable[None]], Callable[[], Awaitable[None]]]


async def agentkit_client(url: str, token: str) -> Client:
    from agentkit.client import RemoteMachine
    from agentkit.conversations import FinalEvent

    machine = RemoteMachine(url, token)
    await machine.__aenter__()

    async def run(conversation_id: str) -> None:
        accepted = await machine.prompt(conversation_id, "Hi")
        parts = 0
        async for event in machine.follow(conversation_id, accepted.run_id):
            if isinstance(event, FinalEvent):
                if event.status != "completed":
                    raise RuntimeError(f"run ended {event.status}")
                break
            parts += 1
        if parts < DELTAS // 2:  # a few may come together, before the stream opened
            raise RuntimeError(f"followed {parts} parts: the run was not read live")

    async def close() -> None:
        await machine.__aexit__(None, None, None)

    return run, close


async def httpx_client(url: str, token: str) -> Client:
    import httpx

    http = httpx.AsyncClient(base_url=url, headers={"Authorization": f"Bearer {token}"})

    async def run(conversation_id: str) -> None:
        response = await http.post(
            f"/v1/conversations/{conversation_id}/runs", json={"prompt": "Hi"}
        )
        if response.status_code != 202:
            raise RuntimeError(f"POST: {response.status_code} {response.text}")
        path = f"/v1/conversations/{conversation_id}/runs/{response.json()['runId']}/events"
        tail = b""
        async with http.stream("GET", path, headers={"Accept": "text/event-stream"}) as stream:
            async for chunk in stream.aiter_raw():
                tail = (tail + chunk)[-256:]
        if b"completed" not in tail:
            raise RuntimeError(f"the stream ended without its final event: {tail!r}")

    return run, http.aclose


async def floor_client(url: str, token: str) -> Client:
    host, port = url.removeprefix("http://").rsplit(":", 1)
    reader, writer = await asyncio.open_connection(host, int(port))
    auth = f"Authorization: Bearer {token}\r\nHost: {host}\r\n".encode()

    async def head() -> tuple[int, dict[bytes, bytes]]:
        lines = (await reader.readuntil(b"\r\n\r\n")).split(b"\r\n")
        headers = {}
        for line in lines[1:]:
            if line:
                name, _, value = line.partition(b":")
                headers[name.strip().lower()] = value.strip()
        return int(lines[0].split()[1]), headers

    async def run(conversation_id: str) -> None:
        body = b'{"prompt": "Hi"}'
        writer.write(
            b"POST /v1/conversations/%s/runs HTTP/1.1\r\n%sContent-Type: application/json\r\n"
            b"Content-Length: %d\r\n\r\n%s" % (conversation_id.encode(), auth, len(body), body)
        )
        status, headers = await head()
        answer = await reader.readexactly(int(headers[b"content-length"]))
        if status != 202:
            raise RuntimeError(f"POST: {status} {answer!r}")
        run_id = json.loads(answer)["runId"]
        writer.write(
            b"GET /v1/conversations/%s/runs/%s/events HTTP/1.1\r\n%s"
            b"Accept: text/event-stream\r\n\r\n" % (conversation_id.encode(), run_id.encode(), auth)
        )
        status, headers = await head()
        if status != 200 or headers.get(b"transfer-encoding") != b"chunked":
            raise RuntimeError(f"GET events: {status} {headers}")
        tail = b""
        while True:  # the chunks, to the last (empty) one
            size = int((await reader.readuntil(b"\r\n"))[:-2], 16)
            chunk = await reader.readexactly(size + 2)
            if size == 0:
                break
            tail = (tail + chunk)[-256:]
        if b"completed" not in tail:
            raise RuntimeError(f"the stream ended without its final event: {tail!r}")

    async def close() -> None:
        writer.close()
        await writer.wait_closed()

    return run, close


CLIENTS: dict[str, Callable[[str, str], Awaitable[Client]]] = {
    "agentkit": agentkit_client,
    "httpx": httpx_client,
    "floor": floor_client,
}


# --- the measure ----------------------------------------------------------------------------


async def create_conversations(url: str, token: str, count: int) -> list[str]:
    import httpx

    async with httpx.AsyncClient(
        base_url=url, headers={"Authorization": f"Bearer {token}"}
    ) as http:
        ids = []
        for _ in range(count):
            response = await http.post("/v1/conversations", json={})
            response.raise_for_status()
            ids.append(response.json()["id"])
        return ids


async def measure(server: Server, token: str, runs: int, samples: int) -> dict[str, Any]:
    """`samples` rounds; in each, every client does `runs` runs (after one warm-up run on
    a connection of its own). Returns per client the CPU ms per run of each sample."""
    client_ms: dict[str, list[float]] = {name: [] for name in CLIENTS}
    server_ms: dict[str, list[float]] = {name: [] for name in CLIENTS}
    conversations = await create_conversations(
        server.url, token, len(CLIENTS) * (samples * runs + 1)
    )
    made = {name: await make(server.url, token) for name, make in CLIENTS.items()}
    try:
        for run, _ in made.values():  # warm up: imports, connections, caches
            await run(conversations.pop())
        for _ in range(samples):
            for name, (run, _) in made.items():
                mine = [conversations.pop() for _ in range(runs)]
                server_before, before = server.cpu_seconds(), time.process_time()
                for conversation_id in mine:
                    await run(conversation_id)
                spent = time.process_time() - before
                server_spent = server.cpu_seconds() - server_before
                client_ms[name].append(spent / runs * 1000)
                server_ms[name].append(server_spent / runs * 1000)
    finally:
        for _, close in made.values():
            await close()
    return {"client_ms": client_ms, "server_ms": server_ms}


def table(result: dict[str, Any]) -> str:
    floor = statistics.median(result["client_ms"]["floor"])
    lines = [
        "| client | client CPU per run (ms) | x floor | server CPU per run (ms) |",
        "|---|---:|---:|---:|",
    ]
    for name in CLIENTS:
        ours = statistics.median(result["client_ms"][name])
        server = statistics.median(result["server_ms"][name])
        lines.append(f"| {name} | {ours:.2f} | {ours / floor:.1f} | {server:.2f} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a smoke run of a few seconds")
    parser.add_argument("--json", type=Path, default=None, help=f"where to write ({RESULTS})")
    parser.add_argument("--backend", default="asyncio", choices=["asyncio", "trio"])
    args = parser.parse_args(argv)
    runs, samples = (5, 2) if args.quick else (20, 9)
    if args.backend == "trio":
        CLIENTS.pop("floor")  # asyncio streams
        CLIENTS["floor"] = CLIENTS.pop("httpx")  # the bare library is the floor there
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="agentkit-bench-client-") as name:
        folder = Path(name)
        token = anyio.run(owner_token, folder / "machine.db")
        with running(serve_command(folder), folder) as server:
            result = anyio.run(measure, server, token, runs, samples, backend=args.backend)
    out = {
        "quick": args.quick,
        "backend": args.backend,
        "runs_per_sample": runs,
        "deltas_per_run": DELTAS,
        "machine": machine_info(load_before),
        **result,
        "median_client_ms": {k: statistics.median(v) for k, v in result["client_ms"].items()},
    }
    (args.json or RESULTS).write_text(json.dumps(out, indent=2) + "\n")
    print(table(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
