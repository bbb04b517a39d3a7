"""What a tool is, what it is given when it runs, and how tools are looked up by name."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentkit.errors import ToolError
from agentkit.permissions import Effect

if TYPE_CHECKING:
    from agentkit.spec import AgentSpec

__all__ = [
    "Effect",
    "Tool",
    "ToolContext",
    "ToolError",
    "ToolFunction",
    "ToolRegistry",
    "parse_tool_entry",
]



@dataclass(frozen=True)
class ToolContext:
    """What a running tool may use.

    Attributes:
        working_dir: The run's working directory; file tools stay inside it.
        run_id: The run this call belongs to.
        session_id: The session of the run.
        agent_id: Canonical id of the calling agent.
        spec: The calling agent.
        services: Host-supplied services by name (for example a `questionnaire` callback or
            a `web_search` backend), so tools need no globals.
        runtime: The runtime running the call (for sub-agents); `None` outside one.
        depth: How deeply the calling agent is nested in sub-agent calls (0 at the top).
    """

    working_dir: Path
    run_id: str
    session_id: str
    agent_id: str
    spec: AgentSpec | None = None
    services: Mapping[str, Any] = field(default_factory=dict)
    runtime: Any = None
    depth: int = 0


ToolFunction = Callable[[dict[str, Any], ToolContext], Awaitable[Any]]
"""`async def tool(arguments, context) -> output`: a string, or anything JSON can encode."""

SpecifierMatcher = Callable[[str, dict[str, Any], ToolContext], bool]


@dataclass(frozen=True)
class Tool:
    """A callable capability offered to the model.

    Attributes:
        name: The name the model calls.
        description: What the model is told the tool does.
        input_schema: JSON Schema of the arguments; they are validated before `function`.
        function: The implementation.
        effect: `read`, `edit` (changes files) or `execute` (runs commands); permission modes
            decide by it.
        timeout: Seconds before the call is cancelled and the model gets a tool error;
            `None` for no limit. A call still busy a second later (in a shielded
            section, or waiting on a worker thread, which cannot be interrupted) is
            abandoned: the run goes on and the call's result is dropped.
        aliases: Other names for the same capability (the other vocabulary).
        matches: Decides whether a call fits a permission specifier, the `git *` of
            `Bash(git *)`. Tools without it accept no specifier.
    """

    name: str
    description: str
    input_schema: dict[str, Any]
    function: ToolFunction
    effect: Effect = "read"
    timeout: float | None = 120.0
    aliases: tuple[str, ...] = ()
    matches: SpecifierMatcher | None = None


def object_schema(properties: dict[str, Any], *required: str) -> dict[str, Any]:
    """The JSON Schema of a tool's arguments: an object with only `properties`.

    `required` names the properties a call must give; any other key is refused.
    """
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        schema["required"] = list(required)
    schema["additionalProperties"] = False
    return schema


def parse_tool_entry(entry: str) -> tuple[str, str | None]:
    """Split an allowlist entry `Name(specifier)` into `("Name", "specifier")`."""
    if entry.endswith(")") and "(" in entry:
        name, _, rest = entry.partition("(")
        return name, rest[:-1]
    return entry, None


class ToolRegistry:
    """Tools by name, every alias included."""

    def __init__(self, tools: Iterable[Tool] = ()) -> None:
        self._by_name: dict[str, Tool] = {}
        self._version = 0  # counts changes, so what was derived from the registry can be kept
        for tool in tools:
            self.add(tool)

    def add(self, tool: Tool) -> None:
        """Register `tool` under its name and aliases (a later tool replaces an earlier one)."""
        for name in (tool.name, *tool.aliases):
            self._by_name[name] = tool
        self._version += 1

    def get(self, name: str) -> Tool | None:
        """The tool called `name`, if any."""
        return self._by_name.get(name)

    def names(self) -> list[str]:
        """Every registered name, aliases included."""
        return sorted(self._by_name)

    def __contains__(self, name: object) -> bool:
        return name in self._by_name

    def copy(self) -> ToolRegistry:
        """An independent copy (adding to it leaves this one unchanged)."""
        new = ToolRegistry()
        new._by_name = dict(self._by_name)
        new._version = self._version
        return new
