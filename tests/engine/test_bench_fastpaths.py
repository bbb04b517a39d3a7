"""The shortcuts taken for speed give exactly the results of the slow paths they skip.

- The compiled schema check never calls an instance valid that jsonschema rejects, and
  accepts the common valid tool arguments (so the fast path is actually taken).
- Events and transcript messages the engine builds without validation are identical to
  validated ones (equality, repr, fields set, wire form, round trip).
"""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import TypeAdapter

from agentkit._internal.schema import _compile, schema_violations
from agentkit.engine import _trusted as ev
from agentkit.engine._trusted import assistant_message, tool_result_message, user_message
from agentkit.events import (
    Accounting,
    Result,
    SessionInit,
    Text,
    TextDelta,
    ToolResult,
    ToolUse,
    TurnEnd,
    TurnStart,
    from_wire,
    to_wire,
)
from agentkit.providers import (
    AssistantMessage,
    Message,
    ThinkingBlock,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)

# --- schemas ---------------------------------------------------------------------------------

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-5, 5)
    | st.floats(-5, 5, allow_nan=False)
    | st.sampled_from([0.0, 1.0, 2.5])
    | st.text(max_size=3),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from("abcd"), inner, max_size=4)
    ),
    max_leaves=8,
)

type_names = st.sampled_from(
    ["object", "array", "string", "integer", "number", "boolean", "null"]
)
scalars = json_values.filter(lambda v: not isinstance(v, list | dict))


def _schemas() -> st.SearchStrategy[Any]:
    leaf = st.one_of(
        st.builds(lambda t: {"type": t}, type_names),
        st.builds(lambda ts: {"type": ts}, st.lists(type_names, min_size=1, max_size=3)),
        st.builds(lambda e: {"enum": e}, st.lists(scalars, min_size=1, max_size=4)),
        st.just({}),
        st.just(True),
        st.just({"type": "string", "format": "date"}),  # outside the subset: no fast check
        st.just({"type": "string", "minLength": 2}),
    )

    def extend(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
        obj = st.builds(
            lambda props, required, extra, described: {
                "type": "object",
                "properties": props,
                "required": required,
                **({} if extra is None else {"additionalProperties": extra}),
                **({"description": "d"} if described else {}),
            },
            st.dictionaries(st.sampled_from("abcd"), inner, max_size=3),
            st.lists(st.sampled_from("abcd"), max_size=2, unique=True),
            st.none() | st.booleans() | inner,
            st.booleans(),
        )
        arr = st.builds(lambda items: {"type": "array", "items": items}, inner)
        untyped = st.builds(
            lambda props: {"properties": props},
            st.dictionaries(st.sampled_from("ab"), inner, max_size=2),
        )
        return obj | arr | untyped

    return st.recursive(leaf, extend, max_leaves=6)


@settings(max_examples=200, deadline=None)
@given(_schemas(), json_values)
def test_fast_check_never_accepts_what_jsonschema_rejects(schema: Any, instance: Any) -> None:
    check = _compile(schema)
    if check is not None and check(instance):
        assert jsonschema.Draft202012Validator(schema).is_valid(instance), (schema, instance)


@settings(max_examples=100, deadline=None)
@given(_schemas().filter(lambda s: isinstance(s, dict)), json_values)
def test_schema_violations_match_jsonschema(schema: dict[str, Any], instance: Any) -> None:
    validator = jsonschema.Draft202012Validator(
        schema, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER
    )
    assert (schema_violations(instance, schema) == []) == validator.is_valid(instance)


STRING = {"type": "string"}
ADD = {
    "type": "object",
    "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
    "required": ["a", "b"],
    "additionalProperties": False,
}


@pytest.mark.parametrize(
    ("schema", "instance"),
    [
        (ADD, {"a": 1, "b": 2}),
        (ADD, {"a": 1.0, "b": -2}),
        ({"type": "object", "properties": {"path": {"type": "string"}}}, {"path": "x"}),
        (
            {"type": "object", "properties": {"tags": {"type": "array", "items": STRING}}},
            {"tags": ["a"]},
        ),
        (
            {"type": "object", "properties": {"mode": {"enum": ["r", "w"]}}, "required": ["mode"]},
            {"mode": "r"},
        ),
        ({"type": "object", "additionalProperties": {"type": "number"}}, {"x": 1, "y": 2.5}),
    ],
)
def test_common_tool_arguments_take_the_fast_path(schema: dict[str, Any], instance: Any) -> None:
    check = _compile(schema)
    assert check is not None and check(instance)


@pytest.mark.parametrize(
    ("instance", "message"),
    [
        ({"a": 1}, "(root): 'b' is a required property"),
        ({"a": 1, "b": "2"}, "b: '2' is not of type 'integer'"),
        ({"a": True, "b": 2}, "a: True is not of type 'integer'"),
        (
            {"a": 1, "b": 2, "c": 3},
            "(root): Additional properties are not allowed ('c' was unexpected)",
        ),
    ],
)
def test_invalid_arguments_still_get_jsonschema_messages(instance: Any, message: str) -> None:
    assert schema_violations(instance, ADD) == [message]


def test_a_schema_is_compiled_once_per_object() -> None:
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}}
    assert schema_violations({"n": 1}, schema) == []
    assert schema_violations({"n": "x"}, schema) == ["n: 'x' is not of type 'integer'"]
    equal_copy = {"type": "object", "properties": {"n": {"type": "integer"}}}
    assert schema_violations({"n": "x"}, equal_copy) == ["n: 'x' is not of type 'integer'"]


