"""One agent's worker in one room: the agent's selected events, one at a time, in room
order, with its progress kept (`persisted`) or not (`current`).

A worker runs while its process holds the claim of its agent in its room (one process at
a time; the others keep theirs on standby and take over when the holder goes). It reads
the room's log after its cursor, page by page, and waits for the next publication
(notified, or the poll interval).

Faults have two homes:

- A handler that raises, times out or publishes outside its grants never stops the
  worker: the failure is published as an `agent.failed` event (readable by the room's
  owners) and the worker moves on; a `persisted` agent first retries the event a bounded
  number of times. A publication the store refuses (a value it cannot keep) is such a
  failure too.
- A fault outside the handler (the store is full, unreachable, its connection lost) never
  stops it either: the worker is `degraded`, keeps its last fault, retries with backoff,
  and is `running` again by itself once the store answers. What a handler returned is
  kept while it waits, so a handler is not run again for a store fault.

A `persisted` agent's publications and its cursor's move commit in one transaction: after
a crash at any instant, no event it handled is handled again and none is skipped.
"""

from __future__ import annotations

import contextlib
import logging
import random
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeVar

import anyio

from agentkit.errors import DelegationStateError, StoreError, StoreUnavailableError
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

__all__ = ["AGENT_FAILED", "INTERRUPTED", "Worker", "WorkerState", "WorkerStatus"]

_logger = logging.getLogger("agentkit.rooms")
_T = TypeVar("_T")


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

INTERRUPTED = "interrupted: its process stopped"
"""The error of a delegation whose handler was stopped with its process."""

WorkerState = Literal["starting", "running", "standby", "degraded"]
"""`running`: handling the room's events; `standby`: another process runs the agent in
the room; `degraded`: the store failed, the worker retries with backoff (see `fault`)."""

