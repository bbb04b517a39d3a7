"""The OpenAPI 3.1 description of the HTTP API, built from the same pydantic models the
handlers read and write and from the contract's route table (so the description cannot
drift from what is served)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, TypeAdapter
from pydantic.alias_generators import to_camel
from pydantic.json_schema import JsonSchemaMode, models_json_schema

from agentkit._version import __version__
from agentkit.client import contract
from agentkit.client.contract import ERROR_CODES, FOLLOW_EVENT_NAMES, VIEW_EVENT, Operation
from agentkit.conversations import (
    MAX_WAIT,
    AgentDefinition,
    AgentInfo,
    ConversationDetails,
    ConversationView,
    FinalEvent,
    Member,
    OutputEvent,
    PromptAccepted,
    RunResult,
    UploadedFile,
)
from agentkit.rooms import RoomInfo, RoomRun, WorkerStatus
from agentkit.server._bodies import (
    AgentList,
    AnswerRequest,
    CancelResult,
    ConversationList,
    CreateConversation,
    DecisionRequest,
    ErrorBody,
    ForkRequest,
    Health,
    MemberList,
    NewToken,
    PromptRequest,
    RunRequest,
    TurnList,
    UpdateConversation,
)
from agentkit.server._params import MAX_INTEGER
from agentkit.server._rooms import (
    CreateRoom,
    DelegationRequest,
    GrantBody,
    PublishBody,
    RoomList,
)
from agentkit.server._runs import RunDetails, RunList
from agentkit.stores import DelegationRecord, RoomEvent, RoomGrant

__all__ = ["openapi_document"]

_REF = "#/components/schemas/{model}"
_READ: tuple[type[BaseModel], ...] = (
    AgentInfo,
    AgentList,
    CancelResult,
    ConversationDetails,
    ConversationList,
    ConversationView,
    ErrorBody,
    FinalEvent,
    Health,
    Member,
    MemberList,
    NewToken,
    OutputEvent,
    PromptAccepted,
    RoomInfo,
    RoomList,
    RoomRun,
    RunDetails,
    RunList,
    RunResult,
    TurnList,
    UploadedFile,
)
_DATACLASSES: tuple[type, ...] = (DelegationRecord, RoomEvent, RoomGrant, WorkerStatus)
_WRITE: tuple[type[BaseModel], ...] = (
    AgentDefinition,
    CreateConversation,
    PromptRequest,
    RunRequest,
    UpdateConversation,
    ForkRequest,
    DecisionRequest,
    AnswerRequest,
    CreateRoom,
    GrantBody,
    PublishBody,
    DelegationRequest,
)


def _ref(model: type) -> dict[str, str]:
    return {"$ref": _REF.format(model=model.__name__)}


def _content(model: type) -> dict[str, Any]:
    return {"application/json": {"schema": _ref(model)}}


def _list_of(key: str, model: type, *, paged: bool = True) -> dict[str, Any]:
    """`model` items under `key`; a page (`paged`) also has the `next` cursor."""
    properties: dict[str, Any] = {key: {"type": "array", "items": _ref(model)}}
    if paged:
        properties["next"] = {"anyOf": [{"type": "string"}, {"type": "null"}]}
    schema = {
        "type": "object",
        "properties": properties,
        "required": [key, "next"] if paged else [key],
    }
    return {"application/json": {"schema": schema}}


_PAGE_PARAMETERS: list[dict[str, Any]] = [
    {
        "name": "limit",
        "in": "query",
        "required": False,
        "description": "How many items the page holds at most (100 by default).",
        "schema": {"type": "integer", "minimum": 1, "maximum": 1000},
    },
    {
        "name": "cursor",
        "in": "query",
        "required": False,
        "description": "The `next` of the page before (opaque).",
        "schema": {"type": "string", "maxLength": 2048},
    },
]


def _error(description: str) -> dict[str, Any]:
    return {"description": description, "content": _content(ErrorBody)}


def _paged(
    operation: Operation,
    summary: str,
    responses: dict[str, Any],
    parameters: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """A list operation: its page parameters and the 422 of a bad `limit` or `cursor`."""
    bad = _error("A `limit` outside 1..1000 or a cursor the list did not give (`invalid_page`).")
    return _operation(
        operation,
        summary,
        {**responses, "422": bad},
        parameters=[*(parameters or []), *_PAGE_PARAMETERS],
    )


def _sse_event(names: list[str] | None, model: type) -> dict[str, Any]:
    """One event of a stream: its `event` name (one of `names`; any when `None`), its `id`
    and its `data`, one line of JSON that is a `model`."""
    event: dict[str, Any] = {"type": "string"}
    if names is not None:
        event = {"enum": names}
    return {
        "type": "object",
        "required": ["event", "data"],
        "properties": {
            "event": event,
            "id": {"type": "string", "pattern": "^-?[0-9]+$"},
            "data": {
                "type": "string",
                "contentMediaType": "application/json",
                "contentSchema": _ref(model),
            },
        },
    }


def _sse(*events: dict[str, Any]) -> dict[str, Any]:
    """A `text/event-stream` answer whose `schema` describes one event (`{event, id,
    data}`), as tools read a sequential media type's schema before OpenAPI 3.2 named it
    `itemSchema`; `data`'s `contentSchema` is the payload's object schema."""
    schema = events[0] if len(events) == 1 else {"anyOf": list(events)}
    return {"text/event-stream": {"schema": schema}}


_SSE_FOLLOW = (
    "`text/event-stream`. One event per output part: `id:` its offset in the run's log, "
    "`event:` the core's event type (`text_delta`, `text`, `tool_use`, `tool_result`, "
    "`structured_output`), `data:` an `OutputEvent`. The last event is `completed`, "
    "`cancelled` or `error` with a `FinalEvent`; then the stream closes. Comment lines "
    "(`: keep-alive`) keep an idle stream open."
)
_SSE_WATCH = (
    "`text/event-stream`. `event: view` with a `ConversationView`, at once and after every "
    "change; `id:` counts the views of this stream."
)


def _operation(
    operation: Operation,
    summary: str,
    responses: dict[str, Any],
    *,
    body: type[BaseModel] | None = None,
    body_required: bool = True,
    body_schema: dict[str, Any] | None = None,
    parameters: list[dict[str, Any]] | None = None,
    secured: bool = True,
) -> dict[str, Any]:
    """The description of one operation of the contract's table."""
    described: dict[str, Any] = {"operationId": operation.name, "summary": summary}
    if parameters:
        described["parameters"] = parameters
    if body is not None:
        content = {"application/json": {"schema": body_schema}} if body_schema else _content(body)
        described["requestBody"] = {"required": body_required, "content": content}
        responses = {
            **responses,
            "400": _error("The body is not JSON (it does not parse, or it is missing)."),
            "413": _error("The body is over the server's limit."),
            "415": _error("The body is not `application/json`."),
            "422": _error(
                "A field is not valid (`field` names it): a wrong type or value, a number "
                "out of the 64-bit integer range or not finite, a string with a lone surrogate."
            ),
        }
    if secured:
        described["security"] = [{"bearer": []}]
        responses = {**responses, "401": _error("No token, or not a member's.")}
        unavailable = "The store cannot be reached or cannot write now (`store_unavailable`)"
        earlier = responses.get("503")
        responses["503"] = _error(
            unavailable + "." if earlier is None else f"{earlier['description']} Or: {unavailable}."
        )
    described["responses"] = responses
    return described


