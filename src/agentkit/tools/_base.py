"""What a tool is, what it is given when it runs, and how tools are looked up by name."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, ParamSpec, TypeVar, overload

from agentkit.actions import ToolContext
from agentkit.errors import ToolError
from agentkit.spec import Effect

P = ParamSpec("P")
R = TypeVar("R")

__all__ = [
    "Effect",
    "FunctionTool",
    "Tool",
    "ToolContext",
    "ToolError",
    "ToolFunction",
    "ToolRegistry",
    "function_tool",
    "parse_tool_entry",
    "tool",
]



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

    @property
    def version(self) -> int:
        """How many changes the registry has had: what was worked out from it stays valid
        while this number stays the same."""
        return self._version

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


@dataclass(frozen=True)
class FunctionTool(Tool, Generic[P, R]):
    """A [`Tool`][agentkit.tools.Tool] made from a Python function by
    [`tool`][agentkit.tools.tool] or [`Tool.from_function`][agentkit.tools.Tool.from_function].

    It is a `Tool` in every way (hand it to a runtime, an agent or a registry) and stays
    callable as the function it was made from, so a unit test can call it directly.

    Attributes:
        wrapped: The original function.
    """

    wrapped: Callable[P, R] = field(kw_only=True)

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> R:
        return self.wrapped(*args, **kwargs)


@overload
def tool(fn: Callable[P, R], /) -> FunctionTool[P, R]: ...


@overload
def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    effect: Effect = "read",
    timeout: float | None = 120.0,
    aliases: Sequence[str] = (),
    matches: SpecifierMatcher | None = None,
) -> Callable[[Callable[P, R]], FunctionTool[P, R]]: ...


def tool(
    fn: Callable[P, R] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    effect: Effect = "read",
    timeout: float | None = 120.0,
    aliases: Sequence[str] = (),
    matches: SpecifierMatcher | None = None,
) -> FunctionTool[P, R] | Callable[[Callable[P, R]], FunctionTool[P, R]]:
    """Make a tool of a function: `@tool`, or `@tool(name=..., timeout=...)`.

    ```python
    from agentkit.tools import tool

    @tool
    def get_weather(city: str, unit: str = "celsius") -> str:
        '''The weather in a city now.

        Args:
            city: The city's name, as people write it.
            unit: `celsius` or `fahrenheit`.
        '''
        return f"18 degrees {unit} in {city}"

    assert get_weather.name == "get_weather"
    assert get_weather.input_schema["required"] == ["city"]
    assert get_weather("Paris") == "18 degrees celsius in Paris"  # still a function
    ```

    See [`Tool.from_function`][agentkit.tools.Tool.from_function] for what is read from
    the function and what the options mean.
    """

    def make(function: Callable[P, R]) -> FunctionTool[P, R]:
        return function_tool(
            function,
            name=name,
            description=description,
            effect=effect,
            timeout=timeout,
            aliases=aliases,
            matches=matches,
        )

    return make if fn is None else make(fn)


def function_tool(
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
    """The tool of `fn` (what `Tool.from_function` documents)."""
    if isinstance(fn, Tool):
        raise TypeError(f"{fn.name!r} is already a tool")
    if not callable(fn):
        raise TypeError(f"a tool is made from a function, not {type(fn).__name__}")
    tool_name = name or getattr(fn, "__name__", "")
    if not tool_name or tool_name == "<lambda>":
        raise TypeError(f"{fn!r} has no usable name: give the tool one with name=")
    # Imported here: pydantic's model machinery and anyio's threads are needed only by
    # tools made from functions, so importing the tools costs none of it.
    from agentkit.tools._signature import Signature, is_async, make_caller, parse_docstring

    coroutine = is_async(fn)
    if inspect.isasyncgenfunction(fn) or inspect.isgeneratorfunction(fn):
        raise TypeError(f"tool {tool_name!r}: a generator function cannot be a tool")
    summary, argument_docs = parse_docstring(inspect.getdoc(fn))
    signature = Signature.of(fn, tool_name, argument_docs)
    return FunctionTool(
        name=tool_name,
        description=summary if description is None else description,
        input_schema=signature.schema,
        function=make_caller(fn, tool_name, signature, coroutine),
        effect=effect,
        timeout=timeout,
        aliases=tuple(aliases),
        matches=matches,
        wrapped=fn,
    )
