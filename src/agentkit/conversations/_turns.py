"""Turns, output parts and final events, read from the core's run logs.

Nothing here is stored: a conversation's turns are its session's runs (one user turn and
one agent turn per run), their stored events mapped to typed parts, and the conversation's
metadata (attachments, runs dropped by `replace_turn`, text a cancelled run had streamed).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from agentkit.conversations._errors import TurnNotFoundError
from agentkit.conversations._meta import ConversationMeta
from agentkit.conversations._models import (
    AnswerPart,
    AttachmentPart,
    FinalEvent,
    FinalStatus,
    JsonPart,
    Part,
    PermissionDecisionPart,
    PermissionRequestPart,
    QuestionPart,
    TextDeltaPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    Turn,
    TurnPart,
    TurnStatus,
)
from agentkit.events import (
    AgentMessage,
    ErrorEvent,
    PermissionDecisionEvent,
    PermissionRequestEvent,
    QuestionAnswerEvent,
    QuestionEvent,
    StructuredOutput,
    Text,
    TextDelta,
    ToolResult,
    ToolUse,
    TurnEnd,
    TurnStart,
)
from agentkit.stores import EventEntry, RunRecord, Store

__all__ = [
    "GOING",
    "INTERRUPTED_REASON",
    "OutputBuffer",
    "active_run",
    "build_turns",
    "final_of",
    "part_of",
    "turn_status",
    "user_turn_id",
]

INTERRUPTED_REASON = "interrupted: its process stopped"
"""The core's reason for a run ended because its lease expired (its process died)."""

GOING = frozenset({"running", "waiting"})
"""The statuses of a run that has not ended: a `waiting` run (it waits for a person) is
going too: its conversation is busy, followers keep reading, watch shows its output."""

_SUBMIT = "submit_output"  # the engine's structured-output tool: shown as a `json` part


def user_turn_id(run_id: str) -> str:
    return f"u-{run_id}"


def agent_turn_id(run_id: str) -> str:
    return f"a-{run_id}"


def part_of(event: AgentMessage) -> Part | None:
    """The output part an event shows as, or `None` for what is not output (lifecycle,
    thinking, the final blocks, the structured-output tool's own call)."""
    if event.agent is not None:
        return None  # a sub-agent's content, forwarded: not this conversation's output
    if isinstance(event, TextDelta):
        return TextDeltaPart(text=event.content)
    if isinstance(event, Text):
        return TextPart(text=event.content)
    if isinstance(event, ToolUse) and event.tool != _SUBMIT:
        return ToolCallPart(id=event.id, tool=event.tool, input=event.input)
    if isinstance(event, ToolResult) and event.tool != _SUBMIT:
        return ToolResultPart(
            tool_call_id=event.tool_use_id,
            tool=event.tool,
            output=event.output,
            is_error=event.is_error,
        )
    if isinstance(event, StructuredOutput):
        return JsonPart(value=event.payload)
    return _request_part(event)


def _request_part(event: AgentMessage) -> Part | None:
    """The part of a request to a person, or of its decision (see `_decisions`)."""
    if isinstance(event, PermissionRequestEvent):
        return PermissionRequestPart(
            request_id=event.request_id,
            tool_call_id=event.tool_use_id,
            tool=event.tool_name,
            input=event.input,
            effect=event.effect,
            deadline=event.deadline,
        )
    if isinstance(event, PermissionDecisionEvent):
        return PermissionDecisionPart(
            request_id=event.request_id,
            decision=event.decision,
            message=event.message,
            remember=event.remember,
            rule=event.rule,
        )
    if isinstance(event, QuestionEvent):
        return QuestionPart(
            request_id=event.request_id,
            tool_call_id=event.tool_use_id,
            questions=tuple(event.questions),
            deadline=event.deadline,
        )
    if isinstance(event, QuestionAnswerEvent):
        return AnswerPart(request_id=event.request_id, answers=event.answers, error=event.error)
    return None


def final_of(end: TurnEnd, error: str | None, offset: int) -> FinalEvent:
    """The final event of a run that ended with `end` (and the `error` block before it)."""
    status: FinalStatus
    if end.status == "completed":
        status = "completed"
    elif end.status == "interrupted":
        status = "cancelled"
    else:
        status = "error"
    return FinalEvent(offset=offset, status=status, error=None if status == "completed" else error)