def _decision_operations(
    forbidden: dict[str, Any], conversation: dict[str, Any], run: dict[str, Any]
) -> list[dict[str, Any]]:
    """Deciding a waiting run's permission request, answering its question."""
    missing = _error("No such conversation or run (or not visible).")
    decided = _error("The request was decided already (`request_decided`).")
    return [
        _operation(
            operation,
            summary,
            {
                "202": {"description": "Stored: the run goes on (follow it)."},
                "403": forbidden,
                "404": missing,
                "409": decided,
                "422": _error(
                    "A field is not valid (`field` names it), or the run waits on no such "
                    f"{kind} (`request_not_found`)."
                ),
            },
            body=body,
            parameters=[conversation, run],
        )
        for operation, summary, body, kind in (
            (
                contract.DECIDE_REQUEST,
                "Decide a waiting run's permission request: `allow` runs the call, `deny` "
                "tells the model `permission denied: <message>`; `remember` (with allow) "
                "allows later matching calls in the conversation (owners and editors).",
                DecisionRequest,
                "permission request",
            ),
            (
                contract.ANSWER_REQUEST,
                "Answer a waiting run's question: `answers` become the questionnaire "
                "tool's result (owners and editors).",
                AnswerRequest,
                "question",
            ),
        )
    ]


_RUN_ANSWERS = (
    "With `Accept: text/event-stream`, the answer (200) is the run's event stream from its "
    "first event, live text deltas included, with the `id:` offsets of its events route "
    "(resume there with `Last-Event-ID`). With `?wait=SECONDS`, the answer is the ended "
    "run (200) when it ends within the wait. The run's ids come in the headers, before any "
    "event: `Location` (its events route), `Agentkit-Conversation-Id`, `Agentkit-Run-Id`."
)
_WAIT: dict[str, Any] = {
    "name": "wait",
    "in": "query",
    "required": False,
    "description": (
        f"Answer the ended run if it ends within this many seconds (at most {MAX_WAIT:g}); "
        "not with `Accept: text/event-stream`."
    ),
    "schema": {"type": "number", "exclusiveMinimum": 0, "maximum": MAX_WAIT},
}


