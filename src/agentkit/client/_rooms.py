"""The remote rooms client: the rooms API of a machine served by `agentkit serve`, over
HTTP (`RemoteMachine(url, token).rooms`), with the in-process client's methods, records
and exceptions.

It shares the remote machine's transport: its HTTP connections, its SSE parser and its
reconnection (a subscription resumes with `Last-Event-ID` after a dropped connection, as
`follow` does); only the mapping of error answers is its own (the rooms' exceptions).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Sequence
from typing import Any

import anyio

from agentkit.client._transport import Dropped, Transport, Unreachable, page_query
from agentkit.client.contract import (
    CANCEL_DELEGATION,
    CREATE_ROOM,
    DELEGATE,
    DELETE_ROOM,
    GET_DELEGATION,
    GET_ROOM,
    LIST_DELEGATIONS,
    LIST_GRANTS,
    LIST_ROOMS,
    PUBLISH,
    PUT_GRANT,
    READ_EVENT_RUN,
    READ_EVENTS,
    STREAM_EVENTS,
    Operation,
    SseEvent,
    carried_error,
    read_error,
    rooms_exception,
)
from agentkit.conversations import ConversationClient
from agentkit.errors import RunNotFoundError
from agentkit.paging import Page
from agentkit.rooms import (
    DelegationNotFoundError,
    DelegationRecord,
    EventInput,
    RoomError,
    RoomEvent,
    RoomGrant,
    RoomInfo,
    RoomNotFoundError,
    RoomRun,
    RoomsClient,
    check_position,
    publication,
)
from agentkit.stores import DELEGATION_ENDED

__all__ = ["RemoteRoomsClient"]

_logger = logging.getLogger("agentkit.rooms")

# How often `wait_delegation` asks: quickly at first, then every second at most.
_FIRST_POLL = 0.02
_MAX_POLL = 1.0


class RemoteRoomsClient(RoomsClient):
    """The rooms API of a remote machine (`agentkit serve`), acting as the member whose
    token the [`RemoteMachine`][agentkit.client.RemoteMachine] holds; reached as
    `client.rooms` inside `async with RemoteMachine(url, token) as client:`.

    It implements [`RoomsClient`][agentkit.rooms.RoomsClient] with the same methods,
    records (`RoomEvent`, `RoomGrant`, `DelegationRecord`, `RoomInfo`) and exceptions
    as the in-process client. `subscribe` reconnects by itself when its connection
    drops, resuming after the last position it yielded (no gap, no duplicate), for up
    to the machine's `reconnect_timeout` seconds without reaching the server. A request
    that cannot reach the server raises `ConversationError`.

    Args:
        machine: The remote machine whose member this client acts as.
        transport: The remote machine's connections, which this client shares.
    """

    def __init__(self, machine: ConversationClient, transport: Transport) -> None:
        self._machine = machine
        self._transport = transport

    def __repr__(self) -> str:
        return f"<RemoteRoomsClient of {self._machine!r}>"

    @property
    def participant(self) -> str:
        """`member:<id>`: how this member appears as an author and in grants (by its
        id, which no later member of the same name shares)."""
        return f"member:{self._machine.member.id}"

    async def _call(
        self,
        operation: Operation,
        path: dict[str, str] | None = None,
        *,
        body: Any = None,
        params: dict[str, str] | None = None,
    ) -> Any:
        return await self._transport.request(
            operation, path or {}, _error_of, body=body, params=params
        )

    # --- rooms ------------------------------------------------------------------------

    async def create_room(self, name: str) -> RoomInfo:
        """Create a room; its creator owns it and holds every grant in it.

        Raises:
            RoomAccessError: Viewers cannot create rooms.
            RoomError: The name is not 1 to 200 characters.
        """
        if not isinstance(name, str) or not name.strip() or len(name) > 200:
            raise RoomError("a room's name is 1 to 200 characters")
        return RoomInfo.model_validate(await self._call(CREATE_ROOM, body={"name": name}))

    async def list_rooms(
        self, *, limit: int | None = None, cursor: str | None = None
    ) -> Page[RoomInfo]:
        """A page of the rooms this member owns or holds a grant in, oldest first (see
        `agentkit.paging`)."""
        body = await self._call(LIST_ROOMS, params=page_query(limit, cursor))
        return Page([RoomInfo.model_validate(r) for r in body["rooms"]], body.get("next"))

    async def get_room(self, room_id: str) -> RoomInfo:
        """A room with its head (`RoomNotFoundError` when it is not visible)."""
        return RoomInfo.model_validate(await self._call(GET_ROOM, _room(room_id)))

    async def delete_room(self, room_id: str) -> None:
        """Delete a room with its events (owners); its agents are removed first."""
        await self._call(DELETE_ROOM, _room(room_id))

    # --- grants -----------------------------------------------------------------------

    async def set_grant(
        self, room_id: str, participant: str, *, read: Sequence[str], publish: Sequence[str]
    ) -> RoomGrant:
        """Give `participant` (`member:<name>`, `agent:<id>`, or `member:*` for every
        member without a grant of its own) these read and publish patterns in the room,
        replacing its grant (owners). Empty lists revoke."""
        if not _routable(participant):
            await self.list_grants(room_id)  # hidden rooms and non-owners say so first
            raise RoomError(
                f"participant {participant!r} is not 'member:<name>', 'member:*' (every "
                "member) or 'agent:<id>'"
            )
        body = await self._call(
            PUT_GRANT,
            {**_room(room_id), "participant": participant},
            body={"read": _patterns(read), "publish": _patterns(publish)},
        )
        return _grant(body)

    async def list_grants(self, room_id: str) -> list[RoomGrant]:
        """The room's grants (owners)."""
        body = await self._call(LIST_GRANTS, _room(room_id))
        return [_grant(grant) for grant in body["grants"]]

    # --- events -----------------------------------------------------------------------

    async def publish(self, room_id: str, events: EventInput | Sequence[EventInput]) -> list[int]:
        """Publish one event or a batch, atomically; returns their positions.

        Raises:
            RoomAccessError: An event is outside the member's publish grants (nothing of
                the batch is published).
            RoomError: An empty or too large batch, or a payload too large.
        """
        wire = [item.model_dump(mode="json") for item in publication(events)]
        body = await self._call(PUBLISH, _room(room_id), body={"events": wire})
        return [int(position) for position in body["positions"]]

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
        params = {"after": str(check_position(after)), **page_query(limit, cursor)}
        if types:
            params["types"] = _types(types)
        body = await self._call(READ_EVENTS, _room(room_id), params=params)
        return Page([_event(event) for event in body["events"]], body.get("next"))

    def subscribe(
        self, room_id: str, *, after: int = 0, types: Sequence[str] | None = None
    ) -> AsyncIterator[RoomEvent]:
        """The readable events after `after` (replayed), then each new one as it is
        published, until the caller stops; resume with `after=<last position>`.

        Read from the room's event stream; when the connection drops it reconnects by
        itself with `Last-Event-ID` set to the last position it yielded.

        Raises:
            RoomNotFoundError: The room is not (or no longer) visible.
            ConversationError: The server could not be reached again in time.
        """
        return self._subscribe(room_id, after, types)

    async def _subscribe(
        self, room_id: str, after: int, types: Sequence[str] | None
    ) -> AsyncIterator[RoomEvent]:
        cursor = check_position(after)
        params = {"types": _types(types)} if types else {}
        path = _room(room_id)
        backoff = self._transport.backoff()
        while True:
            headers = {"Last-Event-ID": str(cursor)}
            try:
                async with self._transport.stream(
                    STREAM_EVENTS, path, _error_of, params=params, headers=headers
                ) as events:
                    backoff.reached()
                    async for sse in events:
                        event = _parse_event(sse)
                        if event is None or event.position <= cursor:
                            continue  # a keep-alive, another kind, or seen already
                        cursor = event.position
                        backoff.progress()
                        yield event
            except (Dropped, Unreachable) as exc:
                _logger.debug("subscription to room %s dropped: %s", room_id, exc)
            # The server ended the stream (it is going away) or the connection dropped.
            await backoff.wait(f"subscribed to room {room_id!r}")

    # --- delegations ------------------------------------------------------------------

    async def delegate(
        self, room_id: str, agent: str, task: Any, *, deadline: float | None = None
    ) -> DelegationRecord:
        """Ask `agent` (registered in the room, in any process of the store) for a task;
        returns the `pending` delegation (see `LocalRoomsClient.delegate`).

        Raises:
            RoomAccessError: Outside the grant to publish `delegation.requested`.
            RoomAgentError: The room has no such agent.
        """
        request: dict[str, Any] = {"agent": agent, "task": task}
        if deadline is not None:
            request["deadline"] = deadline
        body = await self._call(DELEGATE, _room(room_id), body=request)
        return _delegation(body)

    async def get_delegation(self, room_id: str, delegation_id: str) -> DelegationRecord:
        """A delegation, for its requester, the room's owners, and who may read
        `delegation.*` events."""
        body = await self._call(GET_DELEGATION, await self._delegation_path(room_id, delegation_id))
        return _delegation(body)

    async def cancel_delegation(self, room_id: str, delegation_id: str) -> DelegationRecord:
        """Cancel a `pending` or `running` delegation (see
        `LocalRoomsClient.cancel_delegation`).

        Raises:
            DelegationEndedError: It has ended already.
        """
        path = await self._delegation_path(room_id, delegation_id)
        return _delegation(await self._call(CANCEL_DELEGATION, path))

    async def _delegation_path(self, room_id: str, delegation_id: str) -> dict[str, str]:
        if not _routable(delegation_id):
            await self.get_room(room_id)
            raise DelegationNotFoundError(f"room {room_id!r} has no delegation {delegation_id!r}")
        return {**_room(room_id), "id": delegation_id}

    async def list_delegations(
        self,
        room_id: str,
        *,
        status: str | Sequence[str] | None = None,
        after: str | None = None,
        limit: int | None = None,
        cursor: str | None = None,
    ) -> Page[DelegationRecord]:
        """A page of the room's delegations this member may see, oldest first (of
        `status` only, after the delegation of id `after`, when given)."""
        params = page_query(limit, cursor)
        if status is not None:
            params["status"] = ",".join([status] if isinstance(status, str) else status)
        if after is not None:
            params["after"] = after
        body = await self._call(LIST_DELEGATIONS, _room(room_id), params=params)
        return Page([_delegation(d) for d in body["delegations"]], body.get("next"))

    async def wait_delegation(
        self,
        room_id: str,
        delegation_id: str,
        *,
        timeout: float | None = 600.0,  # noqa: ASYNC109 (the default bound is the point)
    ) -> DelegationRecord:
        """The delegation once it has ended; asked for again after 20 ms, doubling up to
        1 s.

        Raises:
            TimeoutError: Not ended within `timeout` seconds (`None`: no bound).
        """
        delay = _FIRST_POLL
        with anyio.fail_after(timeout):
            while True:
                record = await self.get_delegation(room_id, delegation_id)
                if record.status in DELEGATION_ENDED:
                    return record
                await anyio.sleep(delay)
                delay = min(delay * 2, _MAX_POLL)

    # --- runs -------------------------------------------------------------------------

    async def read_run(self, room_id: str, position: int) -> RoomRun:
        """The engine run behind the event at `position` (see
        `LocalRoomsClient.read_run`).

        Raises:
            RunNotFoundError: No readable event there, or no run behind it.
        """
        check_position(position)
        path = {**_room(room_id), "position": str(position)}
        try:
            body = await self._call(READ_EVENT_RUN, path)
        except _RunMissing as exc:
            raise RunNotFoundError(str(exc)) from None
        return RoomRun.model_validate(body)


