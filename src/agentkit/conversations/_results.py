"""The ended run a wait answers: `RunResult`, built from the outcome of a run this machine
executed, or from the stored events of any other; and the bound of a wait."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from pydantic import Field

from agentkit.conversations._errors import ConversationError
from agentkit.conversations._models import FinalStatus, PromptAccepted
from agentkit.conversations._turns import user_turn_id
from agentkit.events import Accounting, AgentMessage, ErrorEvent, Result, StructuredOutput, TurnEnd
from agentkit.runtime import RunOutcome

__all__ = ["MAX_WAIT", "RunResult", "check_wait", "result_of_events", "result_of_outcome"]

MAX_WAIT = 300.0
"""The longest a prompt may wait for its run's end, in seconds (`wait=`, `?wait=`)."""


class RunResult(PromptAccepted):
    """An ended run: what a prompt with `wait` gives when its run ends within the wait.

    A `PromptAccepted` (the ids) with how the run ended.

    Attributes:
        conversation_id: The run's conversation.
        run_id: The run.
        turn_id: Its user turn (`u-<run id>`).
        status: `completed`, `cancelled` or `error` (as the run's final event says).
        text: The final answer's text (for structured output, the payload as JSON text);
            empty when the run did not complete.
        structured_output: The accepted structured output, when the prompt gave an
            `output_schema` and the agent submitted one, else `None`.
        accounting: Tokens per model, model calls, tool calls, cost.
        error: Why the run did not complete.
    """

    # The ids again, so that they are documented with the rest (they are `PromptAccepted`'s).
    conversation_id: str
    run_id: str
    turn_id: str
    status: FinalStatus
    text: str = ""
    structured_output: Any = None
    accounting: Accounting = Field(default_factory=Accounting)
    error: str | None = None


def check_wait(wait: float | None) -> float | None:
    """`wait` when it is a number of seconds above 0 and at most `MAX_WAIT` (or `None`).

    Raises:
        ConversationError: Anything else.
    """
    if wait is None:
        return None
    if (
        isinstance(wait, bool)
        or not isinstance(wait, int | float)
        or not math.isfinite(wait)
        or not 0 < wait <= MAX_WAIT
    ):
        raise ConversationError(
            f"wait must be a number of seconds above 0 and at most {MAX_WAIT:g}, not {wait!r}"
        )
    return float(wait)


def _final_status(status: str) -> FinalStatus:
    if status == "completed":
        return "completed"
    if status == "interrupted":  # stopped by its user
        return "cancelled"
    return "error"


def result_of_outcome(conversation_id: str, outcome: RunOutcome) -> RunResult:
    """The result of a run this machine executed, from its outcome."""
    return RunResult(
        conversation_id=conversation_id,
        run_id=outcome.run_id,
        turn_id=user_turn_id(outcome.run_id),
        status=_final_status(outcome.status),
        text=outcome.text,
        structured_output=outcome.payload,
        accounting=outcome.accounting,
        error=outcome.error,
    )


def result_of_events(
    conversation_id: str, run_id: str, events: Iterable[AgentMessage], error: str | None
) -> RunResult:
    """The result of an ended run, from its stored events (`error`: its record's, for a
    run whose process died before it wrote its `error` block)."""
    status: FinalStatus = "error"
    text = ""
    payload: Any = None
    accounting = Accounting()
    for event in events:
        if event.agent is not None:
            continue  # a sub-agent's
        if isinstance(event, Result):
            text = event.content
            accounting = event.accounting or accounting
        elif isinstance(event, StructuredOutput):
            payload = event.payload
        elif isinstance(event, ErrorEvent):
            error = event.error
            accounting = event.accounting or accounting
        elif isinstance(event, TurnEnd):
            status = _final_status(event.status)
    return RunResult(
        conversation_id=conversation_id,
        run_id=run_id,
        turn_id=user_turn_id(run_id),
        status=status,
        text=text if status == "completed" else "",
        structured_output=payload,
        accounting=accounting,
        error=None if status == "completed" else error,
    )
