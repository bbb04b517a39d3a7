"""Events and transcript messages built without validation, on the hot path.

Validating a pydantic model costs microseconds; a run builds a dozen events and messages
from values the engine made itself. Each builder here checks the types of what it is given
and builds the model exactly as validation would (same `__dict__`, same fields set);
anything unexpected takes the validating constructor instead, which raises the error a
caller would expect. `tests/engine/test_bench_fastpaths.py` proves the two paths equal.
"""

from __future__ import annotations

from typing import Any, Literal, TypeVar

from pydantic import BaseModel

from agentkit._internal.models import (
    new_model,
    set_dict,
    set_extra,
    set_fields_set,
    set_private,
    shared_fields_set,
)
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
    TurnStatus,
)
from agentkit.messages import (
    AssistantMessage,
    ThinkingBlock,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)

__all__ = [
    "assistant_message",
    "result_event",
    "session_init_event",
    "text_delta_event",
    "text_event",
    "tool_result_event",
    "tool_result_message",
    "tool_use_event",
    "trusted_model",
    "turn_end_event",
    "turn_start_event",
    "user_message",
]

_E = TypeVar("_E", bound=BaseModel)


def trusted_model(cls: type[_E], fields_set: Any, values: dict[str, Any]) -> _E:
    """`cls` with `values` (every field, in declaration order) and `fields_set` (the names
    the caller gave explicitly), exactly as validating those values would build it."""
    return _build(cls, shared_fields_set(fields_set), values)


def _build(cls: type[_E], fields_set: set[str], values: dict[str, Any]) -> _E:
    """`trusted_model` with the shared fields set already looked up (the builders below)."""
    model = new_model(cls)
    set_dict(model, values)
    set_fields_set(model, fields_set)
    set_extra(model, None)
    set_private(model, None)
    return model


def _given(cls: type[BaseModel]) -> set[str]:
    """The shared fields set of an event whose every field but `agent` and `type` is given."""
    return shared_fields_set(set(cls.model_fields) - {"agent", "type"})


# Each builder checks the types of what it is given; anything unexpected takes the
# validating constructor, which raises the error a caller would expect.

_CONTENT_ONLY = shared_fields_set(("content",))


def text_delta_event(content: str) -> TextDelta:
    if type(content) is not str:
        return TextDelta(content=content)
    # _build, inlined: this runs once per streamed delta
    delta = new_model(TextDelta)
    set_dict(delta, {"agent": None, "type": "text_delta", "content": content})
    set_fields_set(delta, _CONTENT_ONLY)
    set_extra(delta, None)
    set_private(delta, None)
    return delta


def text_event(content: str, turn_phase: Literal["commentary", "final"]) -> Text:
    if type(content) is not str or turn_phase not in ("commentary", "final"):
        return Text(content=content, turn_phase=turn_phase)
    values = {"agent": None, "type": "text", "content": content, "turn_phase": turn_phase}
    return _build(Text, _TEXT, values)


def tool_use_event(id: str, tool: str, input: dict[str, Any]) -> ToolUse:
    if type(id) is not str or type(tool) is not str or type(input) is not dict:
        return ToolUse(id=id, tool=tool, input=input)
    # validation copies the dict (shallowly): so does this
    values = {"agent": None, "type": "tool_use", "id": id, "tool": tool, "input": dict(input)}
    return _build(ToolUse, _TOOL_USE, values)


def tool_result_event(tool_use_id: str, tool: str, output: Any, is_error: bool) -> ToolResult:
    if type(tool_use_id) is not str or type(tool) is not str or type(is_error) is not bool:
        return ToolResult(tool_use_id=tool_use_id, tool=tool, output=output, is_error=is_error)
    values = {
        "agent": None,
        "type": "tool_result",
        "tool_use_id": tool_use_id,
        "tool": tool,
        "output": output,
        "is_error": is_error,
    }
    return _build(ToolResult, _TOOL_RESULT, values)


