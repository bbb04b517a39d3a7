"""One agent's worker in one room: the agent's selected events, one at a time, in room
order, with its progress kept (`persisted`) or not (`current`).

A worker runs while its process holds the claim of its agent in its room (one process at
a time; the others keep theirs on standby and take over when the holder goes). It reads
the room's log after its cursor, page by page, and waits for the next publication
(notified, or the poll interval).
A handler that raises, times out or publishes outside its grants never stops it: the
failure is published as an `agent.failed` event (readable by the room's owners) and the
worker moves on; a `persisted` agent first retries the event a bounded number of times.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import anyio

from agentkit.rooms._models import (
    EventInput,
    RoomAgent,
    RoomAgentRequest,
    RoomLog,
    encode_payload,
)
from agentkit.rooms._patterns import matches_any
from agentkit.stores import DelegationRecord, Notifications, RoomEvent, RoomGrant

if TYPE_CHECKING:
    from agentkit.runtime import Runtime

__all__ = ["AGENT_FAILED", "Worker", "WorkerStatus"]

_logger = logging.getLogger("agentkit.rooms")


class WorkerHost(RoomLog, Protocol):
    """What a worker needs of its host (the `Rooms` host is one)."""

    @property
    def notifications(self) -> Notifications: ...

    @property
    def runtime(self) -> Runtime | None: ...

    def reader(
        self, room_id: str, readable: Sequence[str]
    ) -> Callable[[int, Sequence[str] | None, int], Awaitable[list[RoomEvent]]]: ...


AGENT_FAILED = "agent.failed"
"""The type of the event a failed handler leaves: `{agent, position, eventType, error,
attempts}`, published under the agent's identity (whatever its grants)."""

_PAGE = 200


@dataclass(frozen=True)
class WorkerStatus:
    """An agent's progress in a room.

    Attributes:
        cursor: The last position the worker has dealt with.
        lag: How many positions it is behind the room's head.
        handling: The position being handled now, if any.
        failures: Events given up on since the worker started.
        last_error: The last handler failure.
        standby: Whether another process runs the agent in the room (this one waits to
            take over).
    """

    room_id: str
    agent: str
    start: str
    cursor: int
    head: int
    handling: int | None
    failures: int
    last_error: str | None
    standby: bool = False

    @property
    def lag(self) -> int:
        return max(0, self.head - self.cursor)


