"""How a route that starts a run answers (`POST /v1/conversations/{id}/runs`,
`POST /v1/runs`): the accepted run as JSON; with `?wait=SECONDS`, the ended run when it
ends within the wait; with `Accept: text/event-stream`, the run's event stream from its
first event, as the events route gives it (the same `id:` offsets, so a client that loses
the connection resumes there with `Last-Event-ID`).

The run's ids come before any event, in the answer's headers: `Location` (the run's events
route), `Agentkit-Conversation-Id` and `Agentkit-Run-Id`.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import AsyncGenerator, AsyncIterator
from dataclasses import dataclass

from starlette.requests import Request
from starlette.responses import Response

from agentkit.client.contract import (
    CONVERSATION_ID_HEADER,
    FOLLOW_RUN,
    RUN_ID_HEADER,
    encode_event,
    follow_event_name,
)
from agentkit.conversations import (
    MAX_WAIT,
    FollowEvent,
    Member,
    PromptAccepted,
    RunStream,
)
from agentkit.server._errors import HTTPError
from agentkit.server._http import json_response, state_of, stream_response
from agentkit.server._params import query_param

__all__ = [
    "RunAnswer",
    "accepted_answer",
    "follow_stream",
    "stream_answer",
]

_EVENT_STREAM = "text/event-stream"
# A number of seconds as a person or a float's `str` writes it: 30, 0.5, .5, 2.5e1.
_SECONDS = re.compile(r"(?:[0-9]{1,32}(?:\.[0-9]{0,32})?|\.[0-9]{1,32})(?:[eE][-+]?[0-9]{1,4})?")


@dataclass(frozen=True)
class RunAnswer:
    """How the request asks its started run to be answered.

    Attributes:
        stream: `Accept: text/event-stream`: the run's event stream.
        wait: `?wait=SECONDS`: the ended run, if it ends within this many seconds.
    """

    stream: bool
    wait: float | None

    @classmethod
    def of(cls, request: Request) -> RunAnswer:
        """Read (and check) before the run is started: a bad `wait` starts nothing.

        Raises:
            HTTPError: `invalid` (422) naming `wait`: not a number above 0 and at most
                `MAX_WAIT`, or given with `Accept: text/event-stream`.
        """
        wait = _wait(query_param(request.query_params, "wait"))
        stream = _wants_stream(request.headers.get("accept"))
        if stream and wait is not None:
            raise HTTPError(
                "invalid",
                "wait answers JSON: it cannot be given with Accept: text/event-stream",
                field="wait",
            )
        return cls(stream, wait)


def _wait(raw: str | None) -> float | None:
    if raw is None:
        return None
    value = float(raw) if _SECONDS.fullmatch(raw) else math.nan
    if not 0 < value <= MAX_WAIT:  # NaN is in no range
        raise HTTPError(
            "invalid",
            f"wait must be a number of seconds above 0 and at most {MAX_WAIT:g}",
            field="wait",
        )
    return value


def _wants_stream(accept: str | None) -> bool:
    """Whether `Accept` names `text/event-stream` (with a quality above 0)."""
    if not accept or _EVENT_STREAM not in accept.lower():
        return False
    for item in accept.lower().split(","):
        media, *parameters = (part.strip() for part in item.split(";"))
        if media != _EVENT_STREAM:
            continue
        quality = next((p[2:].strip() for p in parameters if p.startswith("q=")), "1")
        try:
            return float(quality) > 0
        except ValueError:
            return True
    return False


def _headers(accepted: PromptAccepted) -> dict[str, str]:
    return {
        "Location": FOLLOW_RUN.url(id=accepted.conversation_id, run_id=accepted.run_id),
        CONVERSATION_ID_HEADER: accepted.conversation_id,
        RUN_ID_HEADER: accepted.run_id,
    }


async def accepted_answer(
    request: Request, member: Member, accepted: PromptAccepted, status: int, wait: float | None
) -> Response:
    """The accepted run (`status`: 202, or 201 when its conversation was created too);
    with `wait`, the ended run (200) if it ends within `wait` seconds. A queued prompt
    is answered at once (202, `status: "queued"`): its run has not started."""
    if wait is not None and accepted.status != "queued":
        runs = state_of(request).machine.runs
        result = await runs.wait(member, accepted.conversation_id, accepted.run_id, within=wait)
        if result is not None:
            return json_response(result, 200, _headers(accepted))
    return json_response(accepted, status, _headers(accepted))


def stream_answer(request: Request, stream: RunStream) -> Response:
    """The started run's event stream, from its first event (200)."""
    return follow_stream(request, stream.run_id, stream, _headers(stream.accepted))


def follow_stream(
    request: Request,
    run_id: str,
    events: AsyncIterator[FollowEvent],
    headers: dict[str, str] | None = None,
) -> Response:
    """A run's follow events as an SSE answer: `id:` each event's offset in the run's log,
    `event:` its name (see `agentkit.client.contract.follow_event_name`)."""
    state = state_of(request)

    async def encoded() -> AsyncGenerator[bytes, None]:
        try:
            async for event in events:
                yield state.encoded_event(run_id, event.offset, functools.partial(_sse_of, event))
        finally:
            close = getattr(events, "aclose", None)
            if close is not None:
                await close()

    return stream_response(request, encoded(), ends_by_itself=True, headers=headers)


def _sse_of(event: FollowEvent) -> bytes:
    data = event.model_dump(mode="json", by_alias=True)
    return encode_event(follow_event_name(event), data, event.offset)