_PAGE = 200
_REFUSED = (ValueError, TypeError, StoreError)
"""What a store raises for a value it will never take (not JSON, too large, a character
PostgreSQL cannot keep): unlike `StoreUnavailableError`, waiting does not help."""


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
        state: `running`, `standby`, `degraded` (the store failed: the worker retries
            with backoff) or `starting`.
        fault: While degraded, the store's error.
    """

    room_id: str
    agent: str
    start: str
    cursor: int
    head: int | None
    handling: int | None
    failures: int
    last_error: str | None
    standby: bool = False
    state: WorkerState = "running"
    fault: str | None = None

    @property
    def lag(self) -> int:
        return 0 if self.head is None else max(0, self.head - self.cursor)


class _Backoff:
    """Delays between retries: doubling from `first` to `cap`, each with jitter, so the
    workers of a process do not hammer a recovering store in step."""

    def __init__(self, first: float = 0.05, cap: float = 5.0) -> None:
        self.first = first
        self.cap = cap
        self._next = first

    def reset(self) -> None:
        self._next = self.first

    async def sleep(self) -> None:
        delay, self._next = self._next, min(self.cap, self._next * 2)
        await anyio.sleep(delay * random.uniform(0.5, 1.0))


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
        self.state: WorkerState = "starting"
        self.fault: str | None = None
        self.started = anyio.Event()
        self.scope = anyio.CancelScope()
        self._stopping = False
        self._idle = anyio.Event()
        self._positioned = False  # whether `cursor` holds this process's progress
        self._saved = 0  # a persisted agent's cursor as stored
        self._backoff = _Backoff()
        self.claim = f"room-worker {room_id} {self.descriptor.participant}"
        """What this worker claims: one process at a time runs it."""

    @property
    def participant(self) -> str:
        return self.descriptor.participant

    @property
    def persisted(self) -> bool:
        return self.descriptor.start == "persisted"

    @property
    def standby(self) -> bool:
        """Whether another process runs this agent in this room (this worker waits)."""
        return self.state == "standby"

    async def status(self) -> WorkerStatus:
        try:
            head: int | None = await self.host.store.room_head(self.room_id)
        except StoreError:
            head = None  # the listing shows a degraded worker, whatever the store says
        return WorkerStatus(
            room_id=self.room_id,
            agent=self.descriptor.id,
            start=self.descriptor.start,
            cursor=self.cursor,
            head=head,
            handling=self.handling,
            failures=self.failures,
            last_error=self.last_error,
            standby=self.standby,
            state=self.state,
            fault=self.fault,
        )

    async def stop(self, grace: float) -> None:
        """Stop after the event being handled (waiting at most `grace` seconds for it)."""
        self._stopping = True
        if self.handling is not None:
            with anyio.move_on_after(grace):
                await self._idle.wait()
        self.scope.cancel()

    # --- supervision ------------------------------------------------------------------

    async def run(self) -> None:
        with self.scope:
            try:
                while not self._stopping:
                    try:
                        await self._run()
                    except Exception as exc:
                        # Outside the handler: the store or the claim failed. The worker
                        # never stops for it; it retries, degraded, until the store answers.
                        self._degrade(exc)
                        await self._backoff.sleep()
            finally:
                self.started.set()

    def _degrade(self, exc: Exception) -> None:
        fault = f"{type(exc).__name__}: {exc}"[:2000]
        if self.state != "degraded" or fault != self.fault:
            log = _logger.warning if isinstance(exc, StoreError) else _logger.error
            log(
                "the worker of %s in room %s is degraded, retrying: %s",
                self.participant,
                self.room_id,
                fault,
                exc_info=not isinstance(exc, StoreError),  # a bug: its traceback helps
            )
        self.state = "degraded"
        self.fault = fault
        self.started.set()  # a registration waiting for the start must not hang

    def _recovered(self) -> None:
        if self.state == "degraded":
            _logger.warning("the worker of %s in room %s recovered", self.participant, self.room_id)
        self.state = "running"
        self.fault = None
        self._backoff.reset()

    async def _durably(self, op: Callable[..., Awaitable[_T]], *args: Any, **kwargs: Any) -> _T:
        """`op(*args, **kwargs)`, retried with backoff while the store is unavailable (the
        worker is degraded meanwhile); any other error is the caller's."""
        while True:
            try:
                result = await op(*args, **kwargs)
            except StoreUnavailableError as exc:
                self._degrade(exc)
                await self._backoff.sleep()
                continue
            if self.state == "degraded":
                self._recovered()
            return result

    # --- the room's events ------------------------------------------------------------

    async def _run(self) -> None:
        claims = self.host.notifications
        while not self._stopping:
            if not await claims.try_claim(self.claim):
                # Another process runs this agent in this room: on standby until it
                # stops or dies (its claim goes with its database session).
                self.state = "standby"
                self.fault = None
                self.started.set()
                await anyio.sleep(self.host.poll_interval)
                continue
            try:
                await self._work()
            finally:
                with anyio.CancelScope(shield=True):
                    try:
                        await claims.release(self.claim)
                    except Exception:  # the claim died with its connection
                        _logger.debug("releasing %s failed", self.claim, exc_info=True)

    async def _work(self) -> None:
        """Handle the room's events while this process holds the claim."""
        store = self.host.store
        claims = self.host.notifications
        stored = await store.get_cursor(self.room_id, self.participant) if self.persisted else None
        if stored is not None:
            self.cursor = stored
        elif not self._positioned:
            # A `current` agent starts at the head; a persisted one too, the first time.
            self.cursor = await store.room_head(self.room_id)
            if self.persisted:
                await store.set_cursor(self.room_id, self.participant, self.cursor)
        self._saved = self.cursor
        self._positioned = True
        self._recovered()
        self.started.set()
        with await self.host.changes(self.room_id) as changes:
            await self._resume_delegations()
            while not self._stopping and claims.holds(self.claim):
                changes.take()
                page = await store.read_room_events(self.room_id, self.cursor, limit=_PAGE)
                for event in page:
                    if self._stopping:
                        break
                    await self._consider(event)
                    self.cursor = event.position
                if self.persisted and self.cursor != self._saved:
                    # Past events that triggered nothing: one write per page is enough
                    # (looking at them again after a crash handles nothing twice).
                    await store.set_cursor(self.room_id, self.participant, self.cursor)
                    self._saved = self.cursor
                if len(page) < _PAGE and not self._stopping:
                    await changes.wait(self.host.poll_interval)

    def _consumed(self, position: int | None) -> tuple[str, int] | None:
        """The cursor move that commits with the publications of `position`: a persisted
        agent's (none for a `current` agent, or for a delegation found in the store)."""
        if not self.persisted or position is None or position <= self._saved:
            return None
        return (self.participant, position)

    async def _consider(self, event: RoomEvent) -> None:
        d = self.descriptor
        if event.type == "delegation.requested":
            payload = event.payload if isinstance(event.payload, dict) else {}
            if payload.get("agent") == d.id:
                record = await self.host.store.get_delegation(self.room_id, str(payload.get("id")))
                if record is not None and record.status == "pending":
                    await self._busy(event.position, self._delegation, record, event)
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
        await self._busy(event.position, self._handle, event, grant)

    async def _grant(self) -> RoomGrant:
        """The agent's grant in the room as it is stored now (none: it reads and
        publishes nothing)."""
        for grant in await self.host.store.list_grants(self.room_id):
            if grant.participant == self.participant:
                return grant
        return RoomGrant(self.participant, (), ())

    async def _busy(self, position: int, step: Callable[..., Awaitable[None]], *args: Any) -> None:
        self.handling = position
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
        attempts = d.max_attempts if self.persisted else 1
        error = ""
        run_id: str | None = None
        for attempt in range(1, attempts + 1):
            request = self._request(event, attempt, grant)
            try:
                with anyio.fail_after(d.handler_timeout):
                    outputs = await self.agent.handle(request)
                inputs = self._checked(outputs, grant)
            except TimeoutError:
                error = f"the handler took longer than {d.handler_timeout:g} s"
            except Exception as exc:
                error = f"{type(exc).__name__}: {exc}"
            else:
                run_id = request.runs[-1] if request.runs else None
                try:
                    await self._publish(event, inputs, run_id)
                    return
                except _REFUSED as exc:
                    # Waiting does not make the store take it: a failure, not retried.
                    error = f"the store refused the publication: {type(exc).__name__}: {exc}"
                    break
            run_id = request.runs[-1] if request.runs else None
            if attempt < attempts:
                await anyio.sleep(min(0.05 * 2**attempt, 5.0))
        await self._failed(event, error, attempt, run_id)

    async def _publish(
        self, event: RoomEvent, inputs: Sequence[EventInput], run_id: str | None
    ) -> None:
        """Commit what the handler of `event` returned, with a persisted agent's cursor
        move in the same transaction (just the move when it returned nothing)."""
        cursor = self._consumed(event.position)
        if inputs:
            await self._durably(
                self.host.commit,
                self.room_id,
                inputs,
                self.participant,
                caused_by=event.position,
                run_id=run_id,
                cursor=cursor,
            )
        elif cursor is not None:
            await self._durably(self.host.store.set_cursor, self.room_id, *cursor)
        if cursor is not None:
            self._saved = cursor[1]

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

    async def _failed(
        self, event: RoomEvent, error: str, attempts: int, run_id: str | None
    ) -> None:
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
        await self._publish(event, [failure], run_id)

    # --- delegations ------------------------------------------------------------------

    async def _resume_delegations(self) -> None:
        """What a process that stopped left of this agent's delegations: the `running`
        ones end `failed` (interrupted), or run again once when the descriptor says so;
        the `pending` ones are handled, whatever the start policy."""
        store = self.host.store
        d = self.descriptor
        for record in await store.list_delegations(self.room_id, statuses=("running",), agent=d.id):
            if d.retry_interrupted and record.attempts < 2:
                await self._busy(0, self._delegation, record, None, ("running",))
                continue
            with contextlib.suppress(DelegationStateError):  # ended meanwhile
                await self._durably(
                    self.host.end_delegation,
                    record,
                    "failed",
                    self.participant,
                    expect=("running",),
                    error=INTERRUPTED,
                )
        for record in await store.list_delegations(self.room_id, statuses=("pending",), agent=d.id):
            await self._busy(0, self._delegation, record, None)

    async def _delegation(
        self,
        record: DelegationRecord,
        event: RoomEvent | None,
        expect: Sequence[str] = ("pending",),
    ) -> None:
        """Take a delegation (`pending` -> `running`), run the agent's `delegate`, and end
        it: `completed`, `failed` or `expired`; nothing when it was cancelled or expired
        meanwhile by someone else."""
        running = _moved(record, "running", attempts=record.attempts + 1)
        position = None if event is None else event.position
        taken = EventInput(
            type="delegation.running", payload={"id": record.id, "agent": record.agent}
        )
        try:
            await self._durably(
                self.host.commit,
                self.room_id,
                [taken],
                self.participant,
                delegation=running,
                expect=expect,
                caused_by=position,
            )
        except DelegationStateError:
            return  # cancelled, expired, or taken by another worker meanwhile
        outcome = await self._outcome(running, event)
        if outcome is None:
            return  # ended by someone else while it ran
        status, result, error, run_id = outcome
        end = self.host.end_delegation
        try:
            await self._durably(
                end,
                running,
                status,
                self.participant,
                expect=("running",),
                result=result,
                error=error,
                caused_by=position,
                run_id=run_id,
                cursor=self._consumed(position),
            )
        except DelegationStateError:
            return
        except _REFUSED as exc:
            error = f"the store refused the result: {type(exc).__name__}: {exc}"[:2000]
            try:
                await self._durably(
                    end,
                    running,
                    "failed",
                    self.participant,
                    expect=("running",),
                    error=error,
                    caused_by=position,
                    run_id=run_id,
                    cursor=self._consumed(position),
                )
            except DelegationStateError:
                return
        if position is not None and self._consumed(position) is not None:
            self._saved = position

    async def _outcome(
        self, running: DelegationRecord, event: RoomEvent | None
    ) -> tuple[str, Any, str | None, str | None] | None:
        """Run `delegate` within the delegation's time: its ending (status, result,
        error, run id), or `None` when the delegation ended elsewhere meanwhile
        (cancelled, expired by the sweep)."""
        d = self.descriptor
        limit = d.handler_timeout
        expires = False
        if running.deadline is not None and running.deadline - time.time() <= limit:
            limit, expires = max(0.0, running.deadline - time.time()), True
        if event is None:  # found in the store: its request came before this worker
            event = RoomEvent(
                room_id=self.room_id,
                position=0,
                id="",
                type="delegation.requested",
                author=running.requested_by,
                payload={"id": running.id, "agent": running.agent, "task": running.task},
                created_at=running.created_at,
            )
        request: RoomAgentRequest | None = None
        outcome: tuple[str, Any, str | None, str | None] | None = None
        ended_elsewhere = anyio.Event()
        async with anyio.create_task_group() as group:
            group.start_soon(self._watch, running, group.cancel_scope, ended_elsewhere)
            try:
                delegate = getattr(self.agent, "delegate", None)
                if delegate is None:
                    raise TypeError(f"the agent {d.id!r} does not take delegations")
                with anyio.fail_after(limit):
                    grant = await self._grant()
                    request = self._request(
                        event,
                        running.attempts,
                        grant,
                        delegation_id=running.id,
                        task=running.task,
                        deadline=running.deadline,
                    )
                    result = await delegate(request)
                # The whole event the result travels in must fit, not the result alone.
                encode_payload({"id": running.id, "agent": running.agent, "result": result})
                outcome = ("completed", result, None, None)
            except TimeoutError:
                if expires:
                    outcome = ("expired", None, "expired: not done by its deadline", None)
                else:
                    error = f"the agent took longer than {d.handler_timeout:g} s"
                    outcome = ("failed", None, error, None)
            except Exception as exc:
                outcome = ("failed", None, f"{type(exc).__name__}: {exc}"[:2000], None)
            except BaseException:
                # Cancelled: the worker stops (shutdown) with the handler in flight. The
                # delegation ends now rather than staying `running` until a restart.
                if not ended_elsewhere.is_set():
                    with anyio.CancelScope(shield=True), anyio.move_on_after(5):
                        await self._interrupted(running)
                raise
            group.cancel_scope.cancel()  # the watch is over
        if outcome is not None and request is not None and request.runs:
            outcome = (*outcome[:3], request.runs[-1])
        return outcome

    async def _interrupted(self, running: DelegationRecord) -> None:
        try:
            await self.host.end_delegation(
                running, "failed", self.participant, expect=("running",), error=INTERRUPTED
            )
        except Exception:  # the sweep after a restart ends it instead
            _logger.debug("ending interrupted delegation %s failed", running.id, exc_info=True)

    async def _watch(
        self, running: DelegationRecord, scope: anyio.CancelScope, ended: anyio.Event
    ) -> None:
        """Cancel `scope` once the delegation is no longer `running` in the store (it was
        cancelled, or expired by the sweep), looking at each publication in the room;
        `ended` tells why the scope was cancelled."""
        with await self.host.changes(self.room_id) as changes:
            while True:
                await changes.wait(self.host.poll_interval)
                changes.take()
                try:
                    current = await self.host.store.get_delegation(self.room_id, running.id)
                except StoreError:
                    continue  # the store's fault is the worker's to report, not the watch's
                if current is None or current.status != "running":
                    ended.set()
                    scope.cancel()
                    return


def _moved(record: DelegationRecord, status: Any, **changes: Any) -> DelegationRecord:
    return replace(record, status=status, updated_at=time.time(), **changes)
