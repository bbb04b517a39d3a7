"""The conversations routes: agents, conversations, runs and their streams, each a few
lines over the machine's services (`machine.agents`, `machine.conversations`,
`machine.runs`) acting as the member the token names."""

from __future__ import annotations

from collections.abc import AsyncGenerator

import anyio
from pydantic import BaseModel, ConfigDict
from starlette.requests import Request
from starlette.responses import Response

from agentkit.client.contract import GET_CONVERSATION, VIEW_EVENT, encode_event
from agentkit.conversations import (
    ROOL,
    AgentDefinition,
    AgentExistsError,
    ConversationView,
    Machine,
    Member,
)
from agentkit.server._bodies import (
    AgentList,
    CancelResult,
    ConversationList,
    CreateConversation,
    ForkRequest,
    MemberList,
    NewToken,
    PromptRequest,
    RunRequest,
    TurnList,
    UpdateConversation,
)
from agentkit.server._errors import HTTPError
from agentkit.server._http import (
    json_response,
    read_body,
    refuse_python_names,
    state_of,
    stream_response,
)
from agentkit.server._params import optional_integer_param, page_params, query_param
from agentkit.server._run_answers import (
    RunAnswer,
    accepted_answer,
    follow_stream,
    stream_answer,
)


def _machine(request: Request) -> Machine:
    return state_of(request).machine


# --- members and agents --------------------------------------------------------------------


async def me(request: Request, member: Member) -> Response:
    return json_response(member)


async def list_agents(request: Request, member: Member) -> Response:
    limit, cursor = page_params(request.query_params)
    page = await _machine(request).agents.list(member, limit=limit, cursor=cursor)
    return json_response(AgentList(agents=page, next=page.next))


async def list_members(request: Request, member: Member) -> Response:
    machine = _machine(request)
    limit, cursor = page_params(request.query_params)
    _require_owner(member, "list members")
    page = await machine.list_members(limit=limit, cursor=cursor)
    return json_response(MemberList(members=page, next=page.next))


async def rotate_token(request: Request, member: Member) -> Response:
    machine = _machine(request)
    _require_owner(member, "give members new tokens")
    name = request.path_params["name"]
    if await machine.get_member(name) is None:
        raise HTTPError("member_not_found", f"no member {name!r}")
    token = await machine.rotate_member(name)
    rotated = await machine.get_member(name)
    if rotated is None:  # removed meanwhile
        raise HTTPError("member_not_found", f"no member {name!r}")
    return json_response(NewToken(member=rotated, token=token))


def _require_owner(member: Member, what: str) -> None:
    # The member was read from the store for this request: its role is current.
    if member.role != "owner":
        raise HTTPError("access_denied", f"{member.name!r} is a {member.role}: only owners {what}")


async def put_agent(request: Request, member: Member) -> Response:
    agents = _machine(request).agents
    name = request.path_params["name"]
    body = await read_body(request, _AgentBody)
    if body.name is not None and body.name != name:
        raise HTTPError("invalid", f"the body names {body.name!r}, the path {name!r}", field="name")
    fields = body.model_dump(exclude_unset=True, exclude={"name"})
    refuse_python_names(AgentDefinition, fields)
    definition = AgentDefinition.model_validate({**fields, "name": name})
    create_only = request.headers.get("if-none-match", "").strip() == "*"
    replace_only = request.headers.get("if-match", "").strip() == "*"
    if replace_only:
        return json_response(await agents.replace(member, definition))
    try:
        return json_response(await agents.create(member, definition), 201)
    except AgentExistsError:
        if create_only:
            raise
    return json_response(await agents.replace(member, definition))


class _AgentBody(BaseModel):
    """An `AgentDefinition` whose name may be left out (the path says it)."""

    model_config = ConfigDict(extra="allow")
    name: str | None = None


async def delete_agent(request: Request, member: Member) -> Response:
    agents = _machine(request).agents
    name = request.path_params["name"]
    if name == ROOL:
        raise HTTPError("agent_protected", "the agent 'rool' is built in: it cannot be deleted")
    if agents.is_configured(name):
        raise HTTPError(
            "agent_protected",
            f"the agent {name!r} is configured (a definition file or an app): delete it there",
        )
    await agents.delete(member, name)
    return Response(status_code=204)


# --- conversations -------------------------------------------------------------------------


async def create_conversation(request: Request, member: Member) -> Response:
    conversations = _machine(request).conversations
    body = await read_body(request, CreateConversation, empty_ok=True)
    conversation_id = await conversations.create(
        member,
        agent=body.agent,
        name=body.name,
        visibility=body.visibility,
        instructions=body.instructions,
    )
    details = await conversations.get(member, conversation_id)
    return json_response(details, 201, {"Location": GET_CONVERSATION.url(id=details.id)})


async def list_conversations(request: Request, member: Member) -> Response:
    limit, cursor = page_params(request.query_params)
    page = await _machine(request).conversations.list(member, limit=limit, cursor=cursor)
    return json_response(ConversationList(conversations=page, next=page.next))


async def get_conversation(request: Request, member: Member) -> Response:
    conversations = _machine(request).conversations
    return json_response(await conversations.get(member, request.path_params["id"]))


