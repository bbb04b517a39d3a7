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
`tool_use`, `tool_result`, `structured_output`, `result`, `error`), requests to a person
(`permission_request`, `permission_decision`, `question`, `answer`: see
docs/human-in-the-loop.md) and transient (`text_delta`, never stored). Content forwarded
from a sub-agent carries its id in `agent`.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Annotated, Any, Literal, TypeAlias

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter
from pydantic.alias_generators import to_camel

__all__ = [
    "CONTENT_TYPES",
    "LIFECYCLE_TYPES",
    "REQUEST_TYPES",
    "Accounting",
    "AgentMessage",
    "ErrorEvent",
    "ModelUsage",
    "PermissionDecisionEvent",
    "PermissionRequestEvent",
    "QuestionAnswerEvent",
    "QuestionEvent",
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
        alias_generator=to_camel,
        populate_by_name=True,
        frozen=True,
        extra="forbid",
        defer_build=True,
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
    trace_parent: str | None = None
    """The W3C `traceparent` of the run's `invoke_agent` span when the run is traced (see
    the telemetry guide): stored with the run, so that whoever continues it continues
    the same trace."""


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


class PermissionRequestEvent(_Event):
    """A call that needs a person's consent: the run waits (status `waiting`) until
    someone decides it (`Run.decide`, `Runtime.decide`), or its deadline passes."""

    type: Literal["permission_request"] = "permission_request"
    request_id: str
    tool_name: str
    tool_use_id: str
    input: dict[str, Any]
    effect: Literal["read", "edit", "execute"]
    deadline: float | None = None
    """When the request is ended as denied (seconds since the epoch), if the runtime has a
    `request_timeout`."""


class PermissionDecisionEvent(_Event):
    """How a `permission_request` was decided; the run goes on from here."""

    type: Literal["permission_decision"] = "permission_decision"
    request_id: str
    decision: Literal["allow", "deny"]
    message: str | None = None
    """Why it was denied: what the model is told."""
    updated_input: dict[str, Any] | None = None
    """The input the call runs with instead of the model's, when the decider changed it."""
    remember: bool = False
    """Whether an allow rule was stored for later matching calls in the session."""
    rule: str | None = None
    """The remembered rule (see docs/human-in-the-loop.md), when `remember`."""


class QuestionEvent(_Event):
    """The questionnaire tool asks a person: the run waits until someone answers
    (`Run.answer`, `Runtime.answer`), or its deadline passes."""

    type: Literal["question"] = "question"
    request_id: str
    tool_use_id: str
    questions: list[dict[str, Any]]
    deadline: float | None = None


class QuestionAnswerEvent(_Event):
    """The answers to a `question`: what the questionnaire tool gives the model."""

    type: Literal["answer"] = "answer"
    request_id: str
    answers: Any = None
    error: str | None = None
    """Set instead of answers when nobody answered in time."""


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
    | PermissionRequestEvent
    | PermissionDecisionEvent
    | QuestionEvent
    | QuestionAnswerEvent
    | TextDelta,
    Field(discriminator="type"),
]
"""Any event of an agent stream, discriminated on `type`."""

LIFECYCLE_TYPES = frozenset({"turn_start", "turn_end", "session_init"})
CONTENT_TYPES = frozenset(
    {"thinking", "text", "tool_use", "tool_result", "structured_output", "result", "error"}
)
REQUEST_TYPES = frozenset({"permission_request", "permission_decision", "question", "answer"})
"""Events of a run that asks a person and waits (see docs/human-in-the-loop.md)."""


@lru_cache(maxsize=1)
def _adapter() -> TypeAdapter[AgentMessage]:
    return TypeAdapter(AgentMessage)


def to_wire(event: AgentMessage) -> dict[str, Any]:
    """The event as a JSON-ready dict with the specification's camelCase names."""
    return event.model_dump(mode="json", by_alias=True, exclude_none=True)


def wire_json(event: AgentMessage) -> bytes:
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
