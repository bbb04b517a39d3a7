"""`agentkit.testing.assert_stream_invariants` accepts what runs write and refuses the rest."""

from __future__ import annotations

import pytest

from agentkit.events import (
    AgentMessage,
    ErrorEvent,
    Result,
    SessionInit,
    Text,
    TextDelta,
    ToolResult,
    ToolUse,
    TurnEnd,
    TurnStart,
)
from agentkit.testing import assert_stream_invariants

START = TurnStart(turn_id="t", session_id="s", user_prompt="hi")
INIT = SessionInit(session_id="s")
DONE = TurnEnd(turn_id="t", status="completed", duration_ms=1)
FAILED = TurnEnd(turn_id="t", status="error", duration_ms=1)


def _good() -> list[AgentMessage]:
    return [
        START,
        INIT,
        TextDelta(content="ok"),
        ToolUse(id="c1", tool="add", input={}),
        ToolResult(tool_use_id="c1", tool="add", output=3),
        ErrorEvent(error="a helper failed", agent="app:helper"),  # forwarded: not final
        Text(content="3"),
        Result(content="3"),
        DONE,
    ]


def test_what_runs_write_passes() -> None:
    assert_stream_invariants(_good())
    assert_stream_invariants([START, INIT, ErrorEvent(error="no"), FAILED])


@pytest.mark.parametrize(
    ("stream", "says"),
    [
        ([], "empty"),
        ([INIT, Result(content="x"), DONE], "opens with"),
        ([START, Result(content="x")], "closes with"),
        (
            [START, Result(content="x"), TurnEnd(turn_id="u", status="completed", duration_ms=1)],
            "different turns",
        ),
        ([START, START, Result(content="x"), DONE], "turn_start/turn_end"),
        ([START, INIT, DONE], "0 final blocks"),
        ([START, Result(content="x"), ErrorEvent(error="y"), DONE], "2 final blocks"),
        ([START, Result(content="x"), Text(content="late"), DONE], "right before"),
        ([START, Result(content="x"), FAILED], "a result ends with"),
        ([START, ErrorEvent(error="x"), DONE], "an error ends with"),
        (
            [START, ToolResult(tool_use_id="c9", tool="t", output=1), Result(content="x"), DONE],
            "answers no earlier",
        ),
        (
            [
                START,
                ToolUse(id="c1", tool="t", input={}),
                ToolResult(tool_use_id="c1", tool="t", output=1),
                ToolResult(tool_use_id="c1", tool="t", output=2),
                Result(content="x"),
                DONE,
            ],
            "two results",
        ),
    ],
)
def test_a_broken_promise_is_named(stream: list[AgentMessage], says: str) -> None:
    with pytest.raises(AssertionError, match=says):
        assert_stream_invariants(stream)
