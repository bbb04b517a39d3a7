"""Rooms in the store: the records, the type filter of a read, and how rows become records.

A room is a totally ordered, persisted event log. The store gives every event the room's
next position (1, 2, 3, ... with no gaps, across every process sharing the store), and
keeps beside the log the room's participants' grants, the cursors of its persisted
consumers and its delegations. What a grant allows, and who may do what, is decided by
`agentkit.rooms` on top of this; the store only keeps it.
"""

from __future__ import annotations

import json
import math
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import ConfigDict
from pydantic.alias_generators import to_camel

from agentkit.errors import DelegationStateError, RoomExistsError, RoomNotFoundError

__all__ = [
    "DELEGATION_ENDED",
    "DELEGATION_OPEN",
    "DELEGATION_STATUSES",
    "WIRE_CONFIG",
    "DelegationRecord",
    "DelegationStateError",
    "DelegationStatus",
    "NewRoomEvent",
    "RoomEvent",
    "RoomExistsError",
    "RoomGrant",
    "RoomNotFoundError",
    "RoomRecord",
    "TypeFilter",
    "check_cursor",
    "check_delegation",
    "check_expect",
    "check_statuses",
    "delegation_from_row",
    "dump_json",
    "event_from_row",
    "grant_from_row",
    "grant_params",
    "like_prefix",
    "load_json",
    "room_from_row",
    "state_error",
    "type_filter",
]

DelegationStatus = Literal["pending", "running", "completed", "failed", "cancelled", "expired"]
"""Where a delegation is: requested (`pending`), taken by its agent (`running`), or ended:
`completed`, `failed`, `cancelled` (by its requester or an owner) or `expired` (its
deadline passed before it ended)."""

DELEGATION_STATUSES: frozenset[str] = frozenset(
    ("pending", "running", "completed", "failed", "cancelled", "expired")
)
"""Every `DelegationStatus`."""

DELEGATION_ENDED: frozenset[str] = frozenset(("completed", "failed", "cancelled", "expired"))
"""The statuses a delegation never leaves."""

DELEGATION_OPEN: frozenset[str] = DELEGATION_STATUSES - DELEGATION_ENDED
"""The statuses of a delegation still under way (`pending`, `running`): the ones whose
deadline can pass (see `Store.overdue_delegations`)."""

WIRE_CONFIG = ConfigDict(alias_generator=to_camel)
"""How a record is serialised by pydantic (the HTTP API, its OpenAPI document): its fields
by their camelCase names (`roomId`, `createdAt`), as every model on the wire; the values
(a payload, a task, a result) are kept as they are."""


@dataclass(frozen=True, slots=True)
class RoomRecord:
    """A room: its id, display name, who created it and when, and free-form metadata.

    The position of the room's last event (its head) is not part of the record: ask
    `Store.room_head`, which is always current.
    """

    __pydantic_config__ = WIRE_CONFIG

    id: str
    name: str
    created_by: str
    created_at: float
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class NewRoomEvent:
    """An event as a writer gives it to `Store.append_room_events`: everything but its
    position, which the store assigns.

    Attributes:
        id: Unique within the room (the store refuses a second event with the same id).
        type: Dotted, e.g. `chat.message`.
        author: The participant that published it, e.g. `member:ada` or `agent:stats`.
        payload: A JSON value (dict, list, str, number, bool or `None`); stored as JSON, so
            a tuple reads back as a list.
        created_at: Seconds since the epoch.
        caused_by: The position (in the same room) of the event that made the writer
            publish this one, when there is one (an agent's reply names the event it
            answers).
        run_id: The engine run that produced it, when one did.
    """

    id: str
    type: str
    author: str
    payload: Any
    created_at: float
    caused_by: int | None = None
    run_id: str | None = None


@dataclass(frozen=True, slots=True)
class RoomEvent:
    """An event of a room's log at its position (1 for the room's first event); see
    `NewRoomEvent` for `caused_by` and `run_id`."""

    __pydantic_config__ = WIRE_CONFIG

    room_id: str
    position: int
    id: str
    type: str
    author: str
    payload: Any
    created_at: float
    caused_by: int | None = None
    run_id: str | None = None


