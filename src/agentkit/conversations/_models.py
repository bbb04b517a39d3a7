"""The data of the conversations API: members, agents, conversations, turns, parts, views.

Every model is a frozen pydantic model with snake_case attributes that serialises with
the specification's camelCase names (`model_dump(by_alias=True)`), so the remote client
and server exchange exactly these.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, TypeAlias

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from agentkit.spec import ModelSelection, PermissionMode, ReasoningEffort

__all__ = [
    "AgentDefinition",
    "AgentInfo",
    "AnswerPart",
    "AttachmentPart",
    "ConversationDetails",
    "ConversationSummary",
    "ConversationView",
    "FinalEvent",
    "FinalStatus",
    "FollowEvent",
    "IfBusy",
    "JsonPart",
    "Member",
    "OutputEvent",
    "Part",
    "PendingRequestInfo",
    "PermissionDecisionPart",
    "PermissionRequestPart",
    "PromptAccepted",
    "QuestionPart",
    "QueuedPrompt",
    "Role",
    "TextDeltaPart",
    "TextPart",
    "ToolCallPart",
    "ToolResultPart",
    "Turn",
    "TurnPart",
    "TurnStatus",
    "UploadedFile",
    "Visibility",
]

Role = Literal["owner", "editor", "viewer"]
"""A member's role: owners manage agents; owners and editors create conversations and
prompt; viewers read shared conversations."""

Visibility = Literal["private", "shared"]
"""`private`: only its creator sees it; `shared`: every member of the machine does."""

TurnStatus = Literal["running", "completed", "cancelled", "error", "interrupted"]
"""An agent turn's status. `interrupted`: its process stopped while it ran (ended through
the core's leases after a restart). User turns are always `completed`."""

FinalStatus = Literal["completed", "cancelled", "error"]
"""How a followed run ended."""

IfBusy = Literal["reject", "enqueue", "interrupt"]
"""What a prompt does when its conversation has a run going: `reject` it
(`ConversationBusyError`), `enqueue` it (it runs after the runs before it, in order), or
`interrupt` the running run (it ends `cancelled`) and start now."""


class _Model(BaseModel):
    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, frozen=True, extra="forbid"
    )


# --- parts ------------------------------------------------------------------------------


class TextPart(_Model):
    """Text: the user's prompt, or what the agent wrote."""

    type: Literal["text"] = "text"
    text: str


class AttachmentPart(_Model):
    """A file attached to a user turn, by its path under an attachment root."""

    type: Literal["attachment"] = "attachment"
    path: str


class ToolCallPart(_Model):
    """A tool call the agent made."""

    type: Literal["tool_call"] = "tool_call"
    id: str
    tool: str
    input: dict[str, Any]


class ToolResultPart(_Model):
    """The result of a tool call (`is_error` when it failed or was refused)."""

    type: Literal["tool_result"] = "tool_result"
    tool_call_id: str
    tool: str
    output: Any = None
    is_error: bool = False


class JsonPart(_Model):
    """Structured output: the agent's answer to a prompt with an `output_schema`."""

    type: Literal["json"] = "json"
    value: Any = None


class TextDeltaPart(_Model):
    """A live piece of text still being written. Only `follow()` yields these; the
    `text` part that follows them holds the complete text (it replaces them)."""

    type: Literal["text_delta"] = "text_delta"
    text: str


class PermissionRequestPart(_Model):
    """A call that waits for a person's consent: decide it (`client.decide`) by its
    `request_id`; `deadline` (seconds since the epoch) is when it is ended as denied."""

    type: Literal["permission_request"] = "permission_request"
    request_id: str
    tool_call_id: str
    tool: str
    input: dict[str, Any]
    effect: Literal["read", "edit", "execute"]
    deadline: float | None = None


class PermissionDecisionPart(_Model):
    """How a permission request was decided (`rule`: the allow rule remembered)."""

    type: Literal["permission_decision"] = "permission_decision"
    request_id: str
    decision: Literal["allow", "deny"]
    message: str | None = None
    remember: bool = False
    rule: str | None = None


class QuestionPart(_Model):
    """Questions put to a person (`{"id", "question", "options"?, "multiple"?}` each):
    answer them (`client.answer`) by `request_id`."""

    type: Literal["question"] = "question"
    request_id: str
    tool_call_id: str
    questions: tuple[dict[str, Any], ...]
    deadline: float | None = None


