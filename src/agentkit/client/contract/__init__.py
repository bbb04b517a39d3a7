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
    LIST_GRANTS,
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
    "LIST_GRANTS",
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
