"""The AgentMessage event model.

Every stream agentkit produces (runner streams, conversation runs, room agents) is a sequence
of these events, a pydantic discriminated union on `type`. Attributes are snake_case in
Python and serialise with the specification's camelCase names:

```python
from agentkit.events import TurnStart, to_wire

event = TurnStart(turn_id="t1", session_id="s1", user_prompt="hi")
assert to_wire(event) == {
    "type": "turn_start", "turnId": "t1", "sessionId": "s1", "userPrompt": "hi"
}
```

Groups: lifecycle (`turn_start`, `turn_end`, `session_init`), content (`thinking`, `text`,
`tool_use`, `tool_result`, `structured_output`, `result`, `error`) and transient
(`text_delta`, never stored). Content forwarded from a sub-agent carries its id in `agent`.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Annotated, Any, Literal, TypeAlias, TypeVar

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter
from pydantic.alias_generators import to_camel

__all__ = [
    "CONTENT_TYPES",
    "LIFECYCLE_TYPES",
    "Accounting",
    "AgentMessage",
    "ErrorEvent",
    "ModelUsage",
    "Result",
    "SessionInit",
    "StructuredOutput",
    "Text",
    "TextDelta",
    "Thinking",
    "ToolResult",
    "ToolUse",
    "TurnEnd",
    "TurnStart",
    "TurnStatus",
    "from_wire",
    "is_final",
    "to_wire",
]

TurnStatus = Literal["completed", "interrupted", "error"]


class _Wire(BaseModel):
    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, frozen=True, extra="forbid"
    )


class ModelUsage(_Wire):
    """Token usage of one model."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    reasoning_tokens: int = 0

    def __add__(self, other: ModelUsage) -> ModelUsage:
        return ModelUsage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cache_read_tokens=self.cache_read_tokens + other.cache_read_tokens,
            cache_write_tokens=self.cache_write_tokens + other.cache_write_tokens,
            reasoning_tokens=self.reasoning_tokens + other.reasoning_tokens,
        )


class Accounting(_Wire):
    """What a turn consumed: tokens per model, model calls, tool calls and denials.

    `cost_usd` is set when the prices of every model used are known.
    """

    models: dict[str, ModelUsage] = Field(default_factory=dict)
    model_calls: int = 0
    tool_calls: int = 0
    permission_denials: int = 0
    cost_usd: float | None = None

    @property
    def total(self) -> ModelUsage:
        """Usage summed over all models."""
        total = ModelUsage()
        for usage in self.models.values():
            total = total + usage
        return total


class _Event(_Wire):
    agent: str | None = None
    """Canonical id of the sub-agent this content came from; `None` for the stream's own."""


class TurnStart(_Event):
    """First event of every stream."""

    type: Literal["turn_start"] = "turn_start"
    turn_id: str
    session_id: str
    user_prompt: str


class TurnEnd(_Event):
    """Last event of every stream."""

    type: Literal["turn_end"] = "turn_end"
    turn_id: str
    status: TurnStatus
    duration_ms: int


class SessionInit(_Event):
    """Describes the session; a sub-agent's is forwarded with `agent` set."""

    type: Literal["session_init"] = "session_init"
    session_id: str
    system_prompt: str | None = None
    project_path: str | None = None


class Thinking(_Event):
    """Reasoning content."""

    type: Literal["thinking"] = "thinking"
    content: str
    signature: str | None = None


class Text(_Event):
    """Narration (`commentary`) or the closing answer (`final`)."""

    type: Literal["text"] = "text"
    content: str
    turn_phase: Literal["commentary", "final"] | None = None


class ToolUse(_Event):
    """A tool call the model made (its proposal, before any check)."""

    type: Literal["tool_use"] = "tool_use"
    id: str
    tool: str
    input: dict[str, Any]


class ToolResult(_Event):
    """The result of a tool call; `is_error` when the call failed or was refused."""

    type: Literal["tool_result"] = "tool_result"
    tool_use_id: str
    tool: str
    output: Any = None
    """`None` (a tool that returned nothing) is left out of the wire form, like every null."""
    is_error: bool = False


class StructuredOutput(_Event):
    """A `submit_output` payload that passed the output schema."""

    type: Literal["structured_output"] = "structured_output"
    payload: Any = None
    """`null` (a schema may allow it) is left out of the wire form, like every null."""


class Result(_Event):
    """The final answer block."""

    type: Literal["result"] = "result"
    content: str
    accounting: Accounting | None = None


class ErrorEvent(_Event):
    """The final failure block."""

    type: Literal["error"] = "error"
    error: str
    accounting: Accounting | None = None


class TextDelta(_Event):
    """A live piece of a `text` block still being written. Never stored."""

    type: Literal["text_delta"] = "text_delta"
    content: str


AgentMessage: TypeAlias = Annotated[
    TurnStart
    | TurnEnd
    | SessionInit
    | Thinking
    | Text
    | ToolUse
    | ToolResult
    | StructuredOutput
    | Result
    | ErrorEvent
    | TextDelta,
    Field(discriminator="type"),
]
"""Any event of an agent stream, discriminated on `type`."""

LIFECYCLE_TYPES = frozenset({"turn_start", "turn_end", "session_init"})
CONTENT_TYPES = frozenset(
    {"thinking", "text", "tool_use", "tool_result", "structured_output", "result", "error"}
)


@lru_cache(maxsize=1)
def _adapter() -> TypeAdapter[AgentMessage]:
    return TypeAdapter(AgentMessage)


def to_wire(event: AgentMessage) -> dict[str, Any]:
    """The event as a JSON-ready dict with the specification's camelCase names."""
    return event.model_dump(mode="json", by_alias=True, exclude_none=True)


