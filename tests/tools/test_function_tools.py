"""Tools from Python functions (`@tool`, `Tool.from_function`), the runtime's tools (the
built-in ones plus what is added), and allowlist entries that name no tool."""

from __future__ import annotations

import dataclasses
import threading
import time
from pathlib import Path
from typing import Annotated, Any, Literal

import anyio
import pytest
from pydantic import AfterValidator, BaseModel, Field
from typing_extensions import TypedDict

from agentkit import AgentSpec, Runtime
from agentkit.errors import SpecError, ToolError, UnknownToolError
from agentkit.events import ToolResult
from agentkit.testing import ScriptedProvider
from agentkit.tools import FunctionTool, Tool, ToolContext, ToolRegistry, tool

pytestmark = pytest.mark.anyio

CONTEXT = ToolContext(working_dir=Path("."), run_id="r1", session_id="s1", agent_id="demo:a")


def call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"tool_calls": [{"name": name, "input": arguments}]}


async def tool_results(
    tools: list[Any],
    calls: list[dict[str, Any]],
    allow: tuple[str, ...] | None = None,
    **options: Any,
) -> tuple[list[ToolResult], Any]:
    """Run an agent allowed `allow` (by default every tool of `tools`) whose model makes
    `calls`, one per step, then answers "done"."""
    names = (
        allow
        if allow is not None
        else tuple(t.name if isinstance(t, Tool) else t.__name__ for t in tools)
    )
    spec = AgentSpec(id="demo:fn", tools=names, permission_mode="bypassPermissions")
    provider = ScriptedProvider([*calls, "done"])
    async with Runtime(provider=provider, tools=tools, **options) as runtime:
        run = await runtime.start(spec, "go")
        results = [e async for e in run.events() if isinstance(e, ToolResult)]
        outcome = await run.wait()
    return results, outcome


# --- schema and description ------------------------------------------------------------


class Place(BaseModel):
    """A place on the map."""

    name: str
    title: str = "town"  # a property called `title` is not schema noise


@dataclasses.dataclass
class Window:
    start: int
    end: int


class Options(TypedDict):
    verbose: bool


def forecast(
    context: ToolContext,
    city: str,
    days: int = 3,
    unit: Literal["celsius", "fahrenheit"] = "celsius",
    note: str | None = None,
    places: list[Place] | None = None,
    window: Window | None = None,
    limit: Annotated[int, Field(ge=1, description="At most this many.")] = 10,
) -> str:
    """Forecast the weather.

    Uses the best model there is.

    Args:
        city: The city's name.
        days (int): How many days,
            counting today.
        unit: The unit of temperatures.
        limit: Ignored: the annotation describes it.

    Returns:
        The forecast.
    """
    return f"{city} {days} {unit} {note} {places} {limit} {context.run_id}"


def test_the_schema_comes_from_the_hints_and_the_docstring() -> None:
    made = Tool.from_function(forecast)
    assert made.name == "forecast"
    assert made.description == "Forecast the weather.\n\nUses the best model there is."
    assert made.input_schema == {
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "city": {"type": "string", "description": "The city's name."},
            "days": {
                "type": "integer",
                "default": 3,
                "description": "How many days, counting today.",
            },
            "unit": {
                "type": "string",
                "enum": ["celsius", "fahrenheit"],
                "default": "celsius",
                "description": "The unit of temperatures.",
            },
            "note": {"type": ["string", "null"], "default": None},  # pydantic's anyOf, merged
            "places": {
                "type": ["array", "null"],
                "items": {"$ref": "#/$defs/Place"},
                "default": None,
            },
            "window": {"anyOf": [{"$ref": "#/$defs/Window"}, {"type": "null"}], "default": None},
            "limit": {
                "type": "integer",
                "minimum": 1,
                "default": 10,
                "description": "At most this many.",
            },
        },
        "required": ["city"],
        "$defs": {
            "Place": {
                "type": "object",
                "description": "A place on the map.",
                "properties": {
                    "name": {"type": "string"},
                    "title": {"type": "string", "default": "town"},
                },
                "required": ["name"],
            },
            "Window": {
                "type": "object",
                "properties": {"start": {"type": "integer"}, "end": {"type": "integer"}},
                "required": ["start", "end"],
                "additionalProperties": False,  # a dataclass takes the arguments' config
            },
        },
    }
    assert "context" not in made.input_schema["properties"]  # injected, never shown


