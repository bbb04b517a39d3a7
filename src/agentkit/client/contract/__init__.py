"""The HTTP contract between `agentkit serve` and its clients, written once for both
sides: the server (`agentkit.server`) answers by it and the remote clients
([`RemoteMachine`][agentkit.client.RemoteMachine],
[`RemoteRoomsClient`][agentkit.client.RemoteRoomsClient]) call by it.

- The route table: every [`Operation`][agentkit.client.contract.Operation] with its
  name, method and path template, in [`OPERATIONS`][agentkit.client.contract.OPERATIONS].
  The server's routes and its OpenAPI document's paths come from it, and the clients
  build their URLs with [`Operation.url`][agentkit.client.contract.Operation.url].
- The error codes: [`ERRORS`][agentkit.client.contract.ERRORS], one row per code with its
  status and the exceptions it stands for, read in both directions (the server's answer
  for an exception, a client's exception for an answer).
- Server-sent events: [`encode_event`][agentkit.client.contract.encode_event] on the
  server, the incremental [`SseParser`][agentkit.client.contract.SseParser] on the
  clients, and the names of the events the streams carry.

It needs no optional dependency: importing it imports neither httpx nor Starlette.
"""

from typing import TYPE_CHECKING

from agentkit._internal.lazy import lazy_exports

if TYPE_CHECKING:
    from agentkit.client.contract._errors import (
        ERROR_CODES,
        ERRORS,
        ErrorCode,
        carried_error,
        code_for_exception,
        conversations_exception,
        error_body,
        read_error,
        rooms_exception,
    )
    from agentkit.client.contract._routes import (
        CANCEL_CONVERSATION,
        CANCEL_RUN,
        CREATE_CONVERSATION,
        CREATE_ROOM,
        DELEGATE,
        DELETE_AGENT,
        DELETE_CONVERSATION,
        DELETE_ROOM,
        FOLLOW_RUN,
        GET_CONVERSATION,
        GET_DELEGATION,
        GET_ME,
        GET_ROOM,
        GET_RUN,
        HEALTHZ,
        LIST_AGENTS,
        LIST_CONVERSATIONS,
        LIST_DELEGATIONS,
        LIST_GRANTS,
        LIST_MEMBERS,
        LIST_ROOM_AGENTS,
        LIST_ROOMS,
        LIST_RUNS,
        LIST_TURNS,
        OPENAPI,
        OPERATIONS,
        PUBLISH,
        PUT_AGENT,
        PUT_GRANT,
        READ_EVENTS,
        ROTATE_TOKEN,
        START_RUN,
        STREAM_EVENTS,
        UPDATE_CONVERSATION,
        WATCH_CONVERSATION,
        Method,
        Operation,
    )
    from agentkit.client.contract._sse import (
        FOLLOW_EVENT_NAMES,
        VIEW_EVENT,
        SseEvent,
        SseParser,
        encode_comment,
        encode_event,
        follow_event_name,
    )

