"""The rooms API acting as one member: rooms, grants, publishing, reading, subscribing
and delegations, each call checked against the member's grants in that room.

A room the member may not see (it owns it, or holds a grant in it) is missing to it:
`RoomNotFoundError`, exactly as for a room that does not exist.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import AsyncIterator, Sequence
from typing import Any, Protocol, runtime_checkable

import anyio

from agentkit.errors import DelegationStateError, InvalidPageError, RunNotFoundError
from agentkit.events import to_wire
from agentkit.paging import (
    Page,
    check_limit,
    decode_cursor,
    decode_key,
    encode_cursor,
    page_of,
    record_key,
)
from agentkit.rooms._errors import (
    DelegationEndedError,
    DelegationNotFoundError,
    RoomAccessError,
    RoomAgentError,
    RoomError,
)
from agentkit.rooms._models import (
    EventInput,
    Role,
    RoleOf,
    RoomAgentDescriptor,
    RoomInfo,
    RoomLog,
    RoomRun,
    check_position,
    publication,
)
from agentkit.rooms._patterns import check_patterns, matches_any
from agentkit.stores import (
    DELEGATION_ENDED,
    DELEGATION_STATUSES,
    DelegationRecord,
    RoomEvent,
    RoomGrant,
    RoomNotFoundError,
    RoomRecord,
)

__all__ = ["LocalRoomsClient", "RoomsClient"]

_ALL = ("*",)
EVERY_MEMBER = "member:*"
"""The participant of a grant that applies to every member without a grant of its own."""
_OWNERS = "owners"
_MAX_DEADLINE = 30 * 86_400
_SCAN = 500  # delegations read per store call while filling a page


def _statuses(status: str | Sequence[str] | None) -> tuple[str, ...] | None:
    """The statuses a delegations list keeps (`None`: all); `RoomError` for an unknown
    one."""
    if status is None:
        return None
    wanted = (status,) if isinstance(status, str) else tuple(status)
    unknown = [s for s in wanted if s not in DELEGATION_STATUSES]
    if unknown or not wanted:
        raise RoomError(
            f"status {', '.join(map(repr, unknown)) or '(none)'} is not one of "
            f"{', '.join(sorted(DELEGATION_STATUSES))}"
        )
    return wanted


class ClientHost(RoomLog, Protocol):
    """What a member's in-process client needs of its host (the `Rooms` host is one)."""

    @property
    def role_of(self) -> RoleOf | None: ...

    def agents(self, room_id: str) -> list[RoomAgentDescriptor]: ...

    async def remove_agent(self, room_id: str, agent_id: str) -> None: ...

    async def info(self, room: RoomRecord) -> RoomInfo: ...

    async def participant_key(self, participant: str) -> str: ...

    async def page(
        self,
        room_id: str,
        readable: Sequence[str],
        after: int,
        types: Sequence[str] | None,
        limit: int,
    ) -> tuple[list[RoomEvent], int]: ...

    async def agent_known(self, room: RoomRecord, agent_id: str) -> float | None: ...