def test_rest_and_numpy_docstrings_describe_arguments() -> None:
    def rest(a: int, b: str) -> None:
        """Do a thing.

        :param a: The a.
        :param str b: The b,
            on two lines.
        :returns: nothing.
        """

    def numpy(a: int, b: str) -> None:
        """Do another thing.

        Parameters
        ----------
        a : int
            The a.
        b : str
            The b.

        Returns
        -------
        None
        """

    for function, summary, b in [
        (rest, "Do a thing.", "The b, on two lines."),
        (numpy, "Do another thing.", "The b."),
    ]:
        made = Tool.from_function(function)
        assert made.description == summary
        assert made.input_schema["properties"]["a"]["description"] == "The a."
        assert made.input_schema["properties"]["b"]["description"] == b


def test_decorator_options_and_plain_use() -> None:
    @tool
    def plain(x: int) -> int:
        return x + 1

    @tool(
        name="renamed", description="Told to the model.", effect="edit", timeout=5, aliases=["rn"]
    )
    async def options(window: Window, flags: Options) -> None:
        """Not this."""

    assert isinstance(plain, FunctionTool) and isinstance(plain, Tool)
    assert plain.name == "plain" and plain.description == "" and plain.timeout == 120
    assert plain(1) == 2  # still the function
    assert (
        options.name,
        options.description,
        options.effect,
        options.timeout,
        options.aliases,
    ) == (
        "renamed",
        "Told to the model.",
        "edit",
        5,
        ("rn",),
    )
    schema = options.input_schema
    assert schema["properties"]["window"] == {"$ref": "#/$defs/Window"}
    assert schema["$defs"]["Window"]["required"] == ["start", "end"]
    assert schema["$defs"]["Options"]["properties"] == {"verbose": {"type": "boolean"}}
    assert "title" not in str(schema)


def test_what_cannot_be_a_tool_is_refused_where_it_is_made() -> None:
    def star(*args: int) -> None: ...

    def late(x: int, context: ToolContext) -> None: ...

    with pytest.raises(TypeError, match="args"):
        Tool.from_function(star)
    with pytest.raises(TypeError, match="must come first"):
        Tool.from_function(late)
    with pytest.raises(TypeError, match="name="):
        Tool.from_function(lambda x: x)
    assert Tool.from_function(lambda x: x, name="echo").input_schema["required"] == ["x"]
    with pytest.raises(TypeError, match="list of tools"):
        Runtime(tools=tool(lambda: None, name="one"))  # type: ignore[call-overload]


# --- calls -----------------------------------------------------------------------------


async def test_arguments_are_validated_converted_and_the_context_injected() -> None:
    seen: list[Any] = []

    @tool
    async def book(
        context: ToolContext, place: Place, nights: int, window: Window | None = None
    ) -> str:
        seen.append((context.run_id, place, nights, window))
        return "booked"

    output = await book.function(
        {"place": {"name": "Oslo"}, "nights": "2", "window": {"start": 1, "end": 3}}, CONTEXT
    )
    assert output == "booked"
    assert seen == [("r1", Place(name="Oslo"), 2, Window(1, 3))]
    with pytest.raises(
        ToolError, match=r"invalid arguments: nights: Input should be a valid integer"
    ):
        await book.function({"place": {"name": "Oslo"}, "nights": "two"}, CONTEXT)
    with pytest.raises(ToolError, match=r"place\.name: Field required"):
        await book.function({"place": {}, "nights": 1}, CONTEXT)