_EXPORTS: dict[str, str] = {
    "CANCEL_CONVERSATION": "agentkit.client.contract._routes",
    "CANCEL_RUN": "agentkit.client.contract._routes",
    "CREATE_CONVERSATION": "agentkit.client.contract._routes",
    "CREATE_ROOM": "agentkit.client.contract._routes",
    "DELEGATE": "agentkit.client.contract._routes",
    "DELETE_AGENT": "agentkit.client.contract._routes",
    "DELETE_CONVERSATION": "agentkit.client.contract._routes",
    "DELETE_ROOM": "agentkit.client.contract._routes",
    "ERRORS": "agentkit.client.contract._errors",
    "ERROR_CODES": "agentkit.client.contract._errors",
    "ErrorCode": "agentkit.client.contract._errors",
    "FOLLOW_EVENT_NAMES": "agentkit.client.contract._sse",
    "FOLLOW_RUN": "agentkit.client.contract._routes",
    "GET_CONVERSATION": "agentkit.client.contract._routes",
    "GET_DELEGATION": "agentkit.client.contract._routes",
    "GET_ME": "agentkit.client.contract._routes",
    "GET_ROOM": "agentkit.client.contract._routes",
    "GET_RUN": "agentkit.client.contract._routes",
    "HEALTHZ": "agentkit.client.contract._routes",
    "LIST_AGENTS": "agentkit.client.contract._routes",
    "LIST_CONVERSATIONS": "agentkit.client.contract._routes",
    "LIST_DELEGATIONS": "agentkit.client.contract._routes",
    "LIST_GRANTS": "agentkit.client.contract._routes",
    "LIST_MEMBERS": "agentkit.client.contract._routes",
    "LIST_ROOMS": "agentkit.client.contract._routes",
    "LIST_ROOM_AGENTS": "agentkit.client.contract._routes",
    "LIST_RUNS": "agentkit.client.contract._routes",
    "LIST_TURNS": "agentkit.client.contract._routes",
    "Method": "agentkit.client.contract._routes",
    "OPENAPI": "agentkit.client.contract._routes",
    "OPERATIONS": "agentkit.client.contract._routes",
    "Operation": "agentkit.client.contract._routes",
    "PUBLISH": "agentkit.client.contract._routes",
    "PUT_AGENT": "agentkit.client.contract._routes",
    "PUT_GRANT": "agentkit.client.contract._routes",
    "READ_EVENTS": "agentkit.client.contract._routes",
    "ROTATE_TOKEN": "agentkit.client.contract._routes",
    "START_RUN": "agentkit.client.contract._routes",
    "STREAM_EVENTS": "agentkit.client.contract._routes",
    "SseEvent": "agentkit.client.contract._sse",
    "SseParser": "agentkit.client.contract._sse",
    "UPDATE_CONVERSATION": "agentkit.client.contract._routes",
    "VIEW_EVENT": "agentkit.client.contract._sse",
    "WATCH_CONVERSATION": "agentkit.client.contract._routes",
    "carried_error": "agentkit.client.contract._errors",
    "code_for_exception": "agentkit.client.contract._errors",
    "conversations_exception": "agentkit.client.contract._errors",
    "encode_comment": "agentkit.client.contract._sse",
    "encode_event": "agentkit.client.contract._sse",
    "error_body": "agentkit.client.contract._errors",
    "follow_event_name": "agentkit.client.contract._sse",
    "read_error": "agentkit.client.contract._errors",
    "rooms_exception": "agentkit.client.contract._errors",
}

__all__ = [
    "CANCEL_CONVERSATION",
    "CANCEL_RUN",
    "CREATE_CONVERSATION",
    "CREATE_ROOM",
    "DELEGATE",
    "DELETE_AGENT",
    "DELETE_CONVERSATION",
    "DELETE_ROOM",
    "ERRORS",
    "ERROR_CODES",
    "FOLLOW_EVENT_NAMES",
    "FOLLOW_RUN",
    "GET_CONVERSATION",
    "GET_DELEGATION",
    "GET_ME",
    "GET_ROOM",
    "GET_RUN",
    "HEALTHZ",
    "LIST_AGENTS",
    "LIST_CONVERSATIONS",
    "LIST_DELEGATIONS",
    "LIST_GRANTS",
    "LIST_MEMBERS",
    "LIST_ROOMS",
    "LIST_ROOM_AGENTS",
    "LIST_RUNS",
    "LIST_TURNS",
    "OPENAPI",
    "OPERATIONS",
    "PUBLISH",
    "PUT_AGENT",
    "PUT_GRANT",
    "READ_EVENTS",
    "ROTATE_TOKEN",
    "START_RUN",
    "STREAM_EVENTS",
    "UPDATE_CONVERSATION",
    "VIEW_EVENT",
    "WATCH_CONVERSATION",
    "ErrorCode",
    "Method",
    "Operation",
    "SseEvent",
    "SseParser",
    "carried_error",
    "code_for_exception",
    "conversations_exception",
    "encode_comment",
    "encode_event",
    "error_body",
    "follow_event_name",
    "read_error",
    "rooms_exception",
]

# Hidden from type checkers: a module `__getattr__` would make every misspelt name
# imported from this package type as `Any` instead of an error.
if not TYPE_CHECKING:
    __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, __all__)
