"""Tool calls as the model streamed them: their arguments, then the finished call."""

from __future__ import annotations

import json
from typing import Any

from agentkit.providers._base import ToolCall, ToolCallChunk

__all__ = ["parse_arguments", "text_field", "tool_call_chunk"]


def parse_arguments(raw: str) -> dict[str, Any] | str:
    """Tool-call arguments as an object, or the raw text when it is not a JSON object."""
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
