"""How the SQL stores turn events, messages and metadata into text, and rows back into records."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from functools import lru_cache
from typing import Any

from pydantic import TypeAdapter

from agentkit.errors import OffsetError
from agentkit.events import AgentMessage, from_wire, wire_json
from agentkit.messages import Message
from agentkit.stores._base import EventEntry, RunRecord, SessionRecord

__all__ = [
    "check_offsets",
    "dump_event",
    "dump_message",
    "dump_metadata",
    "entry_json",
    "event_json",
    "events_from_rows",
    "load_event",
    "load_message",
    "load_metadata",
    "message_json",
    "messages_from_rows",
    "run_from_row",
    "session_from_row",
]


@lru_cache(maxsize=1)
def _messages() -> TypeAdapter[Message]:
    return TypeAdapter(Message)


def event_json(event: AgentMessage) -> bytes:
    """The event's wire form as UTF-8 JSON."""
    return wire_json(event)


def entry_json(entry: EventEntry) -> bytes:
    """The entry's event as wire JSON: the writer's own encoding when it gave one."""
    wire = entry.wire
    return wire if wire is not None else wire_json(entry.event)


def dump_event(entry: EventEntry) -> str:
    """The event's wire form as JSON text."""
    return entry_json(entry).decode()


def message_json(message: Message) -> bytes:
    """A transcript message as pydantic JSON (UTF-8)."""
    return type(message).__pydantic_serializer__.to_json(message)


def load_event(offset: int, data: str | bytes) -> EventEntry:
    """An event entry from its stored offset and wire JSON."""
    return EventEntry(offset, from_wire(data))


def dump_message(message: Message) -> str:
    """A transcript message as pydantic JSON text."""
    return message_json(message).decode()


def load_message(data: str | bytes) -> Message:
    """A transcript message from its stored JSON."""
    return _messages().validate_json(data)


def dump_metadata(metadata: dict[str, Any] | None) -> str:
    """Session metadata as JSON text (keys keep their order)."""
    if not metadata:
        return "{}"
    return json.dumps(metadata, ensure_ascii=False)


def load_metadata(data: str) -> dict[str, Any]:
    """Session metadata from its stored JSON text."""
    if data == "{}":
        return {}
    value: dict[str, Any] = json.loads(data)
    return value


def check_offsets(run_id: str, last: int, entries: Sequence[EventEntry]) -> None:
    """Raise `ValueError` unless the offsets of `entries` grow strictly after `last`."""
    for entry in entries:
        if entry.offset <= last:
            raise OffsetError(f"offset {entry.offset} does not follow {last} in run {run_id}")
        last = entry.offset


def session_from_row(row: Sequence[Any]) -> SessionRecord:
    """A session from a row of `id, agent_id, created_at, updated_at, metadata`."""
    return SessionRecord(row[0], row[1], row[2], row[3], load_metadata(row[4]))


def run_from_row(row: Sequence[Any]) -> RunRecord:
    """A run from a row of `id, session_id, agent_id, status, created_at, finished_at,
    owner, heartbeat_at, lease_expires_at, error`."""
    return RunRecord(*row)


def messages_from_rows(rows: Iterable[Sequence[Any]]) -> list[Message]:
    """Transcript messages from rows of `data`, in the rows' order."""
    return [load_message(row[0]) for row in rows]


def events_from_rows(rows: Iterable[Sequence[Any]]) -> list[EventEntry]:
    """Event entries from rows of `pos, data`, in the rows' order."""
    return [load_event(offset, data) for offset, data in rows]
