"""Event types and the patterns that select them.

A type is dotted lowercase words (`chat.message`, `measurements.word_count`). A pattern is
a type (matches itself), a prefix ending in `.*` (`chat.*` matches every type under
`chat.`, at any depth), or `*` (every type). Nothing else: no wildcard in the middle, so
that what a grant allows can be read at a glance and checked in SQL as a prefix.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from agentkit.errors import RoomError

__all__ = ["check_pattern", "check_patterns", "check_type", "matches", "matches_any"]

_TYPE = re.compile(r"^[a-z0-9_]+(\.[a-z0-9_]+)*$")
MAX_TYPE_LENGTH = 200


def check_type(event_type: object, what: str = "event type") -> str:
    """`event_type` if it is a valid type, else `RoomError` (a `ValueError`) naming it."""
    if (
        not isinstance(event_type, str)
        or len(event_type) > MAX_TYPE_LENGTH
        or not _TYPE.match(event_type)
    ):
        raise RoomError(
            f"{what} {event_type!r} is not dotted lowercase words (letters, digits, '_'), "
            f"such as 'chat.message', of at most {MAX_TYPE_LENGTH} characters"
        )
    return event_type


def check_pattern(pattern: object, what: str = "pattern") -> str:
    """`pattern` if it is `*`, a type, or a type followed by `.*`; else `RoomError`."""
    if pattern == "*":
        return "*"
    if isinstance(pattern, str) and pattern.endswith(".*"):
        check_type(pattern[:-2], what)
        return pattern
    check_type(pattern, what)
    assert isinstance(pattern, str)
    return pattern


def check_patterns(patterns: Iterable[object], what: str) -> tuple[str, ...]:
    if isinstance(patterns, str):
        raise RoomError(f"{what} is a list of patterns, not one string")
    return tuple(check_pattern(pattern, what) for pattern in patterns)


def matches(pattern: str, event_type: str) -> bool:
    """Whether `pattern` selects `event_type`."""
    if pattern == "*":
        return True
    if pattern.endswith(".*"):
        return event_type.startswith(pattern[:-1])
    return pattern == event_type


def matches_any(patterns: Sequence[str], event_type: str) -> bool:
    return any(matches(pattern, event_type) for pattern in patterns)