async def test_return_values_are_serialised() -> None:
    @tool
    def model() -> Place:
        return Place(name="Oslo")

    @tool
    def rows() -> list[Window]:
        return [Window(1, 2)]

    @tool
    async def text() -> str:
        return "as is"

    @tool
    def mapping() -> dict[str, Any]:
        return {"when": dataclasses.asdict(Window(0, 1)), "place": Place(name="Rome")}

    assert await model.function({}, CONTEXT) == {"name": "Oslo", "title": "town"}
    assert await rows.function({}, CONTEXT) == [{"start": 1, "end": 2}]
    assert await text.function({}, CONTEXT) == "as is"
    assert await mapping.function({}, CONTEXT) == {
        "when": {"start": 0, "end": 1},
        "place": {"name": "Rome", "title": "town"},
    }


async def test_sync_functions_run_in_a_worker_thread() -> None:
    threads: list[int] = []

    def where(label: str) -> str:
        threads.append(threading.get_ident())
        return label

    results, outcome = await tool_results([where], [call("where", label="x")])
    assert outcome.status == "completed"
    assert [(r.output, r.is_error) for r in results] == [("x", False)]
    assert threads and threads[0] != threading.get_ident()


async def test_a_model_sees_validation_errors_and_exceptions_as_tool_errors() -> None:
    class Closed(Exception):
        pass

    def shop(item: Literal["apple", "pear"], count: int = 1) -> str:
        if item == "pear":
            raise Closed("the pear stand is closed")
        if count > 5:
            raise ToolError("at most 5, please")
        return f"{count} {item}"

    results, outcome = await tool_results(
        [shop],
        [
            call("shop", item="kiwi"),  # not in the Literal: the schema check refuses it
            call("shop", item="apple", count="many"),
            call("shop", item="pear"),
            call("shop", item="apple", count=9),
            call("shop", item="apple", count=2),
        ],
    )
    assert outcome.status == "completed" and outcome.text == "done"
    errors = [(r.is_error, str(r.output)) for r in results]
    assert [e for e, _ in errors] == [True, True, True, True, False]
    assert "invalid arguments" in errors[0][1] and "kiwi" in errors[0][1]
    assert "invalid arguments" in errors[1][1] and "count" in errors[1][1]
    assert "Closed: the pear stand is closed" in errors[2][1]
    assert errors[3][1] == "at most 5, please"
    assert errors[4][1] == "2 apple"


async def test_a_pydantic_only_check_reaches_the_model_naming_the_field() -> None:
    def upper(code: str) -> str:
        if code != code.upper():
            raise ValueError("write the code in capitals")
        return code

    class Booking(BaseModel):  # defined here: found although annotations are postponed
        nights: int
        code: Annotated[str, AfterValidator(upper)]

    def book(booking: Booking) -> str:
        return f"{booking.nights} nights, {booking.code}"

    results, _ = await tool_results(
        [book],
        [
            call("book", booking={"nights": 2, "code": "osl"}),
            call("book", booking={"nights": 2, "code": "OSL"}),
        ],
    )
    assert results[0].is_error
    assert (
        results[0].output
        == "invalid arguments: booking.code: Value error, write the code in capitals"
    )
    assert (results[1].output, results[1].is_error) == ("2 nights, OSL", False)


async def test_a_hung_sync_function_is_abandoned_at_its_timeout_and_the_run_goes_on() -> None:
    release = threading.Event()

    @tool(timeout=0.2)
    def hang() -> str:
        release.wait(10)  # a worker thread cannot be interrupted
        return "late"

    started = time.monotonic()
    try:
        results, outcome = await tool_results([hang], [call("hang")])
    finally:
        release.set()
    elapsed = time.monotonic() - started
    assert outcome.status == "completed" and outcome.text == "done"
    assert results[0].is_error and "timed out after 0.2 seconds" in str(results[0].output)
    assert elapsed < 2  # the call ended at its timeout, not when the thread did


