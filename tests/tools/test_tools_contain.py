"""Nothing a tool started outlives agentkit, however agentkit dies.

Each test starts a real agentkit process (`agentkit run`, `agentkit serve`, or a host
script driving the tools under asyncio and trio), waits until its tool processes run
`sleep MARKER` (a unique number), kills it with SIGKILL, and checks that nothing of its
is left: no process that was below it (by parent), none in the process groups they were in,
and none whose command line holds the marker. Before the parent-death signal, every one of
these survived under init.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from support.paths import SRC, SUPPORT
from support.proc_tree import Proc, descendants, left_over, marked, wait_for_marked
from support.serve_process import ServeProcess

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="the parent-death signal is Linux's"
)

MCP_SERVER = str(SUPPORT / "contain_mcp_server.py")
REAPER = SRC / "agentkit" / "_internal" / "reaper.py"

AGENT = """\
name: worker
description: Runs what it is told
tier: small
permissionMode: bypassPermissions
maxTurns: 30
tools: [Bash, mcp__hang]
systemPromptPrefix: Do as told.
"""


def new_marker() -> str:
    return f"587.{secrets.randbelow(10**9):09d}"


def app(folder: Path, marker: str | None = None) -> Path:
    """An app whose agent may call Bash (and, given a marker, the hanging MCP tool)."""
    (folder / "agents").mkdir(parents=True)
    (folder / "app.yaml").write_text(
        "formatVersion: 2\nid: contain\nagents: [agents/worker.yaml]\n"
    )
    agent = AGENT
    if marker is not None:
        agent += (
            f"mcpServers:\n  hang:\n    command: {sys.executable}\n"
            f"    args: [{MCP_SERVER}, '{marker}']\n"
        )
    (folder / "agents" / "worker.yaml").write_text(agent)
    return folder


def script(folder: Path, name: str, tool_input: dict[str, object]) -> Path:
    path = folder / "script.json"
    path.write_text(json.dumps([{"tool_calls": [{"name": name, "input": tool_input}]}]))
    return path


def bash_command(marker: str) -> str:
    """A command whose `sleep` never returns, with a backgrounded and a `setsid`
    grandchild (the second leaves the process group)."""
    return f"sleep {marker} & setsid sleep {marker} & sleep {marker}"


def kill_and_check(process: subprocess.Popen[bytes], marker: str) -> list[Proc]:
    """SIGKILL `process` and return what of its is still alive after a while."""
    before = descendants(process.pid)
    assert before, "the tool processes should be running below agentkit"
    process.kill()
    process.wait(30)
    return left_over(process.pid, before, marker)


@pytest.fixture
def reap_marked() -> Iterator[list[str]]:
    """Markers whose processes a failing test must not leave running."""
    markers: list[str] = []
    yield markers
    for marker in markers:
        for proc in marked(marker):
            with contextlib.suppress(OSError):
                os.kill(proc.pid, signal.SIGKILL)


def run_agent(
    tmp_path: Path, cli_env: dict[str, str], folder: Path, script_path: Path
) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [
            sys.executable, "-m", "agentkit", "run", "--app", str(folder), "contain:worker",
            "go", "--provider", "scripted", "--script", str(script_path),
            "--working-dir", str(tmp_path),
        ],
        env=cli_env,
        cwd=tmp_path,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )  # fmt: skip


def test_sigkill_of_agentkit_run_mid_bash_leaves_nothing(
    tmp_path: Path, cli_env: dict[str, str], reap_marked: list[str]
) -> None:
    marker = new_marker()
    reap_marked.append(marker)
    folder = app(tmp_path / "app")
    process = run_agent(
        tmp_path, cli_env, folder, script(tmp_path, "Bash", {"command": bash_command(marker)})
    )
    wait_for_marked(marker, 3, program=b"sleep")
    assert kill_and_check(process, marker) == []


def test_sigkill_of_agentkit_run_mid_mcp_tool_leaves_nothing(
    tmp_path: Path, cli_env: dict[str, str], reap_marked: list[str]
) -> None:
    pytest.importorskip("mcp", reason="the 'mcp' extra is not installed")
    marker = new_marker()
    reap_marked.append(marker)
    folder = app(tmp_path / "app", marker)
    process = run_agent(tmp_path, cli_env, folder, script(tmp_path, "mcp__hang__hang", {}))
    wait_for_marked(marker, 1, program=b"sleep")  # the server's grandchild: mid-call
    assert marked(marker), "the MCP server should be running"
    assert kill_and_check(process, marker) == []


def test_sigkill_of_agentkit_serve_mid_bash_leaves_nothing(
    tmp_path: Path, reap_marked: list[str]
) -> None:
    marker = new_marker()
    reap_marked.append(marker)
    folder = app(tmp_path / "app")
    path = script(tmp_path, "Bash", {"command": bash_command(marker)})
    server = ServeProcess(
        tmp_path / "serve",
        args=["--provider", "scripted", "--script", str(path), "--agents", str(folder)],
    )
    try:
        token = anyio_run(server.add_member("ada", "owner"))
        headers = {"Authorization": f"Bearer {token}"}
        with httpx.Client(base_url=server.url, headers=headers, timeout=30) as http:
            created = http.post("/v1/conversations", json={"agent": "contain:worker"})
            assert created.status_code == 201, created.text
            conversation = created.json()["id"]
            started = http.post(f"/v1/conversations/{conversation}/runs", json={"prompt": "go"})
            assert started.status_code == 202, started.text
        wait_for_marked(marker, 3, program=b"sleep")
        assert kill_and_check(server.process, marker) == []
    finally:
        server.stop()


def anyio_run(coroutine: object) -> str:
    import anyio

    async def go() -> str:
        return await coroutine  # type: ignore[misc,no-any-return]

    return anyio.run(go)


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_sigkill_of_a_host_leaves_nothing_of_its_tools(
    tmp_path: Path, backend: str, reap_marked: list[str]
) -> None:
    """A process job, an MCP server mid-call and a Bash call, started by a host under
    asyncio and under trio (which starts processes from worker threads)."""
    pytest.importorskip("mcp", reason="the 'mcp' extra is not installed")
    marker = new_marker()
    reap_marked.append(marker)
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    process = subprocess.Popen(
        [sys.executable, str(SUPPORT / "contain_host.py"), backend, marker, MCP_SERVER],
        env=env,
        cwd=tmp_path,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
    )
    # the job, the server's grandchild, and the three sleeps of the Bash command
    wait_for_marked(marker, 5, program=b"sleep")
    assert kill_and_check(process, marker) == []


def test_the_helper_outlives_the_thread_that_started_it(tmp_path: Path) -> None:
    """The parent-death signal comes when the *thread* that started the helper ends
    (trio's worker threads end after a few idle seconds): the helper must go on while
    agentkit lives."""
    from agentkit._internal.contain import contained

    started: list[subprocess.Popen[bytes]] = []

    def start() -> None:
        command = "sleep 1; echo still here"
        started.append(
            subprocess.Popen(
                contained(["bash", "-c", command]),
                stdout=subprocess.PIPE,
                start_new_session=True,
            )
        )

    thread = threading.Thread(target=start)
    thread.start()
    thread.join()  # the thread is gone: the helper got its parent-death signal
    (process,) = started
    out, _ = process.communicate(timeout=30)
    assert (process.returncode, out) == (0, b"still here\n")


def test_a_helper_whose_agentkit_is_gone_runs_nothing(tmp_path: Path) -> None:
    """agentkit may die while the helper starts, before it asks for the parent-death
    signal: the helper then finds another parent than the pid it was given, and stops."""
    flag = tmp_path / "ran"
    done = subprocess.run(
        [sys.executable, "-I", "-S", str(REAPER), "1", "touch", str(flag)],
        capture_output=True,
        timeout=30,
    )
    assert done.returncode == 128 + signal.SIGUSR2
    assert not flag.exists()
