"""What every route shares: the server's state, the member a token names, JSON bodies
with their limits, answers and event streams."""

from __future__ import annotations

import json
from collections import OrderedDict
from collections.abc import AsyncGenerator, Awaitable, Callable
from typing import Any, TypeVar

import anyio
from pydantic import BaseModel, ValidationError
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from agentkit.client.contract import GET_CONVERSATION
from agentkit.conversations import Machine, Member, MemberError
from agentkit.server._errors import HTTPError, error_response, http_error_of
from agentkit.server._params import (
    BadNumber,
    check_text,
    lone_surrogate_at,
    parse_json_float,
    parse_json_int,
)
from agentkit.server._sse import EventStream

__all__ = [
    "Handler",
    "State",
    "authorised",
    "json_response",
    "read_body",
    "refuse_python_names",
    "state_of",
    "stream_response",
]

BodyT = TypeVar("BodyT", bound=BaseModel)
Handler = Callable[[Request, Member], Awaitable[Response]]
"""A route's handler: the request and the member its token names."""


class State:
    """What the routes share: the machine and the server's settings.

    Attributes:
        closing: Set when the server stops: new runs are refused.
        follow_streams: The open streams that end by themselves (a run's events).
        watch_streams: The open streams that never do (watches, room subscriptions):
            cancelled when the server stops.
    """

    def __init__(self, machine: Machine, max_body_bytes: int, keepalive: float) -> None:
        self.machine = machine
        self.max_body_bytes = max_body_bytes
        self.keepalive = keepalive
        self.closing = False
        self.follow_streams: set[anyio.CancelScope] = set()
        self.watch_streams: set[anyio.CancelScope] = set()
        self.encoded: OrderedDict[tuple[str, int], bytes] = OrderedDict()

    def encoded_event(self, run_id: str, offset: int, encode: Callable[[], bytes]) -> bytes:
        """A run's event as SSE bytes, encoded once however many follow it (the most
        recent few thousand are kept)."""
        key = (run_id, offset)
        found = self.encoded.get(key)
        if found is None:
            found = self.encoded[key] = encode()
            if len(self.encoded) > 4096:
                self.encoded.popitem(last=False)
        return found


def state_of(request: Request) -> State:
    state: State = request.app.state.agentkit
    return state


def json_response(
    value: BaseModel | dict[str, Any] | list[Any],
    status: int = 200,
    headers: dict[str, str] | None = None,
) -> Response:
    """`value` as a JSON answer (a model as its `model_dump_json(by_alias=True)`: the wire's
    names are camelCase)."""
    if isinstance(value, BaseModel):
        body = value.model_dump_json(by_alias=True)
    else:
        body = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return Response(body, status_code=status, media_type="application/json", headers=headers)


async def _member(request: Request) -> Member:
    """The member whose token the request carries (401 otherwise)."""
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token:
        raise HTTPError("unauthorized", "this route needs 'Authorization: Bearer <token>'")
    # A conversation's route reads the conversation with the member (one statement on
    # PostgreSQL); its handler's access check uses that read.
    route = getattr(request.scope.get("route"), "path", "")
    conversation_id = (
        request.path_params.get("id") if route.startswith(GET_CONVERSATION.path) else None
    )
    try:
        return await state_of(request).machine.authenticate(token, conversation_id=conversation_id)
    except MemberError:
        raise HTTPError("unauthorized", "the token is not a member's") from None


