"""AgentSpec validation and the AgentMessage wire model."""

from __future__ import annotations

from typing import Any

import pytest

from agentkit import AgentSpec, ModelSelection, SpecError
from agentkit.events import (
    Accounting,
    ErrorEvent,
    ModelUsage,
    PermissionDecisionEvent,
    PermissionRequestEvent,
    QuestionAnswerEvent,
    QuestionEvent,
    Result,
    SessionInit,
    StructuredOutput,
    Text,
    TextDelta,
    Thinking,
    ToolResult,
    ToolUse,
    TurnEnd,
    TurnStart,
    from_wire,
    is_final,
    to_wire,
)


@pytest.mark.parametrize(
    ("values", "field"),
    [
        ({"id": "Bad Id"}, "id"),
        ({"id": "a:b", "max_turns": 0}, "max_turns"),
        ({"id": "a:b", "permission_mode": "yolo"}, "permission_mode"),
        ({"id": "a:b", "reasoning_effort": "extreme"}, "reasoning_effort"),
        ({"id": "a:b", "actions": ["notes_create"]}, "actions"),
        ({"id": "a:b", "output_schema": {"type": "nonsense"}}, "output_schema"),
        ({"id": "a:b", "model": {"policy": "tier"}}, "model"),
        ({"id": "a:b", "model": {"policy": "inherit", "model": "x"}}, "model"),
        ({"id": "a:b", "model": {"policy": "require"}}, "model"),
        ({"id": "a:b", "model": {"policy": "select", "model": "has space"}}, "model"),
        ({"id": "a:b", "unknown": 1}, "unknown"),
        ({"id": "a:b", "runtime": "docker"}, "runtime"),
    ],
)
def test_invalid_values_name_the_field(values: dict[str, Any], field: str) -> None:
    with pytest.raises(SpecError) as info:
        AgentSpec(**values)
    assert info.value.field.split(".")[0] == field
    assert str(info.value).startswith(field)


def test_spec_is_immutable_and_defaults() -> None:
    spec = AgentSpec(id="research-app:researcher", tools=["Read"], actions=["*"])
    assert spec.model == ModelSelection.of_tier("medium")
    assert spec.tools == ("Read",) and spec.allows_action("anything:at_all")
    with pytest.raises(ValueError, match="frozen"):
        spec.id = "x"  # type: ignore[misc]


def test_pinned_model_selection() -> None:
    selection = ModelSelection.pinned("grok-4.5", provider="xai", auth="xai-oauth", policy="prefer")
    assert selection.policy == "prefer" and selection.model == "grok-4.5"
    assert AgentSpec(id="worker", model=selection).model.provider == "xai"


