"""The parsed form of an agent definition and the errors of parsing and binding."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, TypeAlias

from agentkit.errors import BindError, DefinitionError
from agentkit.tools import RHO_CAPABILITIES as _RHO_CAPABILITY_NAMES

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

RHO_CAPABILITIES: frozenset[str] = frozenset(_RHO_CAPABILITY_NAMES)
"""The built-in Rho capability names. Other lower-case names are extension capabilities."""

RHO_NAME = re.compile(r"^[a-z][a-z0-9_-]*$")
"""The shape of a Rho capability name (built-in or extension)."""

RHO_REASONING: tuple[Reasoning, ...] = ("off", "minimal", "low", "medium", "high", "xhigh", "max")
CLAUDE_REASONING: tuple[Reasoning, ...] = ("low", "medium", "high", "xhigh", "max")


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
