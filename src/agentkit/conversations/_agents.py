"""The machine's agents: the built-in `rool`, agents owners create, and configured ones.

A machine agent becomes an [`AgentSpec`][agentkit.spec.AgentSpec] when a run is accepted:
the built-in machine context, then the agent's instructions; the prompt's effort and
output schema go into that run's spec only. Configured agents (Markdown definitions, app
agents) are the specs their loaders produced, used as they are.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agentkit.conversations._errors import ConversationError
from agentkit.conversations._models import AgentDefinition, AgentInfo
from agentkit.spec import AgentSpec, ModelSelection, ReasoningEffort
from agentkit.stores import AgentRecord

__all__ = [
    "ROOL",
    "agent_info",
    "check_agent_name",
    "configured_info",
    "default_tools",
    "machine_context",
    "machine_spec",
    "run_spec",
    "with_machine_context",
]

ROOL = "rool"
"""The general agent every machine has; it cannot be replaced or deleted."""

_NAME = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")

_READ_ONLY_TOOLS = ("Read", "Glob", "Grep", "LS")


def check_agent_name(name: str) -> None:
    """Refuse a name that is not lowercase letters, digits and single hyphens."""
    if not isinstance(name, str) or not _NAME.match(name):
        raise ConversationError(
            f"agent name {name!r} must be lowercase letters, digits and single hyphens"
        )


def working_dir(roots: Sequence[Path]) -> Path:
    """The folder runs work in: the deepest folder holding every attachment root."""
    return Path(os.path.commonpath([str(root) for root in roots]))


def default_tools(roots: Sequence[Path]) -> tuple[str, ...]:
    """Read-only file tools, each limited to the attachment roots."""
    base = working_dir(roots)
    entries: list[str] = []
    for root in roots:
        relative = root.relative_to(base).as_posix()
        pattern = "**" if relative == "." else f"{relative}/**"
        entries.extend(f"{tool}({pattern})" for tool in _READ_ONLY_TOOLS)
    return tuple(dict.fromkeys(entries))


def machine_context(roots: Sequence[Path], tools: Sequence[str]) -> str:
    """The built-in context every machine agent's instructions are appended to."""
    shown_roots = ", ".join(f"`{root}`" for root in roots)
    shown_tools = ", ".join(f"`{tool}`" for tool in tools) or "none"
    return (
        "You are an agent on a machine, in a conversation with one of its members.\n"
        f"Files live under {shown_roots}; the user attaches files by their paths there. "
        f"Your working folder is `{working_dir(roots)}`: give tools paths under the roots.\n"
        f"Your tools: {shown_tools}."
    )


def machine_spec(definition: AgentDefinition, roots: Sequence[Path]) -> AgentSpec:
    """The spec of a machine agent (the built-in context, then its instructions)."""
    tools = definition.tools if definition.tools is not None else default_tools(roots)
    prompt = machine_context(roots, tools)
    if definition.instructions.strip():
        prompt = f"{prompt}\n\n{definition.instructions.strip()}"
    return AgentSpec(
        id=definition.name,
        description=definition.description,
        system_prompt=prompt,
        model=definition.model or ModelSelection.of_tier("medium"),
        reasoning_effort=definition.reasoning_effort,
        tools=tools,
        permission_mode=definition.permission_mode,
    )


MACHINE_CONTEXT_KEY = "machineContext"
"""The spec metadata key an agent sets to `False` to run without the machine context."""


def with_machine_context(spec: AgentSpec, roots: Sequence[Path]) -> AgentSpec:
    """A configured agent (a definition file, an app agent, an `AgentSpec`) with the
    built-in machine context before its own system prompt, as every machine agent has it;
    as it is when its metadata says `"machineContext": false`."""
    if spec.metadata.get(MACHINE_CONTEXT_KEY) is False:
        return spec
    context = machine_context(roots, spec.tools)
    prompt = f"{context}\n\n{spec.system_prompt}" if spec.system_prompt.strip() else context
    return spec.model_copy(update={"system_prompt": prompt})


def fingerprint_of(spec: AgentSpec) -> str | None:
    """The v2 fingerprint of the definition file a spec was bound from, if it was."""
    record = spec.metadata.get("definition")
    value = record.get("fingerprint") if isinstance(record, dict) else None
    return value if isinstance(value, str) else None


def run_spec(
    spec: AgentSpec,
    effort: ReasoningEffort | None,
    output_schema: dict[str, Any] | None,
) -> AgentSpec:
    """The spec one run uses: the agent as it is now, with the prompt's options."""
    update: dict[str, Any] = {}
    if effort is not None:
        update["reasoning_effort"] = effort
    if output_schema is not None:
        # Built through the validating constructor: a bad schema is the caller's error.
        update["output_schema"] = output_schema
    if not update:
        return spec
    return AgentSpec(**{**spec.model_dump(), **update})


def agent_info(
    record: AgentRecord,
    definition: AgentDefinition,
    roots: Sequence[Path],
    source: Any,
    updated_at: float | None,
) -> AgentInfo:
    tools = definition.tools if definition.tools is not None else default_tools(roots)
    return AgentInfo(
        id=record.id,
        name=definition.name,
        version=record.version,
        description=definition.description,
        instructions=definition.instructions,
        tools=tools,
        source=source,
        updated_at=updated_at,
    )


def configured_info(record: AgentRecord, spec: AgentSpec) -> AgentInfo:
    return AgentInfo(
        id=record.id,
        name=spec.id,
        version=record.version,
        description=spec.description,
        tools=spec.tools,
        source="configured",
    )