def _started_run(sse_follow: dict[str, Any], status: str, description: str) -> dict[str, Any]:
    """The answers of a route that starts a run: the accepted run (`status`), and 200:
    the ended run (`?wait=`) or the run's event stream (`Accept: text/event-stream`)."""
    string = {"schema": {"type": "string"}}
    headers = {
        "Location": {"description": "The run's events route.", **string},
        contract.CONVERSATION_ID_HEADER: {"description": "The run's conversation.", **string},
        contract.RUN_ID_HEADER: {"description": "The run.", **string},
    }
    return {
        "200": {
            "description": "The ended run (`?wait=`), or the run's event stream from its first "
            "event (`Accept: text/event-stream`). " + _SSE_FOLLOW,
            "headers": headers,
            "content": {**_content(RunResult), **sse_follow},
        },
        status: {
            "description": description,
            "headers": headers,
            "content": _content(PromptAccepted),
        },
    }


def _worker_status(schema: dict[str, Any]) -> dict[str, Any]:
    """A room agent's status as `GET /v1/rooms/{room}/agents` answers it: every field by
    its camelCase name, with its `lag` (a property of the dataclass)."""
    properties = {to_camel(name): value for name, value in schema["properties"].items()}
    properties["lag"] = {"type": "integer", "minimum": 0}
    required = [to_camel(name) for name in schema["required"]]
    return {**schema, "properties": properties, "required": [*required, "lag", "standby"]}


def _agent_body(definitions: dict[str, Any]) -> dict[str, Any]:
    """`PUT /v1/agents/{name}`'s body: an `AgentDefinition` whose `name` may be left out
    (the path says it; when given, it must be the path's)."""
    schema = {**definitions[AgentDefinition.__name__]}
    schema["required"] = [key for key in schema.get("required", []) if key != "name"]
    if not schema["required"]:
        del schema["required"]
    schema["title"] = "AgentDefinitionBody"
    return schema


def _paths(described: list[dict[str, Any]]) -> dict[str, Any]:
    """The document's paths: every operation of the contract's table, in its order, with
    its description.

    Raises:
        LookupError: An operation is not described, or a description names none.
    """
    by_name = {operation["operationId"]: operation for operation in described}
    paths: dict[str, Any] = {}
    for operation in contract.OPERATIONS:
        paths.setdefault(operation.path, {})[operation.method.lower()] = by_name.pop(operation.name)
    if by_name:
        raise LookupError(f"described but not in the route table: {sorted(by_name)}")
    return paths


