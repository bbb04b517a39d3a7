"""Bash and process tools on real subprocesses."""

from __future__ import annotations

import os
import time
from pathlib import Path

import anyio
import pytest

from agentkit.tools import (
    ProcessTable,
    Tool,
    ToolContext,
    ToolError,
    builtin_tools,
    process_tool,
)
from agentkit.tools._shell import PROCESS_OUTPUT_CAP, SHELL_OUTPUT_CAP
from support.paths import SRC
from support.tools import REGISTRY, call, call_error, make_ctx


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie is dead for our purposes.
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().split(")")[-1].split()[0] != "Z"
    except FileNotFoundError:
        return False


async def wait_dead(pid: int, seconds: float = 5.0) -> bool:
    for _ in range(int(seconds / 0.05)):
        if not alive(pid):
            return True
        await anyio.sleep(0.05)
    return not alive(pid)


async def poll_until(tool: Tool, ctx: ToolContext, needle: str, seconds: float = 10.0) -> str:
    """Poll background process p1 until its output contains `needle`."""
    out = ""
    for _ in range(int(seconds / 0.05)):
        out = await tool.function({"action": "poll", "id": "p1"}, ctx)
        if needle in out:
            return str(out)
        await anyio.sleep(0.05)
    raise AssertionError(f"{needle!r} never appeared; last poll: {out!r}")


@pytest.mark.anyio
@pytest.mark.parametrize("name", ["Bash", "bash", "shell"])
async def test_runs_in_the_working_directory(tmp_path: Path, name: str) -> None:
    (tmp_path / "hello.txt").write_text("hi there\n")
    out = await call(REGISTRY, name, make_ctx(tmp_path), command="pwd; cat hello.txt")
    assert out == f"{tmp_path}\nhi there\n"


@pytest.mark.anyio
async def test_exit_code_and_stderr_are_reported(tmp_path: Path) -> None:
    out = await call(REGISTRY, "Bash", make_ctx(tmp_path), command="echo oops >&2; exit 7")
    assert out == "oops\n[exit code 7]"
    assert await call(REGISTRY, "Bash", make_ctx(tmp_path), command="true") == "[no output]"


@pytest.mark.anyio
async def test_output_is_capped(tmp_path: Path) -> None:
    out = await call(
        REGISTRY, "Bash", make_ctx(tmp_path), command="head -c 100000 /dev/zero | tr '\\0' a"
    )
    assert out.startswith("a" * 1000)
    assert f"[output truncated: {100000 - SHELL_OUTPUT_CAP} more bytes dropped]" in out


@pytest.mark.anyio
async def test_timeout_kills_the_whole_process_group(tmp_path: Path) -> None:
    bash = REGISTRY.get("Bash")
    assert bash is not None
    started = time.monotonic()
    message = await call_error(
        bash,
        make_ctx(tmp_path),
        command="sleep 60 & echo $! > child.pid; echo started; sleep 60",
        timeout=1,
    )
    assert time.monotonic() - started < 10
    assert "timed out after 1 s" in message and "started" in message
    child = int((tmp_path / "child.pid").read_text())
    assert await wait_dead(child)


@pytest.mark.anyio
async def test_background_children_do_not_outlive_the_call(tmp_path: Path) -> None:
    out = await call(
        REGISTRY, "Bash", make_ctx(tmp_path), command="sleep 60 & echo $! > child.pid; echo done"
    )
    assert out == "done\n"
    assert await wait_dead(int((tmp_path / "child.pid").read_text()))


@pytest.mark.anyio
async def test_cancellation_kills_the_whole_process_group(tmp_path: Path) -> None:
    bash = REGISTRY.get("Bash")
    assert bash is not None
    ctx = make_ctx(tmp_path)
    with anyio.move_on_after(1.5):
        await bash.function(
            {"command": "sleep 60 & echo $! > child.pid; echo $$ > shell.pid; wait"}, ctx
        )
    for name in ("child.pid", "shell.pid"):
        assert await wait_dead(int((tmp_path / name).read_text()))


@pytest.mark.anyio
async def test_process_start_poll_stop(tmp_path: Path) -> None:
    ctx = make_ctx(tmp_path)
    registry = builtin_tools("rho")
    started = await call(
        registry,
        "process",
        ctx,
        action="start",
        command="echo ready; while true; do sleep 0.05; done",
    )
    assert started.startswith("started p1 (pid ")
    pid = int(started.split("pid ")[1].split(")")[0])
    process = registry.get("process")
    assert process is not None
    polled = await poll_until(process, ctx, "\nready")
    assert polled.startswith("p1: running")
    again = await call(registry, "process", ctx, action="poll", id="p1")
    assert "\nready" not in again  # only new output
    listed = await call(registry, "process", ctx, action="list")
    assert listed.startswith("p1: running")
    stopped = await call(registry, "process", ctx, action="stop", id="p1")
    assert "exited with code" in stopped
    assert await wait_dead(pid)