class AnswerPart(_Model):
    """The answers a question got (`error` instead when nobody answered in time)."""

    type: Literal["answer"] = "answer"
    request_id: str
    answers: Any = None
    error: str | None = None


TurnPart: TypeAlias = Annotated[
    TextPart
    | AttachmentPart
    | ToolCallPart
    | ToolResultPart
    | JsonPart
    | PermissionRequestPart
    | PermissionDecisionPart
    | QuestionPart
    | AnswerPart,
    Field(discriminator="type"),
]
"""A saved part of a turn, discriminated on `type`."""

Part: TypeAlias = Annotated[
    TextPart
    | AttachmentPart
    | ToolCallPart
    | ToolResultPart
    | JsonPart
    | PermissionRequestPart
    | PermissionDecisionPart
    | QuestionPart
    | AnswerPart
    | TextDeltaPart,
    Field(discriminator="type"),
]
"""Any output part, live `text_delta` included."""


# --- turns and conversations -----------------------------------------------------------


class Turn(_Model):
    """One saved turn: the user's prompt or the agent's answer to it (one run each).

    Attributes:
        id: `u-<run id>` for the user turn of a run, `a-<run id>` for its agent turn.
        status: For agent turns, how the run ended; user turns are `completed`.
        error: Why an agent turn did not complete.
    """

    id: str
    role: Literal["user", "agent"]
    run_id: str
    status: TurnStatus
    parts: tuple[TurnPart, ...] = ()
    error: str | None = None
    created_at: float

    @property
    def text(self) -> str:
        """The text parts joined: what a transcript view shows."""
        return "".join(part.text for part in self.parts if isinstance(part, TextPart))


class ConversationSummary(_Model):
    """A light row of `list_conversations()`.

    Attributes:
        agent: The agent's name; `agent_id` its id.
    """

    id: str
    name: str
    agent: str
    agent_id: str
    visibility: Visibility
    created_at: float
    updated_at: float
    is_running: bool


class QueuedPrompt(_Model):
    """A prompt waiting for its conversation's running run to end (`if_busy="enqueue"`).

    Attributes:
        id: The id of the run it becomes when it starts: follow it by this id then.
        member: The name of the member who queued it; `member_id` its id. The member's
            right to prompt is checked again when it starts.
        status: `queued` while it waits; `dropped` when it will not run (its member was
            removed or may no longer prompt, the conversation's agent was deleted):
            `error` says why. Cancelling a dropped prompt removes it from the list.
    """

    id: str
    prompt: str
    member: str
    member_id: str
    created_at: float
    status: Literal["queued", "dropped"] = "queued"
    error: str | None = None


class PendingRequestInfo(_Model):
    """What a waiting run asks a person for (see docs/human-in-the-loop.md).

    Attributes:
        request_id: What to decide (`client.decide`) or answer (`client.answer`).
        run_id: The waiting run.
        kind: `permission` (decide it) or `question` (answer it).
        tool: The tool the call is for; `tool_call_id` the call.
        input: The call's input (a permission).
        effect: `read`, `edit` or `execute` (a permission).
        questions: The questions (a question).
        deadline: When it is ended as denied (seconds since the epoch), if ever.
    """

    request_id: str
    run_id: str
    kind: Literal["permission", "question"]
    tool: str
    tool_call_id: str
    input: dict[str, Any] | None = None
    effect: str | None = None
    questions: tuple[dict[str, Any], ...] | None = None
    deadline: float | None = None


class ConversationDetails(_Model):
    """`get()`: a conversation's metadata and its saved turns.

    Attributes:
        agent: The agent's name (as it was when deleted); `agent_id` its id.
        agent_deleted: The agent was deleted: the conversation takes no prompt.
        creator: The creator's name; `creator_id` its member id.
    """

    id: str
    name: str
    agent: str
    agent_id: str
    agent_deleted: bool = False
    visibility: Visibility
    creator: str
    creator_id: str
    instructions: str | None = None
    created_at: float
    updated_at: float
    is_running: bool
    active_run_id: str | None = None
    turns: tuple[Turn, ...] = ()
    queued: tuple[QueuedPrompt, ...] = ()
    """The prompts waiting for the running run to end, in the order they will run."""
    pending_requests: tuple[PendingRequestInfo, ...] = ()
    """What the running run waits on a person for (it is `waiting`; `is_running` stays
    true: the run has not ended, and the conversation takes no other prompt meanwhile)."""


