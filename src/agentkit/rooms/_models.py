"""What rooms exchange: event inputs, agent descriptors and requests, room rows."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field, field_validator
from pydantic.alias_generators import to_camel

from agentkit.errors import RoomError
from agentkit.rooms._patterns import check_patterns, check_type
from agentkit.stores import DelegationRecord, RoomEvent, RunRecord, Store, Subscription

if TYPE_CHECKING:
    from agentkit.runtime import Runtime

__all__ = [
    "MAX_BATCH",
    "MAX_PAYLOAD_BYTES",
    "DelegatingRoomAgent",
    "EventInput",
    "MemberIdOf",
    "Role",
    "RoleOf",
    "RoomAgent",
    "RoomAgentDescriptor",
    "RoomAgentRequest",
    "RoomInfo",
    "RoomLog",
    "RoomRun",
    "StartPolicy",
    "check_position",
    "encode_payload",
    "publication",
]

Role = Literal["owner", "editor", "viewer"]
"""A member's role on the machine: owners and editors create rooms; machine owners are
owners of every room."""

RoleOf = Callable[[str], Awaitable["Role | None"]]
"""Looks a member's current role up by its identity (a machine's member id), `None` when
it is not a member (any more)."""

MemberIdOf = Callable[[str], Awaitable["str | None"]]
"""Resolves what a caller names a member by (its name, or its id) to its identity (a
machine's member id), `None` when no member has it."""

MAX_PAYLOAD_BYTES = 65_536
"""The largest payload of one event, as JSON."""
MAX_BATCH = 100
"""The most events one publication may hold."""

StartPolicy = Literal["current", "persisted"]
"""Where an agent's worker starts: `current`, the room's head when it starts (nothing
missed is replayed after a restart); `persisted`, after the last position it handled,
kept in the store. A persisted agent's publications and its cursor's move commit in one
transaction, so after a crash no event is handled twice and none is skipped; only a
handler's outside effects may repeat (an event being handled when the process died is
handled again), which `RoomAgentRequest.idempotency_key` makes safe."""


def publication(events: Any) -> list[EventInput]:
    """The events of one publication, as every client checks them before sending: one
    `EventInput` or a sequence of 1 to `MAX_BATCH` (dicts are read as `EventInput`).

    Raises:
        RoomError: An empty or too large batch, or an item that is not an event.
    """
    batch = [events] if isinstance(events, EventInput) else list(events)
    if not batch or len(batch) > MAX_BATCH:
        raise RoomError(f"a publication holds 1 to {MAX_BATCH} events")
    checked = [EventInput.model_validate(e) if isinstance(e, dict) else e for e in batch]
    for item in checked:
        if not isinstance(item, EventInput):
            raise RoomError(f"{item!r} is not an EventInput")
    return checked


def check_position(after: object) -> int:
    """`after` when it is a room position to read after (an integer of 0 or more).

    Raises:
        RoomError: It is not.
    """
    if not isinstance(after, int) or isinstance(after, bool) or after < 0:
        raise RoomError(f"after must be a position (an integer of 0 or more), not {after!r}")
    return after


def encode_payload(payload: Any) -> str:
    """The payload as JSON text, or `ValueError` when it is not JSON or too large."""
    try:
        text = json.dumps(payload, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    except (TypeError, ValueError) as exc:
        raise ValueError(f"the payload is not JSON: {exc}") from None
    except RecursionError:
        raise ValueError("the payload is nested too deeply") from None
    if len(text.encode("utf-8")) > MAX_PAYLOAD_BYTES:
        raise ValueError(f"the payload is over {MAX_PAYLOAD_BYTES} bytes as JSON")
    return text


class EventInput(BaseModel):
    """An event to publish: its dotted type and a JSON payload."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    type: str
    payload: Any = None

    @field_validator("type")
    @classmethod
    def _type(cls, value: str) -> str:
        return check_type(value)


class RoomAgentDescriptor(BaseModel):
    """Who a room agent is and what it may do.

    Attributes:
        id: The agent's identity in the room (`stats`); it acts as `agent:<id>`.
        read: Type patterns the agent may read (its requests' `read()` and what it is
            given).
        publish: Type patterns it may publish.
        selects: Type patterns of the events that trigger it (only readable ones do).
        include_agent_events: Whether events published by other agents trigger it (its
            own never do).
        start: `current` or `persisted` (see `StartPolicy`).
        handler_timeout: Seconds one call of `handle` (or `delegate`) may take.
        max_attempts: For `persisted` agents, how many times an event whose handler
            failed is tried before the worker gives up on it and moves on.
        delegation_deadline: Seconds a delegation to the agent has, from its request,
            before it ends `expired` (a request may give its own).
        retry_interrupted: Whether a delegation whose handler was stopped with its
            process runs once more when the agent starts again (instead of ending
            `failed`); for handlers that are safe to repeat.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str = Field(pattern=r"^[a-z0-9][a-z0-9_.-]{0,99}$")
    description: str = ""
    read: tuple[str, ...] = ()
    publish: tuple[str, ...] = ()
    selects: tuple[str, ...] = ()
    include_agent_events: bool = False
    start: StartPolicy = "current"
    handler_timeout: float = Field(60.0, gt=0, le=86_400)
    max_attempts: int = Field(3, ge=1, le=100)
    delegation_deadline: float = Field(3600.0, gt=0, le=30 * 86_400)
    retry_interrupted: bool = False

    @field_validator("read", "publish", "selects", mode="before")
    @classmethod
    def _patterns(cls, value: Any) -> tuple[str, ...]:
        return check_patterns(value, "a pattern")

    @property
    def participant(self) -> str:
        """`agent:<id>`: how the agent appears as an author and in grants."""
        return f"agent:{self.id}"


class RoomInfo(BaseModel):
    """A room as its members see it (serialised with camelCase names: `createdBy`)."""

    model_config = ConfigDict(frozen=True, alias_generator=to_camel, populate_by_name=True)

    id: str
    name: str
    created_by: str
    created_at: float
    owners: tuple[str, ...] = ()
    head: int = 0


class RoomRun(BaseModel):
    """The engine run behind a room event (`RoomsClient.read_run`): its record and its
    stored events (`{"offset", "event"}`, the core's events in their wire form), as
    `GET /v1/runs/{id}` answers them."""

    model_config = ConfigDict(frozen=True, alias_generator=to_camel, populate_by_name=True)

    position: int
    run: RunRecord
    events: list[dict[str, Any]]


@dataclass(frozen=True)
class RoomAgentRequest:
    """What a room agent's handler gets.

    Attributes:
        room_id: The room.
        event: The event that triggered it.
        attempt: 1 for the first try; more when a `persisted` agent retries.
        runtime: The host's runtime (what LLM agents run on), when it has one.
        delegation_id: For `delegate()`, the delegation's id; `None` otherwise.
        task: For `delegate()`, the task the client gave.
        agent: The id of the agent handling it.
        deadline: For `delegate()`, when the delegation expires (seconds since the
            epoch), if it has a deadline.
    """

    room_id: str
    event: RoomEvent
    attempt: int
    _read: Callable[[int, Sequence[str] | None, int], Awaitable[list[RoomEvent]]]
    runtime: Runtime | None = None
    delegation_id: str | None = None
    task: Any = None
    agent: str = ""
    deadline: float | None = None
    runs: list[str] = field(default_factory=list)
    """The ids of the engine runs the handler recorded (`record_run`); the last one is
    stamped on its publications as `runId`."""

    @property
    def idempotency_key(self) -> str:
        """`<room>/<agent>/<position>` (`/<delegation id>` for a delegation): the same
        for every attempt at this event, different for every other, for handlers with
        outside effects (a payment, an email) to pass to the service they call, which
        makes a repeat after a crash harmless."""
        key = f"{self.room_id}/{self.agent}/{self.event.position}"
        return key if self.delegation_id is None else f"{key}/{self.delegation_id}"

    def record_run(self, run_id: str) -> None:
        """Record that the handler ran the engine as run `run_id`: its publications
        carry it as `runId`, and room readers may read that run through the room."""
        self.runs.append(run_id)

    async def read(
        self, after: int = 0, types: Sequence[str] | None = None, limit: int = 100
    ) -> list[RoomEvent]:
        """Events of the room after position `after`, limited to the agent's read grants
        (and to `types` patterns when given)."""
        return await self._read(after, types, limit)


@runtime_checkable
class RoomAgent(Protocol):
    """A participant that reacts to selected room events and publishes derived events.

    `handle` gets each selected event in room order, one at a time, and returns the
    events to publish: they are checked against the agent's publish grants and committed
    atomically under its identity (one outside the grants rejects the whole batch, which
    is recorded as a failure).
    """

    @property
    def descriptor(self) -> RoomAgentDescriptor: ...

    async def handle(self, request: RoomAgentRequest) -> list[EventInput]: ...


@runtime_checkable
class DelegatingRoomAgent(RoomAgent, Protocol):
    """A room agent that also takes delegations: `delegate` gets the task (in
    `request.task`) and returns the result (a JSON value)."""

    async def delegate(self, request: RoomAgentRequest) -> Any: ...


class RoomLog(Protocol):
    """What the readers and writers of a room's log need of their host (the `Rooms` host is
    one): its store, a subscription to a room's publications, commits, and delegations'
    endings."""

    @property
    def store(self) -> Store: ...

    @property
    def poll_interval(self) -> float: ...

    async def changes(self, room_id: str) -> Subscription: ...

    async def commit(
        self,
        room_id: str,
        inputs: Sequence[EventInput],
        author: str,
        *,
        delegation: DelegationRecord | None = None,
        expect: Sequence[str] | None = None,
        caused_by: int | None = None,
        run_id: str | None = None,
        cursor: tuple[str, int] | None = None,
    ) -> list[RoomEvent]: ...

    async def end_delegation(
        self,
        record: DelegationRecord,
        status: str,
        author: str,
        *,
        expect: Sequence[str],
        result: Any = None,
        error: str | None = None,
        caused_by: int | None = None,
        run_id: str | None = None,
        cursor: tuple[str, int] | None = None,
    ) -> DelegationRecord: ...