def _path(name: str, description: str) -> dict[str, Any]:
    return {
        "name": name,
        "in": "path",
        "required": True,
        "description": description,
        "schema": {"type": "string"},
    }


def openapi_document() -> dict[str, Any]:
    """The OpenAPI 3.1 document served at `/openapi.json`."""
    definitions: dict[str, Any] = {}
    for mode, models in (("serialization", _READ), ("validation", _WRITE)):
        typed_mode: JsonSchemaMode = "serialization" if mode == "serialization" else "validation"
        _, schema = models_json_schema(
            [(model, typed_mode) for model in models], ref_template=_REF, by_alias=True
        )
        definitions.update(schema.get("$defs", {}))
    for kind in _DATACLASSES:
        definitions[kind.__name__] = TypeAdapter(kind).json_schema(ref_template=_REF)
    definitions["WorkerStatus"] = _worker_status(definitions["WorkerStatus"])
    conversation = _path("id", "The conversation's id.")
    run = _path("run_id", "The run's id.")
    agent = _path("name", "The agent's name.")
    missing = _error("The conversation does not exist or is not visible to the caller.")
    forbidden = _error("The caller's role may not do this.")
    busy = _error(
        "A run of this conversation is going already (`ifBusy: reject`), or its queue is "
        "full (`enqueue`)."
    )
    after = [
        {
            "name": "after",
            "in": "query",
            "required": False,
            "description": "Resume after this offset (`Last-Event-ID` wins when both are given).",
            "schema": {"type": "integer", "minimum": -1, "maximum": MAX_INTEGER},
        },
        {
            "name": "Last-Event-ID",
            "in": "header",
            "required": False,
            "description": "The last offset the client received: resume after it.",
            "schema": {"type": "integer", "minimum": -1, "maximum": MAX_INTEGER},
        },
    ]
    sse_follow = _sse(
        _sse_event(sorted(set(FOLLOW_EVENT_NAMES.values())), OutputEvent),
        _sse_event(["completed", "cancelled", "error"], FinalEvent),
        _sse_event([contract.ENDED_EVENT], ErrorBody),
    )
    sse_watch = _sse(_sse_event([VIEW_EVENT], ConversationView))
    operations = [
        _operation(
            contract.HEALTHZ,
            "Whether the server answers.",
            {"200": {"description": "It does.", "content": _content(Health)}},
            secured=False,
        ),
        _operation(
            contract.OPENAPI,
            "This document.",
            {"200": {"description": "OpenAPI 3.1.", "content": {"application/json": {}}}},
            secured=False,
        ),
        _operation(
            contract.METRICS,
            "The server's metrics in the Prometheus text format (owners).",
            {
                "200": {
                    "description": "The metrics (`agentkit serve --metrics`): the "
                    "Prometheus text format, or OpenMetrics when `Accept` asks for it.",
                    "content": {
                        "text/plain": {"schema": {"type": "string"}},
                        "application/openmetrics-text": {"schema": {"type": "string"}},
                    },
                },
                "403": forbidden,
                "404": _error(
                    "Not served here: the server runs without `--metrics`, or serves them "
                    "on a listener of their own (`--metrics-port`)."
                ),
            },
        ),
        _operation(
            contract.GET_ME,
            "The member the token belongs to.",
            {"200": {"description": "The member.", "content": _content(Member)}},
        ),
        _paged(
            contract.LIST_MEMBERS,
            "A page of the members, oldest first (owners).",
            {
                "200": {"description": "The members.", "content": _content(MemberList)},
                "403": forbidden,
            },
        ),
        _operation(
            contract.ROTATE_TOKEN,
            "Give a member a new token; the old one is refused at once (owners).",
            {
                "200": {"description": "The new token.", "content": _content(NewToken)},
                "403": forbidden,
                "404": _error("No such member."),
            },
            parameters=[_path("name", "The member's name.")],
        ),
        _paged(
            contract.LIST_AGENTS,
            "A page of the agents of the machine, oldest first (`rool` first).",
            {"200": {"description": "The agents.", "content": _content(AgentList)}},
        ),
        _operation(
            contract.PUT_AGENT,
            "Create or replace an agent (owners). `If-None-Match: *` creates only (409 "
            "when it exists); `If-Match: *` replaces only (404 when it does not).",
            {
                "200": {"description": "Replaced.", "content": _content(AgentInfo)},
                "201": {"description": "Created.", "content": _content(AgentInfo)},
                "403": forbidden,
                "404": _error("`If-Match: *` and no such agent."),
                "409": _error("`If-None-Match: *` and the agent exists."),
            },
            body=AgentDefinition,
            body_schema=_agent_body(definitions),
            parameters=[agent],
        ),
        _operation(
            contract.DELETE_AGENT,
            "Delete an agent (owners); `rool` and configured agents cannot be.",
            {
                "204": {"description": "Deleted."},
                "403": forbidden,
                "404": _error("No such agent."),
                "409": _error("`rool` or a configured agent."),
            },
            parameters=[agent],
        ),
        _paged(
            contract.LIST_CONVERSATIONS,
            "A page of the conversations the caller can see, newest first.",
            {"200": {"description": "Light rows.", "content": _content(ConversationList)}},
        ),
        _operation(
            contract.CREATE_CONVERSATION,
            "Create a conversation (owners and editors).",
            {
                "201": {"description": "Created.", "content": _content(ConversationDetails)},
                "403": forbidden,
                "404": _error("No such agent."),
            },
            body=CreateConversation,
            body_required=False,
        ),
        _operation(
            contract.GET_CONVERSATION,
            "A conversation's metadata and saved turns.",
            {
                "200": {"description": "It.", "content": _content(ConversationDetails)},
                "404": missing,
            },
            parameters=[conversation],
        ),
        _operation(
            contract.UPDATE_CONVERSATION,
            "Rename it or change its visibility.",
            {
                "200": {
                    "description": "It, changed.",
                    "content": _content(ConversationDetails),
                },
                "403": forbidden,
                "404": missing,
            },
            body=UpdateConversation,
            body_required=False,
            parameters=[conversation],
        ),
        _operation(
            contract.DELETE_CONVERSATION,
            "Delete it with its runs and turns (a running run is cancelled).",
            {"204": {"description": "Deleted."}, "403": forbidden, "404": missing},
            parameters=[conversation],
        ),
        _paged(
            contract.LIST_TURNS,
            "A page of the saved turns, oldest first.",
            {
                "200": {"description": "The turns.", "content": _content(TurnList)},
                "404": missing,
            },
            parameters=[conversation],
        ),
        _operation(
            contract.START_RUN,
            "Prompt: start a run; answers once it is stored. " + _RUN_ANSWERS,
            {
                **_started_run(sse_follow, "202", "Accepted (and still going after `wait`)."),
                "403": forbidden,
                "404": missing,
                "409": busy,
                "503": _error("The server is shutting down."),
            },
            body=PromptRequest,
            parameters=[conversation, _WAIT],
        ),
        _operation(
            contract.FOLLOW_RUN,
            "Follow a run's output parts (SSE).",
            {
                "200": {"description": _SSE_FOLLOW, "content": sse_follow},
                "404": _error("No such conversation or run (or not visible)."),
                "422": _error("`after` is not an offset."),
            },
            parameters=[conversation, run, *after],
        ),
        _operation(
            contract.CANCEL_RUN,
            "Stop the run if it is the running one; answers once it has ended.",
            {
                "202": {"description": "Done.", "content": _content(CancelResult)},
                "403": forbidden,
                "404": _error("No such conversation or run (or not visible)."),
            },
            parameters=[conversation, run],
        ),
        _operation(
            contract.CANCEL_CONVERSATION,
            "Stop the conversation's running run, whichever it is; answers once it has "
            "ended (`cancelled` is false when none was going).",
            {
                "202": {"description": "Done.", "content": _content(CancelResult)},
                "403": forbidden,
                "404": missing,
            },
            parameters=[conversation],
        ),
        _operation(
            contract.WATCH_CONVERSATION,
            "The conversation's view, at once and after every change (SSE).",
            {
                "200": {"description": _SSE_WATCH, "content": sse_watch},
                "404": missing,
            },
            parameters=[conversation],
        ),
        _operation(
            contract.FORK_CONVERSATION,
            "Fork it: a new conversation private to the caller, of the same agent and "
            "instructions, holding a copy of its first `turn` ended turns (prompts with "
            "their answers; all by default). Owners and editors who see it.",
            {
                "201": {"description": "The fork.", "content": _content(ConversationDetails)},
                "403": forbidden,
                "404": missing,
                "409": _error("The conversation's agent was deleted (or a run is starting)."),
            },
            body=ForkRequest,
            body_required=False,
            parameters=[conversation],
        ),
        _operation(
            contract.CANCEL_QUEUED,
            "Remove a queued prompt (or a dropped one) from the conversation's queue "
            "(owners and editors who see it).",
            {
                "204": {"description": "Removed: it will not run."},
                "403": forbidden,
                "404": _error("No such conversation or queued prompt (or not visible)."),
                "409": _error("It has started: cancel its run (`queued_prompt_started`)."),
            },
            parameters=[conversation, _path("queued_id", "The queued prompt's id.")],
        ),
        *_decision_operations(forbidden, conversation, run),
        _upload_operation(forbidden),
        *_room_operations(forbidden),
        *_run_operations(),
        _operation(
            contract.CREATE_RUN,
            "Start a run of an agent in a new conversation, private to the caller, in one "
            "request (owners and editors); a prompt that is refused leaves no conversation. "
            + _RUN_ANSWERS,
            {
                **_started_run(sse_follow, "201", "Created (and still going after `wait`)."),
                "403": forbidden,
                "404": _error("No such agent."),
                "503": _error("The server is shutting down."),
            },
            body=RunRequest,
            parameters=[_WAIT],
        ),
    ]
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "agentkit machine",
            "version": __version__,
            "description": (
                "Agents and durable conversations over HTTP. Errors are "
                '`{"error": {"code", "message", "field"?}}`; codes: '
                + ", ".join(f"`{code}` ({status})" for code, status in ERROR_CODES.items())
                + "."
            ),
        },
        "paths": _paths(operations),
        "components": {
            "schemas": definitions,
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        },
    }


