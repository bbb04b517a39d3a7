"""The stop signals of a long-running command (`agentkit run`, `agentkit serve`): the
first SIGINT or SIGTERM asks for a clean stop; a second one exits at once."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from collections.abc import Awaitable, Callable

import anyio

__all__ = ["watch_stop_signals"]


async def watch_stop_signals(stop: Callable[[int], Awaitable[None] | None]) -> None:
    """Call `stop` with the first SIGINT (Ctrl-C) or SIGTERM (`kill`, `timeout`, `docker
    stop`, systemd) that arrives (awaited when it is a coroutine function). After that
    first signal, a second Ctrl-C or SIGTERM stops at once, with the exit status of that
    signal."""
    try:
        receiver = anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM)
    except NotImplementedError:  # Windows: the signals stop at once, as they always do there
        return
    with receiver as signals:
        stopping = False
        async for signum in signals:
            if stopping:
                # Not by raising KeyboardInterrupt into the event loop: that can leave one
                # of anyio's idle worker threads running, and the exit hanging for good.
                for stream in (sys.stdout, sys.stderr):
                    with contextlib.suppress(Exception):
                        stream.flush()
                os._exit(128 + signum)
            stopping = True
            result = stop(signum)
            if result is not None:
                await result
