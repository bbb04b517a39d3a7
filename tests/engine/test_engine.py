"""The engine: tool loop, allowlists, permissions, structured output, errors, sub-agents."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import anyio
import pytest

from agentkit import AgentSpec, Runtime
from agentkit.actions import ActionRegistry, ActionResult
from agentkit.errors import UnknownToolError
from agentkit.events import AgentMessage, to_wire
from agentkit.permissions import Allow, Deny, PermissionRequest
from agentkit.providers import (
    Chunk,
    ModelRequest,
    ProviderError,
    TextChunk,
    ThinkingChunk,
    ToolResultMessage,
    UserMessage,
)
from agentkit.runtime import RetryPolicy
from agentkit.stores import MemoryStore
from agentkit.testing import FunctionProvider, ScriptedProvider, assert_stream_invariants
from agentkit.tools import Tool, ToolContext, ToolError, ToolRegistry

pytestmark = pytest.mark.anyio

ADD_SCHEMA = {
    "type": "object",
    "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
    "required": ["a", "b"],
}


async def _add(args: dict[str, Any], ctx: ToolContext) -> int:
    return int(args["a"]) + int(args["b"])


async def _boom(args: dict[str, Any], ctx: ToolContext) -> str:
    raise RuntimeError("disk on fire")


async def _refuse(args: dict[str, Any], ctx: ToolContext) -> str:
    raise ToolError("no such file: x.txt")


async def _hang(args: dict[str, Any], ctx: ToolContext) -> str:
    await anyio.sleep_forever()
    return "never"


written: list[str] = []


async def _write(args: dict[str, Any], ctx: ToolContext) -> str:
    written.append(args["path"])
    return "written"


async def _shell(args: dict[str, Any], ctx: ToolContext) -> str:
    return f"ran {args['command']}"


def _match_command(specifier: str, args: dict[str, Any], ctx: ToolContext) -> bool:
    prefix = specifier.rstrip("*").rstrip()
    return str(args.get("command", "")).startswith(prefix)


def tools() -> ToolRegistry:
    return ToolRegistry(
        [
            Tool("add", "Add two integers.", ADD_SCHEMA, _add),
            Tool("boom", "Always fails.", {"type": "object"}, _boom),
            Tool("refuse", "Reports a tool error.", {"type": "object"}, _refuse),
            Tool("hang", "Never returns.", {"type": "object"}, _hang, timeout=0.05),
            Tool(
                "Write",
                "Write a file.",
                {"type": "object", "properties": {"path": {"type": "string"}}},
                _write,
                effect="edit",
            ),
            Tool(
                "Bash",
                "Run a command.",
                {"type": "object", "properties": {"command": {"type": "string"}}},
                _shell,
                effect="execute",
                matches=_match_command,
            ),
        ]
    )


def call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"tool_calls": [{"name": name, "input": arguments}]}


async def run_all(
    spec: AgentSpec, responses: list[Any], prompt: str = "go", **runtime_options: Any
) -> tuple[list[AgentMessage], Any, ScriptedProvider]:
    provider = ScriptedProvider(responses)
    runtime_options.setdefault("tools", tools())
    async with Runtime(provider=provider, **runtime_options) as runtime:
        run = await runtime.start(spec, prompt)
        events = [event async for event in run.events()]
        outcome = await run.wait()
    return events, outcome, provider


def types(events: list[AgentMessage]) -> list[str]:
    return [e.type for e in events]


def results(events: list[AgentMessage]) -> list[Any]:
    return [e for e in events if e.type == "tool_result"]


SPEC = AgentSpec(id="demo:calc", tools=("add",), permission_mode="bypassPermissions")


async def test_tool_call_then_answer() -> None:
    events, outcome, provider = await run_all(
        SPEC, [call("add", a=1, b=2), {"text": "3", "deltas": 1}], prompt="1+2?"
    )
    assert_stream_invariants(events)
    assert types(events) == [
        "turn_start",
        "session_init",
        "tool_use",
        "tool_result",
        "text_delta",
        "text",
        "result",
        "turn_end",
    ]
    assert results(events)[0].output == 3
    assert outcome.ok and outcome.text == "3"
    assert events[0].user_prompt == "1+2?"
    assert events[-1].status == "completed" and events[-1].duration_ms >= 0
    # the model saw the tool result on its second call
    second = provider.requests[1].messages
    assert isinstance(second[-1], ToolResultMessage) and second[-1].content == "3"
    accounting = outcome.accounting
    assert accounting.model_calls == 2 and accounting.tool_calls == 1
    assert accounting.models["test-medium"].input_tokens > 0
    provider.check_consumed()


async def test_text_phases_and_thinking() -> None:
    events, _, _ = await run_all(
        SPEC,
        [
            {
                "thinking": "hmm",
                "thinking_signature": "sig",
                "text": "Let me add.",
                **call("add", a=1, b=1),
            },
            {"text": "2", "deltas": 1},
        ],
    )
    thinking = [e for e in events if e.type == "thinking"]
    assert thinking[0].content == "hmm" and thinking[0].signature == "sig"
    texts = [e for e in events if e.type == "text"]
    assert [(t.content, t.turn_phase) for t in texts] == [
        ("Let me add.", "commentary"),
        ("2", "final"),
    ]


async def test_deltas_stream_before_the_text_block() -> None:
    events, _, _ = await run_all(SPEC, [{"text": "abcdef", "deltas": 3}])
    deltas = [e.content for e in events if e.type == "text_delta"]
    assert deltas == ["ab", "cd", "ef"]
    assert [e.type for e in events].index("text") > [e.type for e in events].index("text_delta")


@pytest.mark.parametrize(
    ("response", "message"),
    [
        ({"tool_calls": [{"name": "add", "arguments": "{not json"}]}, "not valid JSON"),
        ({"tool_calls": [{"name": "add", "arguments": "[1, 2]"}]}, "must be a JSON object"),
        (call("add", a="one", b=2), "invalid arguments"),
        (call("add", a=1), "invalid arguments"),
        (call("nope"), "not available"),
        (call("boom"), "RuntimeError: disk on fire"),
        (call("refuse"), "no such file: x.txt"),
        (call("hang"), "timed out"),
    ],
)
async def test_bad_calls_become_tool_errors_and_the_run_goes_on(
    response: dict[str, Any], message: str
) -> None:
    spec = AgentSpec(
        id="demo:calc", tools=("add", "boom", "refuse", "hang"), permission_mode="bypassPermissions"
    )
    events, outcome, provider = await run_all(spec, [response, {"text": "recovered"}])
    assert_stream_invariants(events)
    result = results(events)[0]
    assert result.is_error and message in result.output
    assert outcome.ok and outcome.text == "recovered"
    told = provider.requests[1].messages[-1]
    assert isinstance(told, ToolResultMessage) and told.is_error and message in told.content


async def test_tool_outside_the_allowlist_is_refused() -> None:
    spec = AgentSpec(id="demo:calc", tools=("add",), permission_mode="bypassPermissions")
    events, outcome, _ = await run_all(spec, [call("boom"), {"text": "ok"}])
    assert "not available" in results(events)[0].output
    assert outcome.ok


async def test_specifier_rules_restrict_calls() -> None:
    spec = AgentSpec(id="demo:git", tools=("Bash(git *)",), permission_mode="bypassPermissions")
    events, _, _ = await run_all(
        spec, [call("Bash", command="git status"), call("Bash", command="rm -rf /"), "done"]
    )
    first, second = results(events)
    assert not first.is_error and first.output == "ran git status"
    assert second.is_error and "Bash(git *)" in second.output


async def test_bare_entry_lifts_specifier_restrictions() -> None:
    spec = AgentSpec(
        id="demo:git", tools=("Bash(git *)", "Bash"), permission_mode="bypassPermissions"
    )
    events, _, _ = await run_all(spec, [call("Bash", command="ls"), "done"])
    assert not results(events)[0].is_error


@pytest.mark.parametrize(
    ("mode", "tool", "asks"),
    [
        ("bypassPermissions", "Write", False),
        ("bypassPermissions", "Bash", False),
        ("acceptEdits", "Write", False),
        ("acceptEdits", "Bash", True),
        ("default", "Write", True),
        ("default", "Bash", True),
        ("default", "add", False),
    ],
)
async def test_permission_modes(mode: str, tool: str, asks: bool) -> None:
    asked: list[PermissionRequest] = []

    async def handler(request: PermissionRequest) -> Allow | Deny:
        asked.append(request)
        return Allow()

    spec = AgentSpec(id="demo:p", tools=("add", "Write", "Bash"), permission_mode=mode)  # type: ignore[arg-type]
    arguments = {"add": {"a": 1, "b": 1}, "Write": {"path": "x"}, "Bash": {"command": "ls"}}[tool]
    events, _, _ = await run_all(
        spec, [call(tool, **arguments), "done"], permission_handler=handler
    )
    assert bool(asked) is asks
    assert not results(events)[0].is_error
    if asks:
        assert asked[0].tool == tool and asked[0].input == arguments


async def test_no_handler_asks_a_person_and_counts_a_denial() -> None:
    # Without a handler the call waits for a person (docs/human-in-the-loop.md); denied,
    # the model gets the refusal as a tool error and the denial is counted.
    spec = AgentSpec(id="demo:p", tools=("Bash",), permission_mode="default")
    provider = ScriptedProvider([call("Bash", command="ls"), "done"])
    async with Runtime(provider=provider, tools=tools()) as runtime:
        run = await runtime.start(spec, "go")
        events: list[AgentMessage] = []
        async for event in run.events():
            events.append(event)
            if event.type == "permission_request":
                assert event.tool_name == "Bash" and event.input == {"command": "ls"}
                await runtime.decide(run.id, event.request_id, allow=False, message="no")
        outcome = await run.wait()
    result = results(events)[0]
    assert result.is_error and result.output == "permission denied: no"
    assert outcome.ok and outcome.accounting.permission_denials == 1


async def test_handler_can_deny_change_input_or_fail() -> None:
    async def handler(request: PermissionRequest) -> Allow | Deny:
        command = request.input["command"]
        if command == "ls":
            return Allow(updated_input={"command": "ls -la"})
        if command == "explode":
            raise RuntimeError("handler bug")
        return Deny("not today")

    spec = AgentSpec(id="demo:p", tools=("Bash",), permission_mode="default")
    events, outcome, _ = await run_all(
        spec,
        [
            call("Bash", command="ls"),
            call("Bash", command="rm x"),
            call("Bash", command="explode"),
            "done",
        ],
        permission_handler=handler,
    )
    allowed, denied, failed = results(events)
    assert allowed.output == "ran ls -la"
    assert denied.is_error and "not today" in denied.output
    assert failed.is_error and "handler failed" in failed.output
    assert outcome.accounting.permission_denials == 2


def actions() -> ActionRegistry:
    registry = ActionRegistry()

    @registry.action(
        "notes:create",
        {"type": "object", "properties": {"title": {"type": "string"}}, "required": ["title"]},
        description="Create a note.",
    )
    async def create(args: dict[str, Any], ctx: Any) -> ActionResult:
        return ActionResult.ok({"created": args["title"], "caller": ctx.caller})

    @registry.action("notes:delete", {"type": "object"})
    async def delete(args: dict[str, Any], ctx: Any) -> ActionResult:
        return ActionResult.ok()

    return registry


async def test_allowlisted_actions_are_offered_as_tools() -> None:
    spec = AgentSpec(id="demo:a", actions=("notes:create",), permission_mode="bypassPermissions")
    events, _, provider = await run_all(
        spec,
        [call("notes__create", title="hi"), call("notes__delete"), call("notes__create"), "ok"],
        actions=actions(),
    )
    offered = [t.name for t in provider.requests[0].tools]
    assert offered == ["notes__create"]
    created, refused, invalid = results(events)
    assert created.output == {"status": "ok", "data": {"created": "hi", "caller": "demo:a"}}
    assert refused.is_error and "not available" in refused.output
    assert invalid.is_error and "invalid arguments" in invalid.output


async def test_star_allows_every_action() -> None:
    spec = AgentSpec(id="demo:a", actions=("*",))
    _, _, provider = await run_all(spec, ["ok"], actions=actions())
    assert sorted(t.name for t in provider.requests[0].tools) == ["notes__create", "notes__delete"]


SCHEMA = {
    "type": "object",
    "required": ["decision", "reason"],
    "additionalProperties": False,
    "properties": {
        "decision": {"type": "string", "enum": ["REPLY", "ESCALATE", "IGNORE"]},
        "reason": {"type": "string"},
    },
}


async def test_structured_output_accepted_after_a_rejection() -> None:
    spec = AgentSpec(id="demo:s", output_schema=SCHEMA, system_prompt="Triage.")
    events, outcome, provider = await run_all(
        spec,
        [
            call("submit_output", decision="MAYBE", reason="?"),
            call("submit_output", decision="REPLY", reason="friendly"),
        ],
    )
    assert_stream_invariants(events)
    rejected, accepted = results(events)
    assert rejected.is_error and "decision" in rejected.output
    assert not accepted.is_error
    structured = [e for e in events if e.type == "structured_output"]
    assert len(structured) == 1 and structured[0].payload == {
        "decision": "REPLY",
        "reason": "friendly",
    }
    assert json.loads(outcome.text) == structured[0].payload
    assert outcome.payload == structured[0].payload
    system = provider.requests[0].system
    assert system.startswith("Triage.") and "submit_output" in system
    assert provider.requests[0].tools[0].input_schema == SCHEMA


async def test_non_object_output_schema_is_wrapped() -> None:
    spec = AgentSpec(id="demo:s", output_schema={"type": "array", "items": {"type": "integer"}})
    _, outcome, provider = await run_all(spec, [call("submit_output", output=[1, 2])])
    assert outcome.payload == [1, 2]
    assert provider.requests[0].tools[0].input_schema["required"] == ["output"]


async def test_stopping_without_submitting_gets_a_reminder_then_errors_at_the_cap() -> None:
    spec = AgentSpec(id="demo:s", output_schema=SCHEMA, max_turns=2)
    events, outcome, provider = await run_all(spec, ["I think REPLY", "still text"])
    reminder = provider.requests[1].messages[-1]
    assert isinstance(reminder, UserMessage) and "submit_output" in reminder.content
    assert outcome.status == "error" and "maxTurns (2)" in (outcome.error or "")
    assert events[-1].status == "error"
    assert_stream_invariants(events)


async def test_turn_cap_counts_model_calls() -> None:
    spec = AgentSpec(id="demo:c", tools=("add",), max_turns=2, permission_mode="bypassPermissions")
    events, outcome, provider = await run_all(
        spec, [call("add", a=1, b=1), call("add", a=2, b=2), "never reached"]
    )
    assert len(provider.requests) == 2
    assert outcome.status == "error" and "maxTurns (2)" in (outcome.error or "")
    error = next(e for e in events if e.type == "error")
    assert error.accounting is not None and error.accounting.model_calls == 2


async def test_provider_error_becomes_an_error_block_with_accounting() -> None:
    events, outcome, _ = await run_all(SPEC, [call("add", a=1, b=1), {"error": "bad request"}])
    assert_stream_invariants(events)
    error = events[-2]
    assert error.type == "error" and "bad request" in error.error
    assert error.accounting is not None and error.accounting.model_calls == 2
    assert error.accounting.models["test-medium"].input_tokens > 0
    assert events[-1].status == "error" and not outcome.ok


async def test_retryable_errors_are_retried_with_backoff() -> None:
    policy = RetryPolicy(max_attempts=3, initial_delay=0.001, max_delay=0.01)
    _, outcome, provider = await run_all(
        SPEC,
        [
            {"error": "overloaded", "retryable": True},
            {"error": "rate limited", "retryable": True, "retry_after": 0.001},
            "finally",
        ],
        retry=policy,
    )
    assert outcome.ok and outcome.text == "finally" and len(provider.requests) == 3


async def test_retries_are_bounded() -> None:
    policy = RetryPolicy(max_attempts=2, initial_delay=0.001, max_delay=0.01)
    _, outcome, provider = await run_all(
        SPEC,
        [{"error": "overloaded", "retryable": True}] * 2 + ["unused"],
        retry=policy,
    )
    assert outcome.status == "error" and "overloaded" in (outcome.error or "")
    assert len(provider.unused) == 1


async def test_a_stream_that_breaks_after_output_is_not_retried() -> None:
    policy = RetryPolicy(max_attempts=3, initial_delay=0.001)
    events, outcome, _ = await run_all(
        SPEC,
        [
            {
                "text": "partial",
                "error": "connection reset",
                "retryable": True,
                "error_after_text": True,
            },
            "unused",
        ],
        retry=policy,
    )
    assert [e.content for e in events if e.type == "text_delta"] == ["partial"]
    assert outcome.status == "error" and "connection reset" in (outcome.error or "")


async def test_a_provider_that_raises_anything_ends_in_an_error_block() -> None:
    async def broken(request: ModelRequest) -> AsyncIterator[Chunk]:
        yield TextChunk("half")
        raise ConnectionError("socket closed")

    class Broken:
        name = "broken"

        def resolve_model(self, tier: str | None, model: str | None) -> str:
            return "m"

        def stream(self, request: ModelRequest) -> AsyncIterator[Chunk]:
            return broken(request)

    async with Runtime(provider=Broken(), tools=tools()) as runtime:
        run = await runtime.start(SPEC, "go")
        events = [e async for e in run.events()]
    assert_stream_invariants(events)
    assert events[-2].type == "error" and "socket closed" in events[-2].error


async def test_cancel_ends_interrupted_with_one_error_block() -> None:
    spec = AgentSpec(id="demo:h", tools=("hang",), permission_mode="bypassPermissions")
    slow = Tool("hang", "Never returns.", {"type": "object"}, _hang, timeout=None)
    async with Runtime(
        provider=ScriptedProvider([call("hang")]), tools=ToolRegistry([slow])
    ) as runtime:
        run = await runtime.start(spec, "go")
        async for event in run.events():
            if event.type == "tool_use":
                run.cancel()
        outcome = await run.wait()
    events = [e async for e in run.events()]
    assert_stream_invariants(events)
    assert events[-1].status == "interrupted" and outcome.status == "interrupted"


async def test_session_resume_and_deltas_not_stored() -> None:
    store = MemoryStore()
    provider = ScriptedProvider([{"text": "first answer", "deltas": 3}, "second answer"])
    async with Runtime(provider=provider, store=store, tools=tools()) as runtime:
        first = await runtime.start(SPEC, "one")
        await first.wait()
        second = await runtime.start(SPEC, "two", session_id=first.session_id)
        await second.wait()
    history = provider.requests[1].messages
    assert [type(m).__name__ for m in history] == ["UserMessage", "AssistantMessage", "UserMessage"]
    assert history[1].text == "first answer"  # type: ignore[union-attr]
    stored = await store.read_events(first.id)
    assert "text_delta" not in [e.event.type for e in stored]
    offsets = [e.offset for e in stored]
    assert offsets == sorted(offsets) and len(first) > len(stored)
    transcript = await store.load_transcript(first.session_id)
    assert len(transcript) == 4


def subagent_runtime_options() -> dict[str, Any]:
    def decide(request: ModelRequest) -> Any:
        if "helper" in request.system:
            return {"text": "helper says hi"}
        if isinstance(request.messages[-1], UserMessage):
            return call("summon", agentName="demo:helper", prompt="say hi")
        return {"text": f"parent got: {request.messages[-1].content}"}  # type: ignore[union-attr]

    helper = AgentSpec(id="demo:helper", system_prompt="You are the helper.")
    return {"provider": FunctionProvider(decide), "agents": [helper]}


async def test_summon_forwards_tagged_content_not_lifecycle() -> None:
    parent = AgentSpec(id="demo:parent", system_prompt="parent", allowed_subagents=("demo:helper",))
    async with Runtime(**subagent_runtime_options()) as runtime:
        run = await runtime.start(parent, "go")
        events = [e async for e in run.events()]
        outcome = await run.wait()
    assert_stream_invariants(events)
    tagged = [e for e in events if e.agent == "demo:helper"]
    assert {e.type for e in tagged} == {"session_init", "text", "result"}
    assert "helper says hi" in outcome.text
    assert [e.type for e in events].count("turn_start") == 1


async def test_summon_outside_allowed_subagents_is_refused() -> None:
    parent = AgentSpec(id="demo:parent", system_prompt="parent", allowed_subagents=("demo:other",))
    async with Runtime(**subagent_runtime_options()) as runtime:
        run = await runtime.start(parent, "go")
        events = [e async for e in run.events()]
    assert results(events)[0].is_error


async def test_system_summon_action_runs_any_agent() -> None:
    async with Runtime(**subagent_runtime_options()) as runtime:
        result = await runtime.run_action(
            "system:summon", {"agentName": "demo:helper", "prompt": "hi"}
        )
        missing = await runtime.run_action("system:summon", {"agentName": "x:y", "prompt": "hi"})
        bad = await runtime.run_action("system:summon", {"prompt": "hi"})
    assert result.status == "ok" and result.data["content"] == "helper says hi"
    assert missing.status == "error" and "x:y" in (missing.error or "")
    assert bad.status == "error" and "agentName" in (bad.error or "")


async def test_wire_form_of_a_whole_stream_is_camel_case() -> None:
    events, _, _ = await run_all(SPEC, [call("add", a=1, b=2), "3"])
    wire = [to_wire(e) for e in events]
    assert "turnId" in wire[0] and "toolUseId" in wire[3] and "durationMs" in wire[-1]


async def test_thinking_chunks_without_signature_close_on_text() -> None:
    async def stream(request: ModelRequest) -> AsyncIterator[Chunk]:
        yield ThinkingChunk("a")
        yield ThinkingChunk("b")
        yield TextChunk("answer")

    class Thinker:
        name = "t"

        def resolve_model(self, tier: str | None, model: str | None) -> str:
            return "m"

        def stream(self, request: ModelRequest) -> AsyncIterator[Chunk]:
            return stream(request)

    async with Runtime(provider=Thinker(), tools=tools()) as runtime:
        run = await runtime.start(SPEC, "go")
        events = [e async for e in run.events()]
    thinking = [e for e in events if e.type == "thinking"]
    assert [t.content for t in thinking] == ["ab"]


async def test_provider_error_type_is_reported() -> None:
    def fail(request: ModelRequest) -> Any:
        raise ProviderError("quota exceeded", status=402)

    async with Runtime(provider=FunctionProvider(fail), tools=tools()) as runtime:
        run = await runtime.start(SPEC, "go")
        outcome = await run.wait()
    assert outcome.status == "error" and "quota exceeded" in (outcome.error or "")


async def test_a_tool_schema_that_cannot_be_applied_is_a_tool_error() -> None:
    broken = Tool(
        "broken",
        "A host tool with a bad pattern in its schema.",
        {"type": "object", "properties": {"x": {"type": "string", "pattern": "["}}},
        _add,
    )
    spec = AgentSpec(id="demo:b", tools=("broken",), permission_mode="bypassPermissions")
    events, outcome, _ = await run_all(
        spec, [call("broken", x="y"), "recovered"], tools=ToolRegistry([broken])
    )
    result = results(events)[0]
    assert result.is_error and "could not be applied" in result.output
    assert outcome.ok


async def test_an_accepted_submission_ends_the_turn() -> None:
    spec = AgentSpec(
        id="demo:s", output_schema=SCHEMA, tools=("Write",), permission_mode="bypassPermissions"
    )
    written.clear()
    events, outcome, _ = await run_all(
        spec,
        [
            {
                "tool_calls": [
                    {"name": "submit_output", "input": {"decision": "REPLY", "reason": "a"}},
                    {"name": "Write", "input": {"path": "after.txt"}},
                    {"name": "submit_output", "input": {"decision": "IGNORE", "reason": "b"}},
                ]
            }
        ],
    )
    assert written == []
    assert [e.payload for e in events if e.type == "structured_output"] == [
        {"decision": "REPLY", "reason": "a"}
    ]
    later = results(events)[1:]
    assert all(r.is_error and "already submitted" in r.output for r in later)
    assert outcome.payload == {"decision": "REPLY", "reason": "a"}


async def test_non_object_output_schema_with_defs() -> None:
    schema = {
        "$defs": {"item": {"type": "string"}},
        "type": "array",
        "items": {"$ref": "#/$defs/item"},
    }
    spec = AgentSpec(id="demo:s", output_schema=schema)
    _, outcome, _ = await run_all(spec, [call("submit_output", output=["a", "b"])])
    assert outcome.ok and outcome.payload == ["a", "b"]


async def test_changed_input_from_the_handler_is_checked_again() -> None:
    async def handler(request: PermissionRequest) -> Allow | Deny:
        return Allow(updated_input={"command": "echo not git"})

    spec = AgentSpec(id="demo:p", tools=("Bash(git *)",), permission_mode="default")
    events, _, _ = await run_all(
        spec, [call("Bash", command="git status"), "done"], permission_handler=handler
    )
    result = results(events)[0]
    assert result.is_error and "changed input" in result.output and "Bash(git *)" in result.output


async def test_output_json_cannot_encode_is_stored_as_text() -> None:
    async def odd(args: dict[str, Any], ctx: ToolContext) -> Any:
        return {"when": object()}

    store = MemoryStore()
    spec = AgentSpec(id="demo:o", tools=("odd",), permission_mode="bypassPermissions")
    registry = ToolRegistry([Tool("odd", "Odd output.", {"type": "object"}, odd)])
    events, outcome, _ = await run_all(spec, [call("odd"), "ok"], tools=registry, store=store)
    result = results(events)[0]
    assert outcome.ok and not result.is_error
    assert isinstance(result.output["when"], str)
    assert to_wire(result)["output"]["when"].startswith("<object object")


async def test_summons_from_inside_actions_count_towards_the_depth_limit() -> None:
    started: list[int] = []
    registry = ActionRegistry()

    @registry.action("loop:again", {"type": "object"})
    async def again(args: dict[str, Any], ctx: Any) -> ActionResult:
        started.append(ctx.depth)
        return await ctx.run_action("system:summon", {"agentName": "loop:a", "prompt": "again"})

    spec = AgentSpec(id="loop:a", actions=("loop:again",), permission_mode="bypassPermissions")
    provider = FunctionProvider(
        lambda request: (
            call("loop__again") if isinstance(request.messages[-1], UserMessage) else "stop"
        )
    )
    async with Runtime(provider=provider, actions=registry, agents=[spec]) as runtime:
        outcome = await (await runtime.start(spec, "go")).wait()
    assert outcome.ok
    assert started == [0, 1, 2, 3, 4]


async def test_an_interrupted_run_still_reports_its_calls() -> None:
    spec = AgentSpec(id="demo:h", tools=("add", "hang"), permission_mode="bypassPermissions")
    slow = Tool("hang", "Never returns.", {"type": "object"}, _hang, timeout=None)
    registry = ToolRegistry([Tool("add", "Add.", ADD_SCHEMA, _add), slow])
    provider = ScriptedProvider([call("add", a=1, b=1), call("hang")])
    async with Runtime(provider=provider, tools=registry) as runtime:
        run = await runtime.start(spec, "go")
        async for event in run.events():
            if event.type == "tool_use" and event.tool == "hang":
                run.cancel()
        outcome = await run.wait()
    assert outcome.status == "interrupted"
    assert outcome.accounting.model_calls == 2 and outcome.accounting.tool_calls == 2


async def test_what_a_spec_is_offered_follows_changes_to_the_registries() -> None:
    from agentkit import ActionRegistry, ActionResult
    from agentkit.testing import FunctionProvider
    from agentkit.tools import Tool, ToolRegistry

    async def answer(arguments: dict[str, Any], context: Any) -> str:
        return "first"

    async def other(arguments: dict[str, Any], context: Any) -> str:
        return "second"

    schema = {"type": "object"}
    tools = ToolRegistry([Tool("lookup", "Look up.", schema, answer)])
    actions = ActionRegistry()
    spec = AgentSpec(id="demo:offers", system_prompt="x", tools=["lookup", "extra"], actions=["*"])
    provider = FunctionProvider(lambda request: "ok", record=True)

    def offered() -> list[tuple[str, str]]:
        return [(t.name, t.description) for t in provider.requests[-1].tools]

    async with Runtime(provider=provider, tools=tools, actions=actions) as runtime:
        with pytest.raises(UnknownToolError, match="'extra'"):  # no such tool yet
            await runtime.start(spec, "1")
        tools = runtime.tools  # the built-in tools and those given
        tools.add(Tool("extra", "Extra.", schema, answer))
        await (await runtime.start(spec, "2")).wait()
        assert offered() == [("lookup", "Look up."), ("extra", "Extra.")]
        tools.add(Tool("lookup", "Look up, again.", schema, other))  # replaces by name
        await (await runtime.start(spec, "3")).wait()
        assert offered()[0] == ("lookup", "Look up, again.")

        @actions.action("demo:ping")
        async def ping(arguments: dict[str, Any], context: Any) -> ActionResult:
            return ActionResult.ok({})

        await (await runtime.start(spec, "4")).wait()
        assert [name for name, _ in offered()] == ["lookup", "extra", "demo__ping"]


async def test_cancelling_a_run_inside_a_timed_tool_interrupts_it_not_times_it_out() -> None:
    spec = AgentSpec(id="demo:h", tools=("hang",), permission_mode="bypassPermissions")
    timed = Tool("hang", "Never returns.", {"type": "object"}, _hang, timeout=30)
    provider = ScriptedProvider([call("hang"), "never reached"])
    async with Runtime(provider=provider, tools=ToolRegistry([timed])) as runtime:
        run = await runtime.start(spec, "go")
        async for event in run.events():
            if event.type == "tool_use":
                await anyio.sleep(0.01)  # the tool is waiting now
                run.cancel()
        outcome = await run.wait()
    assert outcome.status == "interrupted"
    kinds = [e.type async for e in run.events()]
    assert "tool_result" not in kinds and kinds[-2:] == ["error", "turn_end"]


async def test_a_tool_that_swallows_its_timeout_keeps_its_answer_and_the_run_goes_on() -> None:
    async def stubborn(arguments: dict[str, Any], context: Any) -> str:
        try:
            await anyio.sleep(10)
        except anyio.get_cancelled_exc_class():
            return "caught it"  # a badly behaved tool
        return "slept"

    spec = AgentSpec(id="demo:h", tools=("stubborn",), permission_mode="bypassPermissions")
    tool = Tool("stubborn", "Swallows.", {"type": "object"}, stubborn, timeout=0.05)
    provider = ScriptedProvider([call("stubborn"), call("stubborn"), "done"])
    async with Runtime(provider=provider, tools=ToolRegistry([tool])) as runtime:
        run = await runtime.start(spec, "go")
        with anyio.fail_after(5):
            outcome = await run.wait()
    assert outcome.ok and outcome.text == "done"
    results = [e async for e in run.events() if e.type == "tool_result"]
    # Whatever each call answered, the second call and the rest of the turn ran normally:
    # a swallowed timeout leaves no cancellation behind to hit them.
    assert len(results) == 2


async def test_allowlist_entries_naming_nothing_are_logged_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    from agentkit.testing import FunctionProvider

    spec = AgentSpec(
        id="demo:typos",
        tools=["add", "mcp__nowhere"],  # an MCP server's tools (it may have none)
        actions=["demo:missing"],
        allowed_subagents=["demo:ghost"],
    )
    provider = FunctionProvider(lambda request: "ok", record=True)
    registry = ToolRegistry([Tool("add", "Add.", ADD_SCHEMA, _add)])
    with caplog.at_level("WARNING", logger="agentkit.engine"):
        async with Runtime(provider=provider, tools=registry) as runtime:
            for _ in range(3):
                await (await runtime.start(spec, "hi")).wait()
    warnings = [r.getMessage() for r in caplog.records if r.name == "agentkit.engine"]
    assert len(warnings) == 2  # once per spec, not once per run
    assert "mcp__nowhere, demo:missing" in warnings[0]
    assert "demo:ghost" in warnings[1]
    assert [t.name for t in provider.requests[-1].tools] == ["add", "summon"]


async def test_a_tool_timeout_holds_while_the_tool_waits_on_a_worker_thread() -> None:
    import threading
    import time

    release = threading.Event()

    async def blocking(arguments: dict[str, Any], context: Any) -> str:
        # A worker thread cannot be interrupted: anyio waits for it even when cancelled.
        await anyio.to_thread.run_sync(release.wait, 30)
        return "finished"

    spec = AgentSpec(id="demo:t", tools=("blocking",), permission_mode="bypassPermissions")
    tool = Tool("blocking", "Blocks a thread.", {"type": "object"}, blocking, timeout=1)
    provider = ScriptedProvider([call("blocking"), "done"])
    try:
        async with Runtime(provider=provider, tools=ToolRegistry([tool])) as runtime:
            started = time.monotonic()
            run = await runtime.start(spec, "go")
            with anyio.fail_after(20):
                outcome = await run.wait()
            elapsed = time.monotonic() - started
    finally:
        release.set()  # the abandoned thread ends now, not in 30 s
    assert outcome.ok and outcome.text == "done"
    # 1 s timeout and 1 s grace for shielded cleanup, not the 30 s the thread would take.
    assert elapsed < 6, elapsed
    [result] = [e async for e in run.events() if e.type == "tool_result"]
    assert result.is_error and result.output == "blocking timed out after 1 seconds"


# --- output limits ----------------------------------------------------------------------


async def test_a_huge_tool_output_is_cut_to_its_head_with_a_note_everywhere() -> None:
    from agentkit.runtime import OutputLimits

    async def flood(arguments: dict[str, Any], context: Any) -> str:
        return "x" * 20_000_000  # 20 MB: the model, the events and the store get its head only

    spec = AgentSpec(id="demo:f", tools=("flood",), permission_mode="bypassPermissions")
    registry = ToolRegistry([Tool("flood", "Floods.", {"type": "object"}, flood)])
    provider = ScriptedProvider([call("flood"), "done"])
    store = MemoryStore()
    async with Runtime(provider=provider, tools=registry, store=store) as runtime:
        run = await runtime.start(spec, "go")
        outcome = await run.wait()
    assert outcome.ok
    cap = OutputLimits().tool_output_chars
    assert cap == 200_000
    [result] = [e async for e in run.events() if e.type == "tool_result"]
    assert not result.is_error
    assert result.output.startswith("x" * cap)
    assert result.output.endswith(
        "[output truncated by agentkit: the first 200,000 of 20,000,000 characters are shown]"
    )
    assert len(result.output) < cap + 200
    sent = provider.requests[1].messages[-1]
    assert isinstance(sent, ToolResultMessage) and sent.content == result.output
    transcript = await store.load_transcript(outcome.session_id)
    assert max(len(json.dumps(m.model_dump())) for m in transcript) < cap + 500


async def test_output_caps_cover_structured_results_and_actions_and_are_configurable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from agentkit.runtime import OutputLimits

    actions = ActionRegistry()

    @actions.action("demo:big")
    async def big(arguments: dict[str, Any], context: Any) -> ActionResult:
        return ActionResult.ok({"rows": list(range(10_000))})

    async def rows(arguments: dict[str, Any], context: Any) -> dict[str, Any]:
        return {"rows": ["row"] * 10_000}

    spec = AgentSpec(
        id="demo:s", tools=("rows",), actions=("demo:big",), permission_mode="bypassPermissions"
    )
    registry = ToolRegistry([Tool("rows", "Rows.", {"type": "object"}, rows)])
    provider = ScriptedProvider([call("rows"), call("demo__big"), "done"] * 2)
    async with Runtime(provider=provider, tools=registry, actions=actions) as runtime:
        runtime.limits = OutputLimits(tool_output_chars=100)
        run = await runtime.start(spec, "go")
        assert (await run.wait()).ok
        shown = [e.output async for e in run.events() if e.type == "tool_result"]
        runtime.limits = None  # read from the environment at the next turn
        monkeypatch.setenv("AGENTKIT_MAX_TOOL_OUTPUT_CHARS", "50")
        run = await runtime.start(spec, "go")
        assert (await run.wait()).ok
        shown += [e.output async for e in run.events() if e.type == "tool_result"]
    assert [s[:12] for s in shown] == ['{"rows": ["r', '{"status": "'] * 2
    assert [len(s.partition("\n\n")[0]) for s in shown] == [100, 100, 50, 50]
    assert all("characters are shown]" in s for s in shown)


def test_output_limits_from_the_environment() -> None:
    from agentkit.runtime import OutputLimits

    assert OutputLimits.from_env({}) == OutputLimits()
    limits = OutputLimits.from_env(
        {"AGENTKIT_MAX_TOOL_OUTPUT_CHARS": "1_000", "AGENTKIT_MAX_REPLY_CHARS": "none"}
    )
    assert limits == OutputLimits(tool_output_chars=1000, reply_chars=None)
    # A typo is ignored (and logged), never a reason for a run to fail.
    assert OutputLimits.from_env({"AGENTKIT_MAX_REPLY_CHARS": "lots"}) == OutputLimits()
    assert OutputLimits.from_env({"AGENTKIT_MAX_REPLY_CHARS": "-5"}) == OutputLimits()


class _EndlessProvider:
    """A model that never stops talking (or thinking, or calling a tool with huge input)."""

    name = "endless"

    def __init__(self, kind: str) -> None:
        self.kind = kind

    def resolve_model(self, tier: str | None, model: str | None) -> str:
        return "endless-1"

    async def stream(self, request: ModelRequest) -> AsyncIterator[Chunk]:
        from agentkit.providers import ToolCall, ToolCallChunk

        if self.kind == "tool":
            yield ToolCallChunk(ToolCall(id="c1", name="add", arguments={"a": "1" * 5000}))
        while True:
            yield TextChunk("blah " * 20) if self.kind == "text" else ThinkingChunk("hmm " * 25)
            await anyio.lowlevel.checkpoint()


@pytest.mark.parametrize("kind", ["text", "thinking", "tool"])
async def test_a_reply_over_the_size_cap_ends_the_model_call_with_a_clear_error(
    kind: str,
) -> None:
    from agentkit.runtime import OutputLimits

    async with Runtime(provider=_EndlessProvider(kind), tools=tools()) as runtime:
        runtime.limits = OutputLimits(reply_chars=4000)
        run = await runtime.start(SPEC, "go")
        with anyio.fail_after(10):  # a model that never stops streaming is cut off
            outcome = await run.wait()
    assert outcome.status == "error"
    assert outcome.error.startswith("model call failed: the model's reply went over 4,000 ")
    deltas = [e.content async for e in run.events() if e.type == "text_delta"]
    assert sum(map(len, deltas)) <= 4000
    assert outcome.accounting.model_calls == 1  # not retried


async def test_the_default_reply_cap_stops_an_endless_stream() -> None:
    async with Runtime(provider=_EndlessProvider("text"), tools=tools()) as runtime:
        run = await runtime.start(SPEC, "go")
        with anyio.fail_after(60):
            outcome = await run.wait()
    assert outcome.status == "error" and "1,000,000 characters" in (outcome.error or "")


async def test_cancelling_a_run_whose_tool_waits_on_a_worker_thread_ends_it_promptly() -> None:
    import threading
    import time

    release = threading.Event()

    async def blocking(arguments: dict[str, Any], context: Any) -> str:
        await anyio.to_thread.run_sync(release.wait, 60)
        return "finished"

    spec = AgentSpec(id="demo:t", tools=("blocking",), permission_mode="bypassPermissions")
    tool = Tool("blocking", "Blocks a thread.", {"type": "object"}, blocking, timeout=60)
    provider = ScriptedProvider([call("blocking"), "never reached"])
    try:
        async with Runtime(provider=provider, tools=ToolRegistry([tool])) as runtime:
            run = await runtime.start(spec, "go")
            async for event in run.events():
                if event.type == "tool_use":
                    await anyio.sleep(0.2)  # the tool waits on its thread now
                    started = time.monotonic()
                    run.cancel()
            with anyio.fail_after(20):
                outcome = await run.wait()
            elapsed = time.monotonic() - started
    finally:
        release.set()
    # Within a poll and a grace (about 2 s), not at the 60 s timeout or the thread's end.
    assert elapsed < 6, elapsed
    assert outcome.status == "interrupted"
    kinds = [e.type async for e in run.events()]
    assert "tool_result" not in kinds and kinds[-2:] == ["error", "turn_end"]
