"""Binding: turning a parsed definition into an `AgentSpec` for one host.

Parsing checks a definition on its own; binding checks it against what a host offers:
its capabilities, its platform shell, its models, and whether the agent runs delegated.
`rho` definitions become `runtime="engine"` specs; `claude-cli` ones become
`runtime="claude-cli"` specs whose command line `claude_cli_args` computes.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from agentkit.defs._auth import AuthRegistry
from agentkit.defs._fingerprint import canonical_fields, fingerprint
from agentkit.defs._models import HostModel, ModelAvailable, resolve_model
from agentkit.defs._prompt import system_prompt
from agentkit.defs._types import RHO_CAPABILITIES, RHO_NAME, BindError, Definition
from agentkit.spec import AgentSpec, PermissionMode
from agentkit.tools import parse_tool_entry

__all__ = [
    "CLAUDE_DISALLOWED",
    "DELEGATION_CAPABILITIES",
    "HostCapabilities",
    "bind",
    "claude_cli_args",
    "platform_shell",
]

Shell = Literal["bash", "powershell"]

DELEGATION_CAPABILITIES = frozenset({"agent", "agents"})
"""Capabilities a delegated agent never receives, even when listed."""

CLAUDE_DISALLOWED: tuple[str, ...] = ("Task", "Agent")
"""Claude tools always passed to `--disallowedTools`: the nested-agent tool (`Task`, named
`Agent` in newer Claude Code releases)."""


def platform_shell() -> Shell:
    """`powershell` on Windows, `bash` elsewhere."""
    return "powershell" if sys.platform == "win32" else "bash"


@dataclass(frozen=True)
class HostCapabilities:
    """What a host offers `rho` definitions.

    Attributes:
        names: The capability names the host supplies (built-in Rho names such as
            `read_file`, and any extension capabilities).
        shell: The platform shell `shell` resolves to.
    """

    names: frozenset[str] = field(default_factory=frozenset)
    shell: Shell = field(default_factory=platform_shell)

    @classmethod
    def of(cls, names: Iterable[str], *, shell: Shell | None = None) -> HostCapabilities:
        """Capabilities from any iterable of names."""
        return cls(frozenset(names), shell or platform_shell())


def bind(
    definition: Definition,
    host: HostCapabilities | None = None,
    *,
    delegated: bool = False,
    host_model: HostModel | None = None,
    aliases: Mapping[str, HostModel | str] | None = None,
    auth_profiles: AuthRegistry | None = None,
    available: ModelAvailable | None = None,
    base_prompt: str | None = None,
    permission_mode: PermissionMode = "default",
    max_turns: int | None = None,
) -> AgentSpec:
    """Bind `definition` to a host and return the `AgentSpec` the runtime runs.

    Args:
        definition: A parsed definition.
        host: The host's capabilities (`rho` only; `None` means none).
        delegated: Whether the agent runs as a delegate of another agent; it then never
            receives `agent` / `agents`.
        host_model: The host's current model selection (what `inherit` keeps).
        aliases: The host's `@alias` table (see `resolve_model`).
        auth_profiles: Known auth profiles.
        available: Whether a pinned model can run now (see `resolve_model`).
        base_prompt: Replaces the shipped base coding prompt that `extend` appends to.
        permission_mode: The spec's permission mode.
        max_turns: The spec's turn cap.

    Raises:
        BindError: listing every capability the host does not supply, or a model problem.

    ```python
    from agentkit.defs import HostCapabilities, bind, parse_definition

    text = "---\\ndescription: d\\ntools: [read_file, list_dir, bash]\\n---\\n"
    definition = parse_definition(text, path="security-review.md")
    host = HostCapabilities.of(["read_file", "list_dir", "bash", "grep"], shell="bash")
    spec = bind(definition, host)
    assert spec.runtime == "engine"
    assert spec.tools == ("bash", "list_dir", "read_file")
    ```
    """
    metadata: dict[str, Any] = {
        "definition": {
            "source": str(definition.source) if definition.source else None,
            "fingerprint": fingerprint(definition),
            "fields": canonical_fields(definition),
        }
    }
    model = resolve_model(
        definition,
        host_model,
        aliases=aliases,
        auth_profiles=auth_profiles,
        available=available,
    )
    if definition.runtime == "claude-cli":
        tools = () if definition.tools == "all" else definition.tools
        metadata["claudeCli"] = {
            "promptMode": definition.prompt_mode,
            "inheritClaudeConfig": definition.inherit_claude_config,
        }
        return AgentSpec(
            id=definition.id,
            description=definition.description,
            system_prompt=definition.body,
            model=model,
            reasoning_effort=definition.reasoning,
            tools=tools,
            permission_mode=permission_mode,
            max_turns=max_turns,
            runtime="claude-cli",
            metadata=metadata,
        )
    return AgentSpec(
        id=definition.id,
        description=definition.description,
        system_prompt=system_prompt(definition, base_prompt),
        model=model,
        reasoning_effort=definition.reasoning,
        tools=_bind_rho_tools(definition, host or HostCapabilities(), delegated),
        permission_mode=permission_mode,
        max_turns=max_turns,
        runtime="engine",
        metadata=metadata,
    )


def _bind_rho_tools(
    definition: Definition, host: HostCapabilities, delegated: bool
) -> tuple[str, ...]:
    offered = set(host.names)
    selected: set[str] = set()
    problems: list[str] = []
    if definition.tools == "all":
        # Only Rho capability names: a host registry may also hold Claude-style aliases.
        selected = {n for n in offered if RHO_NAME.match(n)} - {"shell"}
        if "shell" in offered:
            selected.add(host.shell)
    else:
        for name in definition.tools:
            if delegated and name in DELEGATION_CAPABILITIES:
                continue
            if name == "shell":
                if host.shell in offered:
                    selected.add(host.shell)
                else:
                    problems.append(
                        f"shell resolves to {host.shell!r}, which this host does not supply"
                    )
            elif name in offered:
                selected.add(name)
            elif name in RHO_CAPABILITIES:
                problems.append(f"capability {name!r} is not available on this host")
            else:
                problems.append(f"extension capability {name!r} is not supplied by this host")
    if problems:
        raise BindError(definition.id, problems)
    if delegated:
        selected -= DELEGATION_CAPABILITIES
    return tuple(sorted(selected))


def claude_cli_args(
    spec: AgentSpec,
    *,
    include_partial_messages: bool = False,
    resume: str | None = None,
) -> list[str]:
    """The `claude` arguments (executable and prompt excluded) for a `claude-cli` spec.

    The prompt is written to standard input. Flags:

    - `-p --output-format stream-json --verbose` (stream-JSON needs `--verbose` with `-p`);
    - `--tools` with the base names of the entries (`""` for no tools; MCP tools `mcp__...`
      are not built-in tools and only go to `--allowedTools`), `--allowedTools` with the
      full entries, `--disallowedTools Task,Agent` always (no nested agents);
    - `--model=`, `--effort`, `--permission-mode` (unless `default`), `--max-turns`;
    - `--append-system-prompt=<body>` for `extend` (Claude Code's own prompt is the base),
      `--system-prompt=<body>` for `replace`;
    - unless the definition sets `inherit_claude_config: true`: `--setting-sources ""` (no
      user, project or local settings) and `--strict-mcp-config` (no MCP servers from the
      user's configuration);
    - `--include-partial-messages` when asked, `--resume=<claude session id>` to continue.

    ```python
    from agentkit.defs import bind, claude_cli_args, parse_definition

    text = "---\\ndescription: d\\nruntime: claude-cli\\ntools: [Read, Edit, 'Bash(git *)']\\n---"
    spec = bind(parse_definition(text, path="claude-planner.md"))
    args = claude_cli_args(spec)
    assert args[args.index("--tools") + 1] == "Read,Edit,Bash"
    assert args[args.index("--allowedTools") + 1] == "Read,Edit,Bash(git *)"
    assert "--strict-mcp-config" in args
    ```
    """
    options = spec.metadata.get("claudeCli", {})
    prompt_mode = options.get("promptMode", "extend")
    inherit = bool(options.get("inheritClaudeConfig", False))
    entries = [e for e in spec.tools if parse_tool_entry(e)[0] not in CLAUDE_DISALLOWED]
    bases: list[str] = []
    for entry in entries:
        base = parse_tool_entry(entry)[0]
        if base not in bases and not base.startswith("mcp__"):
            bases.append(base)
    args = ["-p", "--output-format", "stream-json", "--verbose"]
    if include_partial_messages:
        args.append("--include-partial-messages")
    args += ["--tools", ",".join(bases)]
    if entries:
        args += ["--allowedTools", ",".join(entries)]
    args += ["--disallowedTools", ",".join(CLAUDE_DISALLOWED)]
    if spec.model.model is not None:
        args.append(f"--model={spec.model.model}")
    if spec.reasoning_effort is not None:
        args += ["--effort", spec.reasoning_effort]
    if spec.permission_mode != "default":
        args += ["--permission-mode", spec.permission_mode]
    if spec.max_turns is not None:
        args += ["--max-turns", str(spec.max_turns)]
    if prompt_mode == "replace":
        args.append(f"--system-prompt={spec.system_prompt}")
    elif spec.system_prompt:
        args.append(f"--append-system-prompt={spec.system_prompt}")
    if not inherit:
        args += ["--setting-sources", "", "--strict-mcp-config"]
    if resume:
        args.append(f"--resume={resume}")
    return args
