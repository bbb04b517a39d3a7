"""What the human-in-the-loop tests share with the processes they start: an agent that
may call `Bash` (a fake that runs nothing) under the `default` permission mode."""

from __future__ import annotations

from typing import Any

from agentkit import AgentSpec, Tool
from agentkit.testing import ScriptedProvider

SPEC = AgentSpec(
    id="demo:hitl", tools=("Bash", "Read", "questionnaire"), system_prompt="Be careful."
)
"""An agent whose `Bash` calls need a person's consent (`default` mode)."""

RAN: list[str] = []
"""The commands the fake `Bash` ran in this process."""


async def _bash(args: dict[str, Any], ctx: Any) -> str:
    RAN.append(args["command"])
    return f"ran {args['command']}"


async def _read(args: dict[str, Any], ctx: Any) -> str:
    return f"read {args['file_path']}"


def _matches(specifier: str, args: dict[str, Any], ctx: Any) -> bool:
    return bool(specifier == args.get("command"))


def tools() -> list[Tool]:
    """A fake `Bash` (effect `execute`, `Bash(command)` rules) and `Read`."""
    from agentkit.tools import questionnaire_tool

    command = {"type": "object", "properties": {"command": {"type": "string"}}}
    path = {"type": "object", "properties": {"file_path": {"type": "string"}}}
    return [
        Tool(
            "Bash",
            "Run a command.",
            {**command, "required": ["command"]},
            _bash,
            effect="execute",
            matches=_matches,
        ),
        Tool("Read", "Read a file.", {**path, "required": ["file_path"]}, _read),
        questionnaire_tool(),
    ]


def bash(*commands: str) -> dict[str, Any]:
    """A model reply calling `Bash` once per command."""
    return {"tool_calls": [{"name": "Bash", "input": {"command": c}} for c in commands]}


def provider(*replies: Any) -> ScriptedProvider:
    """A model that gives `replies` in order."""
    return ScriptedProvider(list(replies))
