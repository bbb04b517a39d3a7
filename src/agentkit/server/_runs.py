"""The runs routes: any run's record and stored events, for the run inspector.

A run is the core's (a conversation's, a room agent's, one of `agentkit run` on the same
database): a conversation's runs are read by the members who see the conversation (owners
no more than others: private means private), any other run by owners only. A run the
caller may not read is missing to it (404), as a private conversation of another member is.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict
from starlette.requests import Request
from starlette.responses import Response

from agentkit.conversations import Member
from agentkit.events import to_wire
from agentkit.server._errors import HTTPError
from agentkit.server._http import json_response, page_params, state_of
from agentkit.stores import RunRecord

__all__ = ["RunDetails", "RunList", "StoredEvent"]


class _Body(BaseModel):
    model_config = ConfigDict(frozen=True)


class StoredEvent(_Body):
    """A stored event of a run: its offset in the run's log and the core's event in its
    wire form (`agentkit.events`, camelCase: `{"type": "tool_use", "id", "tool", "input"}`).
    Text deltas are never stored."""

    offset: int
    event: dict[str, Any]


class RunDetails(_Body):
    """`GET /v1/runs/{run_id}`: the run's record and its stored events, in order;
    `fingerprint`, the v2 fingerprint of the definition file its agent was bound from
    (a Markdown definition's runs), else `None`."""

    run: RunRecord
    events: list[StoredEvent]
    fingerprint: str | None = None


class RunList(_Body):
    """`GET /v1/runs`: a page of runs, most recent first; `next` is the cursor of the
    next page."""

    runs: list[RunRecord]
    next: str | None = None


async def get_run(request: Request, member: Member) -> Response:
    store = state_of(request).machine.store
    run_id = request.path_params["run_id"]
    run = await store.get_run(run_id)
    if run is None or not await state_of(request).machine.runs.readable(member, run.session_id):
        raise HTTPError("run_not_found", f"no run {run_id!r}")
    events = [
        StoredEvent(offset=entry.offset, event=to_wire(entry.event))
        for entry in await store.read_events(run_id)
    ]
    fingerprint = await state_of(request).machine.runs.fingerprint(run)
    return json_response(RunDetails(run=run, events=events, fingerprint=fingerprint))


async def list_runs(request: Request, member: Member) -> Response:
    machine = state_of(request).machine
    limit, cursor = page_params(request)
    session = request.query_params.get("session") or None
    if session is not None and len(session) > 200:
        return json_response(RunList(runs=[]))
    page = await machine.runs.list(member, session_id=session, limit=limit, cursor=cursor)
    return json_response(RunList(runs=page, next=page.next))
