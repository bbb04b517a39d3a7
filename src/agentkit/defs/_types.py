"""The parsed form of an agent definition and the errors of parsing and binding."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, TypeAlias

from agentkit.diagnostics import LoadError

__all__ = [
    "CLAUDE_REASONING",
    "RHO_CAPABILITIES",
    "RHO_REASONING",
    "BindError",
    "Definition",
    "DefinitionError",
    "DefinitionModelPolicy",
    "PromptMode",
    "Reasoning",
    "RuntimeName",
]

RuntimeName: TypeAlias = Literal["rho", "claude-cli"]
PromptMode: TypeAlias = Literal["extend", "replace"]
DefinitionModelPolicy: TypeAlias = Literal["inherit", "prefer", "require", "select"]
Reasoning: TypeAlias = Literal["off", "minimal", "low", "medium", "high", "xhigh", "max"]

RHO_CAPABILITIES: frozenset[str] = frozenset(
    {
        "agent",
        "agents",
        "bash",
        "edit",
        "fetch_content",
        "get_search_content",
        "glob",
        "grep",
        "list_dir",
        "powershell",
        "process",
        "questionnaire",
        "read_file",
        "rho",
        "shell",
        "skill",
        "web_search",
        "write",
    }
)
"""The built-in Rho capability names. Other lower-case names are extension capabilities."""

RHO_NAME = re.compile(r"^[a-z][a-z0-9_-]*$")
"""The shape of a Rho capability name (built-in or extension)."""

RHO_REASONING: tuple[Reasoning, ...] = ("off", "minimal", "low", "medium", "high", "xhigh", "max")
CLAUDE_REASONING: tuple[Reasoning, ...] = ("low", "medium", "high", "xhigh", "max")


class DefinitionError(LoadError):
    """A definition file (or several) is invalid; `diagnostics` lists every problem with its
    file, line, column and field."""


class BindError(ValueError):
    """A valid definition cannot run on this host (a capability it lists is not supplied, an
    `@alias` is unknown, ...). `problems` lists every reason."""

    def __init__(self, definition_id: str, problems: list[str]) -> None:
        self.definition_id = definition_id
        self.problems = problems
        super().__init__(f"cannot bind agent {definition_id!r}: " + "; ".join(problems))


@dataclass(frozen=True)
class Definition:
    """One agent definition, validated, with every default applied.

    Attributes:
        id: The agent id (the file stem when the frontmatter gives none).
        description: What the agent does, trimmed.
        runtime: `rho` (agentkit's engine) or `claude-cli` (the `claude` command line).
        prompt_mode: `extend` appends the body to the base prompt; `replace` uses the body.
        body: The Markdown body, trimmed (line endings normalised to `\\n`).
        model_policy: The resolved policy: `inherit`, `prefer`, `require` or `select`.
        model: The pinned model (may be `@alias` under `rho`), or `None`.
        provider: The pinned provider (`rho` only), or `None`.
        auth: The auth profile id (`rho` only), or `None`.
        reasoning: The reasoning effort, or `None` to inherit.
        tools: `"all"` or the allowlist entries in file order.
        inherit_claude_config: Whether `claude` may read the user's own settings and MCP
            configuration.
        source: The file the definition was read from, if any.
    """

    id: str
    description: str
    runtime: RuntimeName = "rho"
    prompt_mode: PromptMode = "extend"
    body: str = ""
    model_policy: DefinitionModelPolicy = "inherit"
    model: str | None = None
    provider: str | None = None
    auth: str | None = None
    reasoning: Reasoning | None = None
    tools: Literal["all"] | tuple[str, ...] = "all"
    inherit_claude_config: bool = False
    source: Path | None = None
