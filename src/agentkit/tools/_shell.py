"""Shell tools: `Bash` / `bash` / `shell`, `powershell`, and `process` for background jobs.

A shell command runs with the working directory as its current folder, in a new session
(its own process group). When it finishes, times out, or the call is cancelled, everything
it started is killed, so nothing it started in the background survives the call; use the
`process` tool for long-running jobs. Output (stdout and stderr together) is capped.

Killing the process group does not reach a process that left it (`setsid sleep 471 &`).
On Linux each command therefore runs under a small helper (`agentkit._internal.reaper`,
started through `agentkit._internal.contain`) that is a child subreaper: every descendant,
in whatever session, stays in its process tree, and the helper kills that tree when the
command ends, when it is told to stop (SIGTERM), and when agentkit itself dies, however
(the parent-death signal). What remains possible is described there and in
docs/security.md. Elsewhere only the process group is killed.

Background jobs of the `process` tool belong to a [`ProcessTable`][agentkit.tools.ProcessTable]:
they outlive the call that started them, not its run: a `Runtime` stops a run's jobs when
the run ends (a host without one calls `stop_all(run_id)`).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
import weakref
from collections import deque
from dataclasses import dataclass, field
from typing import Any

import anyio
import anyio.to_thread

from agentkit._internal.contain import (
    STOP_GRACE,
    contained,
    kill_group,
    open_contained,
    stop_tree,
)
from agentkit.tools._base import Tool, ToolContext, ToolError, object_schema
from agentkit.tools._rules import Shell, command_matcher

__all__ = [
    "ProcessTable",
    "bash_tool",
    "powershell_tool",
    "process_tool",
]

SHELL_DEFAULT_TIMEOUT = 120.0
SHELL_MAX_TIMEOUT = 600.0
SHELL_OUTPUT_CAP = 30_000
"""Characters of output kept; the rest is dropped (and said so)."""
_EXIT_GRACE = 0.5


def _posix_shell() -> list[str]:
    return [shutil.which("bash") or "/bin/sh", "-c"]


def _powershell() -> list[str] | None:
    exe = shutil.which("pwsh") or shutil.which("powershell")
    return [exe, "-NoProfile", "-NonInteractive", "-Command"] if exe else None


class _Capped:
    """Collects output up to a cap and counts what was dropped."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.parts: list[bytes] = []
        self.size = 0
        self.dropped = 0

    def add(self, data: bytes) -> None:
        room = self.cap - self.size
        if room > 0:
            self.parts.append(data[:room])
            self.size += min(room, len(data))
        self.dropped += max(0, len(data) - max(room, 0))

    def text(self) -> str:
        out = b"".join(self.parts).decode("utf-8", errors="replace")
        if self.dropped:
            out += f"\n[output truncated: {self.dropped} more bytes dropped]"
        return out


_CHILD: dict[str, Any] = {
    "stdin": subprocess.DEVNULL,
    "stdout": subprocess.PIPE,
    "stderr": subprocess.STDOUT,
}
"""How every command starts: no input, stderr merged into stdout (and, through
`open_contained` or `start_new_session`, in a process group of its own)."""


async def run_command(
    argv: list[str], cwd: str, time_limit: float, cap: int = SHELL_OUTPUT_CAP
) -> tuple[int | None, str]:
    """Run `argv` in its own process group; return (exit code or None on timeout, output).

    The group is killed when the command ends, times out or the caller is cancelled.
    """
    output = _Capped(cap)
    timed_out = False
    async with open_contained(argv, cwd=cwd, **_CHILD) as process:
        assert process.stdout is not None
        stdout = process.stdout

        drained = anyio.Event()

        async def drain() -> None:
            try:
                async for chunk in stdout:
                    output.add(chunk)
            except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                pass
            finally:
                drained.set()

        with anyio.move_on_after(time_limit) as scope:
            async with anyio.create_task_group() as tg:
                tg.start_soon(drain)
                await process.wait()
                # Background children may keep the pipe open; give them a moment, then go.
                with anyio.move_on_after(_EXIT_GRACE):
                    await drained.wait()
                tg.cancel_scope.cancel()
        timed_out = scope.cancelled_caught
        # leaving the block kills every descendant, those in other sessions included
    return (None if timed_out else process.returncode), output.text()


