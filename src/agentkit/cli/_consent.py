"""How `agentkit run` answers a run's requests to a person (see docs/human-in-the-loop.md).

A run whose call needs consent waits for a person. `agentkit run` is that person's only
way in while it runs; when nobody can be asked (standard input is not a terminal), a run
must not wait forever: such calls are denied, and questions refused, with a message that
says how to allow them. Asking on an interactive terminal is `ask_on_terminal`: it is not
there yet, so a terminal is treated like no terminal for now.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

from agentkit.permissions import Allow, Ask, Deny, PermissionHandler, PermissionRequest
from agentkit.tools import ToolContext, ToolError

if TYPE_CHECKING:
    from agentkit.runtime import Runtime

__all__ = ["PERMISSION_MODES", "ask_on_terminal", "attach_consent", "nobody_to_ask"]

PERMISSION_MODES = ("default", "acceptEdits", "bypassPermissions")


def nobody_to_ask(tool: str) -> str:
    """What the model is told for a call no one can consent to."""
    return (
        f"{tool} needs permission; run interactively or use --permission-mode "
        "acceptEdits (edits) or --permission-mode bypassPermissions (everything)"
    )


def ask_on_terminal() -> PermissionHandler | None:
    """The handler that asks the person at the terminal (allow / deny / always), when
    standard input is one. Not there yet: `None`, and such calls are denied like when
    nobody is at a terminal. (The run's `permission_request` events are what it answers,
    through `Runtime.decide`.)"""
    return None


def attach_consent(runtime: Runtime) -> None:
    """Make `runtime`'s runs never wait on nobody: the host's own handler decides first;
    what it leaves to a person (or every call, without one) goes to the terminal when
    someone can be asked there, else is denied with `nobody_to_ask`. The `questionnaire`
    tool, without a host service, fails the same way."""
    own = runtime.permission_handler
    terminal = ask_on_terminal() if sys.stdin is not None and sys.stdin.isatty() else None

    async def decide(request: PermissionRequest) -> Allow | Deny | Ask:
        if own is not None:
            decision = await own(request)
            if not isinstance(decision, Ask):
                return decision
        if terminal is not None:
            return await terminal(request)
        return Deny(nobody_to_ask(request.tool))

    async def questionnaire(questions: list[dict[str, Any]], ctx: ToolContext) -> Any:
        raise ToolError(
            "these questions need a person to answer them, and nobody can be asked here: "
            "run interactively"
        )

    runtime.permission_handler = decide
    if "questionnaire" not in runtime.services:
        runtime.services = {**runtime.services, "questionnaire": questionnaire}
