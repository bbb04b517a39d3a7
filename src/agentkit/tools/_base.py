"""What a tool is, what it is given when it runs, and how tools are looked up by name."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar

from agentkit.errors import ToolError
from agentkit.permissions import Effect

if TYPE_CHECKING:
    from agentkit.spec import AgentSpec
    from agentkit.tools._function import FunctionTool

P = ParamSpec("P")
R = TypeVar("R")

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

    @staticmethod
    def from_function(
        fn: Callable[P, R],
        /,
        *,
        name: str | None = None,
        description: str | None = None,
        effect: Effect = "read",
        timeout: float | None = 120.0,
        aliases: Sequence[str] = (),
        matches: SpecifierMatcher | None = None,
    ) -> FunctionTool[P, R]:
        """The tool of a Python function, sync or async (what `@tool` makes).

        - `name`: the function's name unless given.
        - `description`: the docstring's text before its first section unless given; each
          argument's description comes from the docstring's `Args:` section (Google
          style), its `:param name:` fields (reST) or its `Parameters` section (numpy).
        - `input_schema`: the JSON Schema pydantic makes of the parameters' type hints
          (a parameter without a default is required; `Annotated[int, Field(ge=0)]`,
          `Literal`, pydantic models, dataclasses and `TypedDict`s all work; nested types
          go to `$defs`).
        - A first parameter annotated `ToolContext` gets the call's context and is not
          shown to the model. `*args` and `**kwargs` are not allowed.

        Each call's arguments are validated and converted by pydantic (a model argument
        arrives as an instance); what fails reaches the model as a tool error naming the
        field, as does anything the function raises (`TypeName: message`; raise
        `ToolError` to choose the message). A coroutine function is awaited; a plain one
        runs in a worker thread, so it does not block the runs around it. At `timeout` the
        call ends with a tool error and the run goes on (a thread cannot be stopped: it
        finishes alone and its result is dropped). The return value is the tool's output:
        a string as is, anything else as pydantic encodes it to JSON (models, dataclasses,
        dicts, lists, dates).

        `effect`, `timeout`, `aliases` and `matches` mean what they mean on `Tool`. The
        result is a [`FunctionTool`][agentkit.tools.FunctionTool], still callable as `fn`.
        """
        from agentkit.tools._function import function_tool

        return function_tool(
            fn,
            name=name,
            description=description,
            effect=effect,
            timeout=timeout,
            aliases=aliases,
            matches=matches,
        )


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

    def update(self, other: ToolRegistry) -> None:
        """Register every name of `other` for the same tool (replacing tools here)."""
        self._by_name.update(other._by_name)
        self._version += 1

    def __contains__(self, name: object) -> bool:
        return name in self._by_name

    def copy(self) -> ToolRegistry:
        """An independent copy (adding to it leaves this one unchanged)."""
        new = ToolRegistry()
        new._by_name = dict(self._by_name)
        new._version = self._version
        return new