@dataclass(frozen=True, slots=True)
class RoomGrant:
    """What one participant may read and publish in a room, as event type patterns
    (`chat.*`, `measurements.word_count`, `*`). The store keeps them as given."""

    __pydantic_config__ = WIRE_CONFIG

    participant: str
    read: tuple[str, ...] = ()
    publish: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class DelegationRecord:
    """A task a participant (`requested_by`) asked an agent of the room to do, and where it
    stands. `task` and `result` are JSON values; `error` says why a `failed` one failed.

    Attributes:
        deadline: Seconds since the epoch after which a `pending` or `running` delegation
            expires (`None`: never).
        attempts: How many times an agent took it (moved it to `running`).
    """

    __pydantic_config__ = WIRE_CONFIG

    id: str
    room_id: str
    agent: str
    task: Any
    status: DelegationStatus
    requested_by: str
    created_at: float
    updated_at: float
    result: Any = None
    error: str | None = None
    deadline: float | None = None
    attempts: int = 0


# --- reading by type ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TypeFilter:
    """The event types a read keeps: these exact names, and the names starting with one of
    these prefixes (each ends with a dot)."""

    exact: tuple[str, ...]
    prefixes: tuple[str, ...]

    def matches(self, event_type: str) -> bool:
        return event_type in self.exact or event_type.startswith(self.prefixes)


def type_filter(types: Sequence[str] | None) -> TypeFilter | None:
    """The filter for `types` (exact names, `x.*` prefix patterns, `*`); `None` when it
    keeps every type.

    `x.*` keeps the types starting with `x.` (`chat.*` keeps `chat.message` and
    `chat.message.edited`, not `chat`); `*` keeps everything. `%` and `_` are ordinary
    characters. An empty `types` keeps nothing.

    Raises:
        ValueError: A pattern has a `*` anywhere else, or `types` is a bare string.
    """
    if types is None:
        return None
    if isinstance(types, str):
        raise ValueError(f"types must be a sequence of type names, not the string {types!r}")
    exact: list[str] = []
    prefixes: list[str] = []
    for pattern in types:
        if pattern == "*":
            return None
        if pattern.endswith(".*") and "*" not in pattern[:-2]:
            prefixes.append(pattern[:-1])
        elif "*" in pattern:
            raise ValueError(
                f"event type pattern {pattern!r}: '*' may only stand alone or end a pattern "
                "after a dot ('chat.*')"
            )
        else:
            exact.append(pattern)
    return TypeFilter(tuple(dict.fromkeys(exact)), tuple(dict.fromkeys(prefixes)))


def like_prefix(prefix: str) -> str:
    """A `LIKE ... ESCAPE '\\'` pattern matching the strings that start with `prefix`."""
    escaped = prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return escaped + "%"


# --- JSON and rows -------------------------------------------------------------------------


def dump_json(value: Any, what: str) -> str:
    """`value` as JSON text (keys keep their order, non-ASCII kept as is).

    Raises:
        TypeError: `value` holds something JSON cannot express (a set, an object).
        ValueError: `value` holds a NaN or an infinity, or a circular reference.
    """
    try:
        return json.dumps(value, ensure_ascii=False, allow_nan=False)
    except TypeError as exc:
        raise TypeError(f"{what} is not a JSON value: {exc}") from None
    except ValueError as exc:
        raise ValueError(f"{what} is not a JSON value: {exc}") from None


def load_json(data: str | bytes) -> Any:
    """A JSON value from its stored text."""
    return json.loads(data)


def check_delegation(room_id: str, delegation: DelegationRecord) -> None:
    """Raise `ValueError` unless `delegation` belongs to `room_id`, has a known status, a
    finite `deadline` (or none) and a whole, non-negative number of `attempts`."""
    what = f"delegation {delegation.id!r}"
    if delegation.room_id != room_id:
        raise ValueError(f"{what} belongs to room {delegation.room_id!r}, not {room_id!r}")
    if delegation.status not in DELEGATION_STATUSES:
        raise ValueError(f"{what}: unknown status {delegation.status!r}")
    deadline = delegation.deadline
    if deadline is not None and (
        isinstance(deadline, bool)
        or not isinstance(deadline, int | float)
        or not math.isfinite(deadline)
    ):
        raise ValueError(f"{what}: the deadline must be a finite number of seconds or None")
    attempts = delegation.attempts
    if isinstance(attempts, bool) or not isinstance(attempts, int) or attempts < 0:
        raise ValueError(f"{what}: attempts must be a non-negative integer, not {attempts!r}")


