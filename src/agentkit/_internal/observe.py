"""Where the runtime, the stores and the rooms tell what they do, for whoever measures it.

The server's metrics (`agentkit serve --metrics`, `agentkit.server._metrics`) implement
`Observer`; the packages that do the work call this module's functions, which cost one
global read while nobody observes (the default), and import nothing of any metrics
library. One observer at a time receives the calls: the one `observing` installed last.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Protocol

__all__ = [
    "Observer",
    "current",
    "observing",
    "room_events_published",
    "run_ended",
    "run_started",
]


class Observer(Protocol):
    """What the work of a process tells its observer. Each method returns at once (it
    records; it never waits) and never raises."""

    def run_started(self, agent: str) -> None:
        """A run of agent id `agent` was accepted and starts."""
        ...

    def run_ended(self, agent: str, status: str) -> None:
        """A run of agent id `agent` ended with `status` (`completed`, `interrupted`,
        `error`, or a status added later)."""
        ...

    def store_operation(self, operation: str, seconds: float) -> None:
        """A store call (`operation`: the backend's operation, `create_run`) took
        `seconds`, waits for a connection or a lock included."""
        ...

    def room_events_published(self, count: int) -> None:
        """`count` events were appended to a room's log."""
        ...


_observer: Observer | None = None


def current() -> Observer | None:
    """The observer receiving the calls now, if any."""
    return _observer


@contextlib.contextmanager
def observing(observer: Observer) -> Iterator[None]:
    """`observer` receives the process's calls inside the block; the one before it again
    after."""
    global _observer
    previous, _observer = _observer, observer
    try:
        yield
    finally:
        _observer = previous


def run_started(agent: str) -> None:
    """Tell the observer, if any, that a run of `agent` starts."""
    if _observer is not None:
        _observer.run_started(agent)


def run_ended(agent: str, status: str) -> None:
    """Tell the observer, if any, that a run of `agent` ended with `status`."""
    if _observer is not None:
        _observer.run_ended(agent, status)


def room_events_published(count: int) -> None:
    """Tell the observer, if any, that `count` room events were appended."""
    if _observer is not None:
        _observer.room_events_published(count)