async def test_an_async_function_is_cancelled_at_its_timeout() -> None:
    @tool(timeout=0.05)
    async def slow() -> str:
        await anyio.sleep(10)
        return "late"

    results, outcome = await tool_results([slow], [call("slow"), call("slow")])
    assert outcome.status == "completed"
    assert [r.is_error for r in results] == [True, True]


# --- the runtime's tools ---------------------------------------------------------------


async def test_added_tools_join_the_built_in_ones(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("milk\n")

    def shout(text: str) -> str:
        """Say it loudly."""
        return text.upper()

    results, outcome = await tool_results(
        [shout],
        [call("Read", file_path="notes.txt"), call("shout", text="hi")],
        allow=("Read", "shout"),
        working_dir=tmp_path,
    )
    assert outcome.status == "completed"
    assert [(r.tool, r.output) for r in results] == [("Read", "     1\tmilk"), ("shout", "HI")]


async def test_tools_given_as_a_registry_are_added_too() -> None:
    async def ping(arguments: dict[str, Any], context: ToolContext) -> str:
        return "pong"

    registry = ToolRegistry([Tool("ping", "Ping.", {"type": "object"}, ping)])
    async with Runtime(provider=ScriptedProvider([]), tools=registry) as runtime:
        assert "ping" in runtime.tools and "Read" in runtime.tools and "read_file" in runtime.tools
    async with Runtime(
        provider=ScriptedProvider([]), tools=registry, builtin_tools=False
    ) as runtime:
        assert runtime.tools.names() == ["ping"]


async def test_builtin_tools_false_leaves_only_the_given_tools() -> None:
    def shout(text: str) -> str:
        return text.upper()

    async with Runtime(
        provider=ScriptedProvider([]), tools=[shout], builtin_tools=False
    ) as runtime:
        assert runtime.tools.names() == ["shout"]
        with pytest.raises(UnknownToolError) as raised:
            await runtime.start(AgentSpec(id="demo:r", tools=("shout", "Read")), "go")
    assert raised.value.entries == ("Read",)


async def test_a_tool_named_like_a_built_in_one_replaces_it() -> None:
    def Read(file_path: str) -> str:
        return "mine"

    results, _ = await tool_results([Read], [call("Read", file_path="x")])
    assert results[0].output == "mine"


async def test_an_allowlist_entry_naming_no_tool_fails_at_start_with_the_closest_name() -> None:
    def get_weather(city: str) -> str:
        return city

    spec = AgentSpec(
        id="demo:typo",
        tools=("get_wether", "Bash(git *)", "mcp__github", "mcp__github__*", "raed"),
    )
    async with Runtime(provider=ScriptedProvider([]), tools=[get_weather]) as runtime:
        with pytest.raises(UnknownToolError) as raised:
            await runtime.start(spec, "go")
        assert await runtime.store.list_sessions() == []  # nothing was stored
    error = raised.value
    assert isinstance(error, SpecError) and error.field == "tools"
    assert error.agent_id == "demo:typo"
    # MCP server entries may legitimately name no tool (a server with none); not refused.
    assert error.entries == ("get_wether", "raed")
    assert error.suggestions == {"get_wether": "get_weather", "raed": "Read"}
    assert "demo:typo" in str(error) and "did you mean 'get_weather'?" in str(error)


async def test_a_bad_allowlist_of_a_spec_run_by_another_driver_is_its_drivers_business() -> None:
    from agentkit.runtime import TurnOutcome, TurnRequest

    async def driver(request: TurnRequest) -> TurnOutcome:
        return TurnOutcome(text="from the driver")

    spec = AgentSpec(id="demo:cli", tools=("NotebookEdit",), runtime="claude-cli")
    async with Runtime(provider=ScriptedProvider([]), drivers={"claude-cli": driver}) as runtime:
        outcome = await (await runtime.start(spec, "go")).wait()
    assert outcome.text == "from the driver"