def _upload_operation(forbidden: dict[str, Any]) -> dict[str, Any]:
    binary = {"type": "string", "contentMediaType": "application/octet-stream"}
    described = _operation(
        contract.UPLOAD_FILE,
        "Store a file in the caller's upload folder, under an attachment root (owners and "
        "editors); attach it to a prompt by the `path` answered. The body is the file "
        "(any type but multipart, with `?filename=`), or a `multipart/form-data` body "
        "with one file part (its filename is used unless `?filename=` is given). A name "
        "already taken becomes `<stem>-2<ext>`, ...: no file is ever replaced.",
        {
            "201": {"description": "Stored.", "content": _content(UploadedFile)},
            "400": _error("A malformed multipart/form-data body."),
            "403": forbidden,
            "413": _error("The file is over the server's upload limit (`upload_too_large`)."),
            "422": _error(
                "No file name, or a bad one (`..`, a control character, a leading `.`, "
                "over 200 bytes), or no file part (`upload_error`)."
            ),
            "507": _error(
                "The file would take the caller's folder over its quota (`upload_quota_exceeded`)."
            ),
        },
        parameters=[
            {
                "name": "filename",
                "in": "query",
                "required": False,
                "description": "The file's name (directories are stripped); needed with a "
                "raw body.",
                "schema": {"type": "string"},
            }
        ],
    )
    described["requestBody"] = {
        "required": True,
        "content": {
            "application/octet-stream": {"schema": binary},
            "multipart/form-data": {
                "schema": {
                    "type": "object",
                    "properties": {"file": binary},
                    "required": ["file"],
                }
            },
        },
    }
    return described


