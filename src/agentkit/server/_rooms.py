"""The rooms routes: rooms, grants, events (a JSON page or an SSE stream), delegations,
each a few lines over the in-process rooms client of the member the token names."""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncGenerator
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter
from pydantic.alias_generators import to_camel
from starlette.requests import Request
from starlette.responses import Response

from agentkit.client.contract import GET_DELEGATION, GET_ROOM, encode_event
from agentkit.conversations import Member
from agentkit.rooms import (
    DelegationRecord,
    EventInput,
    LocalRoomsClient,
    RoomEvent,
    RoomGrant,
    RoomInfo,
)
from agentkit.server._errors import HTTPError
from agentkit.server._http import json_response, read_body, state_of, stream_response
from agentkit.server._params import integer_param, page_params, query_param

__all__ = ["CreateRoom", "DelegationRequest", "GrantBody", "PublishBody", "RoomList"]


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class CreateRoom(_Body):
    """`POST /v1/rooms`."""

    name: str = Field(min_length=1, max_length=200)


class GrantBody(_Body):
    """`PUT /v1/rooms/{room}/grants/{participant}`: empty lists revoke the grant."""

    read: list[str] = Field(default_factory=list, max_length=100)
    publish: list[str] = Field(default_factory=list, max_length=100)


class PublishBody(_Body):
    """`POST /v1/rooms/{room}/events`: one event (`type`, `payload`) or a batch
    (`events`), published atomically."""

    type: str | None = None
    payload: Any = None
    events: list[EventInput] | None = Field(None, max_length=100)


class DelegationRequest(_Body):
    """`POST /v1/rooms/{room}/delegations`: `deadline`, the seconds the delegation may
    stay unanswered (the agent's default when left out)."""

    agent: str
    task: Any = None
    deadline: float | None = Field(None, gt=0, le=30 * 86_400)


class RoomList(_Body):
    """`GET /v1/rooms`: a page of rooms, oldest first; `next` is the next page's cursor."""

    rooms: list[RoomInfo]
    next: str | None = None


def _rooms(request: Request, member: Member) -> LocalRoomsClient:
    return state_of(request).machine.rooms_client(member)


def _types(request: Request) -> list[str] | None:
    raw = query_param(request.query_params, "types")
    if raw is None or not raw.strip():
        return None
    return [part.strip() for part in raw.split(",") if part.strip()]


def _after(request: Request, *, header: bool) -> int:
    """The position to read after: `Last-Event-ID` (a stream's), else `?after=`, else 0;
    both are checked whichever wins."""
    after = integer_param(query_param(request.query_params, "after"), "after", default=0)
    if header:
        return integer_param(request.headers.get("last-event-id"), "Last-Event-ID", default=after)
    return after


_ADAPTERS: dict[type[Any], TypeAdapter[Any]] = {
    kind: TypeAdapter(kind) for kind in (RoomEvent, RoomGrant, DelegationRecord)
}


def _wire(record: RoomEvent | RoomGrant | DelegationRecord) -> dict[str, Any]:
    """A store record as the API answers it: its fields by their camelCase names (the
    records' `WIRE_CONFIG`), its values (a payload, a task, a result) untouched."""
    data: dict[str, Any] = _ADAPTERS[type(record)].dump_python(record, mode="json", by_alias=True)
    return data


async def create_room(request: Request, member: Member) -> Response:
    body = await read_body(request, CreateRoom)
    room = await _rooms(request, member).create_room(body.name)
    return json_response(room, 201, {"Location": GET_ROOM.url(room=room.id)})


async def list_rooms(request: Request, member: Member) -> Response:
    limit, cursor = page_params(request.query_params)
    page = await _rooms(request, member).list_rooms(limit=limit, cursor=cursor)
    return json_response(RoomList(rooms=page, next=page.next))


async def get_room(request: Request, member: Member) -> Response:
    return json_response(await _rooms(request, member).get_room(request.path_params["room"]))


async def delete_room(request: Request, member: Member) -> Response:
    await _rooms(request, member).delete_room(request.path_params["room"])
    return Response(status_code=204)


