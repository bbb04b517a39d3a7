"""The offline providers in agentkit.testing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from agentkit import AgentSpec, Runtime
from agentkit.actions import ActionRegistry, ActionResult
from agentkit.providers import ModelRequest, ToolDefinition, UserMessage, create_provider
from agentkit.testing import FunctionProvider, SchemaTestProvider, ScriptedProvider, ScriptError
from agentkit.tools import Tool, ToolContext, ToolRegistry

pytestmark = pytest.mark.anyio


async def test_scripted_reports_unused_responses() -> None:
    provider = ScriptedProvider(["one", "two"])
    async with Runtime(provider=provider) as runtime:
        await (await runtime.start(AgentSpec(id="a:b"), "hi")).wait()
    assert [r.text for r in provider.unused] == ["two"]
    with pytest.raises(AssertionError, match="1 of 2"):
        provider.check_consumed()


async def test_scripted_runs_out() -> None:
    async with Runtime(provider=ScriptedProvider([])) as runtime:
        outcome = await (await runtime.start(AgentSpec(id="a:b"), "hi")).wait()
    assert outcome.status == "error" and "no response left" in (outcome.error or "")


def test_script_files_are_checked(tmp_path: Path) -> None:
    good = tmp_path / "good.json"
    good.write_text(json.dumps([{"text": "hi"}, {"tool_calls": [{"name": "x", "input": {}}]}]))
    assert len(ScriptedProvider.from_file(good).responses) == 2
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps([{"txt": "typo"}]))
    with pytest.raises(ScriptError, match=r"bad.json: response 0: txt"):
        ScriptedProvider.from_file(bad)
    broken = tmp_path / "broken.json"
    broken.write_text("[{")
    with pytest.raises(ScriptError, match="not valid JSON"):
        ScriptedProvider.from_file(broken)
    with pytest.raises(ScriptError, match="cannot read"):
        ScriptedProvider.from_file(tmp_path / "missing.json")
    assert isinstance(create_provider("scripted", script=str(good)), ScriptedProvider)


async def test_function_provider_sync_and_async() -> None:
    def sync(request: ModelRequest) -> str:
        return f"echo: {request.messages[-1].content}"  # type: ignore[union-attr]

    async def asynchronous(request: ModelRequest) -> dict[str, Any]:
        return {"text": "async"}

    for function, expected in ((sync, "echo: hi"), (asynchronous, "async")):
        async with Runtime(provider=FunctionProvider(function)) as runtime:
            outcome = await (await runtime.start(AgentSpec(id="a:b"), "hi")).wait()
        assert outcome.text == expected


async def test_function_provider_streams_exactly_the_pieces_it_is_given() -> None:
    from collections.abc import AsyncIterator

    from agentkit.events import TextDelta, ToolResult
    from agentkit.providers import ThinkingChunk, ToolCall

    async def ping(arguments: dict[str, Any], context: ToolContext) -> str:
        return "pong"

    def pieces(request: ModelRequest) -> Any:
        if len(request.messages) == 1:
            call = ToolCall(id="c1", name="ping", arguments={})
            return [ThinkingChunk("hm", "sig"), "Let me ", "check.", call]
        return answer()

    async def answer() -> AsyncIterator[str]:
        for piece in ("It ", "says ", "pong."):
            yield piece

    provider = FunctionProvider(pieces)
    spec = AgentSpec(id="a:b", tools=("ping",), permission_mode="bypassPermissions")
    tools = [Tool("ping", "Ping.", {"type": "object"}, ping)]
    async with Runtime(provider=provider, tools=tools, builtin_tools=False) as runtime:
        run = await runtime.start(spec, "hi")
        events = [event async for event in run.events()]
        outcome = await run.wait()
    deltas = [e.content for e in events if isinstance(e, TextDelta)]
    assert deltas == ["Let me ", "check.", "It ", "says ", "pong."]
    assert [e.output for e in events if isinstance(e, ToolResult)] == ["pong"]
    assert outcome.text == "It says pong." and outcome.accounting.total.output_tokens > 0
    assert provider.calls == 2 and provider.requests == []  # not recorded unless asked


async def test_function_provider_records_when_asked_and_refuses_what_is_no_response() -> None:
    async def generator(request: ModelRequest) -> Any:  # an async generator function
        yield "one "
        yield "two"

    provider = FunctionProvider(generator, record=True)
    async with Runtime(provider=provider) as runtime:
        outcome = await (await runtime.start(AgentSpec(id="a:b"), "hi")).wait()
    assert outcome.text == "one two"
    assert [r.messages[-1].content for r in provider.requests] == ["hi"]  # type: ignore[union-attr]
    for bad, problem in ((42, "int is not a response"), ([b"x"], "a piece is a string")):
        answer = FunctionProvider(lambda request, bad=bad: bad)
        async with Runtime(provider=answer) as runtime:
            failed = await (await runtime.start(AgentSpec(id="a:c"), "hi")).wait()
        assert failed.status == "error" and problem in (failed.error or "")


def test_the_json_argument_parser_is_public() -> None:
    from agentkit.providers import parse_arguments

    assert parse_arguments('{"city": "Paris"}') == {"city": "Paris"}
    assert parse_arguments("  ") == {}
    assert parse_arguments('{"city": "Par') == '{"city": "Par'
    assert parse_arguments("[1]") == "[1]"


SCHEMA = {
    "type": "object",
    "required": ["decision", "tags", "score", "when"],
    "additionalProperties": False,
    "properties": {
        "decision": {"type": "string", "enum": ["REPLY", "ESCALATE", "IGNORE"]},
        "tags": {
            "type": "array",
            "items": {"type": "string", "minLength": 2},
            "minItems": 2,
            "uniqueItems": True,
        },
        "score": {"type": "integer", "minimum": 1, "maximum": 5},
        "when": {"type": "string", "format": "date-time"},
        "nested": {"$ref": "#/$defs/inner"},
    },
    "$defs": {
        "inner": {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}
    },
}


async def _echo(args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
    return args


async def test_schema_provider_calls_every_tool_then_submits_valid_output() -> None:
    actions = ActionRegistry()

    @actions.action(
        "notes:create",
        {"type": "object", "properties": {"title": {"type": "string"}}, "required": ["title"]},
    )
    async def create(args: dict[str, Any], ctx: Any) -> ActionResult:
        return ActionResult.ok(args)

    tools = ToolRegistry(
        [
            Tool(
                "echo",
                "Echo.",
                {
                    "type": "object",
                    "properties": {"n": {"type": "integer", "minimum": 3, "maximum": 3}},
                    "required": ["n"],
                },
                _echo,
            )
        ]
    )
    spec = AgentSpec(
        id="a:b",
        tools=("echo",),
        actions=("notes:create",),
        output_schema=SCHEMA,
        permission_mode="bypassPermissions",
    )
    async with Runtime(provider="test", tools=tools, actions=actions) as runtime:
        run = await runtime.start(spec, "go")
        events = [e async for e in run.events()]
        outcome = await run.wait()
    used = [e.tool for e in events if e.type == "tool_use"]
    assert used == ["echo", "notes__create", "submit_output"]
    assert all(not e.is_error for e in events if e.type == "tool_result")
    assert outcome.ok
    jsonschema.validate(outcome.payload, SCHEMA)


def test_schema_provider_is_deterministic_by_seed() -> None:
    request = ModelRequest(
        model="m",
        system="",
        messages=(UserMessage(content="go"),),
        tools=(ToolDefinition("submit_output", "", SCHEMA),),
    )
    one = SchemaTestProvider(seed=1).respond(request)
    again = SchemaTestProvider(seed=1).respond(request)
    other = SchemaTestProvider(seed=2).respond(request)
    assert one == again
    assert one != other
    jsonschema.validate(one.tool_calls[0].input, SCHEMA)


def test_schema_provider_subset_and_text() -> None:
    tools = (
        ToolDefinition("a", "", {"type": "object"}),
        ToolDefinition("b", "", {"type": "object"}),
    )
    request = ModelRequest(model="m", system="", messages=(UserMessage(content="go"),), tools=tools)
    response = SchemaTestProvider(tools=["b"]).respond(request)
    assert [c.name for c in response.tool_calls] == ["b"]
    plain = ModelRequest(model="m", system="", messages=(UserMessage(content="go"),))
    assert SchemaTestProvider(text="hello").respond(plain).text == "hello"


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "integer", "maximum": -10},
        {"type": "integer", "exclusiveMinimum": 5, "exclusiveMaximum": 7},
        {"type": "number", "exclusiveMaximum": 1},
        {"type": "number", "minimum": 0.5, "multipleOf": 0.25, "maximum": 2},
        {"type": "integer", "multipleOf": 5, "minimum": 3},
        {"type": "array", "maxItems": 0},
        {
            "type": "object",
            "minProperties": 1,
            "additionalProperties": False,
            "properties": {"a": {"type": "string"}},
        },
        {
            "$defs": {
                "node": {
                    "type": "object",
                    "required": ["children"],
                    "properties": {
                        "children": {"type": "array", "items": {"$ref": "#/$defs/node"}}
                    },
                }
            },
            "$ref": "#/$defs/node",
        },
    ],
)
def test_generated_values_satisfy_their_schema(schema: dict[str, Any]) -> None:
    import random

    from agentkit.testing._schemagen import generate

    for seed in range(30):
        jsonschema.validate(generate(schema, random.Random(seed)), schema)