class Worker:
    """The worker of `agent` in `room_id` (run by the `Rooms` host's task group)."""

    def __init__(self, host: WorkerHost, room_id: str, agent: RoomAgent) -> None:
        self.host = host
        self.room_id = room_id
        self.agent = agent
        self.descriptor = agent.descriptor
        self.cursor = 0
        self.handling: int | None = None
        self.failures = 0
        self.last_error: str | None = None
        self.started = anyio.Event()
        self.scope = anyio.CancelScope()
        self._stopping = False
        self._idle = anyio.Event()
        self.claim = f"room-worker {room_id} {self.descriptor.participant}"
        """What this worker claims: one process at a time runs it."""
        self.standby = False
        """Whether another process runs this agent in this room (this worker waits)."""

    @property
    def participant(self) -> str:
        return self.descriptor.participant

    async def status(self) -> WorkerStatus:
        return WorkerStatus(
            room_id=self.room_id,
            agent=self.descriptor.id,
            start=self.descriptor.start,
            cursor=self.cursor,
            head=await self.host.store.room_head(self.room_id),
            handling=self.handling,
            failures=self.failures,
            last_error=self.last_error,
            standby=self.standby,
        )

    async def stop(self, grace: float) -> None:
        """Stop after the event being handled (waiting at most `grace` seconds for it)."""
        self._stopping = True
        if self.handling is not None:
            with anyio.move_on_after(grace):
                await self._idle.wait()
        self.scope.cancel()

    async def run(self) -> None:
        with self.scope:
            try:
                await self._run()
            except Exception:
                # A store that fails for good: the worker stops, the room goes on.
                _logger.exception(
                    "the worker of %s in room %s stopped", self.participant, self.room_id
                )
            finally:
                self.started.set()

    async def _run(self) -> None:
        claims = self.host.notifications
        while not self._stopping:
            if not await claims.try_claim(self.claim):
                # Another process runs this agent in this room: on standby until it
                # stops or dies (its claim goes with its database session).
                self.standby = True
                self.started.set()
                await anyio.sleep(self.host.poll_interval)
                continue
            self.standby = False
            try:
                await self._work()
            finally:
                with anyio.CancelScope(shield=True):
                    await claims.release(self.claim)

    async def _work(self) -> None:
        """Handle the room's events while this process holds the claim."""
        store = self.host.store
        claims = self.host.notifications
        persisted = self.descriptor.start == "persisted"
        stored = await store.get_cursor(self.room_id, self.participant) if persisted else None
        if stored is None:
            self.cursor = await store.room_head(self.room_id)
            if persisted:
                await store.set_cursor(self.room_id, self.participant, self.cursor)
        else:
            self.cursor = stored
        self.started.set()
        with await self.host.changes(self.room_id) as changes:
            while not self._stopping and claims.holds(self.claim):
                changes.take()
                page = await store.read_room_events(self.room_id, self.cursor, limit=_PAGE)
                saved = self.cursor
                for event in page:
                    if self._stopping:
                        break
                    await self._consider(event)
                    self.cursor = event.position
                if persisted and self.cursor != saved:
                    await store.set_cursor(self.room_id, self.participant, self.cursor)
                if len(page) < _PAGE and not self._stopping:
                    await changes.wait(self.host.poll_interval)

    async def _consider(self, event: RoomEvent) -> None:
        d = self.descriptor
        if event.type == "delegation.requested":
            payload = event.payload if isinstance(event.payload, dict) else {}
            if payload.get("agent") == d.id:
                await self._busy(self._delegation, event, payload)
            return
        if event.author == self.participant:
            return  # never its own outputs
        if event.author.startswith("agent:") and not d.include_agent_events:
            return
        if not matches_any(d.selects, event.type):
            return
        # The stored grant is the authority (an owner may narrow or revoke it): read at
        # every event, so a change applies from the next one.
        grant = await self._grant()
        if not matches_any(grant.read, event.type):
            return
        await self._busy(self._handle, event, grant)

    async def _grant(self) -> RoomGrant:
        """The agent's grant in the room as it is stored now (none: it reads and
        publishes nothing)."""
        for grant in await self.host.store.list_grants(self.room_id):
            if grant.participant == self.participant:
                return grant
        return RoomGrant(self.participant, (), ())

    async def _busy(self, step: Any, *args: Any) -> None:
        self.handling = args[0].position
        self._idle = anyio.Event()
        try:
            await step(*args)
        finally:
            self.handling = None
            self._idle.set()

    def _request(
        self, event: RoomEvent, attempt: int, grant: RoomGrant, **delegation: Any
    ) -> RoomAgentRequest:
        reader = self.host.reader(self.room_id, grant.read)
        return RoomAgentRequest(
            room_id=self.room_id,
            event=event,
            attempt=attempt,
            _read=reader,
            runtime=self.host.runtime,
            agent=self.descriptor.id,
            **delegation,
        )

    async def _handle(self, event: RoomEvent, grant: RoomGrant) -> None:
        d = self.descriptor
        attempts = d.max_attempts if d.start == "persisted" else 1
        error = ""
        for attempt in range(1, attempts + 1):
            try:
                with anyio.fail_after(d.handler_timeout):
                    outputs = await self.agent.handle(self._request(event, attempt, grant))
                inputs = self._checked(outputs, grant)
                if inputs:
                    await self.host.commit(self.room_id, inputs, self.participant)
                return
            except TimeoutError:
                error = f"the handler took longer than {d.handler_timeout:g} s"
            except Exception as exc:
                error = f"{type(exc).__name__}: {exc}"
            if attempt < attempts:
                await anyio.sleep(min(0.05 * 2**attempt, 5.0))
        await self._failed(event, error, attempts)

    def _checked(self, outputs: Any, grant: RoomGrant) -> list[EventInput]:
        """The handler's publications, every one within the agent's publish grants (one
        outside rejects them all)."""
        if outputs is None:
            return []
        if not isinstance(outputs, list | tuple):
            raise TypeError(f"handle() returned {type(outputs).__name__}, not a list of EventInput")
        inputs = [EventInput.model_validate(o) if isinstance(o, dict) else o for o in outputs]
        for item in inputs:
            if not isinstance(item, EventInput):
                raise TypeError(f"handle() returned {type(item).__name__}, not EventInput")
            if not matches_any(grant.publish, item.type):
                raise PermissionError(
                    f"publishing {item.type!r} is outside the agent's grants "
                    f"({', '.join(grant.publish) or 'none'}): nothing was published"
                )
            encode_payload(item.payload)
        return inputs

    async def _failed(self, event: RoomEvent, error: str, attempts: int) -> None:
        self.failures += 1
        self.last_error = error
        _logger.warning(
            "room %s: %s gave up on position %d after %d attempt(s): %s",
            self.room_id,
            self.participant,
            event.position,
            attempts,
            error,
        )
        failure = EventInput(
            type=AGENT_FAILED,
            payload={
                "agent": self.descriptor.id,
                "position": event.position,
                "eventType": event.type,
                "error": error[:2000],
                "attempts": attempts,
            },
        )
        await self.host.commit(self.room_id, [failure], self.participant)

    async def _delegation(self, event: RoomEvent, payload: dict[str, Any]) -> None:
        store = self.host.store
        record = await store.get_delegation(self.room_id, str(payload.get("id")))
        if record is None or record.status != "pending":
            return  # handled already: a persisted worker may see its request again
        delegate = getattr(self.agent, "delegate", None)
        running = _moved(record, "running")
        agent = record.agent
        await self.host.commit(
            self.room_id,
            [EventInput(type="delegation.running", payload={"id": record.id, "agent": agent})],
            self.participant,
            delegation=running,
        )
        try:
            if delegate is None:
                raise TypeError(f"the agent {self.descriptor.id!r} does not take delegations")
            with anyio.fail_after(self.descriptor.handler_timeout):
                grant = await self._grant()
                result = await delegate(
                    self._request(event, 1, grant, delegation_id=record.id, task=record.task)
                )
            encode_payload(result)
        except Exception as exc:
            if isinstance(exc, TimeoutError):
                error = f"the agent took longer than {self.descriptor.handler_timeout:g} s"
            else:
                error = f"{type(exc).__name__}: {exc}"
            ending = _moved(running, "failed", error=error[:2000])
            body = {"id": record.id, "agent": record.agent, "error": ending.error}
            kind = "delegation.failed"
        else:
            ending = _moved(running, "completed", result=result)
            body = {"id": record.id, "agent": record.agent, "result": result}
            kind = "delegation.completed"
        await self.host.commit(
            self.room_id, [EventInput(type=kind, payload=body)], self.participant, delegation=ending
        )


def _moved(record: DelegationRecord, status: Any, **changes: Any) -> DelegationRecord:
    from dataclasses import replace

    return replace(record, status=status, updated_at=time.time(), **changes)
