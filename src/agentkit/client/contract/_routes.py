"""The route table: every operation of the HTTP API with its method and path template.

The server binds a handler to each operation (its Starlette routes and the paths of its
OpenAPI document come from this table) and the remote clients build their URLs from it,
so that a path is written once.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal
from urllib.parse import quote

__all__ = [
    "ANSWER_REQUEST",
    "CANCEL_CONVERSATION",
    "CANCEL_DELEGATION",
    "CANCEL_QUEUED",
    "CANCEL_RUN",
    "CONVERSATION_ID_HEADER",
    "CREATE_CONVERSATION",
    "CREATE_ROOM",
    "CREATE_RUN",
    "DECIDE_REQUEST",
    "DELEGATE",
    "DELETE_AGENT",
    "DELETE_CONVERSATION",
    "DELETE_ROOM",
    "FOLLOW_RUN",
    "FORK_CONVERSATION",
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
    "METRICS",
    "OPENAPI",
    "OPERATIONS",
    "PUBLISH",
    "PUT_AGENT",
    "PUT_GRANT",
    "READ_EVENTS",
    "READ_EVENT_RUN",
    "ROTATE_TOKEN",
    "RUN_ID_HEADER",
    "START_RUN",
    "STREAM_EVENTS",
    "UPDATE_CONVERSATION",
    "UPLOAD_FILE",
    "WATCH_CONVERSATION",
    "Method",
    "Operation",
]

Method = Literal["GET", "POST", "PUT", "PATCH", "DELETE"]
"""The HTTP methods the API uses."""

_PARAMETER = re.compile(r"\{(\w+)\}")


@dataclass(frozen=True)
class Operation:
    """One operation of the HTTP API.

    Attributes:
        name: Its `operationId` in the OpenAPI document (`getConversation`).
        method: Its HTTP method.
        path: Its path template; each `{parameter}` is one path segment
            (`/v1/conversations/{id}`).
        member: Whether it needs a member's token (`Authorization: Bearer <token>`).
    """

    name: str
    method: Method
    path: str
    member: bool = True

    @property
    def parameters(self) -> tuple[str, ...]:
        """The names of the path's parameters, in order."""
        return tuple(_PARAMETER.findall(self.path))

    def url(self, **values: str) -> str:
        """The path with every parameter filled in, each value percent-encoded as one
        segment (a `/` in a value is `%2F`, never a separator).

        Raises:
            ValueError: A parameter is missing, or a value names none.
        """
        if set(values) != set(self.parameters):
            raise ValueError(f"{self.name} takes {sorted(self.parameters)}, not {sorted(values)}")
        return self.path.format(**{key: quote(str(v), safe="") for key, v in values.items()})


HEALTHZ = Operation("healthz", "GET", "/healthz", member=False)
"""Whether the server answers."""
OPENAPI = Operation("openapi", "GET", "/openapi.json", member=False)
"""The OpenAPI 3.1 document of the API."""
METRICS = Operation("metrics", "GET", "/metrics")
"""The server's metrics in the Prometheus text format (owners; `agentkit serve --metrics`)."""

GET_ME = Operation("getMe", "GET", "/v1/me")
"""The member the token belongs to."""
LIST_MEMBERS = Operation("listMembers", "GET", "/v1/members")
"""The machine's members (owners only)."""
ROTATE_TOKEN = Operation("rotateToken", "POST", "/v1/members/{name}/token")
"""Give a member a new token; the old one is refused at once (owners only)."""
LIST_AGENTS = Operation("listAgents", "GET", "/v1/agents")
"""Every agent of the machine."""
PUT_AGENT = Operation("putAgent", "PUT", "/v1/agents/{name}")
"""Create or replace an agent."""
DELETE_AGENT = Operation("deleteAgent", "DELETE", "/v1/agents/{name}")
"""Delete an agent."""

LIST_CONVERSATIONS = Operation("listConversations", "GET", "/v1/conversations")
"""The conversations the caller can see."""
CREATE_CONVERSATION = Operation("createConversation", "POST", "/v1/conversations")
"""Create a conversation."""
GET_CONVERSATION = Operation("getConversation", "GET", "/v1/conversations/{id}")
"""A conversation's metadata and saved turns."""
UPDATE_CONVERSATION = Operation("updateConversation", "PATCH", "/v1/conversations/{id}")
"""Rename a conversation or change its visibility."""
DELETE_CONVERSATION = Operation("deleteConversation", "DELETE", "/v1/conversations/{id}")
"""Delete a conversation."""
LIST_TURNS = Operation("listTurns", "GET", "/v1/conversations/{id}/turns")
"""A conversation's saved turns."""
START_RUN = Operation("startRun", "POST", "/v1/conversations/{id}/runs")
"""Prompt: start a run."""
FOLLOW_RUN = Operation("followRun", "GET", "/v1/conversations/{id}/runs/{run_id}/events")
"""Follow a run's output parts (an event stream)."""
CANCEL_RUN = Operation("cancelRun", "POST", "/v1/conversations/{id}/runs/{run_id}/cancel")
"""Stop a run if it is the running one."""
CANCEL_CONVERSATION = Operation("cancelConversation", "POST", "/v1/conversations/{id}/cancel")
"""Stop a conversation's running run, whichever it is."""
WATCH_CONVERSATION = Operation("watchConversation", "GET", "/v1/conversations/{id}/watch")
"""A conversation's view after every change (an event stream)."""
FORK_CONVERSATION = Operation("forkConversation", "POST", "/v1/conversations/{id}/fork")
"""A new private conversation holding a copy of a conversation's first turns."""
CANCEL_QUEUED = Operation("cancelQueued", "DELETE", "/v1/conversations/{id}/queue/{queued_id}")
"""Remove a queued prompt from a conversation's queue."""
DECIDE_REQUEST = Operation(
    "decideRequest", "POST", "/v1/conversations/{id}/runs/{run_id}/decisions"
)
"""Decide a waiting run's permission request (allow or deny)."""
ANSWER_REQUEST = Operation("answerRequest", "POST", "/v1/conversations/{id}/runs/{run_id}/answers")
"""Answer a waiting run's question."""