def _shell_schema(kind: str) -> dict[str, Any]:
    return object_schema(
        {
            "command": {"type": "string", "description": f"The {kind} command to run."},
            "timeout": {
                "type": "number",
                "exclusiveMinimum": 0,
                "maximum": SHELL_MAX_TIMEOUT,
                "description": f"Seconds before the command is killed "
                f"(default {SHELL_DEFAULT_TIMEOUT:g}, at most {SHELL_MAX_TIMEOUT:g}).",
            },
            "description": {
                "type": "string",
                "description": "A few words saying what the command does.",
            },
        },
        "command",
    )


def _shell_function(prefix: list[str] | None, kind: str) -> Any:
    async def run(args: dict[str, Any], ctx: ToolContext) -> str:
        argv_prefix = prefix if prefix is not None else _powershell()
        if argv_prefix is None:
            raise ToolError(f"{kind} is not available on this machine")
        command = str(args["command"])
        if "\x00" in command:
            raise ToolError("the command must not contain NUL bytes")
        timeout = min(float(args.get("timeout") or SHELL_DEFAULT_TIMEOUT), SHELL_MAX_TIMEOUT)
        code, text = await run_command([*argv_prefix, command], str(ctx.working_dir), timeout)
        if code is None:
            raise ToolError(
                f"the command timed out after {timeout:g} s and was killed\n{text}".rstrip()
            )
        if code != 0:
            return f"{text.rstrip()}\n[exit code {code}]".lstrip("\n")
        return text or "[no output]"

    return run


def bash_tool(*, shell_alias: bool = True) -> Tool:
    """The `Bash` / `bash` tool (also `shell` when `shell_alias`), for POSIX systems."""
    return Tool(
        name="Bash",
        aliases=("bash", "shell") if shell_alias else ("bash",),
        description=(
            "Run a bash command in the working directory and return its output (stdout and "
            f"stderr together, at most {SHELL_OUTPUT_CAP} characters) and non-zero exit code. "
            f"Default timeout {SHELL_DEFAULT_TIMEOUT:g} s. Anything the command leaves running "
            "is killed when it returns; use the process tool for background jobs."
        ),
        input_schema=_shell_schema("bash"),
        function=_shell_function(_posix_shell(), "bash"),
        effect="execute",
        timeout=SHELL_MAX_TIMEOUT + 10,
        matches=command_matcher("command"),
    )


def powershell_tool(*, shell_alias: bool = False) -> Tool:
    """The `powershell` tool (also `shell` when `shell_alias`); needs `pwsh` or `powershell`."""
    return Tool(
        name="powershell",
        aliases=("shell",) if shell_alias else (),
        description=(
            "Run a PowerShell command in the working directory and return its output "
            f"(at most {SHELL_OUTPUT_CAP} characters). Default timeout "
            f"{SHELL_DEFAULT_TIMEOUT:g} s."
        ),
        input_schema=_shell_schema("PowerShell"),
        function=_shell_function(None, "PowerShell"),
        effect="execute",
        timeout=SHELL_MAX_TIMEOUT + 10,
        matches=command_matcher("command", shell="powershell"),
    )


def powershell_available() -> bool:
    """Whether a PowerShell executable is on the PATH."""
    return _powershell() is not None


# -- background processes -------------------------------------------------------------

PROCESS_OUTPUT_CAP = 64 * 1024
"""Bytes of recent output kept per background process (older output is dropped)."""
PROCESS_MAX_PER_RUN = 16
_JOB_SHELL: Shell = "powershell" if sys.platform == "win32" else "bash"