def turn_status(record: RunRecord) -> TurnStatus:
    """An agent turn's status from its run's record (a waiting run's is `running`)."""
    if record.status in GOING:
        return "running"
    if record.status == "completed":
        return "completed"
    if record.status == "interrupted":
        return "cancelled"
    if record.error == INTERRUPTED_REASON:
        return "interrupted"
    return "error"


class OutputBuffer:
    """A run's output so far, live text merged into text parts (what watch shows)."""

    def __init__(self) -> None:
        self.parts: list[TurnPart] = []
        self._live = False  # whether the last part is text still being streamed

    def add(self, part: Part) -> None:
        if isinstance(part, TextDeltaPart):
            if self._live:
                last = self.parts[-1]
                assert isinstance(last, TextPart)
                self.parts[-1] = TextPart(text=last.text + part.text)
            else:
                self.parts.append(TextPart(text=part.text))
                self._live = True
            return
        if isinstance(part, TextPart) and self._live:
            self.parts[-1] = part  # the complete text replaces its deltas
        else:
            self.parts.append(part)
        self._live = False

    @property
    def streamed(self) -> str:
        """Text streamed since the last complete part (what a cancel would lose)."""
        if self._live:
            last = self.parts[-1]
            assert isinstance(last, TextPart)
            return last.text
        return ""


def _user_turn(record: RunRecord, prompt: str, attachments: Sequence[str]) -> Turn:
    parts: list[TurnPart] = [TextPart(text=prompt)] if prompt else []
    parts.extend(AttachmentPart(path=path) for path in attachments)
    return Turn(
        id=user_turn_id(record.id),
        role="user",
        run_id=record.id,
        status="completed",
        parts=tuple(parts),
        created_at=record.created_at,
    )


def _agent_turn(record: RunRecord, entries: Iterable[EventEntry], partial: str) -> Turn:
    buffer = OutputBuffer()
    for entry in entries:
        part = part_of(entry.event)
        if part is not None:
            buffer.add(part)
    if partial:
        buffer.add(TextPart(text=partial))
    status = turn_status(record)
    return Turn(
        id=agent_turn_id(record.id),
        role="agent",
        run_id=record.id,
        status=status,
        parts=tuple(buffer.parts),
        error=None if status == "completed" else record.error,
        created_at=record.finished_at or record.created_at,
    )


async def build_turns(
    store: Store,
    conversation_id: str,
    meta: ConversationMeta,
    *,
    after: str | None = None,
    count: int | None = None,
) -> tuple[list[Turn], str | None]:
    """The saved turns of a conversation, and the id of its running run (whose agent turn
    is not saved yet, so not among the turns).

    With `after` (a turn id), only the turns after that one; with `count`, at most that
    many: only the runs those turns come from are read. `TurnNotFoundError` when `after`
    is not a saved turn of the conversation (replaced since, say).
    """
    turns: list[Turn] = []
    active: str | None = None
    dropped = set(meta.dropped)
    runs = [record for record in await store.list_runs(conversation_id) if record.id not in dropped]
    skip_user = False
    if after is not None:
        index = next(
            (i for i, r in enumerate(runs) if after in (user_turn_id(r.id), f"a-{r.id}")), None
        )
        if index is None:
            raise TurnNotFoundError(f"no turn {after!r} in this conversation (replaced?)")
        skip_user = after == user_turn_id(runs[index].id)
        runs = runs[index if skip_user else index + 1 :]
    for record in runs:
        if record.status in GOING:
            active = record.id
        if count is not None and len(turns) >= count:
            continue  # still looking for the running run
        entries = await store.read_events(record.id)
        if not skip_user:
            prompt = ""
            if entries and isinstance(entries[0].event, TurnStart):
                prompt = entries[0].event.user_prompt
            entry = meta.runs.get(record.id)
            turns.append(_user_turn(record, prompt, entry.attachments if entry else ()))
        skip_user = False
        if record.status not in GOING:
            turns.append(_agent_turn(record, entries, meta.partials.get(record.id, "")))
    if count is not None:
        del turns[count:]
    return turns, active


async def active_run(store: Store, conversation_id: str) -> RunRecord | None:
    """The conversation's run that is going (running, or waiting for a person), if one is."""
    runs = await store.list_runs(conversation_id)
    return next((run for run in reversed(runs) if run.status in GOING), None)


def error_of(entries: Iterable[EventEntry]) -> str | None:
    """The message of the last `error` block among `entries`."""
    found: str | None = None
    for entry in entries:
        if isinstance(entry.event, ErrorEvent) and entry.event.agent is None:
            found = entry.event.error
    return found
