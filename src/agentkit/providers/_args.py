"""Tool calls as the model streamed them: their arguments, then the finished call."""

from __future__ import annotations

import json
from typing import Any

from agentkit.providers._base import ProviderError, ToolCall, ToolCallChunk

__all__ = [
    "MAX_ARGUMENT_CHARS",
    "Arguments",
    "parse_arguments",
    "text_field",
    "tool_call_chunk",
]


def parse_arguments(raw: str) -> dict[str, Any] | str:
    """A tool call's arguments, as a model sent them (JSON text), for a
    [`ToolCall`][agentkit.providers.ToolCall]: the object they encode, `{}` for empty or
    blank text, and otherwise the text itself, unchanged.

    Text that is not a JSON object (cut off, or a list) is kept rather than refused: the
    engine then answers the call with a tool error telling the model its arguments were
    not valid JSON, so the model can try again, and the transcript shows what it sent.
    Every built-in provider parses arguments with this; a custom provider should too.

    ```python
    from agentkit.providers import ToolCall, ToolCallChunk, parse_arguments

    assert parse_arguments('{"city": "Paris"}') == {"city": "Paris"}
    assert parse_arguments("") == {}
    assert parse_arguments('{"city": "Par') == '{"city": "Par'  # the model's broken JSON
    chunk = ToolCallChunk(ToolCall(id="call_1", name="weather", arguments=parse_arguments("{}")))
    ```
    """
    if not raw.strip():
        return {}
    try:
        value = json.loads(raw)
    except ValueError:
        return raw
    return value if isinstance(value, dict) else raw


def tool_call_chunk(call_id: str, name: str, raw_arguments: str) -> ToolCallChunk:
    """The chunk of a finished tool call whose arguments were streamed as `raw_arguments`."""
    return ToolCallChunk(ToolCall(id=call_id, name=name, arguments=parse_arguments(raw_arguments)))


def text_field(value: Any, what: str) -> str:
    """`value`, which the wire says is text; a `TypeError` naming `what` otherwise (the
    client libraries build events without validating them, so a server's wrong-typed field
    would reach the engine as a crash far from its cause)."""
    if type(value) is not str:
        raise TypeError(f"{what} is {type(value).__name__}, not a string")
    return value


MAX_ARGUMENT_CHARS = 8_000_000
"""The most characters of one tool call's streamed arguments a provider buffers. A call's
arguments reach the engine (and its reply cap, 1,000,000 characters by default) only once
complete, so without this a server streaming arguments without end would fill memory
first."""



class Arguments:
    """A tool call's arguments as they stream in, piece by piece: kept as a list (adding to
    a string held in a dict copies it each time, quadratic in the pieces) with a running
    size, bounded by `MAX_ARGUMENT_CHARS`."""

    __slots__ = ("_parts", "_size")

    def __init__(self, initial: Any = "", what: str = "arguments") -> None:
        self._parts: list[str] = []
        self._size = 0
        if initial:
            self.add(initial, what)

    def add(self, piece: Any, what: str) -> None:
        """Add the streamed text `piece`; a `TypeError` naming `what` when it is not text,
        a `ProviderError` past `MAX_ARGUMENT_CHARS`."""
        piece = text_field(piece, what)
        self._size += len(piece)
        if self._size > MAX_ARGUMENT_CHARS:
            raise ProviderError(
                f"a tool call's streamed arguments went over {MAX_ARGUMENT_CHARS:,} "
                "characters, so the call was stopped",
                kind="reply_too_large",
            )
        self._parts.append(piece)

    def text(self) -> str:
        """Everything added so far."""
        return "".join(self._parts)