def _room_operations(forbidden: dict[str, Any]) -> list[dict[str, Any]]:
    room = _path("room", "The room's id.")
    missing = _error("No such room, or the caller holds no grant in it.")
    after = {
        "name": "after",
        "in": "query",
        "required": False,
        "description": "Events after this position (0: from the start).",
        "schema": {"type": "integer", "minimum": 0, "maximum": MAX_INTEGER},
    }
    last_event_id = {
        "name": "Last-Event-ID",
        "in": "header",
        "required": False,
        "description": "The last position the client received: resume after it "
        "(wins over `after`).",
        "schema": {"type": "integer", "minimum": 0, "maximum": MAX_INTEGER},
    }
    types = {
        "name": "types",
        "in": "query",
        "required": False,
        "description": "Comma-separated type patterns (`chat.*,measurements.word_count`).",
        "schema": {"type": "string"},
    }
    positions = {
        "application/json": {
            "schema": {
                "type": "object",
                "properties": {"positions": {"type": "array", "items": {"type": "integer"}}},
                "required": ["positions"],
            }
        }
    }
    return [
        _paged(
            contract.LIST_ROOMS,
            "A page of the rooms the caller owns or holds a grant in, oldest first.",
            {"200": {"description": "The rooms.", "content": _content(RoomList)}},
        ),
        _operation(
            contract.CREATE_ROOM,
            "Create a room (owners and editors); its creator owns it.",
            {
                "201": {"description": "Created.", "content": _content(RoomInfo)},
                "403": forbidden,
            },
            body=CreateRoom,
        ),
        _operation(
            contract.GET_ROOM,
            "A room.",
            {"200": {"description": "It.", "content": _content(RoomInfo)}, "404": missing},
            parameters=[room],
        ),
        _operation(
            contract.DELETE_ROOM,
            "Delete a room with its events (the room's owners).",
            {"204": {"description": "Deleted."}, "403": forbidden, "404": missing},
            parameters=[room],
        ),
        _operation(
            contract.LIST_GRANTS,
            "The room's grants (its owners).",
            {
                "200": {
                    "description": "Grants.",
                    "content": _list_of("grants", RoomGrant, paged=False),
                },
                "403": forbidden,
                "404": missing,
            },
            parameters=[room],
        ),
        _operation(
            contract.PUT_GRANT,
            "Set what a participant (`member:<name>`, `agent:<id>`) may read and publish "
            "(the room's owners); empty lists revoke.",
            {
                "200": {"description": "The grant.", "content": _content(RoomGrant)},
                "403": forbidden,
                "404": missing,
            },
            body=GrantBody,
            parameters=[room, _path("participant", "`member:<name>` or `agent:<id>`.")],
        ),
        _operation(
            contract.PUBLISH,
            "Publish one event or a batch, atomically.",
            {
                "201": {"description": "Their positions.", "content": positions},
                "403": _error("An event is outside the caller's grants: nothing published."),
                "404": missing,
            },
            body=PublishBody,
            parameters=[room],
        ),
        _paged(
            contract.READ_EVENTS,
            "A page of readable events after a position (or the `next` cursor).",
            {
                "200": {"description": "Events.", "content": _list_of("events", RoomEvent)},
                "404": missing,
            },
            parameters=[room, after, types],
        ),
        _operation(
            contract.STREAM_EVENTS,
            "Readable events after a position, then live (SSE): `id:` the position, "
            "`event:` the type, `data:` a `RoomEvent`; `Last-Event-ID` resumes.",
            {
                "200": {
                    "description": "`text/event-stream`: one event per room event.",
                    "content": _sse(
                        _sse_event(None, RoomEvent), _sse_event([contract.ENDED_EVENT], ErrorBody)
                    ),
                },
                "404": missing,
                "422": _error("A bad position or pattern."),
            },
            parameters=[room, after, types, last_event_id],
        ),
        _operation(
            contract.READ_EVENT_RUN,
            "The engine run behind a room event (an LLM agent's answer or failure): its "
            "record and stored events, tool calls included, for who may read the event.",
            {
                "200": {"description": "The run.", "content": _content(RoomRun)},
                "404": _error("No such room, no readable event there, or no run behind it."),
                "422": _error("A position that is not an integer of 1 or more."),
            },
            parameters=[room, _path("position", "The event's position in the room.")],
        ),
        _operation(
            contract.DELEGATE,
            "Ask an agent of the room for a task (needs the grant to publish "
            "`delegation.requested`); the agent may run in any process of the store.",
            {
                "202": {"description": "Pending.", "content": _content(DelegationRecord)},
                "403": forbidden,
                "404": _error("No such room or agent."),
            },
            body=DelegationRequest,
            parameters=[room],
        ),
        _operation(
            contract.GET_DELEGATION,
            "A delegation: `pending`, `running`, `completed` (with `result`), `failed`, "
            "`cancelled` or `expired` (with `error`).",
            {
                "200": {"description": "It.", "content": _content(DelegationRecord)},
                "404": _error("No such room or delegation."),
            },
            parameters=[room, _path("id", "The delegation's id.")],
        ),
        _operation(
            contract.CANCEL_DELEGATION,
            "Cancel a pending or running delegation (its requester and the room's "
            "owners): it ends `cancelled`, and a handler running it is stopped.",
            {
                "200": {"description": "Cancelled.", "content": _content(DelegationRecord)},
                "403": _error("The caller may see the delegation but not cancel it."),
                "404": _error("No such room or delegation."),
                "409": _error("The delegation has ended already (`delegation_ended`)."),
            },
            parameters=[room, _path("id", "The delegation's id.")],
        ),
        _paged(
            contract.LIST_DELEGATIONS,
            "A page of the room's delegations the caller may see, oldest first.",
            {
                "200": {
                    "description": "Delegations.",
                    "content": _list_of("delegations", DelegationRecord),
                },
                "404": missing,
            },
            parameters=[
                room,
                {
                    "name": "status",
                    "in": "query",
                    "required": False,
                    "description": "Only delegations in these statuses (comma-separated: "
                    "`pending`, `running`, `completed`, `failed`, `cancelled`, `expired`).",
                    "schema": {"type": "string"},
                },
                {
                    "name": "after",
                    "in": "query",
                    "required": False,
                    "description": "Only delegations recorded after the one of this id.",
                    "schema": {"type": "string"},
                },
            ],
        ),
        _operation(
            contract.LIST_ROOM_AGENTS,
            "The agents registered in the room on this server: cursor, lag, failures, standby.",
            {
                "200": {
                    "description": "Their progress.",
                    "content": _list_of("agents", WorkerStatus, paged=False),
                },
                "404": missing,
            },
            parameters=[room],
        ),
    ]


def _run_operations() -> list[dict[str, Any]]:
    missing = _error(
        "No such run, or not readable by the caller (machine owners read every run; other "
        "members the runs of the conversations they can see)."
    )
    return [
        _paged(
            contract.LIST_RUNS,
            "A page of runs, most recent first: a session's (`session`, a conversation's id "
            "or any session of the store), else every readable one.",
            {"200": {"description": "The runs.", "content": _content(RunList)}},
            parameters=[
                {
                    "name": "session",
                    "in": "query",
                    "required": False,
                    "description": "Only this session's runs (none when it is not readable).",
                    "schema": {"type": "string"},
                },
            ],
        ),
        _operation(
            contract.GET_RUN,
            "A run's record and its stored events (the core's events, in their wire "
            "form): any run of the store, a conversation's, a room agent's or one of "
            "`agentkit run`.",
            {
                "200": {"description": "It.", "content": _content(RunDetails)},
                "404": missing,
            },
            parameters=[_path("run_id", "The run's id.")],
        ),
    ]
