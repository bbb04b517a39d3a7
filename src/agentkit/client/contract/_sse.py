"""Server-sent events: how the server writes an event (`encode_event`), how a client
reads a stream of them as its bytes arrive (`SseParser`), and the names of the events the
streams carry."""

from __future__ import annotations

import codecs
import json
import re
from dataclasses import dataclass
from typing import Any

from agentkit.conversations import FinalEvent, FollowEvent, OutputEvent

__all__ = [
    "ENDED_EVENT",
    "FOLLOW_EVENT_NAMES",
    "VIEW_EVENT",
    "SseEvent",
    "SseParser",
    "encode_comment",
    "encode_event",
    "follow_event_name",
]

FOLLOW_EVENT_NAMES: dict[str, str] = {
    "text_delta": "text_delta",
    "text": "text",
    "tool_call": "tool_use",
    "tool_result": "tool_result",
    "json": "structured_output",
    "attachment": "attachment",
    "permission_request": "permission_request",
    "permission_decision": "permission_decision",
    "question": "question",
    "answer": "answer",
}
"""The event name of each output part of a run's stream, by the part's type: the core
event type it comes from. A run's final event is named by its status (`completed`,
`cancelled`, `error`)."""

ENDED_EVENT = "ended"
"""The last event of a stream the server ends before its natural end: its reader lost
access (a conversation made private, a revoked grant, a removed member, a deleted room) or
the server could not go on. Its data is an error body, `{"error": {"code", "message"}}`,
which the remote clients raise as the in-process client's exception."""

VIEW_EVENT = "view"
"""The name of the events of a conversation's watch stream (each a `ConversationView`)."""


def follow_event_name(event: FollowEvent) -> str:
    """The event name of a run's output part or final event."""
    if isinstance(event, OutputEvent):
        return FOLLOW_EVENT_NAMES[event.part.type]
    assert isinstance(event, FinalEvent)
    return event.status


def encode_event(event: str, data: Any, event_id: int | None = None) -> bytes:
    """One SSE event. `data` is written as one line of compact JSON (JSON never needs a
    raw newline), so every `data:` field holds a whole object."""
    lines = []
    if event_id is not None:
        lines.append(f"id: {event_id}")
    lines.append(f"event: {event}")
    lines.append("data: " + json.dumps(data, ensure_ascii=False, separators=(",", ":")))
    return ("\n".join(lines) + "\n\n").encode("utf-8")


def encode_comment(text: str) -> bytes:
    """A comment line (`: text`), which readers skip: what keeps an idle stream open."""
    return f": {text}\n\n".encode()


@dataclass(frozen=True)
class SseEvent:
    """One dispatched server-sent event.

    Attributes:
        event: Its name (`message` when the stream gave none).
        data: Its `data` lines, joined with newlines.
        id: The last event id the stream gave, if any.
    """

    event: str
    data: str
    id: str | None

    def json_object(self) -> dict[str, Any] | None:
        """The data as a JSON object; `None` when it is not one."""
        try:
            payload = json.loads(self.data)
        except ValueError:
            return None
        return payload if isinstance(payload, dict) else None


_LINE_END = re.compile(r"\r\n|\r|\n")


class SseParser:
    """The event stream format of the HTML standard, fed bytes as they arrive: `data`
    lines joined with newlines, `event` and `id` kept, comments (`:`) and other fields
    ignored, an event dispatched on a blank line; lines end with CRLF, LF or CR."""

    def __init__(self) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._buffer = ""
        self._skip_lf = False  # the last chunk ended with CR: a LF next ends no new line
        self._event = ""
        self._data: list[str] = []
        self._last_id: str | None = None

    def feed(self, chunk: bytes) -> list[SseEvent]:
        """The events `chunk` completes (none until a blank line ends one)."""
        text = self._decoder.decode(chunk)
        if not text:
            return []
        if self._skip_lf and text.startswith("\n"):
            text = text[1:]
        self._skip_lf = text.endswith("\r")
        *lines, self._buffer = _LINE_END.split(self._buffer + text)
        return [event for line in lines if (event := self._line(line)) is not None]

    def _line(self, line: str) -> SseEvent | None:
        if not line:
            return self._dispatch()
        if line.startswith(":"):
            return None
        name, colon, value = line.partition(":")
        if colon and value.startswith(" "):
            value = value[1:]
        if name == "data":
            self._data.append(value)
        elif name == "event":
            self._event = value
        elif name == "id" and "\0" not in value:
            self._last_id = value
        return None

    def _dispatch(self) -> SseEvent | None:
        data, event = self._data, self._event
        self._data, self._event = [], ""
        if not data:
            return None
        return SseEvent(event=event or "message", data="\n".join(data), id=self._last_id)