@pytest.mark.anyio
async def test_process_output_is_bounded_and_runs_are_isolated(tmp_path: Path) -> None:
    table = ProcessTable()
    tool = process_tool(table)
    ctx = make_ctx(tmp_path)
    await tool.function(
        {"action": "start", "command": "head -c 300000 /dev/zero | tr '\\0' b; echo; echo END"},
        ctx,
    )
    # every poll's output together: a poll may catch the output before the exit
    polls = []
    for _ in range(200):
        polls.append(await tool.function({"action": "poll", "id": "p1"}, ctx))
        if "exited" in polls[-1]:
            break
        await anyio.sleep(0.05)
    out = "\n".join(polls)
    assert "exited" in polls[-1]
    assert "bytes of output were dropped" in out
    assert "b\nEND" in out
    assert all(len(p) < PROCESS_OUTPUT_CAP + 500 for p in polls)
    other = ToolContext(working_dir=tmp_path, run_id="run-2", session_id="s", agent_id="x")
    with pytest.raises(ToolError, match="no background process"):
        await tool.function({"action": "poll", "id": "p1"}, other)
    await table.stop_all()
    assert table.list("run-1") == []


@pytest.mark.anyio
async def test_stop_all_kills_every_process(tmp_path: Path) -> None:
    table = ProcessTable()
    tool = process_tool(table)
    ctx = make_ctx(tmp_path)
    out = await tool.function({"action": "start", "command": "trap '' TERM; sleep 60"}, ctx)
    pid = int(out.split("pid ")[1].split(")")[0])
    await anyio.sleep(0.2)
    await table.stop_all()
    assert await wait_dead(pid)


@pytest.mark.anyio
async def test_process_errors_are_tool_errors(tmp_path: Path) -> None:
    tool = REGISTRY.get("process")
    assert tool is not None
    ctx = make_ctx(tmp_path)
    assert "needs a non-empty" in await call_error(tool, ctx, action="start")
    assert "needs the process" in await call_error(tool, ctx, action="poll")
    assert "no background process" in await call_error(tool, ctx, action="stop", id="p99")




def test_background_processes_die_with_the_interpreter(tmp_path: Path) -> None:
    """A host that never calls stop_all still leaves nothing running after it exits."""
    import subprocess
    import sys

    script = tmp_path / "host.py"
    script.write_text(
        "import anyio\n"
        "from pathlib import Path\n"
        "from agentkit.tools import ToolContext, builtin_tools\n"
        "async def main():\n"
        "    tools = builtin_tools()\n"
        "    ctx = ToolContext(working_dir=Path('.'), run_id='r', session_id='s', agent_id='a')\n"
        "    out = await tools.get('process').function(\n"
        "        {'action': 'start', 'command': 'sleep 120'}, ctx)\n"
        "    print(out.split('pid ')[1].split(')')[0], flush=True)\n"
        "anyio.run(main)\n"
    )
    done = subprocess.run(
        [sys.executable, str(script)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": str(SRC)},
    )
    assert done.returncode == 0, done.stderr
    pid = int(done.stdout.strip())
    for _ in range(100):
        if not alive(pid):
            break
        time.sleep(0.05)
    assert not alive(pid)


# -- nothing escapes by leaving the process group ---------------------

import secrets  # noqa: E402
import sys  # noqa: E402

linux_only = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="the subreaper helper needs Linux"
)


def marked(marker: str) -> list[int]:
    """Live (non-zombie) processes whose command line holds `marker`."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            with open(f"/proc/{name}/cmdline", "rb") as handle:
                cmdline = handle.read()
        except OSError:
            continue
        if marker.encode() in cmdline and alive(int(name)):
            found.append(int(name))
    return found


async def none_marked(marker: str, seconds: float = 5.0) -> bool:
    for _ in range(int(seconds / 0.05)):
        if not marked(marker):
            return True
        await anyio.sleep(0.05)
    return not marked(marker)


def escapes(seconds: str) -> list[str]:
    """Commands that start `sleep <seconds>` outside the call's process group."""
    return [
        f"setsid sleep {seconds} & echo started",
        f"setsid -f sleep {seconds}; echo started",
        f"(setsid sleep {seconds} &) ; echo started",
        f"setsid bash -c 'sleep {seconds} & sleep {seconds}' & echo started",
        f"nohup setsid sleep {seconds} >/dev/null 2>&1 & disown; echo started",
    ]


@linux_only
@pytest.mark.anyio
@pytest.mark.parametrize("index", range(5))
async def test_setsid_does_not_escape_the_kill(tmp_path: Path, index: int) -> None:
    """`setsid sleep 471 &` inside a Bash call survived the run: it had left the group."""
    seconds = f"471.{secrets.randbelow(10**9)}"
    command = escapes(seconds)[index]
    out = await call(REGISTRY, "Bash", make_ctx(tmp_path), command=command)
    assert "started" in out
    assert await none_marked(seconds), command


