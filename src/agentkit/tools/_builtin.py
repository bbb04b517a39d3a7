"""The built-in tools, each registered under both vocabularies."""

from __future__ import annotations

import sys
from dataclasses import replace
from typing import Literal

from agentkit.tools._base import Tool, ToolRegistry
from agentkit.tools._fetch import fetch_tool
from agentkit.tools._files import (
    edit_tool,
    glob_tool,
    grep_tool,
    list_dir_tool,
    read_tool,
    write_tool,
)
from agentkit.tools._host import agent_tool, agents_tool, questionnaire_tool
from agentkit.tools._search import get_search_content_tool, web_search_tool
from agentkit.tools._shell import (
    ProcessTable,
    bash_tool,
    powershell_available,
    powershell_tool,
    process_tool,
)

__all__ = [
    "CLAUDE_TOOL_NAMES",
    "EXTENSION_CAPABILITIES",
    "RHO_CAPABILITIES",
    "Vocabulary",
    "builtin_tools",
]

Vocabulary = Literal["claude", "rho"]

CLAUDE_TOOL_NAMES: tuple[str, ...] = (
    "Read",
    "Write",
    "Edit",
    "Glob",
    "Grep",
    "LS",
    "Bash",
    "WebFetch",
    "WebSearch",
    "AskUserQuestion",
)
"""Built-in tools under their Claude names."""

RHO_CAPABILITIES: tuple[str, ...] = (
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
)
"""The built-in Rho capability names (defs-markdown-agents.md, "Tool vocabulary by runtime")."""

EXTENSION_CAPABILITIES: tuple[str, ...] = ("skill", "rho")
"""Rho capabilities agentkit does not implement: a host registers a Tool under the name."""


def builtin_tools(
    vocabulary: Vocabulary | None = None,
    *,
    processes: ProcessTable | None = None,
) -> ToolRegistry:
    """A registry of every built-in tool.

    Args:
        vocabulary: `None` registers every tool under all its names; `"claude"` only under
            Claude names, `"rho"` only under Rho capability names (a Rho agent's `Read`
            then finds nothing, as the spec's vocabulary rule wants).
        processes: Where the `process` tool keeps background processes; pass your own to
            stop them (`await processes.stop_all()`) when the runtime closes.

    `shell` resolves to the platform shell: `bash` on POSIX, `powershell` on Windows.
    `powershell` is registered only where a PowerShell executable exists.
    """
    windows = sys.platform == "win32"
    tools: list[Tool] = [
        read_tool(),
        write_tool(),
        edit_tool(),
        glob_tool(),
        grep_tool(),
        list_dir_tool(),
        bash_tool(shell_alias=not windows),
        process_tool(processes),
        fetch_tool(),
        web_search_tool(),
        get_search_content_tool(),
        questionnaire_tool(),
        agents_tool(),
        agent_tool(),
    ]
    if powershell_available():
        tools.append(powershell_tool(shell_alias=windows))
    registry = ToolRegistry()
    for tool in tools:
        names = [n for n in (tool.name, *tool.aliases) if _in_vocabulary(n, vocabulary)]
        if names:
            registry.add(replace(tool, name=names[0], aliases=tuple(names[1:])))
    return registry


def _in_vocabulary(name: str, vocabulary: Vocabulary | None) -> bool:
    if vocabulary is None:
        return True
    if vocabulary == "rho":
        return name in RHO_CAPABILITIES
    return name in CLAUDE_TOOL_NAMES