async def read_body(request: Request, model: type[BodyT], *, empty_ok: bool = False) -> BodyT:
    """The request's JSON body as `model`: 413 over the size limit, 415 when it is not
    JSON, 400 when it does not parse, 422 naming the first field at fault (a number no
    store holds and a lone surrogate in a string are at fault too)."""
    limit = state_of(request).max_body_bytes
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise HTTPError("body_too_large", f"the request body is over {limit} bytes")
    chunks: list[bytes] = []
    size = 0
    try:
        async for chunk in request.stream():
            size += len(chunk)
            if size > limit:
                raise HTTPError("body_too_large", f"the request body is over {limit} bytes")
            chunks.append(chunk)
    except ClientDisconnect:  # gone, or closed for its silence: no one reads the answer
        raise HTTPError("bad_request", "the connection closed before the body ended") from None
    raw = b"".join(chunks)
    if not raw.strip():
        if empty_ok:
            return model()
        raise HTTPError("bad_request", "this route needs a JSON body")
    media = request.headers.get("content-type", "application/json").partition(";")[0].strip()
    if media != "application/json" and not media.endswith("+json"):
        raise HTTPError("unsupported_media_type", "the body must be application/json")
    try:
        data = json.loads(
            raw,
            parse_int=parse_json_int,
            parse_float=parse_json_float,
            parse_constant=_not_json,
        )
    except BadNumber as exc:
        raise HTTPError("invalid", f"the body holds a bad number: {exc}") from None
    except (ValueError, RecursionError) as exc:
        raise HTTPError("bad_request", f"the body is not valid JSON: {exc}") from None
    if not isinstance(data, dict):
        raise HTTPError("invalid", "the body must be a JSON object")
    where = lone_surrogate_at(data)
    if where is not None:
        raise HTTPError("invalid", f"{where}: a string with a lone surrogate", field=where)
    refuse_python_names(model, data)
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise _invalid(exc) from None


def _not_json(constant: str) -> Any:
    raise ValueError(f"{constant} is not a JSON value")


def refuse_python_names(model: type[BaseModel], data: dict[str, Any]) -> None:
    """A 422 when the body names a field by its Python name (`output_schema`) instead of
    its wire name (`outputSchema`): the models accept both in Python, the wire only one."""
    for name, info in model.model_fields.items():
        alias = info.alias or name
        if alias != name and name in data:
            message = f"{name}: unknown field; the API's names are camelCase: {alias!r}"
            raise HTTPError("invalid", message, field=name)


def _invalid(exc: ValidationError) -> HTTPError:
    first = exc.errors()[0]
    field = ".".join(str(part) for part in first["loc"]) or None
    message = f"{field}: {first['msg']}" if field else first["msg"]
    return HTTPError("invalid", message, field=field)


def authorised(handler: Handler) -> Callable[[Request], Awaitable[Response]]:
    """A route that needs a member: errors of the conversations and rooms APIs become
    answers (anything else is a bug: a 500, logged)."""

    async def endpoint(request: Request) -> Response:
        try:
            member = await _member(request)
            check_text(request.path_params.items(), "path")
            check_text(request.query_params.multi_items(), "query")
            return await handler(request, member)
        except HTTPError as error:
            headers = {"WWW-Authenticate": "Bearer"} if error.code == "unauthorized" else None
            return error_response(error, headers)
        except ValidationError as exc:
            return error_response(_invalid(exc))
        except Exception as exc:
            answer = http_error_of(exc)
            if answer is None:
                raise
            return error_response(answer)

    endpoint.__name__ = handler.__name__
    endpoint.__doc__ = handler.__doc__
    return endpoint


class _Stream(Response):
    """A `Response` that hands the ASGI call to an `EventStream`."""

    def __init__(self, stream: EventStream) -> None:
        self._stream = stream

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self._stream(scope, receive, send)


def stream_response(
    request: Request,
    source: AsyncGenerator[bytes, None],
    *,
    ends_by_itself: bool,
    headers: dict[str, str] | None = None,
) -> Response:
    """An SSE answer writing `source`'s encoded events (with more `headers`); one that
    never ends by itself (a watch, a room subscription) is closed when the server stops."""
    state = state_of(request)
    streams = state.follow_streams if ends_by_itself else state.watch_streams
    return _Stream(EventStream(source, keepalive=state.keepalive, streams=streams, headers=headers))
