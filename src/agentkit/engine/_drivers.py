"""What adapters plug into the core: drivers by runtime name, and checks on resume.

The core runs every `AgentSpec` whose `runtime` is `engine` itself. An adapter that brings
another way of running a turn (the definitions adapter brings `claude-cli`) has its driver
registered under that name when asked to (`agentkit.defs.register_runtime_hooks()`, or
loading an agent file through `agentkit.formats`), never as a side effect of an import; an
adapter whose sessions must be checked before they are resumed (a Markdown definition that
changed since) registers a check for the session metadata key it writes. The core names no
adapter: it looks here.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agentkit.engine._turns import TurnOutcome, TurnRequest
    from agentkit.spec import AgentSpec

__all__ = [
    "Driver",
    "SessionCheck",
    "register_driver",
    "register_session_check",
    "registered_driver",
    "session_checks",
]

Driver = Callable[["TurnRequest"], Awaitable["TurnOutcome"]]
"""Runs the middle of a turn for one `AgentSpec.runtime` (content events and an outcome)."""

SessionCheck = Callable[[Any, "AgentSpec"], None]
"""`(recorded value, spec)`: raises when a session may not be resumed with `spec`."""

_drivers: dict[str, Driver] = {}
_session_checks: dict[str, SessionCheck] = {}


def register_driver(runtime: str, driver: Driver) -> None:
    """Run specs whose `runtime` is `runtime` with `driver`, in every `Runtime` (a runtime's
    own `drivers=` argument takes precedence)."""
    _drivers[runtime] = driver


def registered_driver(runtime: str) -> Driver | None:
    """The driver registered for `runtime`, if any."""
    return _drivers.get(runtime)


def register_session_check(key: str, check: SessionCheck) -> None:
    """Sessions started with a spec whose `metadata` has `key` record its value; resuming
    such a session first calls `check(recorded value, spec)`, which raises to refuse."""
    _session_checks[key] = check


def session_checks() -> dict[str, SessionCheck]:
    """The registered checks by metadata key."""
    return _session_checks