def _wire_json(event: AgentMessage) -> bytes:
    """The event's wire form as UTF-8 JSON (what `json.dumps(to_wire(event))` gives, faster:
    the model's serializer is called directly, without `model_dump_json`'s wrapper)."""
    return type(event).__pydantic_serializer__.to_json(event, by_alias=True, exclude_none=True)


def from_wire(data: dict[str, Any] | str | bytes) -> AgentMessage:
    """Parse an event from its wire form (a dict or JSON text)."""
    if isinstance(data, dict):
        return _adapter().validate_python(data)
    return _adapter().validate_json(data)


def is_final(event: AgentMessage) -> bool:
    """Whether the event is a final block (`result` or `error`)."""
    return event.type in ("result", "error")


# --- trusted construction ------------------------------------------------------------------
# The engine and the runtime build several events per tool call and one per streamed delta
# from values they have already checked. These helpers build exactly the object validation
# would build (same `__dict__`, same fields set) without running the validator; every
# user-facing constructor still validates.

_E = TypeVar("_E", bound=BaseModel)
_new = object.__new__
# The slot setters of BaseModel's instance layout, called directly (cheaper than
# object.__setattr__, which frozen models need anyway).
_set_dict = BaseModel.__dict__["__dict__"].__set__
_set_fields_set = BaseModel.__dict__["__pydantic_fields_set__"].__set__
_set_extra = BaseModel.__dict__["__pydantic_extra__"].__set__
_set_private = BaseModel.__dict__["__pydantic_private__"].__set__


_FIELDS_SETS: dict[frozenset[str], set[str]] = {}


def _shared_fields_set(names: Any) -> set[str]:
    """One `set` per distinct set of field names, shared by every trusted model built with
    it. Models here are frozen, so nothing changes the set in place (`model_copy` copies
    it first); sharing it spares each event (and the garbage collector) a set of its own."""
    key = frozenset(names)
    shared = _FIELDS_SETS.get(key)
    if shared is None:
        shared = _FIELDS_SETS[key] = set(key)
    return shared


def _trusted(cls: type[_E], fields_set: Any, values: dict[str, Any]) -> _E:
    """`cls` with `values` (every field, in declaration order) and `fields_set` (the names
    the caller gave explicitly), exactly as validating those values would build it."""
    return _build(cls, _shared_fields_set(fields_set), values)


def _build(cls: type[_E], shared_fields_set: set[str], values: dict[str, Any]) -> _E:
    """`_trusted` with the shared fields set already looked up (the builders below)."""
    model = _new(cls)
    _set_dict(model, values)
    _set_fields_set(model, shared_fields_set)
    _set_extra(model, None)
    _set_private(model, None)
    return model


def _given(cls: type[BaseModel]) -> set[str]:
    """The shared fields set of an event whose every field but `agent` and `type` is given."""
    return _shared_fields_set(set(cls.model_fields) - {"agent", "type"})


# Each builder checks the types of what it is given; anything unexpected takes the
# validating constructor, which raises the error a caller would expect.

_CONTENT_ONLY = _shared_fields_set(("content",))


def _text_delta(content: str) -> TextDelta:
    if type(content) is not str:
        return TextDelta(content=content)
    # _build, inlined: this runs once per streamed delta
    delta = _new(TextDelta)
    _set_dict(delta, {"agent": None, "type": "text_delta", "content": content})
    _set_fields_set(delta, _CONTENT_ONLY)
    _set_extra(delta, None)
    _set_private(delta, None)
    return delta


def _text(content: str, turn_phase: Literal["commentary", "final"]) -> Text:
    if type(content) is not str or turn_phase not in ("commentary", "final"):
        return Text(content=content, turn_phase=turn_phase)
    values = {"agent": None, "type": "text", "content": content, "turn_phase": turn_phase}
    return _build(Text, _TEXT, values)


def _tool_use(id: str, tool: str, input: dict[str, Any]) -> ToolUse:
    if type(id) is not str or type(tool) is not str or type(input) is not dict:
        return ToolUse(id=id, tool=tool, input=input)
    # validation copies the dict (shallowly): so does this
    values = {"agent": None, "type": "tool_use", "id": id, "tool": tool, "input": dict(input)}
    return _build(ToolUse, _TOOL_USE, values)


def _tool_result(tool_use_id: str, tool: str, output: Any, is_error: bool) -> ToolResult:
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


def _turn_start(turn_id: str, session_id: str, user_prompt: str) -> TurnStart:
    if type(turn_id) is not str or type(session_id) is not str or type(user_prompt) is not str:
        return TurnStart(turn_id=turn_id, session_id=session_id, user_prompt=user_prompt)
    values = {
        "agent": None,
        "type": "turn_start",
        "turn_id": turn_id,
        "session_id": session_id,
        "user_prompt": user_prompt,
    }
    return _build(TurnStart, _TURN_START, values)


def _session_init(
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


def _turn_end(turn_id: str, status: TurnStatus, duration_ms: int) -> TurnEnd:
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


def _result(content: str, accounting: Accounting | None) -> Result:
    if type(content) is not str or (accounting is not None and type(accounting) is not Accounting):
        return Result(content=content, accounting=accounting)
    values = {"agent": None, "type": "result", "content": content, "accounting": accounting}
    return _build(Result, _RESULT, values)


_TEXT = _given(Text)
_TOOL_USE = _given(ToolUse)
_TOOL_RESULT = _given(ToolResult)
_TURN_START = _given(TurnStart)
_SESSION_INIT = _given(SessionInit)
_TURN_END = _given(TurnEnd)
_RESULT = _given(Result)
