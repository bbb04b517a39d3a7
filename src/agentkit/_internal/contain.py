"""Start the processes of tools so that nothing they start outlives them, or agentkit.

Every child process agentkit starts for a tool (shell commands, `process` jobs, MCP stdio
servers, the regular-expression scanner, the `claude` command line) goes through
`contained(argv)`: on Linux the command then runs under the subreaper helper
(`reaper.py`), which keeps every descendant in its tree, whatever session it moves to,
and kills that tree when the command ends, when agentkit asks (`stop_tree`, a SIGTERM), and
when agentkit itself dies, by any signal (the parent-death signal; see `reaper.py`). Each
is started in a new session, so the helper leads a process group of its own, which
`kill_group` ends as a last resort.

`open_contained` / `stop` are the async side of it: a process opened with anyio and
stopped, whatever happens to the caller, by asking the helper to kill its tree, waiting a
moment, then killing the group.

Elsewhere (macOS, Windows) the helper is not used: the command's process group is killed
when it ends, and a process that left the group, or every process when agentkit is killed
with SIGKILL, survives. docs/security.md lists what is contained.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any

import anyio
import anyio.abc

__all__ = [
    "CONTAINED",
    "STOP_GRACE",
    "contained",
    "kill_group",
    "open_contained",
    "stop",
    "stop_tree",
]

REAPER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "reaper.py")
CONTAINED = bool(
    sys.platform.startswith("linux")
    and sys.executable
    and os.path.isdir("/proc/self")
    and os.path.isfile(REAPER)
)
"""Whether commands run under the subreaper helper here (Linux with /proc)."""
STOP_GRACE = 3.0
"""Seconds the helper gets to kill its process tree before its group is killed."""


def contained(argv: Sequence[str]) -> list[str]:
    """`argv` run under the subreaper helper where it works, tied to this process's life.

    Start the result in a new session (`start_new_session=True`).
    """
    if CONTAINED:
        return [sys.executable, "-I", "-S", REAPER, str(os.getpid()), *argv]
    return list(argv)


def stop_tree(pid: int) -> None:
    """Ask the helper `pid` to kill its whole tree at once (SIGUSR1, which kills a command
    run without the helper just as well: its default action ends a process)."""
    if sys.platform != "win32":
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGUSR1)


def kill_group(process: anyio.abc.Process | subprocess.Popen[bytes], sig: int) -> None:
    """Send `sig` to the process's whole group (POSIX) or kill the process (elsewhere)."""
    if sys.platform == "win32":  # pragma: no cover - POSIX CI
        with contextlib.suppress(ProcessLookupError, OSError):
            process.kill()
        return
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, sig)


async def stop(process: anyio.abc.Process) -> None:
    """End a contained process and everything it started, and close it; shielded, so it
    finishes even when the caller is cancelled.

    A running process is asked to kill its tree (the helper's SIGUSR1) and gets
    `STOP_GRACE` seconds; then its group is killed, finished or not, so that nothing the
    command left in it runs on. Without the helper, a process that does not end on
    SIGUSR1 is simply killed after the grace.
    """
    with anyio.CancelScope(shield=True):
        if process.returncode is None:
            if CONTAINED:
                stop_tree(process.pid)
                with anyio.move_on_after(STOP_GRACE):
                    await process.wait()
            else:
                kill_group(process, signal.SIGKILL)
        kill_group(process, signal.SIGKILL)
        await process.aclose()


@asynccontextmanager
async def open_contained(argv: Sequence[str], **options: Any) -> AsyncIterator[anyio.abc.Process]:
    """`anyio.open_process(contained(argv), start_new_session=True, **options)`, stopped
    with `stop` when the block exits, normally or not.

    Raises:
        OSError: The program cannot be started (without the helper; with it, the helper
            says so on stderr and exits with 127).
    """
    process = await anyio.open_process(contained(argv), start_new_session=True, **options)
    try:
        yield process
    finally:
        await stop(process)
