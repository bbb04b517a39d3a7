"""The rooms host: rooms in a store, their agents' workers, and the clients of members.

`Rooms` is an async context manager over one store (and optionally the runtime LLM room
agents run on). A machine has one, over its own store and runtime (`machine.rooms`); it
also works alone. Every publication goes through `commit`, which appends to the store
(one transaction: positions, and a delegation's status when there is one) and wakes this
process's workers and subscribers; other processes' are woken by the store's
notifications when they are shared (PostgreSQL), else at their next poll.

Each (room, agent) worker runs in one process at a time: a worker first claims its
agent in the room (`Notifications.try_claim`, an advisory lock held by the process's
session on PostgreSQL); a process that registered the same agent but cannot claim it
keeps its worker on standby, and takes over when the holder stops or dies.
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import replace
from types import TracebackType
from typing import TYPE_CHECKING, Any, cast

import anyio
from anyio.abc import TaskGroup

from agentkit._internal import observe
from agentkit.errors import DelegationStateError
from agentkit.rooms._errors import RoomAgentError, RoomError
from agentkit.rooms._models import (
    EventInput,
    MemberIdOf,
    Role,
    RoleOf,
    RoomAgent,
    RoomAgentDescriptor,
    RoomInfo,
    encode_payload,
)
from agentkit.rooms._patterns import check_patterns, matches_any
from agentkit.rooms._worker import Worker, WorkerStatus
from agentkit.stores import (
    DelegationRecord,
    DelegationStatus,
    NewRoomEvent,
    Notifications,
    RoomEvent,
    RoomExistsError,
    RoomGrant,
    RoomNotFoundError,
    RoomRecord,
    Store,
    Subscription,
    notifications_of,
    open_store,
)

if TYPE_CHECKING:
    from agentkit.rooms._client import LocalRoomsClient
    from agentkit.runtime import Runtime

__all__ = ["Role", "Rooms"]

_logger = logging.getLogger("agentkit.rooms")


_AGENTS = "agents"
"""The key of a room's metadata that lists the agents ever registered in it."""


def room_topic(room_id: str) -> str:
    """The notifications topic of a room's publications."""
    return f"room:{room_id}"