def _kill_jobs(jobs: dict[str, dict[str, _Job]]) -> None:
    """Kill every still-running job (a table's finalizer; also runs at interpreter exit)."""
    running = [j for run_jobs in jobs.values() for j in run_jobs.values() if j.popen.poll() is None]
    for job in running:
        stop_tree(job.popen.pid)  # the helper kills what left the group too
    deadline = time.monotonic() + 1.0
    for job in running:
        with contextlib.suppress(subprocess.TimeoutExpired):
            job.popen.wait(max(0.0, deadline - time.monotonic()))
        kill_group(job.popen, signal.SIGKILL)


@dataclass
class _Job:
    id: str
    command: str
    popen: subprocess.Popen[bytes]
    started: float
    buffer: deque[bytes] = field(default_factory=deque)
    size: int = 0
    dropped: int = 0
    unread_from: int = 0
    total: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, data: bytes) -> None:
        with self.lock:
            self.buffer.append(data)
            self.size += len(data)
            self.total += len(data)
            while self.size > PROCESS_OUTPUT_CAP and self.buffer:
                first = self.buffer.popleft()
                excess = self.size - PROCESS_OUTPUT_CAP
                if len(first) > excess:
                    self.buffer.appendleft(first[excess:])
                    self.size -= excess
                    self.dropped += excess
                else:
                    self.size -= len(first)
                    self.dropped += len(first)

    def read_new(self) -> tuple[str, int]:
        """Output not returned before (as far as it is still kept), and bytes lost."""
        with self.lock:
            kept_from = self.total - self.size
            start = max(self.unread_from, kept_from)
            lost = start - self.unread_from
            data = b"".join(self.buffer)[start - kept_from :]
            self.unread_from = self.total
        return data.decode("utf-8", errors="replace"), lost


class ProcessTable:
    """Background processes started by the `process` tool, per run.

    Each run sees only its own processes, and they end with it: a
    [`Runtime`][agentkit.runtime.Runtime] stops a run's jobs when the run ends; a host
    driving the tools without a runtime calls
    [`stop_all(run_id)`][agentkit.tools.ProcessTable.stop_all] itself, and can see what is
    still running with [`list(run_id)`][agentkit.tools.ProcessTable.list]. As a
    safety net, processes still running when the table is garbage-collected or the
    interpreter exits are killed then. Each job runs under the subreaper helper, so
    stopping it also kills what it started in other sessions (`setsid`).
    """

    def __init__(self) -> None:
        self._jobs: dict[str, dict[str, _Job]] = {}
        self._counter = 0
        weakref.finalize(self, _kill_jobs, self._jobs)

    def _run_jobs(self, run_id: str) -> dict[str, _Job]:
        return self._jobs.setdefault(run_id, {})

    def start(self, run_id: str, command: str, cwd: str) -> _Job:
        """Start `command` in the background under the platform shell."""
        jobs = self._run_jobs(run_id)
        if sum(1 for j in jobs.values() if j.popen.poll() is None) >= PROCESS_MAX_PER_RUN:
            raise ToolError(f"at most {PROCESS_MAX_PER_RUN} background processes per run")
        if sys.platform == "win32":  # pragma: no cover - POSIX CI
            argv = [*(_powershell() or ["cmd", "/c"]), command]
        else:
            argv = [*_posix_shell(), command]
        popen = subprocess.Popen(contained(argv), cwd=cwd, start_new_session=True, **_CHILD)
        self._counter += 1
        job = _Job(id=f"p{self._counter}", command=command, popen=popen, started=time.time())
        threading.Thread(target=_pump, args=(job,), daemon=True).start()
        jobs[job.id] = job
        return job

    def get(self, run_id: str, job_id: str) -> _Job:
        """The run's job `job_id`."""
        job = self._jobs.get(run_id, {}).get(job_id)
        if job is None:
            raise ToolError(f"no background process {job_id!r} in this run")
        return job

    def list(self, run_id: str) -> list[_Job]:
        """The run's jobs, oldest first."""
        return list(self._jobs.get(run_id, {}).values())

    async def stop(self, job: _Job, grace: float = 2.0) -> int | None:
        """Terminate the job's process group (SIGTERM, then SIGKILL after `grace`)."""
        if job.popen.poll() is None:
            kill_group(job.popen, signal.SIGTERM)  # the helper kills its whole tree on it
            await _wait_exit(job.popen, grace + STOP_GRACE)
        kill_group(job.popen, signal.SIGKILL)
        with anyio.CancelScope(shield=True):
            await _wait_exit(job.popen, 5.0)
        return job.popen.returncode

    async def stop_all(self, run_id: str | None = None) -> None:
        """Stop every process (of one run, or of all runs) and forget them."""
        run_ids = [run_id] if run_id is not None else list(self._jobs)
        for rid in run_ids:
            for job in self._jobs.pop(rid, {}).values():
                await self.stop(job, grace=0.5)