async def put_grant(request: Request, member: Member) -> Response:
    body = await read_body(request, GrantBody)
    grant = await _rooms(request, member).set_grant(
        request.path_params["room"],
        request.path_params["participant"],
        read=body.read,
        publish=body.publish,
    )
    return json_response(_wire(grant))


async def list_grants(request: Request, member: Member) -> Response:
    grants = await _rooms(request, member).list_grants(request.path_params["room"])
    return json_response({"grants": [_wire(grant) for grant in grants]})


async def publish(request: Request, member: Member) -> Response:
    body = await read_body(request, PublishBody)
    if body.events is not None and body.type is not None:
        raise HTTPError("invalid", "give one event or 'events', not both", field="type")
    if body.events is not None:
        events = body.events
    elif body.type is not None:
        events = [EventInput(type=body.type, payload=body.payload)]
    else:
        raise HTTPError("invalid", "an event needs a 'type' (or give 'events')", field="type")
    positions = await _rooms(request, member).publish(request.path_params["room"], events)
    return json_response({"positions": positions}, 201)


async def read_events(request: Request, member: Member) -> Response:
    limit, cursor = page_params(request.query_params)
    events = await _rooms(request, member).read(
        request.path_params["room"],
        after=_after(request, header=False),
        types=_types(request),
        limit=100 if limit is None else limit,
        cursor=cursor,
    )
    return json_response({"events": [_wire(event) for event in events], "next": events.next})


async def stream_events(request: Request, member: Member) -> Response:
    rooms = _rooms(request, member)
    room_id = request.path_params["room"]
    after = _after(request, header=True)
    types = _types(request)
    await rooms.read(room_id, after=after, types=types, limit=1)  # 404 and 422 up front

    async def encoded() -> AsyncGenerator[bytes, None]:
        async for event in rooms.subscribe(room_id, after=after, types=types):
            yield encode_event(event.type, _wire(event), event.position)

    return stream_response(request, encoded(), ends_by_itself=False)


async def delegate(request: Request, member: Member) -> Response:
    body = await read_body(request, DelegationRequest)
    record = await _rooms(request, member).delegate(
        request.path_params["room"], body.agent, body.task, deadline=body.deadline
    )
    location = GET_DELEGATION.url(room=record.room_id, id=record.id)
    return json_response(_wire(record), 202, {"Location": location})


async def get_delegation(request: Request, member: Member) -> Response:
    record = await _rooms(request, member).get_delegation(
        request.path_params["room"], request.path_params["id"]
    )
    return json_response(_wire(record))


async def cancel_delegation(request: Request, member: Member) -> Response:
    record = await _rooms(request, member).cancel_delegation(
        request.path_params["room"], request.path_params["id"]
    )
    return json_response(_wire(record))


async def list_delegations(request: Request, member: Member) -> Response:
    limit, cursor = page_params(request.query_params)
    raw = query_param(request.query_params, "status")
    status = None if raw is None else [part.strip() for part in raw.split(",")]
    page = await _rooms(request, member).list_delegations(
        request.path_params["room"],
        status=status,
        after=query_param(request.query_params, "after") or None,
        limit=limit,
        cursor=cursor,
    )
    delegations = [_wire(record) for record in page]
    return json_response({"delegations": delegations, "next": page.next})


async def read_event_run(request: Request, member: Member) -> Response:
    raw = request.path_params["position"]
    position = integer_param(raw, "position", default=0, minimum=1)
    run = await _rooms(request, member).read_run(request.path_params["room"], position)
    return json_response(run)


async def list_workers(request: Request, member: Member) -> Response:
    room_id = request.path_params["room"]
    await _rooms(request, member).get_room(room_id)  # visible to the caller
    statuses = await state_of(request).machine.rooms.workers(room_id)
    agents = [
        {to_camel(key): value for key, value in {**dataclasses.asdict(s), "lag": s.lag}.items()}
        for s in statuses
    ]
    return json_response({"agents": agents})
