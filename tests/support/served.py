"""A real `agentkit serve` process on loopback, for the server's tests."""

from __future__ import annotations

import contextlib
import os
import selectors
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import anyio

from agentkit.conversations import Members, Role
from agentkit.stores import open_store
from support.paths import ROOT, SRC

CONFORMANCE = "agentkit.testing:conformance_provider"


@dataclass
class Served:
    url: str
    process: subprocess.Popen[str]
    db: Path
    root: Path

    def add_member(self, name: str, role: Role) -> str:
        """A new member's token, written straight into the server's store."""

        async def add() -> str:
            store = open_store(self.db)
            try:
                return await Members(store).add(name, role)
            finally:
                await store.aclose()

        return anyio.run(add)

    def member_id(self, name: str) -> str:
        """The id of the member called `name`, read from the server's store."""

        async def find() -> str:
            store = open_store(self.db)
            try:
                found = await Members(store).get(name)
                assert found is not None, name
                return found.id
            finally:
                await store.aclose()

        return anyio.run(find)

    def stop(self, signum: int = signal.SIGTERM, timeout: float = 30.0) -> int:
        if self.process.poll() is None:
            self.process.send_signal(signum)
        return self.process.wait(timeout)


def _first_line(process: subprocess.Popen[str], timeout: float) -> str:
    assert process.stdout is not None
    selector = selectors.DefaultSelector()
    selector.register(process.stdout, selectors.EVENT_READ)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if selector.select(0.1):
            return process.stdout.readline().strip()
        if process.poll() is not None:
            break
    stderr = process.stderr.read() if process.stderr and process.poll() is not None else ""
    raise AssertionError(f"agentkit serve did not print its URL: {stderr}")


@contextlib.contextmanager
def served(
    folder: Path,
    *args: str,
    provider: str = CONFORMANCE,
    db: Path | None = None,
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
) -> Iterator[Served]:
    """`agentkit serve` on a SQLite file of `folder`, port 0, until the block ends (run in
    `cwd`, by default this process's current folder)."""
    root = folder / "space"
    root.mkdir(parents=True, exist_ok=True)
    db = db or folder / "machine.db"
    command = [
        sys.executable,
        "-m",
        "agentkit",
        "serve",
        "--db",
        str(db),
        "--port",
        "0",
        "--provider",
        provider,
        "--attachment-root",
        str(root),
        *args,
    ]
    # This checkout's sources first (not an installed agentkit), and the repository's
    # root: `examples.*` extensions import as in a checkout.
    path = os.pathsep.join([str(SRC), str(ROOT), os.environ.get("PYTHONPATH", "")]).rstrip(
        os.pathsep
    )
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "PYTHONPATH": path, **(env or {})}
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=cwd
    )
    try:
        url = _first_line(process, 30.0)
        assert url.startswith("http://127.0.0.1:"), url
        yield Served(url, process, db, root)
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
