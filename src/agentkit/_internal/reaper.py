"""Run a command so that nothing it starts outlives it, or agentkit (Linux).

Started as `python -I -S reaper.py AGENTKIT_PID PROGRAM ARG...` (see `contain.py`) for
every process agentkit starts for a tool: shell commands, background jobs, MCP stdio
servers, the regular-expression scanner, the `claude` command line. Killing the command's
process group is not enough: `setsid sleep 471 &` makes a new session, so its process is
in no group the tool knows, and once its parent exits it is re-parented to init, out of
reach. This helper marks itself a *child subreaper* (`prctl(PR_SET_CHILD_SUBREAPER)`):
every orphan among its descendants is re-parented to it instead of to init, so every
process the command started, in whatever session or group, stays in its tree of
descendants, found through `/proc`.

When the command exits, the helper kills that whole tree with SIGKILL, reaps it, and exits
as the command did (same exit code, or the same signal). On SIGUSR1 (a call timed out or was
cancelled) it kills the tree at once; on SIGTERM or SIGHUP (a background job is stopped) it
sends SIGTERM to the whole tree, gives it `TERM_GRACE` seconds, then kills what is left.

When agentkit itself dies, however it dies (SIGKILL and the out-of-memory killer
included), the helper does the same as for SIGTERM: it asks the kernel for a *parent-death
signal* (`prctl(PR_SET_PDEATHSIG, PARENT_GONE)`). Two classic traps of that signal are
handled:

- agentkit may die between starting the helper and the `prctl` (a whole interpreter start
  here): agentkit passes its pid, and the helper checks `getppid()` against it *after*
  asking for the signal; a different parent means agentkit is gone, and the command is
  never started.
- the signal is sent when the *thread* that forked the helper ends, not the process (trio
  starts processes from worker threads that end after a few idle seconds; an asyncio loop
  may run in a thread of its own). So the signal only tells the helper to look: it acts
  when `getppid()` is no longer agentkit's pid, and otherwise waits for the next signal
  (the kernel sends it again when the next thread the helper was handed to ends).

What still escapes: a process that kills this helper with SIGKILL first (its orphans then
go to init), and work handed to a service outside the tree (`systemd-run`, `at`, `cron`,
`ssh localhost`, a container runtime). See docs/security.md.

This file is run as a script and imports only the standard library (it starts in
milliseconds with `-S`).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys
import time

_PR_SET_PDEATHSIG = 1
_PR_SET_CHILD_SUBREAPER = 36
KILL_TREE = signal.SIGUSR1
"""Tells the helper to SIGKILL its whole tree at once (a timeout or a cancelled call)."""
PARENT_GONE = signal.SIGUSR2
"""The parent-death signal: the thread that started the helper ended (maybe agentkit)."""
TERM_GRACE = 2.0
"""Seconds the tree gets after SIGTERM (a stopped job) before it is killed."""
_ROUNDS = 200
"""Scans of /proc at most while killing (a fork bomb racing the kill ends meanwhile:
killed processes fork no more)."""


def _parents() -> dict[int, int]:
    """Parent pid of every process visible in /proc."""
    out: dict[int, int] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as handle:
                stat = handle.read()
        except OSError:
            continue  # ended meanwhile
        # `pid (comm) state ppid ...`; comm may hold spaces and parentheses
        fields = stat[stat.rfind(b")") + 2 :].split()
        if len(fields) > 1:
            out[int(name)] = int(fields[1])
    return out


def _descendants(root: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for pid, parent in _parents().items():
        children.setdefault(parent, []).append(pid)
    found: list[int] = []
    pending = list(children.get(root, ()))
    while pending:
        pid = pending.pop()
        found.append(pid)
        pending.extend(children.get(pid, ()))
    return found


def _reap() -> None:
    """Collect every child that has ended (ours, or orphans re-parented to us)."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def kill_tree() -> None:
    """SIGKILL every descendant, until none is left."""
    me = os.getpid()
    for _ in range(_ROUNDS):
        found = _descendants(me)
        if not found:
            return
        for pid in found:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        _reap()
        time.sleep(0.005)  # killed processes take a moment to become zombies to reap
        _reap()


def terminate_tree(grace: float) -> None:
    """SIGTERM every descendant, give them `grace` seconds to end, then `kill_tree`."""
    me = os.getpid()
    for pid in _descendants(me):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        _reap()
        if not _descendants(me):
            return
        time.sleep(0.02)
    kill_tree()


def main(argv: list[str]) -> int:
    if len(argv) < 2 or not argv[0].isdigit():
        os.write(2, b"usage: reaper.py AGENTKIT_PID PROGRAM [ARG...]\n")
        return 2
    parent, argv = int(argv[0]), argv[1:]
    try:
        libc = ctypes.CDLL(None, use_errno=True)
    except OSError:  # pragma: no cover - glibc and musl can both be loaded
        libc = None

    def prctl(option: int, value: int) -> None:
        if libc is not None:
            with contextlib.suppress(AttributeError):  # a C library without prctl
                libc.prctl(option, value, 0, 0, 0)

    # without it the same walk still finds descendants whose parents live
    prctl(_PR_SET_CHILD_SUBREAPER, 1)

    def on_parent_gone(signum: int, frame: object) -> None:
        if os.getppid() == parent:
            return  # only the thread that started us ended; agentkit lives on
        terminate_tree(TERM_GRACE)
        os._exit(128 + signum)

    signal.signal(PARENT_GONE, on_parent_gone)
    prctl(_PR_SET_PDEATHSIG, PARENT_GONE)
    if os.getppid() != parent:
        return 128 + PARENT_GONE  # agentkit died while this helper started: run nothing

    def on_term(signum: int, frame: object) -> None:
        terminate_tree(TERM_GRACE)
        os._exit(128 + signum)

    def on_kill(signum: int, frame: object) -> None:
        kill_tree()
        os._exit(128 + signal.SIGKILL)

    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGHUP, on_term)
    signal.signal(KILL_TREE, on_kill)
    # SIGCHLD is blocked and waited for with a timeout: each child that ends (orphans
    # re-parented here included) is reaped at once, and a sweep every half second catches
    # any end whose wake-up was missed, so no zombie lingers while the command runs.
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGCHLD})
    child = os.fork()
    if child == 0:  # pragma: no cover - replaced by exec
        for handled in (signal.SIGTERM, signal.SIGHUP, KILL_TREE, PARENT_GONE):
            signal.signal(handled, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGCHLD})
        try:
            os.execvp(argv[0], argv)
        except OSError as exc:
            os.write(2, f"cannot run {argv[0]}: {exc.strerror}\n".encode())
            os._exit(127)
    status: int | None = None
    while status is None:
        while True:
            try:
                pid, ended = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:  # pragma: no cover - the command was reaped already
                status = 0
                break
            if pid == 0:
                break
            if pid == child:
                status = ended
                break
        if status is None:
            signal.sigtimedwait([signal.SIGCHLD], 0.5)
    for handled in (signal.SIGTERM, signal.SIGHUP, KILL_TREE, PARENT_GONE):
        signal.signal(handled, signal.SIG_IGN)
    kill_tree()
    if os.WIFSIGNALED(status):
        ended_by = os.WTERMSIG(status)
        with contextlib.suppress(OSError, ValueError):  # SIGKILL has no handler to reset
            signal.signal(ended_by, signal.SIG_DFL)
        os.kill(os.getpid(), ended_by)  # end as the command did
    return os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