def check_statuses(statuses: Collection[str], what: str) -> list[str]:
    """`statuses` as a list without repeats; `ValueError` for a bare string (it would be
    taken for a collection of one-letter statuses) or an unknown status."""
    if isinstance(statuses, str):
        raise ValueError(f"{what} must be a collection of statuses, not the string {statuses!r}")
    wanted = list(dict.fromkeys(statuses))
    unknown = [status for status in wanted if status not in DELEGATION_STATUSES]
    if unknown:
        raise ValueError(
            f"{what}: unknown delegation status {unknown[0]!r} "
            f"(known: {', '.join(sorted(DELEGATION_STATUSES))})"
        )
    return wanted


def check_expect(
    delegation: DelegationRecord | None, expect: Collection[str] | None
) -> list[str] | None:
    """The statuses an append's `expect` allows the stored delegation to be in, checked;
    `ValueError` for an `expect` without a delegation."""
    if expect is None:
        return None
    if delegation is None:
        raise ValueError("expect is only meaningful with a delegation")
    return check_statuses(expect, "expect")


def check_cursor(cursor: tuple[str, int] | None) -> tuple[str, int] | None:
    """An append's `cursor`, `(consumer, position)`, checked; `TypeError` for anything
    else."""
    if cursor is None:
        return None
    if (
        not isinstance(cursor, tuple)
        or len(cursor) != 2
        or not isinstance(cursor[0], str)
        or isinstance(cursor[1], bool)
        or not isinstance(cursor[1], int)
    ):
        raise TypeError(f"cursor must be a (consumer, position) pair, not {cursor!r}")
    return cursor


def state_error(
    delegation_id: str, status: str | None, expect: Collection[str]
) -> DelegationStateError:
    """The error of an append whose delegation is not in one of the `expect`ed statuses."""
    found = "missing" if status is None else status
    wanted = f"not {' or '.join(sorted(expect))}" if expect else "and no status was expected"
    return DelegationStateError(
        f"delegation {delegation_id!r} is {found}, {wanted}; nothing was written", status
    )


def grant_params(grant: RoomGrant) -> tuple[str, str, str]:
    """A grant as stored: its participant and its patterns as JSON arrays.

    Raises:
        TypeError: `read` or `publish` is a bare string or holds something else than
            strings (a string would be taken for a sequence of one-letter patterns).
    """
    columns = [grant.participant]
    for what, patterns in (("read", grant.read), ("publish", grant.publish)):
        if isinstance(patterns, str) or not all(isinstance(p, str) for p in patterns):
            raise TypeError(
                f"the {what} patterns of {grant.participant!r} must be a tuple of strings, "
                f"not {patterns!r}"
            )
        columns.append(json.dumps(list(patterns), ensure_ascii=False))
    return columns[0], columns[1], columns[2]


def room_from_row(row: Sequence[Any]) -> RoomRecord:
    """A room from a row of `id, name, created_by, created_at, metadata`."""
    data = row[4]
    metadata: dict[str, Any] = {} if data == "{}" else load_json(data)
    return RoomRecord(row[0], row[1], row[2], row[3], metadata)


def event_from_row(room_id: str, row: Sequence[Any]) -> RoomEvent:
    """An event from a row of `pos, id, type, author, payload, created_at, caused_by,
    run_id`."""
    return RoomEvent(
        room_id, row[0], row[1], row[2], row[3], load_json(row[4]), row[5], row[6], row[7]
    )


def grant_from_row(row: Sequence[Any]) -> RoomGrant:
    """A grant from a row of `participant, read_types, publish_types` (JSON arrays)."""
    return RoomGrant(row[0], tuple(load_json(row[1])), tuple(load_json(row[2])))


def delegation_from_row(row: Sequence[Any]) -> DelegationRecord:
    """A delegation from a row of `id, room_id, agent, task, status, requested_by,
    created_at, updated_at, result, error, deadline, attempts` (`task` and `result` as
    JSON)."""
    return DelegationRecord(
        row[0],
        row[1],
        row[2],
        load_json(row[3]),
        row[4],
        row[5],
        row[6],
        row[7],
        load_json(row[8]),
        row[9],
        row[10],
        int(row[11]),
    )
