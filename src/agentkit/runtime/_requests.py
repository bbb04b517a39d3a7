"""The requests a waiting run puts to a person, as its readers and deciders see them
(see `agentkit.runtime._waiting` for how a decision resumes the run)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from agentkit.engine import remembered
from agentkit.events import AgentMessage, PermissionRequestEvent, QuestionEvent
from agentkit.stores import Store, WaitingRecord

__all__ = ["PendingRequest", "pending_of", "remembered_rules", "waiting_request"]


@dataclass(frozen=True)
class PendingRequest:
    """A request a waiting run puts to a person (see docs/human-in-the-loop.md).

    Attributes:
        request_id: What to decide or answer (`Run.decide`, `Run.answer`).
        run_id: The waiting run.
        kind: `permission` (decide it) or `question` (answer it).
        tool_use_id: The call that waits.
        tool_name: The tool (or action) the call is for.
        input: The call's input (for a permission).
        effect: `read`, `edit` or `execute` (for a permission).
        questions: The questions (for a question): `{"id", "question", "options"?,
            "multiple"?}` each.
        deadline: When it is ended as denied (seconds since the epoch), if ever.
    """

    request_id: str
    run_id: str
    kind: Literal["permission", "question"]
    tool_use_id: str
    tool_name: str
    input: dict[str, Any] | None = None
    effect: str | None = None
    questions: list[dict[str, Any]] | None = None
    deadline: float | None = None


def pending_of(run_id: str, event: AgentMessage) -> PendingRequest:
    """The pending request a `permission_request` or `question` event makes."""
    if isinstance(event, PermissionRequestEvent):
        return PendingRequest(
            request_id=event.request_id,
            run_id=run_id,
            kind="permission",
            tool_use_id=event.tool_use_id,
            tool_name=event.tool_name,
            input=dict(event.input),
            effect=event.effect,
            deadline=event.deadline,
        )
    assert isinstance(event, QuestionEvent)
    return PendingRequest(
        request_id=event.request_id,
        run_id=run_id,
        kind="question",
        tool_use_id=event.tool_use_id,
        tool_name="questionnaire",
        questions=[dict(question) for question in event.questions],
        deadline=event.deadline,
    )


def waiting_request(record: WaitingRecord) -> PendingRequest:
    """The pending request of a stored waiting run."""
    kind = record.state.get("kind")
    request = dict(record.state.get("request") or {})
    request.setdefault("type", "permission_request" if kind == "permission" else "question")
    event: AgentMessage = (
        PermissionRequestEvent.model_validate(request)
        if kind == "permission"
        else QuestionEvent.model_validate(request)
    )
    return pending_of(record.run_id, event)


async def remembered_rules(store: Store, session_id: str) -> list[Any]:
    """The allow rules a person remembered in the session."""
    session = await store.get_session(session_id)
    return [] if session is None else remembered(session.metadata)
