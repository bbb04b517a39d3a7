"""Permission modes and the host's permission handler.

The allowlists decide *which* tools and actions an agent may call at all; the permission
mode decides which of those calls need the host's consent:

| mode | `read` calls | `edit` calls | `execute` calls |
| --- | --- | --- | --- |
| `bypassPermissions` | allowed | allowed | allowed |
| `acceptEdits` | allowed | allowed | handler decides |
| `default` | allowed | handler decides | handler decides |

With no handler, a call that needs consent is refused with a tool error the model sees.
A refusal never ends the run; it is counted in the result's accounting.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agentkit.spec import Effect, PermissionMode

if TYPE_CHECKING:
    from agentkit.actions import ToolContext

__all__ = [
    "Allow",
    "Deny",
    "Effect",
    "PermissionDecision",
    "PermissionHandler",
    "PermissionRequest",
    "needs_permission",
]


@dataclass(frozen=True)
class PermissionRequest:
    """A call that needs the host's consent."""

    tool: str
    input: dict[str, Any]
    effect: Effect
    context: ToolContext


@dataclass(frozen=True)
class Allow:
    """Let the call run, optionally with changed input."""

    updated_input: dict[str, Any] | None = None


@dataclass(frozen=True)
class Deny:
    """Refuse the call; `message` is what the model is told."""

    message: str = "the host denied this call"


PermissionDecision = Allow | Deny
PermissionHandler = Callable[[PermissionRequest], Awaitable[PermissionDecision]]
"""`async def handler(request) -> Allow() | Deny("why")`."""


def needs_permission(mode: PermissionMode, effect: Effect) -> bool:
    """Whether a call with `effect` must be put to the permission handler under `mode`."""
    if effect == "read" or mode == "bypassPermissions":
        return False
    if mode == "acceptEdits":
        return effect == "execute"
    return True
