"""Permission modes and the host's permission handler.

The allowlists decide *which* tools and actions an agent may call at all; the permission
mode decides which of those calls need the host's consent:

| mode | `read` calls | `edit` calls | `execute` calls |
| --- | --- | --- | --- |
| `bypassPermissions` | allowed | allowed | allowed |
| `acceptEdits` | allowed | allowed | asked |
| `default` | allowed | asked | asked |

An *asked* call is first checked against the allow rules remembered in the session (a
person's "always allow"); then the host's handler decides, when there is one: `Allow()`,
`Deny("why")`, or `Ask()` to put it to a person. With no handler (or `Ask()`), the run
records a `permission_request` event and waits, with status `waiting`, holding no task,
until someone decides it through any runtime sharing the store (`Run.decide`,
`Runtime.decide`), or its deadline (`Runtime(request_timeout=...)`) ends it as denied: see
docs/human-in-the-loop.md. A denial never ends the run: the model gets the tool error
`permission denied: <message>`, and it is counted in the result's accounting.
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
    "Ask",
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


@dataclass(frozen=True)
class Ask:
    """Put the call to a person: the run records a `permission_request` and waits for a
    decision (see docs/human-in-the-loop.md).

    Returned by a permission handler for the calls it leaves to a person. A `questionnaire`
    service returns `Ask()` for the questions it cannot answer itself; a tool may return
    `Ask(questions=[...])` to put those questions to a person, and gets the answers as its
    result.
    """

    questions: tuple[dict[str, Any], ...] | None = None


PermissionDecision = Allow | Deny | Ask
PermissionHandler = Callable[[PermissionRequest], Awaitable[PermissionDecision]]
"""`async def handler(request) -> Allow() | Deny("why") | Ask()`."""


def needs_permission(mode: PermissionMode, effect: Effect) -> bool:
    """Whether a call with `effect` must be put to the permission handler under `mode`."""
    if effect == "read" or mode == "bypassPermissions":
        return False
    if mode == "acceptEdits":
        return effect == "execute"
    return True