async def _wait_exit(popen: subprocess.Popen[bytes], seconds: float) -> None:
    def wait() -> None:
        with contextlib.suppress(subprocess.TimeoutExpired):
            popen.wait(seconds)

    await anyio.to_thread.run_sync(wait)


def _pump(job: _Job) -> None:
    stream = job.popen.stdout
    assert stream is not None
    with stream:
        while True:
            chunk = os.read(stream.fileno(), 8192)
            if not chunk:
                break
            job.add(chunk)


def _describe(job: _Job) -> str:
    code = job.popen.poll()
    state = "running" if code is None else f"exited with code {code}"
    return f"{job.id}: {state} ({job.command})"


def process_tool(table: ProcessTable | None = None) -> Tool:
    """The `process` tool: start, poll, list and stop background processes.

    Args:
        table: Where the processes are kept; a new table when omitted.
    """
    jobs = table if table is not None else ProcessTable()

    async def run(args: dict[str, Any], ctx: ToolContext) -> str:
        action = args["action"]
        if action == "start":
            command = args.get("command")
            if not isinstance(command, str) or not command.strip() or "\x00" in command:
                raise ToolError("action 'start' needs a non-empty `command`")
            job = jobs.start(ctx.run_id, command, str(ctx.working_dir))
            return f"started {job.id} (pid {job.popen.pid}): {command}"
        if action == "list":
            listed = jobs.list(ctx.run_id)
            return "\n".join(_describe(j) for j in listed) or "no background processes"
        job_id = args.get("id")
        if not isinstance(job_id, str):
            raise ToolError(f"action {action!r} needs the process `id`")
        job = jobs.get(ctx.run_id, job_id)
        if action == "stop":
            await jobs.stop(job)
        else:
            # Give a just-exited process's pump a moment to collect the last output.
            await anyio.sleep(0.05)
        text, lost = job.read_new()
        head = _describe(job)
        if lost:
            head += f"\n[{lost} bytes of output were dropped (buffer {PROCESS_OUTPUT_CAP} bytes)]"
        return f"{head}\n{text}".rstrip()

    return Tool(
        name="process",
        description=(
            "Manage background processes in the working directory. `start` runs `command` "
            "and returns an id; `poll` returns the state and the output since the last poll; "
            "`stop` terminates it (and everything it started); `list` shows this run's "
            f"processes. The last {PROCESS_OUTPUT_CAP // 1024} KiB of output are kept per "
            "process. Processes keep running after this call until stopped, or until the "
            "host ends them (at the latest when it shuts down); stop what you no longer need."
        ),
        input_schema=object_schema(
            {
                "action": {"type": "string", "enum": ["start", "poll", "stop", "list"]},
                "command": {"type": "string", "description": "Shell command (for `start`)."},
                "id": {"type": "string", "description": "Process id (for `poll` and `stop`)."},
            },
            "action",
        ),
        function=run,
        effect="execute",
        timeout=30.0,
        # on Windows jobs run under PowerShell (or cmd): its stricter word rules apply
        matches=command_matcher("command", shell=_JOB_SHELL),
    )
