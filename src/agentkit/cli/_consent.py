"""How `agentkit run` answers a run's requests to a person (see docs/human-in-the-loop.md).

A run whose call needs consent waits for a person. `agentkit run` is that person's only
way in while it runs; when nobody can be asked (standard input is not a terminal), a run
must not wait forever: such calls are denied, and questions refused, with a message that
says how to allow them. On an interactive terminal the person there is asked
(`ask_on_terminal`): allow, deny, or always (the same call again in this command runs
without asking), and a questionnaire's questions one by one.
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
    """The handler that asks the person at the terminal (allow / deny / always): the
    question on standard error, the answer a line of standard input. "always" allows the
    same call (tool and input) again in this command without asking."""
    import json

    from agentkit.cli._ask import ask_permission

    always: set[str] = set()

    async def decide(request: PermissionRequest) -> Allow | Deny | Ask:
        key = json.dumps([request.tool, request.input], sort_keys=True, default=str)
        if key in always:
            return Allow()
        allow, remember, message = await ask_permission(_terminal_line, request.tool, request.input)
        if not allow:
            return Deny(message or "denied by the user")
        if remember:
            always.add(key)
        return Allow()

    return decide


async def _terminal_line(prompt: str) -> str | None:
    """`prompt` on standard error, then a line of standard input (`None` at its end)."""
    import anyio

    print(prompt, end="", file=sys.stderr, flush=True)
    line = await anyio.to_thread.run_sync(sys.stdin.readline, abandon_on_cancel=True)
    return line or None


async def _terminal_answers(questions: list[dict[str, Any]], ctx: ToolContext) -> Any:
    """A questionnaire answered at the terminal."""
    from agentkit.cli._ask import ask_answers

    def say(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    answers = await ask_answers(_terminal_line, questions, say)
    if answers is None:
        raise ToolError("the user did not answer (the input ended)")
    return answers


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
        service = _terminal_answers if terminal is not None else questionnaire
        runtime.services = {**runtime.services, "questionnaire": service}
