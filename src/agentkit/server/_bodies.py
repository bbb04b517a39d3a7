"""The request and response bodies the conversations API's models do not cover already.

Field names are camelCase on the wire (`outputSchema`, `replaceTurn`), as every model of
`agentkit.conversations` is dumped, and snake_case in Python; unknown fields are refused (a
misspelt `outputShema` is a 422, not ignored), and so are the Python names (`output_schema`).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from agentkit.conversations import (
    AgentInfo,
    ConversationSummary,
    IfBusy,
    Member,
    Turn,
    Visibility,
)
from agentkit.spec import ReasoningEffort

__all__ = [
    "AgentList",
    "AnswerRequest",
    "CancelResult",
    "ConversationList",
    "CreateConversation",
    "DecisionRequest",
    "ErrorBody",
    "ErrorDetail",
    "ForkRequest",
    "Health",
    "MemberList",
    "NewToken",
    "PromptRequest",
    "RunRequest",
    "TurnList",
    "UpdateConversation",
]


class _Body(BaseModel):
    model_config = ConfigDict(
        extra="forbid", frozen=True, alias_generator=to_camel, populate_by_name=True
    )


class CreateConversation(_Body):
    """`POST /v1/conversations`."""

    agent: str = "rool"
    name: str = Field("", max_length=200)
    visibility: Visibility = "private"
    instructions: str | None = Field(None, max_length=100_000)


class UpdateConversation(_Body):
    """`PATCH /v1/conversations/{id}`: the fields given change."""

    name: str | None = Field(None, max_length=200)
    visibility: Visibility | None = None


class PromptRequest(_Body):
    """`POST /v1/conversations/{id}/runs`."""

    prompt: str = Field("", max_length=1_000_000)
    attachments: list[str] = Field(default_factory=list, max_length=100)
    effort: ReasoningEffort | None = None
    output_schema: dict[str, Any] | None = None
    replace_turn: str | None = None
    if_busy: IfBusy = Field(
        "reject",
        description="When a run is going: `reject` (409 `conversation_busy`), `enqueue` "
        "(202 with `status: queued`; it runs after the prompts queued before it) or "
        "`interrupt` (the running run ends `cancelled`, then this one starts).",
    )


class RunRequest(_Body):
    """`POST /v1/runs`: a run of `agent` in a new private conversation of the caller's,
    with the prompt options of `POST /v1/conversations/{id}/runs`."""

    agent: str = Field("rool", max_length=200)
    prompt: str = Field("", max_length=1_000_000)
    attachments: list[str] = Field(default_factory=list, max_length=100)
    effort: ReasoningEffort | None = None
    output_schema: dict[str, Any] | None = None


class ForkRequest(_Body):
    """`POST /v1/conversations/{id}/fork`: keep the first `turn` prompts with their
    answers (every ended turn when left out), under `name` (the original's with
    " (fork)" when left out)."""

    turn: int | None = Field(None, ge=0, le=1_000_000_000, strict=True)  # never `true`
    name: str | None = Field(None, max_length=200)


class DecisionRequest(_Body):
    """`POST .../runs/{run_id}/decisions`: decide a waiting run's permission request.
    `message` (with `deny`) is what the model is told; `updatedInput` (with `allow`) the
    input the call runs with instead; `remember` (with `allow`) allows later matching
    calls in the conversation without asking."""

    request_id: str = Field(min_length=1, max_length=200)
    decision: Literal["allow", "deny"]
    message: str | None = Field(None, max_length=10_000)
    updated_input: dict[str, Any] | None = None
    remember: bool = False


class AnswerRequest(_Body):
    """`POST .../runs/{run_id}/answers`: answer a waiting run's question; `answers` (any
    JSON, usually `{question id: answer}`) become the questionnaire tool's result."""

    request_id: str = Field(min_length=1, max_length=200)
    answers: Any


class CancelResult(_Body):
    """`POST .../runs/{run_id}/cancel`: whether the run was running (and has now ended)."""

    cancelled: bool


class AgentList(_Body):
    """`GET /v1/agents`: a page of agents; `next` is the cursor of the next page."""

    agents: list[AgentInfo]
    next: str | None = None


class ConversationList(_Body):
    """`GET /v1/conversations`: a page of conversations, newest first."""

    conversations: list[ConversationSummary]
    next: str | None = None


class TurnList(_Body):
    """`GET /v1/conversations/{id}/turns`: a page of turns, oldest first."""

    turns: list[Turn]
    next: str | None = None


class MemberList(_Body):
    """`GET /v1/members`: a page of the members, oldest first (owners only)."""

    members: list[Member]
    next: str | None = None


class NewToken(_Body):
    """`POST /v1/members/{name}/token`: the member's new token (the old one is refused
    from now on)."""

    member: Member
    token: str


class Health(_Body):
    status: Literal["ok"] = "ok"


class ErrorDetail(_Body):
    code: str
    message: str
    field: str | None = None


class ErrorBody(_Body):
    """Every error answer."""

    error: ErrorDetail
