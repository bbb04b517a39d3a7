"""How the SQL stores turn events, messages and metadata into text and back."""

from __future__ import annotations

import json
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

from pydantic import TypeAdapter

from agentkit.events import from_wire
from agentkit.providers._base import Message
from agentkit.stores._base import EventEntry

__all__ = [
    "check_offsets",
    "dump_event",
    "dump_message",
    "dump_metadata",
    "load_event",
    "load_message",
    "load_metadata",
]


@lru_cache(maxsize=1)
def _messages() -> TypeAdapter[Message]:
    return TypeAdapter(Message)


def dump_event(entry: EventEntry) -> str:
    """The event's wire form as JSON text (what `json.dumps(to_wire(event))` gives, faster)."""
    return entry.event.model_dump_json(by_alias=True, exclude_none=True)


def load_event(offset: int, data: str) -> EventEntry:
    """An event entry from its stored offset and wire JSON."""
    return EventEntry(offset, from_wire(data))


def dump_message(message: Message) -> str:
    """A transcript message as pydantic JSON."""
    return message.model_dump_json()


def load_message(data: str) -> Message:
    """A transcript message from its stored JSON."""
    return _messages().validate_json(data)


def dump_metadata(metadata: dict[str, Any] | None) -> str:
    """Session metadata as JSON text (keys keep their order)."""
    return json.dumps(metadata or {}, ensure_ascii=False)


def load_metadata(data: str) -> dict[str, Any]:
    """Session metadata from its stored JSON text."""
    value: dict[str, Any] = json.loads(data)
    return value


def check_offsets(run_id: str, last: int, entries: Sequence[EventEntry]) -> None:
    """Raise `ValueError` unless the offsets of `entries` grow strictly after `last`."""
    for entry in entries:
        if entry.offset <= last:
            raise ValueError(f"offset {entry.offset} does not follow {last} in run {run_id}")
        last = entry.offset
