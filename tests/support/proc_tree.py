"""What runs on this machine, read from /proc: for the tests that kill agentkit and check
that nothing it started is left (by parent, by process group, and by a marker in the
command line)."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass


@dataclass(frozen=True)
class Proc:
    pid: int
    ppid: int
    pgid: int
    state: str
    start: int
    """Start time in clock ticks since boot: with the pid, names one process for good."""
    cmdline: bytes


def processes() -> dict[int, Proc]:
    """Every process visible in /proc, zombies included."""
    found: dict[int, Proc] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as handle:
                stat = handle.read()
            with open(f"/proc/{name}/cmdline", "rb") as handle:
                cmdline = handle.read()
        except OSError:
            continue  # ended meanwhile
        # `pid (comm) state ppid pgrp session ... starttime(22) ...`; comm may hold spaces
        fields = stat[stat.rfind(b")") + 2 :].split()
        found[int(name)] = Proc(
            pid=int(name),
            ppid=int(fields[1]),
            pgid=int(fields[2]),
            state=fields[0].decode(),
            start=int(fields[19]),
            cmdline=cmdline,
        )
    return found


def descendants(root: int) -> list[Proc]:
    """The processes below `root`, by parent."""
    table = processes()
    children: dict[int, list[Proc]] = {}
    for proc in table.values():
        children.setdefault(proc.ppid, []).append(proc)
    found: list[Proc] = []
    pending = list(children.get(root, ()))
    while pending:
        proc = pending.pop()
        found.append(proc)
        pending.extend(children.get(proc.pid, ()))
    return found


def marked(marker: str) -> list[Proc]:
    """Live (non-zombie) processes whose command line holds `marker`, this one aside."""
    return [
        p
        for p in processes().values()
        if marker.encode() in p.cmdline and p.state != "Z" and p.pid != os.getpid()
    ]


def wait_for_marked(
    marker: str, count: int, *, program: bytes = b"", seconds: float = 60.0
) -> None:
    """Wait until `count` live processes of `program` (the first word of their command
    line, `b""` for any) hold `marker`."""
    deadline = time.monotonic() + seconds
    while True:
        found = [p for p in marked(marker) if p.cmdline.split(b"\0")[0].endswith(program)]
        if len(found) >= count:
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"only {len(found)} of {count} processes started: {found}")
        time.sleep(0.05)


def left_over(root: int, before: list[Proc], marker: str, seconds: float = 20.0) -> list[Proc]:
    """What is still alive `seconds` at most after `root` was killed, of: the processes
    that were below it (`before`, by parent: the same pid and start time), the members of
    their process groups, and every process whose command line holds `marker`. Empty when
    all of them ended (a zombie has ended: only init can still reap it)."""
    mine = os.getpgid(0)
    groups = {p.pgid for p in before if p.pgid != mine} | {root}
    known = {(p.pid, p.start) for p in before}
    deadline = time.monotonic() + seconds
    while True:
        alive = [
            p
            for p in processes().values()
            if p.state != "Z"
            and p.pid != os.getpid()
            and ((p.pid, p.start) in known or p.pgid in groups or marker.encode() in p.cmdline)
        ]
        if not alive or time.monotonic() > deadline:
            return alive
        time.sleep(0.05)
