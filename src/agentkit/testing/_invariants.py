"""`assert_stream_invariants`: what every run's event stream promises, checked."""

from __future__ import annotations

from collections.abc import Iterable

from agentkit.events import AgentMessage

__all__ = ["assert_stream_invariants"]


def assert_stream_invariants(events: Iterable[AgentMessage]) -> None:
    """Check the promises every stream keeps (a live `run.events()` or a stored log, with
    or without its text deltas); raise `AssertionError` naming the first one broken.

    - It opens with `turn_start` and closes with `turn_end`, of the same turn, and holds
      no other of either (a sub-agent's are never forwarded).
    - Exactly one final block: one `result` or `error` of the stream's own (`agent` unset),
      right before `turn_end`; `turn_end.status` is `completed` after a `result` and never
      after an `error`.
    - Each of its own `tool_result`s answers an earlier `tool_use` with the same id, once.
    """
    stream = list(events)
    assert stream, "the stream is empty"
    first, last = stream[0], stream[-1]
    assert first.type == "turn_start" and first.agent is None, f"opens with {first.type}"
    assert last.type == "turn_end" and last.agent is None, f"closes with {last.type}"
    assert first.turn_id == last.turn_id, "turn_start and turn_end name different turns"
    bounds = [i for i, e in enumerate(stream) if e.type in ("turn_start", "turn_end")]
    assert bounds == [0, len(stream) - 1], f"turn_start/turn_end at offsets {bounds}"

    finals = [i for i, e in enumerate(stream) if e.type in ("result", "error") and e.agent is None]
    assert len(finals) == 1, f"{len(finals)} final blocks (result or error), not one"
    assert finals[0] == len(stream) - 2, "the final block is not right before turn_end"
    final = stream[finals[0]]
    if final.type == "result":
        assert last.status == "completed", f"a result ends with status {last.status!r}"
    else:
        assert last.status != "completed", "an error ends with status 'completed'"

    asked: set[str] = set()
    answered: set[str] = set()
    for event in stream:
        if event.agent is not None:
            continue
        if event.type == "tool_use":
            asked.add(event.id)
        elif event.type == "tool_result":
            call = event.tool_use_id
            assert call in asked, f"tool_result {call!r} answers no earlier tool_use"
            assert call not in answered, f"tool_use {call!r} has two results"
            answered.add(call)