def turn_start_event(
    turn_id: str, session_id: str, user_prompt: str, trace_parent: str | None = None
) -> TurnStart:
    if (
        type(turn_id) is not str
        or type(session_id) is not str
        or type(user_prompt) is not str
        or (trace_parent is not None and type(trace_parent) is not str)
    ):
        return TurnStart(
            turn_id=turn_id,
            session_id=session_id,
            user_prompt=user_prompt,
            trace_parent=trace_parent,
        )
    values = {
        "agent": None,
        "type": "turn_start",
        "turn_id": turn_id,
        "session_id": session_id,
        "user_prompt": user_prompt,
        "trace_parent": trace_parent,
    }
    # As validation would record it: `trace_parent` is a given field only when it is.
    return _build(TurnStart, _TURN_START if trace_parent is None else _TURN_START_TRACED, values)


def session_init_event(
    session_id: str, system_prompt: str | None, project_path: str | None
) -> SessionInit:
    if (
        type(session_id) is not str
        or (system_prompt is not None and type(system_prompt) is not str)
        or (project_path is not None and type(project_path) is not str)
    ):
        return SessionInit(
            session_id=session_id, system_prompt=system_prompt, project_path=project_path
        )
    values = {
        "agent": None,
        "type": "session_init",
        "session_id": session_id,
        "system_prompt": system_prompt,
        "project_path": project_path,
    }
    return _build(SessionInit, _SESSION_INIT, values)


def turn_end_event(turn_id: str, status: TurnStatus, duration_ms: int) -> TurnEnd:
    if (
        type(turn_id) is not str
        or status not in ("completed", "interrupted", "error")
        or type(duration_ms) is not int
    ):
        return TurnEnd(turn_id=turn_id, status=status, duration_ms=duration_ms)
    values = {
        "agent": None,
        "type": "turn_end",
        "turn_id": turn_id,
        "status": status,
        "duration_ms": duration_ms,
    }
    return _build(TurnEnd, _TURN_END, values)


def result_event(content: str, accounting: Accounting | None) -> Result:
    if type(content) is not str or (accounting is not None and type(accounting) is not Accounting):
        return Result(content=content, accounting=accounting)
    values = {"agent": None, "type": "result", "content": content, "accounting": accounting}
    return _build(Result, _RESULT, values)


_TEXT = _given(Text)
_TOOL_USE = _given(ToolUse)
_TOOL_RESULT = _given(ToolResult)
_TURN_START_TRACED = _given(TurnStart)
_TURN_START = shared_fields_set(_TURN_START_TRACED - {"trace_parent"})
_SESSION_INIT = _given(SessionInit)
_TURN_END = _given(TurnEnd)
_RESULT = _given(Result)


_USER_FIELDS = shared_fields_set(("content",))


_ASSISTANT_FIELDS = shared_fields_set(("thinking", "text", "tool_calls"))


_TOOL_RESULT_FIELDS = shared_fields_set(("tool_call_id", "name", "content", "is_error"))


def user_message(content: str) -> UserMessage:
    if type(content) is not str:
        return UserMessage(content=content)
    return _build(UserMessage, _USER_FIELDS, {"role": "user", "content": content})


def _all_of(items: tuple[Any, ...], cls: type) -> bool:
    # A plain loop: `all()` over a generator costs more than the check for short tuples.
    for item in items:  # noqa: SIM110
        if type(item) is not cls:
            return False
    return True


def assistant_message(
    thinking: tuple[ThinkingBlock, ...], text: str, tool_calls: tuple[ToolCall, ...]
) -> AssistantMessage:
    if (
        type(text) is not str
        or (tool_calls and not _all_of(tool_calls, ToolCall))
        or (thinking and not _all_of(thinking, ThinkingBlock))
    ):
        return AssistantMessage(thinking=thinking, text=text, tool_calls=tool_calls)
    return _build(
        AssistantMessage,
        _ASSISTANT_FIELDS,
        {"role": "assistant", "thinking": thinking, "text": text, "tool_calls": tool_calls},
    )


def tool_result_message(
    tool_call_id: str, name: str, content: str, is_error: bool
) -> ToolResultMessage:
    if (
        type(tool_call_id) is not str
        or type(name) is not str
        or type(content) is not str
        or type(is_error) is not bool
    ):
        return ToolResultMessage(
            tool_call_id=tool_call_id, name=name, content=content, is_error=is_error
        )
    return _build(
        ToolResultMessage,
        _TOOL_RESULT_FIELDS,
        {
            "role": "tool",
            "tool_call_id": tool_call_id,
            "name": name,
            "content": content,
            "is_error": is_error,
        },
    )