@linux_only
@pytest.mark.anyio
async def test_setsid_does_not_escape_a_timeout_or_a_cancel(tmp_path: Path) -> None:
    seconds = f"472.{secrets.randbelow(10**9)}"
    message = await call_error(
        REGISTRY.get("Bash"),  # type: ignore[arg-type]
        make_ctx(tmp_path),
        command=f"setsid sleep {seconds} & sleep {seconds}",
        timeout=1,
    )
    assert "timed out" in message
    assert await none_marked(seconds)
    bash = REGISTRY.get("Bash")
    assert bash is not None
    with anyio.move_on_after(1.0):
        await bash.function({"command": f"setsid sleep {seconds} & wait"}, make_ctx(tmp_path))
    assert await none_marked(seconds)


@linux_only
@pytest.mark.anyio
async def test_setsid_does_not_escape_a_stopped_background_job(tmp_path: Path) -> None:
    seconds = f"473.{secrets.randbelow(10**9)}"
    table = ProcessTable()
    tool = process_tool(table)
    ctx = make_ctx(tmp_path)
    await tool.function(
        {"action": "start", "command": f"setsid sleep {seconds} & echo ready; sleep 60"}, ctx
    )
    await poll_until(tool, ctx, "ready")
    assert marked(seconds)
    await table.stop_all(ctx.run_id)
    assert await none_marked(seconds)


@linux_only
@pytest.mark.anyio
async def test_exit_codes_and_signals_pass_through_the_helper(tmp_path: Path) -> None:
    ctx = make_ctx(tmp_path)
    assert await call(REGISTRY, "Bash", ctx, command="echo out; exit 3") == "out\n[exit code 3]"
    killed = await call(REGISTRY, "Bash", ctx, command="kill -9 $$")
    assert killed.endswith("[exit code -9]")
    missing = await call(REGISTRY, "Bash", ctx, command="definitely-not-a-command-x")
    assert "[exit code 127]" in missing


@linux_only
@pytest.mark.anyio
async def test_orphans_of_a_long_job_leave_no_zombies(tmp_path: Path) -> None:
    """Orphans are re-parented to the helper; it reaps them as they end, not only at the
    end of the job, so a job that keeps starting daemons does not pile up zombies."""
    table = ProcessTable()
    tool = process_tool(table)
    ctx = make_ctx(tmp_path)
    await tool.function(
        {
            "action": "start",
            "command": "for i in $(seq 50); do (setsid true &); done; echo ready; sleep 60",
        },
        ctx,
    )
    await poll_until(tool, ctx, "ready")
    helper = table.list(ctx.run_id)[0].popen.pid

    def zombies() -> list[str]:
        found = []
        for name in os.listdir("/proc"):
            try:
                with open(f"/proc/{name}/stat") as handle:
                    stat = handle.read()
            except OSError:
                continue
            fields = stat.rsplit(")", 1)[1].split()
            if fields[0] == "Z" and int(fields[1]) == helper:
                found.append(stat)
        return found

    # 50 orphans end; a helper that reaped only its command would hold 50 zombies. (On
    # this test's busy machines one orphan was once seen to linger as a zombie for seconds
    # although the helper sweeps every half second, so a few are tolerated.)
    for _ in range(100):
        if not zombies():
            break
        await anyio.sleep(0.05)
    assert len(zombies()) < 5
    await table.stop_all()


@linux_only
@pytest.mark.anyio
async def test_a_stopped_job_and_its_escaped_children_get_sigterm_first(tmp_path: Path) -> None:
    """Stopping a job is graceful: SIGTERM reaches the tree (the process in another session
    too), and only what outlives the grace period is killed."""
    seconds = f"474.{secrets.randbelow(10**9)}"
    table = ProcessTable()
    tool = process_tool(table)
    ctx = make_ctx(tmp_path)
    escaped = (
        "setsid bash -c 'trap \"echo escaped-term > escaped.txt; exit\" TERM; "
        f"touch escaped-ready; sleep {seconds} & wait' &"
    )
    await tool.function(
        {
            "action": "start",
            "command": f"{escaped} trap 'echo graceful; exit 0' TERM; echo ready; "
            "while true; do sleep 0.05; done",
        },
        ctx,
    )
    await poll_until(tool, ctx, "ready")
    with anyio.fail_after(10):  # the escaped child has set its trap (it runs on its own)
        while not (tmp_path / "escaped-ready").exists():  # noqa: ASYNC110
            await anyio.sleep(0.01)
    out = await tool.function({"action": "stop", "id": "p1"}, ctx)
    assert "graceful" in out
    assert await none_marked(seconds)
    assert (tmp_path / "escaped.txt").read_text() == "escaped-term\n"