class PromptAccepted(_Model):
    """What `prompt()` returns once the run is accepted and stored.

    Attributes:
        status: `running`: the run has started; `queued`: the conversation was busy and
            the prompt waits its turn (`if_busy="enqueue"`); `run_id` is the id the run
            will have when it starts. A [`RunResult`][agentkit.conversations.RunResult]
            (a prompt waited for, `wait=`) has the run's final status instead.
    """

    conversation_id: str
    run_id: str
    turn_id: str
    """The id of the new user turn (`u-<run id>`)."""
    status: Literal["running", "queued", "completed", "cancelled", "error"] = "running"


# --- follow -----------------------------------------------------------------------------


class OutputEvent(_Model):
    """One output part of a followed run, at its offset in the run's log."""

    type: Literal["output"] = "output"
    offset: int
    part: Part


class FinalEvent(_Model):
    """The last event of a followed run: how it ended, and why when it did not complete."""

    type: Literal["final"] = "final"
    offset: int
    status: FinalStatus
    error: str | None = None


FollowEvent: TypeAlias = Annotated[OutputEvent | FinalEvent, Field(discriminator="type")]
"""What `follow()` yields: output parts, then exactly one `FinalEvent`."""


# --- watch ------------------------------------------------------------------------------


class ConversationView(_Model):
    """What `watch()` delivers, at once and after every change.

    Attributes:
        turns: The saved turns (a running run's agent turn is in `output` until it ends).
        output: The running run's output so far, live text merged into text parts.
        is_running: Whether a run is going.
        queued: The prompts waiting for the running run to end, in order.
        pending_requests: What the running run waits on a person for: it is waiting
            (`is_running` stays true) until someone decides or answers.
        loading: True only for the first view, before the initial read.
        error: The current watch failure (a store that does not answer, a conversation
            deleted or no longer visible), else `None`.
    """

    turns: tuple[Turn, ...] = ()
    output: tuple[TurnPart, ...] = ()
    is_running: bool = False
    active_run_id: str | None = None
    queued: tuple[QueuedPrompt, ...] = ()
    pending_requests: tuple[PendingRequestInfo, ...] = ()
    loading: bool = False
    error: str | None = None


# --- members and agents -----------------------------------------------------------------


class Member(_Model):
    """A member of the machine: its id, a name and a role (its token is stored hashed).

    Attributes:
        id: Never reused: a member added later under the same name has another id and
            sees nothing of this one's.
    """

    id: str
    name: str
    role: Role


class AgentDefinition(_Model):
    """What an owner gives to create or replace an agent.

    Attributes:
        name: Lowercase letters, digits and single hyphens (`reviewer`).
        instructions: Appended to the machine's built-in context.
        model: The model selection; the machine's default (`medium` tier) when `None`.
        tools: The tool allowlist; `None` gives read-only file tools inside the
            attachment roots.
        permission_mode: How calls that change the world are permitted.
    """

    name: str
    description: str = ""
    instructions: str = ""
    model: ModelSelection | None = None
    tools: tuple[str, ...] | None = None
    permission_mode: PermissionMode = "default"
    reasoning_effort: ReasoningEffort | None = None


class AgentInfo(_Model):
    """An agent of the machine, as `list_agents()` shows it.

    Attributes:
        id: Kept when the agent is replaced, never reused once it is deleted.
        version: 1 when created, one more at every replacement.
        source: `builtin` (rool), `machine` (created by an owner) or `configured`
            (loaded at start from a definition file or an app folder; read-only).
    """

    id: str
    name: str
    version: int = 1
    description: str = ""
    instructions: str = ""
    tools: tuple[str, ...] = ()
    source: Literal["builtin", "machine", "configured"]
    updated_at: float | None = None


# --- uploads ----------------------------------------------------------------------------


class UploadedFile(_Model):
    """A file an upload stored: attach it to a prompt by its `path`.

    Attributes:
        path: The file's absolute path on the machine, under an attachment root (what
            `prompt(..., attachments=[path])` takes).
        name: The name it was stored under (the name asked for, or `<stem>-2.<ext>`, ...
            when that one was taken: an upload never replaces a file).
        size: Its size in bytes.
    """

    path: str
    name: str
    size: int