UPLOAD_FILE = Operation("uploadFile", "POST", "/v1/files")
"""Store a file in the caller's upload folder, to attach to a prompt by its path."""

LIST_ROOMS = Operation("listRooms", "GET", "/v1/rooms")
"""The rooms the caller owns or holds a grant in."""
CREATE_ROOM = Operation("createRoom", "POST", "/v1/rooms")
"""Create a room."""
GET_ROOM = Operation("getRoom", "GET", "/v1/rooms/{room}")
"""A room."""
DELETE_ROOM = Operation("deleteRoom", "DELETE", "/v1/rooms/{room}")
"""Delete a room with its events."""
LIST_GRANTS = Operation("listGrants", "GET", "/v1/rooms/{room}/grants")
"""A room's grants."""
PUT_GRANT = Operation("putGrant", "PUT", "/v1/rooms/{room}/grants/{participant}")
"""Set what a participant may read and publish in a room."""
PUBLISH = Operation("publish", "POST", "/v1/rooms/{room}/events")
"""Publish one event or a batch, atomically."""
READ_EVENTS = Operation("readEvents", "GET", "/v1/rooms/{room}/events")
"""A page of a room's readable events."""
STREAM_EVENTS = Operation("streamEvents", "GET", "/v1/rooms/{room}/events/stream")
"""A room's readable events, then live (an event stream)."""
DELEGATE = Operation("delegate", "POST", "/v1/rooms/{room}/delegations")
"""Ask an agent of a room for a task."""
GET_DELEGATION = Operation("getDelegation", "GET", "/v1/rooms/{room}/delegations/{id}")
"""A delegation and its status."""
LIST_DELEGATIONS = Operation("listDelegations", "GET", "/v1/rooms/{room}/delegations")
"""The delegations of a room the caller may see."""
CANCEL_DELEGATION = Operation(
    "cancelDelegation", "POST", "/v1/rooms/{room}/delegations/{id}/cancel"
)
"""Cancel a pending or running delegation."""
READ_EVENT_RUN = Operation("readEventRun", "GET", "/v1/rooms/{room}/events/{position}/run")
"""The engine run behind a room event, with its stored events."""
LIST_ROOM_AGENTS = Operation("listRoomAgents", "GET", "/v1/rooms/{room}/agents")
"""The agents registered in a room on the server, with their progress."""

LIST_RUNS = Operation("listRuns", "GET", "/v1/runs")
"""Runs, most recent first."""
GET_RUN = Operation("getRun", "GET", "/v1/runs/{run_id}")
"""A run's record and its stored events."""
CREATE_RUN = Operation("createRun", "POST", "/v1/runs")
"""Start a run of an agent in a new private conversation of the caller's."""

RUN_ID_HEADER = "Agentkit-Run-Id"
"""The header of an answer that started a run naming the run (with `Location`, its events
route): an event stream's head says it before any event."""
CONVERSATION_ID_HEADER = "Agentkit-Conversation-Id"
"""The header of an answer that started a run naming its conversation."""

OPERATIONS: tuple[Operation, ...] = (
    HEALTHZ,
    OPENAPI,
    METRICS,
    GET_ME,
    LIST_MEMBERS,
    ROTATE_TOKEN,
    LIST_AGENTS,
    PUT_AGENT,
    DELETE_AGENT,
    LIST_CONVERSATIONS,
    CREATE_CONVERSATION,
    GET_CONVERSATION,
    UPDATE_CONVERSATION,
    DELETE_CONVERSATION,
    LIST_TURNS,
    START_RUN,
    FOLLOW_RUN,
    CANCEL_RUN,
    CANCEL_CONVERSATION,
    WATCH_CONVERSATION,
    FORK_CONVERSATION,
    CANCEL_QUEUED,
    DECIDE_REQUEST,
    ANSWER_REQUEST,
    UPLOAD_FILE,
    LIST_ROOMS,
    CREATE_ROOM,
    GET_ROOM,
    DELETE_ROOM,
    LIST_GRANTS,
    PUT_GRANT,
    PUBLISH,
    READ_EVENTS,
    STREAM_EVENTS,
    READ_EVENT_RUN,
    DELEGATE,
    LIST_DELEGATIONS,
    GET_DELEGATION,
    CANCEL_DELEGATION,
    LIST_ROOM_AGENTS,
    LIST_RUNS,
    GET_RUN,
    CREATE_RUN,
)
"""Every operation of the API, in the order the OpenAPI document lists them."""