# --- wire ---------------------------------------------------------------------------------
# The records arrive with camelCase names (`roomId`, `createdAt`); their values (a payload,
# a task, a result) are the user's, read as they are.


def _room(room_id: str) -> dict[str, str]:
    """The path parameter naming a room (an id that cannot name one is a missing room)."""
    if not isinstance(room_id, str) or not room_id:
        raise RoomNotFoundError(f"no room {room_id!r}")
    return {"room": room_id}


def _routable(segment: object) -> bool:
    """Whether a path segment has a route: a '/' in it (even quoted) never does."""
    return isinstance(segment, str) and bool(segment) and "/" not in segment


def _patterns(patterns: Sequence[str]) -> list[str]:
    if isinstance(patterns, str):
        raise RoomError("patterns are a list of strings, not one string")
    return list(patterns)


def _types(types: Sequence[str]) -> str:
    patterns = _patterns(types)
    for pattern in patterns:
        if not isinstance(pattern, str) or "," in pattern:
            raise RoomError(f"{pattern!r} is not a type pattern")
    return ",".join(patterns)


def _event(data: dict[str, Any]) -> RoomEvent:
    return RoomEvent(
        room_id=data["roomId"],
        position=int(data["position"]),
        id=data["id"],
        type=data["type"],
        author=data["author"],
        payload=data.get("payload"),
        created_at=float(data["createdAt"]),
        caused_by=data.get("causedBy"),
        run_id=data.get("runId"),
    )


