"""Real `agentkit serve` processes on loopback, for the remote client's tests.

A server takes a second or so to start (Python, then the machine), and the conformance
suite wants a fresh one per check: `ServerPool` keeps the next ones starting while a
test runs.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from collections import deque
from collections.abc import Sequence
from pathlib import Path

from agentkit.conversations import Role
from support.paths import SRC, TESTS

_START_TIMEOUT = 60.0



class ServeProcess:
    """One `agentkit serve` on a SQLite file of its own, in `folder`, or on the database
    `db` names (several servers may share one); `args` are more options of the command."""

    def __init__(self, folder: Path, *, db: str | None = None, args: Sequence[str] = ()) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        self.folder = folder
        self.db: str | Path = db if db is not None else folder / "m.db"
        self.attachment_root = folder / "space"
        self.attachment_root.mkdir()
        self._stdout = folder / "stdout.txt"
        self._stderr = folder / "stderr.txt"
        env = dict(os.environ)
        # The tests' folder too: the extensions of the tests import as `support.*`.
        env["PYTHONPATH"] = os.pathsep.join(
            [str(SRC), str(TESTS), env.get("PYTHONPATH", "")]
        ).rstrip(os.pathsep)
        # Files, not pipes: a server that logs a lot never blocks on a full pipe.
        with self._stdout.open("wb") as out, self._stderr.open("wb") as err:
            self.process = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "agentkit",
                    "serve",
                    "--db",
                    str(self.db),
                    "--host",
                    "127.0.0.1",
                    "--port",
                    "0",
                    "--provider",
                    "agentkit.testing:conformance_provider",
                    "--attachment-root",
                    str(self.attachment_root),
                    *args,
                ],
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=err,
                env=env,
                start_new_session=True,  # a Ctrl-C of pytest is not sent to it as well
            )
        self._url: str | None = None

    @property
    def url(self) -> str:
        """The URL it listens on: the first line it prints (waits for it)."""
        if self._url is None:
            deadline = time.monotonic() + _START_TIMEOUT
            while True:
                text = self._stdout.read_text(errors="replace")
                if "\n" in text:
                    self._url = text.split("\n", 1)[0].strip()
                    break
                if self.process.poll() is not None or time.monotonic() > deadline:
                    self.stop()
                    raise RuntimeError(
                        f"agentkit serve did not start (exit {self.process.returncode}):\n"
                        + self._stderr.read_text(errors="replace")[-3000:]
                    )
                time.sleep(0.02)
        return self._url

    @property
    def port(self) -> int:
        return int(self.url.rsplit(":", 1)[1].rstrip("/"))

    async def add_member(self, name: str, role: Role) -> str:
        """Add a member straight into the server's database (it reads members on each
        request); returns its token."""
        from agentkit.conversations import Members
        from agentkit.stores import open_store

        store = open_store(self.db)
        try:
            return await Members(store).add(name, role)
        finally:
            await store.aclose()

    def stderr(self) -> str:
        return self._stderr.read_text(errors="replace")

    def terminate(self) -> None:
        """Ask it to stop, without waiting (the pool waits for it at the end)."""
        if self.process.poll() is None:
            self.process.terminate()

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


class ServerPool:
    """Fresh servers on demand, `spares` of them starting ahead of time."""

    def __init__(self, folder: Path, spares: int = 2) -> None:
        self._folder = folder
        self._spares = spares
        self._ready: deque[ServeProcess] = deque()
        self._all: list[ServeProcess] = []

    def _start(self) -> None:
        server = ServeProcess(self._folder / f"serve-{uuid.uuid4().hex[:8]}")
        self._ready.append(server)
        self._all.append(server)

    def take(self) -> ServeProcess:
        """A server that has started (its URL known)."""
        while len(self._ready) <= self._spares:
            self._start()
        server = self._ready.popleft()
        server.url  # noqa: B018  (waits for it to listen)
        return server

    def close(self) -> None:
        for server in self._all:
            if server.process.poll() is None:
                server.process.terminate()
        for server in self._all:
            server.stop()