# --- trusted construction -------------------------------------------------------------------

CALL = ToolCall(id="c1", name="add", arguments={"a": 1})
THINKING = ThinkingBlock(content="hm", signature="sig")


@pytest.mark.parametrize(
    ("fast", "validated"),
    [
        (ev.text_delta_event("x"), TextDelta(content="x")),
        (ev.text_event("hi", "final"), Text(content="hi", turn_phase="final")),
        (ev.text_event("hi", "commentary"), Text(content="hi", turn_phase="commentary")),
        (ev.tool_use_event("c1", "add", {"a": 1}), ToolUse(id="c1", tool="add", input={"a": 1})),
        (
            ev.tool_result_event("c1", "add", {"sum": [3]}, False),
            ToolResult(tool_use_id="c1", tool="add", output={"sum": [3]}, is_error=False),
        ),
        (
            ev.turn_start_event("t", "s", "p"),
            TurnStart(turn_id="t", session_id="s", user_prompt="p"),
        ),
        (
            ev.session_init_event("s", None, "/w"),
            SessionInit(session_id="s", system_prompt=None, project_path="/w"),
        ),
        (
            ev.result_event("3", Accounting(model_calls=2)),
            Result(content="3", accounting=Accounting(model_calls=2)),
        ),
        (ev.result_event("", None), Result(content="", accounting=None)),
        (
            ev.turn_end_event("t", "interrupted", 12),
            TurnEnd(turn_id="t", status="interrupted", duration_ms=12),
        ),
    ],
)
def test_trusted_events_equal_validated_ones(fast: Any, validated: Any) -> None:
    assert type(fast) is type(validated)
    assert fast == validated
    assert repr(fast) == repr(validated)
    assert list(fast.__dict__) == list(validated.__dict__)
    assert fast.model_fields_set == validated.model_fields_set
    assert to_wire(fast) == to_wire(validated)
    assert fast.model_dump_json() == validated.model_dump_json()
    assert from_wire(to_wire(fast)) == fast
    assert fast.model_copy(update={"agent": "x"}).agent == "x"
    with pytest.raises(Exception, match="frozen"):
        fast.agent = "y"


def test_trusted_tool_use_copies_the_input_like_validation_does() -> None:
    arguments = {"a": 1}
    event = ev.tool_use_event("c1", "add", arguments)
    arguments["a"] = 2
    assert event.input == {"a": 1}


def test_unexpected_values_still_fail_validation() -> None:
    with pytest.raises(ValueError):
        ev.text_delta_event(3)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        ev.turn_end_event("t", "nope", 1)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("fast", "validated"),
    [
        (user_message("hi"), UserMessage(content="hi")),
        (
            assistant_message((THINKING,), "x", (CALL,)),
            AssistantMessage(thinking=(THINKING,), text="x", tool_calls=(CALL,)),
        ),
        (assistant_message((), "", ()), AssistantMessage(thinking=(), text="", tool_calls=())),
        (
            tool_result_message("c1", "add", "3", True),
            ToolResultMessage(tool_call_id="c1", name="add", content="3", is_error=True),
        ),
    ],
)
def test_trusted_messages_equal_validated_ones(fast: Any, validated: Any) -> None:
    adapter: TypeAdapter[Message] = TypeAdapter(Message)
    assert fast == validated
    assert repr(fast) == repr(validated)
    assert fast.model_fields_set == validated.model_fields_set
    assert adapter.dump_json(fast) == adapter.dump_json(validated)
    assert adapter.validate_json(adapter.dump_json(fast)) == fast