EXAMPLES = [
    (
        TurnStart(turn_id="t", session_id="s", user_prompt="p"),
        {"type": "turn_start", "turnId": "t", "sessionId": "s", "userPrompt": "p"},
    ),
    (
        TurnEnd(turn_id="t", status="completed", duration_ms=5),
        {"type": "turn_end", "turnId": "t", "status": "completed", "durationMs": 5},
    ),
    (
        SessionInit(session_id="s", system_prompt="sys", project_path="/w"),
        {"type": "session_init", "sessionId": "s", "systemPrompt": "sys", "projectPath": "/w"},
    ),
    (Thinking(content="hmm"), {"type": "thinking", "content": "hmm"}),
    (
        Text(content="hi", turn_phase="final"),
        {"type": "text", "content": "hi", "turnPhase": "final"},
    ),
    (
        ToolUse(id="1", tool="Read", input={"path": "a"}),
        {"type": "tool_use", "id": "1", "tool": "Read", "input": {"path": "a"}},
    ),
    (
        ToolResult(tool_use_id="1", tool="Read", output="x"),
        {"type": "tool_result", "toolUseId": "1", "tool": "Read", "output": "x", "isError": False},
    ),
    (StructuredOutput(payload={"a": 1}), {"type": "structured_output", "payload": {"a": 1}}),
    (
        Result(content="ok", accounting=Accounting(models={"m": ModelUsage(input_tokens=3)})),
        {
            "type": "result",
            "content": "ok",
            "accounting": {
                "models": {
                    "m": {
                        "inputTokens": 3,
                        "outputTokens": 0,
                        "cacheReadTokens": 0,
                        "cacheWriteTokens": 0,
                        "reasoningTokens": 0,
                    }
                },
                "modelCalls": 0,
                "toolCalls": 0,
                "permissionDenials": 0,
            },
        },
    ),
    (ErrorEvent(error="boom"), {"type": "error", "error": "boom"}),
    (
        TextDelta(content="h", agent="app:sub"),
        {"type": "text_delta", "content": "h", "agent": "app:sub"},
    ),
    (
        PermissionRequestEvent(
            request_id="q1",
            tool_name="Bash",
            tool_use_id="c1",
            input={"command": "ls", "file_path": "a"},
            effect="execute",
            deadline=12.5,
        ),
        {
            "type": "permission_request",
            "requestId": "q1",
            "toolName": "Bash",
            "toolUseId": "c1",
            "input": {"command": "ls", "file_path": "a"},
            "effect": "execute",
            "deadline": 12.5,
        },
    ),
    (
        PermissionDecisionEvent(
            request_id="q1",
            decision="allow",
            updated_input={"command": "ls -a"},
            remember=True,
            rule="Bash(ls)",
        ),
        {
            "type": "permission_decision",
            "requestId": "q1",
            "decision": "allow",
            "updatedInput": {"command": "ls -a"},
            "remember": True,
            "rule": "Bash(ls)",
        },
    ),
    (
        PermissionDecisionEvent(request_id="q2", decision="deny", message="no"),
        {
            "type": "permission_decision",
            "requestId": "q2",
            "decision": "deny",
            "message": "no",
            "remember": False,
        },
    ),
    (
        QuestionEvent(request_id="q3", tool_use_id="c2", questions=[{"id": "a", "question": "?"}]),
        {
            "type": "question",
            "requestId": "q3",
            "toolUseId": "c2",
            "questions": [{"id": "a", "question": "?"}],
        },
    ),
    (
        QuestionAnswerEvent(request_id="q3", answers={"a": ["x", 1]}),
        {"type": "answer", "requestId": "q3", "answers": {"a": ["x", 1]}},
    ),
]


@pytest.mark.parametrize(("event", "wire"), EXAMPLES)
def test_wire_names_round_trip(event: Any, wire: dict[str, Any]) -> None:
    assert to_wire(event) == wire
    assert from_wire(wire) == event
    import json

    assert from_wire(json.dumps(wire)) == event


def test_unknown_type_is_rejected() -> None:
    with pytest.raises(ValueError):
        from_wire({"type": "telepathy", "content": "x"})


def test_final_blocks_and_accounting_totals() -> None:
    assert is_final(Result(content="x")) and is_final(ErrorEvent(error="x"))
    assert not is_final(Text(content="x"))
    accounting = Accounting(
        models={"a": ModelUsage(input_tokens=1, output_tokens=2), "b": ModelUsage(input_tokens=3)}
    )
    assert accounting.total.input_tokens == 4 and accounting.total.output_tokens == 2


@pytest.mark.parametrize(
    ("schema", "message"),
    [
        ({"type": "object", "properties": {"x": {"type": "string", "pattern": "["}}}, "regex"),
        ({"properties": {"x": {"$ref": "#/$defs/missing"}}}, "does not resolve"),
        ({"properties": {"x": {"$ref": "https://example.com/s.json"}}}, "does not resolve"),
    ],
)
def test_output_schemas_that_cannot_be_applied_are_rejected(
    schema: dict[str, Any], message: str
) -> None:
    with pytest.raises(SpecError, match=message) as info:
        AgentSpec(id="a:b", output_schema=schema)
    assert info.value.field == "output_schema"


def test_local_refs_are_fine() -> None:
    schema = {"$defs": {"a": {"type": "string"}}, "properties": {"x": {"$ref": "#/$defs/a"}}}
    assert AgentSpec(id="a:b", output_schema=schema).output_schema == schema


@pytest.mark.parametrize("entry", ["", "  ", "Bash(", "(git *)"])
def test_malformed_tool_entries_are_rejected(entry: str) -> None:
    with pytest.raises(SpecError) as info:
        AgentSpec(id="a:b", tools=(entry,))
    assert info.value.field.startswith("tools")