@runtime_checkable
class RoomsClient(Protocol):
    """The rooms API acting as one member; in process (`rooms.client(name)` or
    `machine.rooms_client(member)`) or over HTTP, with the same methods."""

    @property
    def participant(self) -> str:
        """`member:<id>` on a machine (`member:<name>` for a standalone `Rooms` host):
        how this member appears as an author and in grants."""
        ...

    async def create_room(self, name: str) -> RoomInfo: ...
    async def list_rooms(
        self, *, limit: int | None = None, cursor: str | None = None
    ) -> Page[RoomInfo]: ...
    async def get_room(self, room_id: str) -> RoomInfo: ...
    async def delete_room(self, room_id: str) -> None: ...
    async def set_grant(
        self, room_id: str, participant: str, *, read: Sequence[str], publish: Sequence[str]
    ) -> RoomGrant: ...
    async def list_grants(self, room_id: str) -> list[RoomGrant]: ...
    async def publish(
        self, room_id: str, events: EventInput | Sequence[EventInput]
    ) -> list[int]: ...
    async def read(
        self,
        room_id: str,
        *,
        after: int = 0,
        types: Sequence[str] | None = None,
        limit: int = 100,
        cursor: str | None = None,
    ) -> Page[RoomEvent]: ...
    def subscribe(
        self, room_id: str, *, after: int = 0, types: Sequence[str] | None = None
    ) -> AsyncIterator[RoomEvent]: ...
    async def delegate(
        self, room_id: str, agent: str, task: Any, *, deadline: float | None = None
    ) -> DelegationRecord: ...
    async def get_delegation(self, room_id: str, delegation_id: str) -> DelegationRecord: ...
    async def cancel_delegation(self, room_id: str, delegation_id: str) -> DelegationRecord: ...
    async def list_delegations(
        self,
        room_id: str,
        *,
        status: str | Sequence[str] | None = None,
        after: str | None = None,
        limit: int | None = None,
        cursor: str | None = None,
    ) -> Page[DelegationRecord]: ...
    async def wait_delegation(
        self,
        room_id: str,
        delegation_id: str,
        *,
        timeout: float | None = 600.0,  # noqa: ASYNC109 (the default bound is the point)
    ) -> DelegationRecord: ...
    async def read_run(self, room_id: str, position: int) -> RoomRun: ...