async def update_conversation(request: Request, member: Member) -> Response:
    conversations = _machine(request).conversations
    conversation_id = request.path_params["id"]
    body = await read_body(request, UpdateConversation, empty_ok=True)
    if body.name is not None:
        await conversations.update(member, conversation_id, name=body.name)
    if body.visibility is not None:
        await conversations.update(member, conversation_id, visibility=body.visibility)
    return json_response(await conversations.get(member, conversation_id))


async def delete_conversation(request: Request, member: Member) -> Response:
    conversations = _machine(request).conversations
    await conversations.delete(member, request.path_params["id"])
    return Response(status_code=204)


async def fork_conversation(request: Request, member: Member) -> Response:
    conversations = _machine(request).conversations
    body = await read_body(request, ForkRequest, empty_ok=True)
    details = await conversations.fork(
        member, request.path_params["id"], turn=body.turn, name=body.name
    )
    return json_response(details, 201, {"Location": GET_CONVERSATION.url(id=details.id)})


async def list_turns(request: Request, member: Member) -> Response:
    limit, cursor = page_params(request.query_params)
    conversations = _machine(request).conversations
    page = await conversations.turns(member, request.path_params["id"], limit=limit, cursor=cursor)
    return json_response(TurnList(turns=page, next=page.next))


# --- runs ----------------------------------------------------------------------------------


async def start_run(request: Request, member: Member) -> Response:
    state = state_of(request)
    conversation_id = request.path_params["id"]
    body = await read_body(request, PromptRequest)
    answer = RunAnswer.of(request)
    if state.closing:
        raise HTTPError("unavailable", "the server is shutting down")
    if answer.stream:
        stream = await state.machine.runs.stream(
            member,
            conversation_id,
            body.prompt,
            attachments=body.attachments,
            effort=body.effort,
            output_schema=body.output_schema,
            replace_turn=body.replace_turn,
            if_busy=body.if_busy,
        )
        return stream_answer(request, stream)
    accepted = await state.machine.runs.prompt(
        member,
        conversation_id,
        body.prompt,
        attachments=body.attachments,
        effort=body.effort,
        output_schema=body.output_schema,
        replace_turn=body.replace_turn,
        if_busy=body.if_busy,
    )
    return await accepted_answer(request, member, accepted, 202, answer.wait)


async def create_run(request: Request, member: Member) -> Response:
    """`POST /v1/runs`: a new private conversation with the agent, and its run (the
    in-process client's `run`: a refused prompt leaves no conversation behind)."""
    state = state_of(request)
    body = await read_body(request, RunRequest)
    answer = RunAnswer.of(request)
    if state.closing:
        raise HTTPError("unavailable", "the server is shutting down")
    client = state.machine.client(member)
    if answer.stream:
        stream = await client.stream_run(
            body.agent,
            body.prompt,
            attachments=body.attachments,
            effort=body.effort,
            output_schema=body.output_schema,
        )
        return stream_answer(request, stream)
    accepted = await client.run(
        body.agent,
        body.prompt,
        attachments=body.attachments,
        effort=body.effort,
        output_schema=body.output_schema,
    )
    return await accepted_answer(request, member, accepted, 201, answer.wait)


def _after(request: Request) -> int | None:
    """Where a follow resumes: `Last-Event-ID` (what a browser's EventSource sends when
    it reconnects), else `?after=`; `None` for the start. Both are checked whichever
    wins."""
    after = optional_integer_param(query_param(request.query_params, "after"), "after", minimum=-1)
    header = optional_integer_param(
        request.headers.get("last-event-id"), "Last-Event-ID", minimum=-1
    )
    return after if header is None else header


async def follow_run(request: Request, member: Member) -> Response:
    state = state_of(request)
    run_id = request.path_params["run_id"]
    events = await state.machine.runs.follow(
        member, request.path_params["id"], run_id, after=_after(request)
    )
    return follow_stream(request, run_id, events)


async def cancel_run(request: Request, member: Member) -> Response:
    cancelled = await _machine(request).runs.cancel(
        member, request.path_params["id"], request.path_params["run_id"]
    )
    return json_response(CancelResult(cancelled=cancelled), 202)


async def cancel_active(request: Request, member: Member) -> Response:
    cancelled = await _machine(request).runs.cancel(member, request.path_params["id"])
    return json_response(CancelResult(cancelled=cancelled), 202)


async def cancel_queued(request: Request, member: Member) -> Response:
    path = request.path_params
    await _machine(request).runs.cancel_queued(member, path["id"], path["queued_id"])
    return Response(status_code=204)


async def watch_conversation(request: Request, member: Member) -> Response:
    conversations = _machine(request).conversations
    latest: list[ConversationView] = []
    changed = [anyio.Event()]

    def deliver(view: ConversationView) -> None:
        # Only the newest view matters to a reader that fell behind: keep that one.
        latest[:] = [view]
        changed[0].set()

    stop = await conversations.watch(member, request.path_params["id"], deliver)

    async def encoded() -> AsyncGenerator[bytes, None]:
        try:
            number = 0
            while True:
                await changed[0].wait()
                changed[0] = anyio.Event()
                number += 1
                view = latest[0].model_dump(mode="json", by_alias=True)
                yield encode_event(VIEW_EVENT, view, number)
        finally:
            stop()

    return stream_response(request, encoded(), ends_by_itself=False)