def _grant(data: dict[str, Any]) -> RoomGrant:
    return RoomGrant(data["participant"], tuple(data["read"]), tuple(data["publish"]))


def _delegation(data: dict[str, Any]) -> DelegationRecord:
    deadline = data.get("deadline")
    return DelegationRecord(
        id=data["id"],
        room_id=data["roomId"],
        agent=data["agent"],
        task=data.get("task"),
        status=data["status"],
        requested_by=data["requestedBy"],
        created_at=float(data["createdAt"]),
        updated_at=float(data["updatedAt"]),
        result=data.get("result"),
        error=data.get("error"),
        deadline=None if deadline is None else float(deadline),
        attempts=int(data.get("attempts", 0)),
    )


def _parse_event(sse: SseEvent) -> RoomEvent | None:
    """The room event an SSE event carries; `None` for a keep-alive or another kind."""
    payload = sse.json_object()
    if payload is None:
        return None
    carried = carried_error(payload)
    if carried is not None:
        raise _exception(*carried)
    if "position" not in payload or "type" not in payload:
        return None
    try:
        return _event(payload)
    except (KeyError, TypeError, ValueError) as exc:
        raise RoomError(f"the server sent a room event this client cannot read: {exc}") from None


def _error_of(status: int, content: bytes) -> Exception:
    """The in-process rooms client's exception for an error answer of the server."""
    error = read_error(content)
    if error is None:
        text = content.decode("utf-8", "replace").strip()[:200]
        return RoomError(f"the server answered HTTP {status}: {text or 'no body'}")
    return _exception(*error)


class _RunMissing(RoomError):
    """`run_not_found` answered to the rooms client (read as `RunNotFoundError`)."""


def _exception(code: str, message: str) -> Exception:
    if code == "run_not_found":
        return _RunMissing(message)
    return rooms_exception(code)(message)
