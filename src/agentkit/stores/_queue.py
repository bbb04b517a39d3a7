"""Queued prompts: what a busy session is prompted with, kept until its run starts.

A queued prompt's id is the id of the run it becomes: the run's start (`create_run`, one
row per id in every backend) is what claims it, so two processes that both take the head
of a queue start it once, and the loser sees the run exists and deletes the row. The
store only keeps the rows in order: `QueueStore`. `MemoryStore` keeps them in a dict;
`SQLiteStore` and `PostgresStore` in `agentkit_queued_prompts` (see `_queue_sql`).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Literal, Protocol, runtime_checkable

from agentkit.errors import SessionNotFoundError, StoreError

__all__ = ["MemoryQueue", "QueueStore", "QueuedRecord", "QueuedStatus"]

QueuedStatus = Literal["queued", "dropped"]
"""`queued`: waiting for its turn; `dropped`: it will not run (`error` says why)."""


@dataclass(frozen=True)
class QueuedRecord:
    """A prompt waiting for a session's running run to end.

    Attributes:
        id: The id of the run it becomes when it starts.
        member_id: The member who queued it (checked again when it starts).
        options: What the prompt was given besides its text (JSON: attachments,
            effort, output schema).
        error: Why a `dropped` prompt will not run.
    """

    id: str
    session_id: str
    member_id: str
    prompt: str
    created_at: float
    options: dict[str, Any] = field(default_factory=dict)
    status: QueuedStatus = "queued"
    error: str | None = None


@runtime_checkable
class QueueStore(Protocol):
    """The queued prompts of sessions, oldest first in each."""

    async def enqueue_prompt(self, record: QueuedRecord, *, limit: int) -> bool:
        """Append a `queued` prompt to its session's queue; `False` (nothing stored) when
        the session has `limit` queued already. `SessionNotFoundError` when the session
        is missing, `StoreError` when the id is taken."""
        ...

    async def list_queued(self, session_id: str) -> list[QueuedRecord]:
        """The session's queued and dropped prompts, oldest first."""
        ...

    async def get_queued(self, queued_id: str) -> QueuedRecord | None:
        """A queued or dropped prompt, or `None`."""
        ...

    async def delete_queued(self, queued_id: str) -> bool:
        """Delete a queued or dropped prompt; `False` when there was none."""
        ...

    async def drop_queued(self, queued_id: str, error: str) -> bool:
        """Mark a `queued` prompt `dropped` with the reason `error`; `False` when it is
        not queued (gone, or dropped already)."""
        ...

    async def queued_sessions(self, limit: int = 100) -> list[str]:
        """Sessions that have a `queued` prompt, the one queued longest ago first."""
        ...

    async def count_queued(self) -> int:
        """How many prompts wait in every queue of the store (`queued`, not `dropped`)."""
        ...


class MemoryQueue:
    """`QueueStore` for `MemoryStore`: rows in insertion order. A session that is gone
    (deleted or evicted) takes its queue with it, at the next read."""

    _sessions: dict[str, Any]

    @property
    def _queue(self) -> dict[str, QueuedRecord]:
        found: dict[str, QueuedRecord] | None = self.__dict__.get("_queued_rows")
        if found is None:
            found = self.__dict__["_queued_rows"] = {}
        return found

    def _live(self) -> dict[str, QueuedRecord]:
        rows = self._queue
        for key in [key for key, row in rows.items() if row.session_id not in self._sessions]:
            del rows[key]
        return rows

    async def enqueue_prompt(self, record: QueuedRecord, *, limit: int) -> bool:
        rows = self._live()
        if record.session_id not in self._sessions:
            raise SessionNotFoundError(f"no session {record.session_id!r}")
        if record.id in rows:
            raise StoreError(f"queued prompt {record.id!r} already exists")
        waiting = [r for r in rows.values() if r.session_id == record.session_id]
        if sum(r.status == "queued" for r in waiting) >= limit:
            return False
        rows[record.id] = replace(record, status="queued", error=None)
        return True

    async def list_queued(self, session_id: str) -> list[QueuedRecord]:
        return [row for row in self._live().values() if row.session_id == session_id]

    async def get_queued(self, queued_id: str) -> QueuedRecord | None:
        return self._live().get(queued_id)

    async def delete_queued(self, queued_id: str) -> bool:
        return self._live().pop(queued_id, None) is not None

    async def drop_queued(self, queued_id: str, error: str) -> bool:
        rows = self._live()
        row = rows.get(queued_id)
        if row is None or row.status != "queued":
            return False
        rows[queued_id] = replace(row, status="dropped", error=error)
        return True

    async def queued_sessions(self, limit: int = 100) -> list[str]:
        found: dict[str, None] = {}
        for row in self._live().values():
            if row.status == "queued" and len(found) < limit:
                found[row.session_id] = None
        return list(found)

    async def count_queued(self) -> int:
        return sum(row.status == "queued" for row in self._live().values())
