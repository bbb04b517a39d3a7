"""A machine's records in the store: its members, its agents and its conversations.

Each record has an id that is never reused: a member removed or an agent deleted keeps its
row (with `removed_at` / `deleted_at`), so a name taken again later names a new record and
inherits nothing. Among the live records a name is unique. Lists are read a page at a
time by keyset (`created_at`, `id`), so a page costs the same however many records there
are and concurrent inserts never move a record across a page boundary.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any, Literal

from agentkit.errors import RecordExistsError, RecordNotFoundError

__all__ = [
    "AgentRecord",
    "ConversationRecord",
    "MemberRecord",
    "PageKey",
    "RecordExistsError",
    "RecordNotFoundError",
    "RecordRole",
    "RecordVisibility",
    "agent_from_row",
    "check_page",
    "conversation_from_row",
    "member_from_row",
]

RecordRole = Literal["owner", "editor", "viewer"]
RecordVisibility = Literal["private", "shared"]

PageKey = tuple[float, str]
"""Where a page starts: the `(created_at, id)` of the last record of the page before."""

MAX_PAGE = 1001
"""The most records a store reads in one page (a service asks one more than it shows)."""


@dataclass(frozen=True, slots=True)
class MemberRecord:
    """A member of a machine.

    Attributes:
        id: Never reused, whatever names come and go.
        token_hash: The SHA-256 of its secret token (hex); unique among every member.
        removed_at: When it was removed; a removed member authenticates no more and
            owns nothing a newcomer of the same name could inherit.
    """

    id: str
    name: str
    role: RecordRole
    token_hash: str
    created_at: float
    removed_at: float | None = None


@dataclass(frozen=True, slots=True)
class AgentRecord:
    """An agent of a machine: the built-in one, a configured one (a definition file or
    an app) or one created by an owner.

    Attributes:
        id: Kept when the agent is replaced; never reused.
        version: 1 when created, one more at every replacement.
        source: `builtin`, `configured` or `machine`.
        definition: An owner-created agent's definition (JSON); empty for the others,
            whose definitions live in the machine's code and files.
        deleted_at: When it was deleted; its conversations stay readable.
    """

    id: str
    name: str
    version: int
    source: Literal["builtin", "configured", "machine"]
    created_at: float
    updated_at: float
    definition: dict[str, Any] = field(default_factory=dict)
    deleted_at: float | None = None


@dataclass(frozen=True, slots=True)
class ConversationRecord:
    """A conversation: the session of the same id holds its transcript and runs.

    Attributes:
        agent_id: The id of its agent's record (kept when the agent is replaced).
        creator_id: The id of the member who created it.
    """

    id: str
    agent_id: str
    creator_id: str
    visibility: RecordVisibility
    name: str
    created_at: float
    updated_at: float
    instructions: str | None = None


def check_page(after: PageKey | None, limit: int) -> None:
    """Refuse a page that is not `1..MAX_PAGE` records after a `(created_at, id)` key."""
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_PAGE:
        raise ValueError(f"limit must be an integer from 1 to {MAX_PAGE}, not {limit!r}")
    if after is not None:
        created, key = after
        if not isinstance(created, float | int) or not math.isfinite(created):
            raise ValueError("a page key's time must be a finite number")
        if not isinstance(key, str):
            raise ValueError("a page key's id must be a string")


def member_from_row(row: Any) -> MemberRecord:
    """A member back from `(id, name, role, token_hash, created_at, removed_at)`."""
    return MemberRecord(row[0], row[1], row[2], row[3], float(row[4]), _time(row[5]))


def agent_from_row(row: Any) -> AgentRecord:
    """An agent back from `(id, name, version, source, created_at, updated_at,
    definition, deleted_at)`."""
    return AgentRecord(
        row[0],
        row[1],
        int(row[2]),
        row[3],
        float(row[4]),
        float(row[5]),
        json.loads(row[6]) if row[6] else {},
        _time(row[7]),
    )


def conversation_from_row(row: Any) -> ConversationRecord:
    """A conversation back from `(id, agent_id, creator_id, visibility, name, created_at,
    updated_at, instructions)`."""
    return ConversationRecord(
        row[0], row[1], row[2], row[3], row[4], float(row[5]), float(row[6]), row[7]
    )


def _time(value: Any) -> float | None:
    return None if value is None else float(value)
