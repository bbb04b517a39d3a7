"""The store interface: sessions, their transcripts, runs and run events."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

from agentkit.errors import (
    RunEndedError,
    SessionBusyError,
    SessionExistsError,
    SessionNotFoundError,
    StoreError,
)
from agentkit.events import AgentMessage
from agentkit.messages import Message

__all__ = [
    "EventEntry",
    "RunEndedError",
    "RunRecord",
    "RunStatus",
    "SessionBusyError",
    "SessionExistsError",
    "SessionNotFoundError",
    "SessionRecord",
    "Store",
    "StoreError",
]

RunStatus = Literal["running", "completed", "interrupted", "error"]


@dataclass(frozen=True)
class SessionRecord:
    """A session: the agent it belongs to and free-form metadata (for example the
    definition fingerprint it was started with)."""

    id: str
    agent_id: str
    created_at: float
    updated_at: float
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class RunRecord:
    """One run (one user turn) of a session.

    A running run is owned by the runtime executing it (`owner`, its instance id), which
    renews the run's lease (`heartbeat_at`, `lease_expires_at`) while it runs. A running
    run whose lease has expired (or that has none) belongs to nobody: any runtime sharing
    the store ends it as interrupted (see [Runtime][agentkit.runtime.Runtime]).

    Attributes:
        error: Why the run did not complete, once it has ended that way.
    """

    id: str
    session_id: str
    agent_id: str
    status: RunStatus
    created_at: float
    finished_at: float | None = None
    owner: str | None = None
    heartbeat_at: float | None = None
    lease_expires_at: float | None = None
    error: str | None = None


@dataclass(frozen=True, slots=True)
class EventEntry:
    """An event at its offset in a run's log. Offsets count every event the run produced,
    `text_delta` included, so stored offsets keep gaps where deltas were.

    `wire` is the event's wire form as UTF-8 JSON when the writer has it already (the
    runtime does): a store may keep it instead of encoding the event again. It takes no
    part in equality.
    """

    offset: int
    event: AgentMessage
    wire: bytes | None = field(default=None, compare=False, repr=False)


@runtime_checkable
class Store(Protocol):
    """Where sessions, transcripts and run events live.

    Every backend passes the conformance suite in
    `agentkit.testing` (the store conformance suite). `text_delta`
    events are never given to a store.
    """

    async def create_session(
        self, session_id: str, agent_id: str, metadata: dict[str, Any] | None = None
    ) -> SessionRecord:
        """Create a session; `SessionExistsError` when the id is taken."""
        ...

    async def get_session(self, session_id: str) -> SessionRecord | None:
        """The session, or `None`."""
        ...

    async def update_session(self, session_id: str, metadata: dict[str, Any]) -> SessionRecord:
        """Replace a session's metadata; `SessionNotFoundError` when missing."""
        ...

    async def list_sessions(self, agent_id: str | None = None) -> list[SessionRecord]:
        """Sessions, oldest first, optionally of one agent."""
        ...

    async def delete_session(self, session_id: str) -> None:
        """Delete a session with its transcript, runs and events (no error when missing)."""
        ...

    async def load_transcript(self, session_id: str) -> list[Message]:
        """The session's transcript in order; `SessionNotFoundError` when missing."""
        ...

    async def append_transcript(self, session_id: str, messages: Sequence[Message]) -> None:
        """Append messages atomically: all of them or none."""
        ...

    async def truncate_transcript(self, session_id: str, length: int) -> None:
        """Keep only the first `length` messages."""
        ...

    async def create_run(self, run: RunRecord, events: Sequence[EventEntry] = ()) -> None:
        """Record a new run with its first events, atomically.

        `SessionNotFoundError` when its session is missing; `SessionBusyError` when the
        session already has a `running` run (checked atomically with the insert, so it
        holds between processes); `StoreError` when the run id is taken.
        """
        ...

    async def finish_run(
        self,
        run_id: str,
        status: RunStatus,
        finished_at: float,
        *,
        events: Sequence[EventEntry] = (),
        error: str | None = None,
        owner: str | None = None,
        expired_by: float | None = None,
    ) -> bool:
        """End a run that is still `running`: append its last `events` and record its
        status, atomically. Returns whether it did; `False` (and nothing written) when the
        run is missing or has ended already, when `owner` is given and does not own it,
        or when `expired_by` is given and its lease had not expired by then."""
        ...

    async def renew_leases(
        self, owner: str, run_ids: Sequence[str], now: float, expires_at: float
    ) -> set[str]:
        """Renew the leases of `owner`'s running runs among `run_ids` (heartbeat `now`,
        lease until `expires_at`); returns the ids renewed. An id missing from the answer
        is a run that `owner` no longer holds (it ended, or another runtime ended it)."""
        ...

    async def expired_runs(self, now: float) -> list[RunRecord]:
        """Running runs whose lease expired before `now` (or that have none), oldest first."""
        ...

    async def get_run(self, run_id: str) -> RunRecord | None:
        """The run, or `None`."""
        ...

    async def list_runs(self, session_id: str) -> list[RunRecord]:
        """A session's runs, oldest first."""
        ...

    async def append_events(self, run_id: str, entries: Sequence[EventEntry]) -> None:
        """Append events atomically; offsets only grow within a run. `RunEndedError` when
        the run is recorded and no longer `running`."""
        ...

    async def append_step(
        self,
        session_id: str,
        messages: Sequence[Message],
        run_id: str,
        entries: Sequence[EventEntry],
    ) -> None:
        """Append a model step's transcript `messages` to the session and its events to the
        run, in one transaction: both or neither. The errors of `append_transcript` and
        `append_events`."""
        ...

    async def read_events(self, run_id: str, after: int = -1) -> list[EventEntry]:
        """A run's stored events with offset greater than `after`, in order."""
        ...

    async def aclose(self) -> None:
        """Release connections and files."""
        ...