class LocalRoomsClient(RoomsClient):
    """The in-process rooms client of one member."""

    def __init__(self, host: ClientHost, name: str, role: Role) -> None:
        self._host = host
        self._name = name
        self._role = role

    def __repr__(self) -> str:
        return f"<LocalRoomsClient {self._name} ({self._role})>"

    @property
    def participant(self) -> str:
        return f"member:{self._name}"

    # --- access -----------------------------------------------------------------------

    async def _current_role(self) -> Role:
        if self._host.role_of is None:
            return self._role
        role = await self._host.role_of(self._name)
        if role is None:
            raise RoomAccessError(f"{self._name!r} is not a member of this machine")
        return role

    async def _access(self, room_id: str) -> tuple[RoomRecord, bool, RoomGrant]:
        """The room, whether the member owns it, and its grant (all of it for owners)."""
        role = await self._current_role()
        room = await self._host.store.get_room(room_id) if isinstance(room_id, str) else None
        if room is None:
            raise RoomNotFoundError(f"no room {room_id!r}")
        owner = role == "owner" or self._name in room.metadata.get(_OWNERS, ())
        if owner:
            return room, True, RoomGrant(self.participant, _ALL, _ALL)
        everyone = None
        for grant in await self._host.store.list_grants(room_id):
            if grant.participant == self.participant:
                return room, False, grant
            if grant.participant == EVERY_MEMBER:
                everyone = grant
        if everyone is not None:
            return room, False, RoomGrant(self.participant, everyone.read, everyone.publish)
        raise RoomNotFoundError(f"no room {room_id!r}")

    async def _owned(self, room_id: str, what: str) -> RoomRecord:
        room, owner, _ = await self._access(room_id)
        if not owner:
            raise RoomAccessError(f"only the room's owners may {what}")
        return room

    # --- rooms ------------------------------------------------------------------------

    async def create_room(self, name: str) -> RoomInfo:
        """Create a room; its creator owns it and holds every grant in it."""
        role = await self._current_role()
        if role == "viewer":
            raise RoomAccessError("viewers cannot create rooms")
        if not isinstance(name, str) or not name.strip() or len(name) > 200:
            raise RoomError("a room's name is 1 to 200 characters")
        room = RoomRecord(
            id=uuid.uuid4().hex,
            name=name,
            created_by=self._name,
            created_at=time.time(),
            metadata={_OWNERS: [self._name]},
        )
        await self._host.store.create_room(room)
        return await self._host.info(room)

    async def list_rooms(
        self, *, limit: int | None = None, cursor: str | None = None
    ) -> Page[RoomInfo]:
        """A page of the rooms this member owns or holds a grant in, oldest first (see
        `agentkit.paging`)."""
        size = check_limit(limit)
        after = decode_key(cursor, "rooms")
        found: list[RoomRecord] = []
        for room in sorted(await self._host.store.list_rooms(), key=record_key):
            if after is not None and record_key(room) <= after:
                continue
            try:
                await self._access(room.id)
            except RoomNotFoundError:
                continue
            found.append(room)
            if len(found) > size:
                break
        page = page_of(found, size, "rooms", record_key, lambda room: room)
        return Page([await self._host.info(room) for room in page], page.next)

    async def get_room(self, room_id: str) -> RoomInfo:
        room, _, _ = await self._access(room_id)
        return await self._host.info(room)

    async def delete_room(self, room_id: str) -> None:
        """Delete a room with its events (owners). Its agents here are removed first."""
        await self._owned(room_id, "delete it")
        for descriptor in self._host.agents(room_id):
            await self._host.remove_agent(room_id, descriptor.id)
        await self._host.store.delete_room(room_id)

    # --- grants -----------------------------------------------------------------------

    async def set_grant(
        self, room_id: str, participant: str, *, read: Sequence[str], publish: Sequence[str]
    ) -> RoomGrant:
        """Give `participant` (`member:<name>`, `agent:<id>`, or `member:*` for every
        member without a grant of its own) these read and publish patterns in the room,
        replacing its grant (owners). Empty lists revoke."""
        await self._owned(room_id, "manage grants")
        if not isinstance(participant, str) or not participant.startswith(("member:", "agent:")):
            raise RoomError(
                f"participant {participant!r} is not 'member:<name>', 'member:*' (every "
                "member) or 'agent:<id>'"
            )
        read = check_patterns(read, "a read pattern")
        publish = check_patterns(publish, "a publish pattern")
        # On a machine a member is granted by its id: a later member of the same name is
        # someone else and gets nothing of this grant.
        grant = RoomGrant(await self._host.participant_key(participant), read, publish)
        # An agent's revoke is kept as an empty grant: its descriptor's first grant must
        # not come back when it registers again (a restart).
        if not grant.read and not grant.publish and not grant.participant.startswith("agent:"):
            await self._host.store.delete_grant(room_id, grant.participant)
        else:
            await self._host.store.set_grant(room_id, grant)
        return grant

    async def list_grants(self, room_id: str) -> list[RoomGrant]:
        await self._owned(room_id, "list grants")
        return await self._host.store.list_grants(room_id)

    # --- events -----------------------------------------------------------------------

    async def publish(self, room_id: str, events: EventInput | Sequence[EventInput]) -> list[int]:
        """Publish one event or a batch, atomically; returns their positions.

        Raises:
            RoomAccessError: An event is outside the member's publish grants (nothing of
                the batch is published).
        """
        batch = publication(events)
        _, _, grant = await self._access(room_id)
        for item in batch:
            if not matches_any(grant.publish, item.type):
                raise RoomAccessError(
                    f"publishing {item.type!r} is outside {self.participant}'s grants: "
                    "nothing was published"
                )
        try:
            stored = await self._host.commit(room_id, batch, self.participant)
        except ValueError as exc:
            raise RoomError(str(exc)) from None
        return [event.position for event in stored]

    async def read(
        self,
        room_id: str,
        *,
        after: int = 0,
        types: Sequence[str] | None = None,
        limit: int = 100,
        cursor: str | None = None,
    ) -> Page[RoomEvent]:
        """A page of the events after position `after` (or after the `next` cursor of the
        page before) that the member may read, and of `types` patterns when given: at most
        `limit` (1 to 1,000). `next` is `None` once the page reached the room's head."""
        limit = check_limit(limit)
        _, _, grant = await self._access(room_id)
        wanted = check_patterns(types, "a type pattern") if types else None
        if cursor is not None:
            room, after = decode_cursor(cursor, "events", str, int)
            if room != room_id:
                raise InvalidPageError("cursor is not one this list gave")
        check_position(after)
        events, scanned = await self._host.page(room_id, grant.read, after, wanted, limit)
        following = encode_cursor("events", room_id, scanned) if len(events) >= limit else None
        return Page(events, following)

    async def subscribe(
        self, room_id: str, *, after: int = 0, types: Sequence[str] | None = None
    ) -> AsyncIterator[RoomEvent]:
        """The readable events after `after` (replayed from the store), then each new one
        as it is published, until the caller stops; resume with `after=<last position>`.
        Grants are checked again at every page: a revoked grant stops the flow of what
        it covered."""
        wanted = check_patterns(types, "a type pattern") if types else None
        check_position(after)
        cursor = after
        with await self._host.changes(room_id) as changes:
            while True:
                changes.take()
                _, _, grant = await self._access(room_id)
                events, scanned = await self._host.page(room_id, grant.read, cursor, wanted, 500)
                for event in events:
                    yield event
                if scanned == cursor:
                    await changes.wait(self._host.poll_interval)
                cursor = scanned

    # --- delegations ------------------------------------------------------------------

    async def delegate(
        self, room_id: str, agent: str, task: Any, *, deadline: float | None = None
    ) -> DelegationRecord:
        """Ask `agent` for a task: a `delegation.requested` event and a `pending`
        delegation, then `running` and one ending: `completed` (with its result),
        `failed`, `cancelled` or `expired`, each a `delegation.*` event. Needs the grant
        to publish `delegation.requested`. The agent may run in any process sharing the
        store; `deadline` (seconds, default the agent's `delegation_deadline`) bounds how
        long the delegation may stay unanswered."""
        room, _, grant = await self._access(room_id)
        if not matches_any(grant.publish, "delegation.requested"):
            raise RoomAccessError(
                "delegating is publishing 'delegation.requested', outside "
                f"{self.participant}'s grants"
            )
        default = await self._host.agent_known(room, agent) if isinstance(agent, str) else None
        if default is None:
            raise RoomAgentError(f"room {room_id!r} has no agent {agent!r}")
        if deadline is not None and (
            isinstance(deadline, bool)
            or not isinstance(deadline, int | float)
            or not 0 < deadline <= _MAX_DEADLINE
        ):
            raise RoomError(f"deadline is seconds, over 0 and at most {_MAX_DEADLINE}")
        now = time.time()
        record = DelegationRecord(
            id=uuid.uuid4().hex,
            room_id=room_id,
            agent=agent,
            task=task,
            status="pending",
            requested_by=self.participant,
            created_at=now,
            updated_at=now,
            deadline=now + (default if deadline is None else deadline),
        )
        request = EventInput(
            type="delegation.requested", payload={"id": record.id, "agent": agent, "task": task}
        )
        try:
            await self._host.commit(room_id, [request], self.participant, delegation=record)
        except ValueError as exc:
            raise RoomError(str(exc)) from None
        return record

    async def _visible_delegation(
        self, room_id: str, delegation_id: str
    ) -> tuple[DelegationRecord, bool]:
        """A delegation the member may see, and whether it may cancel it (its requester
        and the room's owners may)."""
        _, owner, grant = await self._access(room_id)
        record = (
            await self._host.store.get_delegation(room_id, delegation_id)
            if isinstance(delegation_id, str)
            else None
        )
        mine = record is not None and (owner or record.requested_by == self.participant)
        if record is None or not (mine or matches_any(grant.read, "delegation.completed")):
            raise DelegationNotFoundError(f"room {room_id!r} has no delegation {delegation_id!r}")
        return record, mine

    async def get_delegation(self, room_id: str, delegation_id: str) -> DelegationRecord:
        """A delegation, for its requester, the room's owners, and who may read
        `delegation.*` events."""
        record, _ = await self._visible_delegation(room_id, delegation_id)
        return record

    async def cancel_delegation(self, room_id: str, delegation_id: str) -> DelegationRecord:
        """Cancel a `pending` or `running` delegation (its requester and the room's
        owners): it ends `cancelled` with a `delegation.cancelled` event, and a handler
        running it is stopped.

        Raises:
            DelegationEndedError: It has ended already.
            RoomAccessError: The member may see it but not cancel it.
        """
        record, mine = await self._visible_delegation(room_id, delegation_id)
        if not mine:
            raise RoomAccessError("only a delegation's requester and the room's owners cancel it")
        try:
            return await self._host.end_delegation(
                record,
                "cancelled",
                self.participant,
                expect=("pending", "running"),
                error=f"cancelled by {self.participant}",
            )
        except DelegationStateError as exc:
            raise DelegationEndedError(
                f"delegation {delegation_id!r} has ended already ({exc.status})"
            ) from None

    async def list_delegations(
        self,
        room_id: str,
        *,
        status: str | Sequence[str] | None = None,
        after: str | None = None,
        limit: int | None = None,
        cursor: str | None = None,
    ) -> Page[DelegationRecord]:
        """A page of the room's delegations this member may see (as `get_delegation`
        says), oldest first: of `status` only (one or several) when given, after the
        delegation of id `after` (or the `next` cursor of the page before)."""
        size = check_limit(limit)
        statuses = _statuses(status)
        _, owner, grant = await self._access(room_id)
        key = decode_key(cursor, "delegations")
        if after is not None:
            anchor = await self._host.store.get_delegation(room_id, after)
            if anchor is None:
                raise InvalidPageError(f"after: room {room_id!r} has no delegation {after!r}")
            key = record_key(anchor) if key is None else max(key, record_key(anchor))
        sees_all = owner or matches_any(grant.read, "delegation.completed")
        found: list[DelegationRecord] = []
        while len(found) <= size:
            batch = await self._host.store.list_delegations(
                room_id, statuses=statuses, after=key, limit=_SCAN
            )
            found.extend(r for r in batch if sees_all or r.requested_by == self.participant)
            if len(batch) < _SCAN:
                break
            key = record_key(batch[-1])
        return page_of(found[: size + 1], size, "delegations", record_key, lambda r: r)

    async def wait_delegation(
        self,
        room_id: str,
        delegation_id: str,
        *,
        timeout: float | None = 600.0,  # noqa: ASYNC109 (the default bound is the point)
    ) -> DelegationRecord:
        """The delegation once it has ended (`completed`, `failed`, `cancelled` or
        `expired`).

        Raises:
            TimeoutError: Not ended within `timeout` seconds (`None`: no bound; the
                delegation's deadline ends it anyway).
        """
        with anyio.fail_after(timeout), await self._host.changes(room_id) as changes:
            while True:
                changes.take()
                record = await self.get_delegation(room_id, delegation_id)
                if record.status in DELEGATION_ENDED:
                    return record
                await changes.wait(self._host.poll_interval)

    # --- runs -------------------------------------------------------------------------

    async def _covers(self, room_id: str, grant: RoomGrant, participant: str) -> bool:
        """Whether `grant` reads everything `participant`'s grant in the room reads."""
        theirs = next(
            (
                g
                for g in await self._host.store.list_grants(room_id)
                if g.participant == participant
            ),
            None,
        )
        return theirs is not None and all(matches_any(grant.read, p) for p in theirs.read)

    async def read_run(self, room_id: str, position: int) -> RoomRun:
        """The engine run behind the event at `position` (an LLM agent's answer, or its
        `agent.failed`): its record and stored events, tool calls included, for a member
        who may read that event.

        Raises:
            RoomNotFoundError: No such room, or not visible to the member.
            RunNotFoundError: No readable event at `position`, or it came from no run of
                the room's agents.
        """
        check_position(position)
        _, owner, grant = await self._access(room_id)
        store = self._host.store
        found = await store.read_room_events(room_id, max(0, position - 1), limit=1)
        event = found[0] if found and found[0].position == position else None
        run = None
        if (
            event is not None
            and event.run_id
            and matches_any(grant.read, event.type)
            # The run's prompt holds what its agent read: readers who may read all of it.
            and (owner or await self._covers(room_id, grant, event.author))
        ):
            run = await store.get_run(event.run_id)
        if run is None or not run.session_id.startswith(f"room-agent:{room_id}:"):
            raise RunNotFoundError(f"no run behind position {position} of room {room_id!r}")
        events = [
            {"offset": entry.offset, "event": to_wire(entry.event)}
            for entry in await store.read_events(run.id)
        ]
        return RoomRun(position=position, run=run, events=events)