class Rooms:
    """Rooms, their agents and their members' clients, over one store.

    ```python
    async with Rooms(store="rooms.db") as rooms:
        ada = rooms.client("ada", role="owner")
        room = await ada.create_room("lab")
        await rooms.register_agent(room.id, MessageStatistics())
        await ada.publish(room.id, EventInput(type="chat.message", payload={"text": "hi"}))
    ```

    Args:
        store: A `Store` or a location `open_store` accepts; by default the runtime's.
        runtime: The runtime LLM room agents run on (`SpecRoomAgent`); optional.
        poll_interval: Seconds between two reads of the store by a waiting worker or
            subscriber, for publications of other processes sharing the store (this
            process's own wake them at once).
        shutdown_timeout: Seconds the handlers in flight get when the host closes or an
            agent is removed, before they are cancelled.
        sweep_interval: Seconds between two looks for delegations past their deadline
            (in every room of the store, whoever's agent they were for): each ends
            `expired`.
        delegation_deadline: Seconds a delegation has when neither its request nor an
            agent registered in this process says (an agent that runs in another process
            records its own default in the room).
        role_of: Looks a member's current role up on each call (a machine's member list);
            without it, a client's role is the one it was made with.
        member_id_of: Resolves the member a grant or an owner list names (`member:ada`)
            to the member's identity (a machine's member id, which no later member of
            the same name shares); without it, members are named as they are.
    """

    def __init__(
        self,
        *,
        store: Store | str | os.PathLike[str] | None = None,
        runtime: Runtime | None = None,
        poll_interval: float = 1.0,
        shutdown_timeout: float = 10.0,
        sweep_interval: float = 5.0,
        delegation_deadline: float = 3600.0,
        role_of: RoleOf | None = None,
        member_id_of: MemberIdOf | None = None,
    ) -> None:
        if store is None and runtime is None:
            raise ValueError("Rooms needs a store or a runtime (whose store it uses)")
        self._owns_store = isinstance(store, str | os.PathLike)
        if store is None:
            assert runtime is not None
            store = runtime.store
        self.store: Store = open_store(store) if isinstance(store, str | os.PathLike) else store
        """The store rooms are kept in."""
        self.runtime = runtime
        """The runtime LLM room agents run on, if any."""
        self.poll_interval = poll_interval
        self.shutdown_timeout = shutdown_timeout
        self.sweep_interval = sweep_interval
        self.delegation_deadline = delegation_deadline
        self.role_of = role_of
        self.member_id_of = member_id_of
        self.notifications: Notifications = notifications_of(self.store)
        """What wakes workers and subscribers (see `agentkit.stores.Notifications`)."""
        self._workers: dict[tuple[str, str], Worker] = {}
        self._group: TaskGroup | None = None

    async def __aenter__(self) -> Rooms:
        self._group = anyio.create_task_group()
        await self._group.__aenter__()
        if self.runtime is None and self.notifications.shared:
            # Without a runtime (which listens for both), the host listens itself.
            self._group.start_soon(self.notifications.run)
        self._group.start_soon(self._sweep)
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        group, self._group = self._group, None
        try:
            if group is not None:
                with anyio.CancelScope(shield=True):
                    await self._stop_workers(list(self._workers.values()))
                group.cancel_scope.cancel()
                await group.__aexit__(None, None, None)
        finally:
            self._workers.clear()
            if self._owns_store:
                with anyio.CancelScope(shield=True):
                    await self.store.aclose()
        return None

    def client(self, name: str, *, role: Role = "editor") -> LocalRoomsClient:
        """The rooms API acting as the member `name` (author `member:<name>`; a machine
        passes the member's id)."""
        from agentkit.rooms._client import LocalRoomsClient

        return LocalRoomsClient(self, name, role)

    # --- rooms, as the host (no member: what an extension or a program sets up) --------

    async def ensure_room(self, room_id: str, name: str, *, owners: Sequence[str] = ()) -> RoomInfo:
        """The room `room_id`, created with `name` and `owners` (member names) when it does
        not exist yet; a fixed id makes setup code safe to run at every start. Machine
        owners own every room whatever `owners` says. On a machine each owner must be a
        member already (`RoomError` otherwise): it is recorded by its id."""
        room = await self.store.get_room(room_id)
        if room is None:
            owners = [await self.member_key(owner) for owner in owners]
            record = RoomRecord(
                id=room_id,
                name=name,
                created_by="",
                created_at=time.time(),
                metadata={"owners": list(owners)},
            )
            with contextlib.suppress(RoomExistsError):  # another process made it first
                await self.store.create_room(record)
            room = await self.store.get_room(room_id)
            assert room is not None
        return await self.info(room)

    async def member_key(self, name: str) -> str:
        """The identity of the member called `name` (its id on a machine); `RoomError`
        when the machine has no such member."""
        if self.member_id_of is None:
            return name
        found = await self.member_id_of(name)
        if found is None:
            raise RoomError(f"no member {name!r}")
        return found

    async def participant_key(self, participant: str) -> str:
        """`participant` with a member named by its identity (`member:<id>` on a
        machine); `member:*` and `agent:<id>` as they are."""
        kind, _, name = participant.partition(":")
        if kind != "member" or name == "*":
            return participant
        return f"member:{await self.member_key(name)}"

    async def info(self, room: RoomRecord) -> RoomInfo:
        """A stored room as members see it (with its head)."""
        return RoomInfo(
            id=room.id,
            name=room.name,
            created_by=room.created_by,
            created_at=room.created_at,
            owners=tuple(room.metadata.get("owners", ())),
            head=await self.store.room_head(room.id),
        )

    async def set_grant(
        self, room_id: str, participant: str, *, read: Sequence[str], publish: Sequence[str]
    ) -> RoomGrant:
        """Give a participant (`member:<name>`, `agent:<id>`) read and publish patterns in
        a room, as the host."""
        grant = RoomGrant(
            await self.participant_key(participant),
            check_patterns(read, "a read pattern"),
            check_patterns(publish, "a publish pattern"),
        )
        await self.store.set_grant(room_id, grant)
        return grant

    # --- agents -----------------------------------------------------------------------

    async def register_agent(self, room_id: str, agent: RoomAgent) -> None:
        """Start `agent`'s worker in a room; returns once it has its start position (an
        event published after this returns reaches a `current` agent).

        Raises:
            RoomAgentError: Not a room agent, or the room has an agent with that id.
            RoomNotFoundError: No such room.
        """
        group = self._require_open()
        descriptor = getattr(agent, "descriptor", None)
        if not isinstance(descriptor, RoomAgentDescriptor) or not callable(
            getattr(agent, "handle", None)
        ):
            raise RoomAgentError(
                f"{agent!r} is not a room agent (a `descriptor` and an async `handle`)"
            )
        if await self.store.get_room(room_id) is None:
            raise RoomNotFoundError(f"no room {room_id!r}")
        key = (room_id, descriptor.id)
        if key in self._workers:
            raise RoomAgentError(f"room {room_id!r} has an agent {descriptor.id!r} already")
        # The descriptor proposes the agent's first grant; once stored, the grant is the
        # owners' to change, and a registration (a restart) never overwrites it.
        stored = {grant.participant for grant in await self.store.list_grants(room_id)}
        if descriptor.participant not in stored:
            grant = RoomGrant(descriptor.participant, descriptor.read, descriptor.publish)
            await self.store.set_grant(room_id, grant)
        await self._record_agent(room_id, descriptor)
        worker = self._workers[key] = Worker(self, room_id, agent)
        group.start_soon(self._run_worker, worker)
        await worker.started.wait()

    async def _record_agent(self, room_id: str, descriptor: RoomAgentDescriptor) -> None:
        """Note the agent in the room's record, for the processes that delegate to it
        without running it: that it exists and its delegations' default deadline."""
        room = await self.store.get_room(room_id)
        if room is None:
            raise RoomNotFoundError(f"no room {room_id!r}")
        known = dict(room.metadata.get(_AGENTS, {}))
        entry = {"delegationDeadline": descriptor.delegation_deadline}
        if known.get(descriptor.id) != entry:
            known[descriptor.id] = entry
            await self.store.update_room(room_id, metadata={**room.metadata, _AGENTS: known})

    async def agent_known(self, room: RoomRecord, agent_id: str) -> float | None:
        """The default deadline of delegations to `agent_id` when the agent was ever
        registered in the room (in any process of the store), else `None`."""
        for (room_id, _), worker in self._workers.items():
            if room_id == room.id and worker.descriptor.id == agent_id:
                return worker.descriptor.delegation_deadline
        entry = room.metadata.get(_AGENTS, {}).get(agent_id)
        if isinstance(entry, dict):
            deadline = entry.get("delegationDeadline")
            return (
                float(deadline) if isinstance(deadline, int | float) else self.delegation_deadline
            )
        return None

    async def _run_worker(self, worker: Worker) -> None:
        try:
            await worker.run()
        finally:
            key = (worker.room_id, worker.descriptor.id)
            if self._workers.get(key) is worker:
                del self._workers[key]

    async def remove_agent(self, room_id: str, agent_id: str) -> None:
        """Stop an agent's worker in a room, after the event it is handling (bounded by
        `shutdown_timeout`). Its grant and, for a `persisted` agent, its cursor stay."""
        worker = self._workers.pop((room_id, agent_id), None)
        if worker is None:
            raise RoomAgentError(f"room {room_id!r} has no agent {agent_id!r} here")
        await self._stop_workers([worker])

    def agents(self, room_id: str) -> list[RoomAgentDescriptor]:
        """The descriptors of the agents registered in a room (in this process)."""
        return [w.descriptor for (room, _), w in self._workers.items() if room == room_id]

    async def workers(self, room_id: str | None = None) -> list[WorkerStatus]:
        """Each registered agent's progress in a room (every room's when `None`): cursor,
        lag, failures."""
        found = [w for (room, _), w in self._workers.items() if room_id in (None, room)]
        return [await worker.status() for worker in found]

    async def _stop_workers(self, workers: Sequence[Worker]) -> None:
        async with anyio.create_task_group() as group:
            for worker in workers:
                group.start_soon(worker.stop, self.shutdown_timeout)

    # --- publishing and reading (no access checks: the clients do them) -------------

    async def changes(self, room_id: str) -> Subscription:
        """A subscription notified at each publication in the room: this process's at
        once, other processes' through the store's notifications when they are shared
        (PostgreSQL). Take it before reading the room."""
        return await self.notifications.subscribe(room_topic(room_id))

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
    ) -> list[RoomEvent]:
        """Append `inputs` as `author`, atomically (with `delegation`'s new state, when
        its stored status is one of `expect`, and a consumer's `cursor` move), and wake
        this process's readers. Grants are the caller's to check.

        Raises:
            DelegationStateError: The delegation is not in an `expect`ed status.
            StoreUnavailableError: The store cannot write now (nothing is written).
        """
        now = time.time()
        events = []
        for item in inputs:
            encode_payload(item.payload)
            events.append(
                NewRoomEvent(
                    id=uuid.uuid4().hex,
                    type=item.type,
                    author=author,
                    payload=item.payload,
                    created_at=now,
                    caused_by=caused_by,
                    run_id=run_id,
                )
            )
        stored = await self.store.append_room_events(
            room_id, events, delegation=delegation, expect=expect, cursor=cursor
        )
        # This process's readers at once (other processes' through the store).
        self.notifications.dispatch((room_topic(room_id),))
        observe.room_events_published(len(stored))
        return stored

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
    ) -> DelegationRecord:
        """End a delegation (`completed`, `failed`, `cancelled`, `expired`) with its
        `delegation.<status>` event, in one transaction, when its stored status is one
        of `expect`; the ended record.

        Raises:
            DelegationStateError: It is not (it ended already).
        """
        ending = replace(
            record,
            status=cast("DelegationStatus", status),
            updated_at=time.time(),
            result=result,
            error=error,
        )
        body: dict[str, Any] = {"id": record.id, "agent": record.agent}
        if status == "completed":
            body["result"] = result
        else:
            body["error"] = error
        await self.commit(
            record.room_id,
            [EventInput(type=f"delegation.{status}", payload=body)],
            author,
            delegation=ending,
            expect=expect,
            caused_by=caused_by,
            run_id=run_id,
            cursor=cursor,
        )
        return ending

    async def _sweep(self) -> None:
        """End the delegations past their deadline, in every room, now and then. Every
        process sweeps; a delegation ends once (its status moves only from `pending` or
        `running`)."""
        while True:
            await anyio.sleep(self.sweep_interval)
            try:
                overdue = await self.store.overdue_delegations(time.time())
                for record in overdue:
                    with contextlib.suppress(DelegationStateError, RoomNotFoundError):
                        await self.end_delegation(
                            record,
                            "expired",
                            f"agent:{record.agent}",
                            expect=("pending", "running"),
                            error="expired: not done by its deadline",
                        )
            except Exception as exc:  # the store failed: the next sweep tries again
                _logger.warning("sweeping overdue delegations failed: %s", exc)

    def reader(
        self, room_id: str, readable: Sequence[str]
    ) -> Callable[[int, Sequence[str] | None, int], Awaitable[list[RoomEvent]]]:
        """A page reader limited to `readable` patterns (what an agent's request gets)."""

        async def read(after: int, types: Sequence[str] | None, limit: int) -> list[RoomEvent]:
            events, _ = await self.page(room_id, readable, after, types, limit)
            return events

        return read

    async def page(
        self,
        room_id: str,
        readable: Sequence[str],
        after: int,
        types: Sequence[str] | None,
        limit: int,
    ) -> tuple[list[RoomEvent], int]:
        """Up to `limit` events after `after` that are readable (and of `types`, when
        given), and the last position scanned (where the next page starts)."""
        limit = max(1, min(limit, 1000))
        found: list[RoomEvent] = []
        scanned = after
        while len(found) < limit:
            rows = await self.store.read_room_events(
                room_id, scanned, limit=limit, types=list(types) if types else None
            )
            for row in rows:
                scanned = row.position
                if matches_any(readable, row.type):
                    found.append(row)
                    if len(found) == limit:
                        break
            if len(rows) < limit:
                break
        return found, scanned

    def _require_open(self) -> TaskGroup:
        if self._group is None:
            raise RuntimeError("use the rooms inside 'async with Rooms(...) as rooms:'")
        return self._group
