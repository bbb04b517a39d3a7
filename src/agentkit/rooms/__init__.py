"""Rooms: totally ordered event logs, room agents with grants and serial workers, and
delegations.

A room is a persisted log where every event gets the room's next position (1, 2, 3, ...
with no gap), a dotted type (`chat.message`), its author and a JSON payload. Members
publish and read through a [`RoomsClient`][agentkit.rooms.RoomsClient], within their
grants; [room agents][agentkit.rooms.RoomAgent] react to the events they select, one at a
time in room order, each in its own worker, and publish derived events under their own
grants. [`Rooms`][agentkit.rooms.Rooms] hosts them over a store, alone or inside a
[`Machine`][agentkit.conversations.Machine] (`machine.rooms`). See the rooms guide
(`docs/rooms.md`).
"""

from agentkit.rooms._client import LocalRoomsClient, RoomsClient
from agentkit.rooms._errors import (
    DelegationNotFoundError,
    RoomAccessError,
    RoomAgentError,
    RoomError,
)
from agentkit.rooms._host import Role, Rooms
from agentkit.rooms._models import (
    MAX_BATCH,
    MAX_PAYLOAD_BYTES,
    DelegatingRoomAgent,
    EventInput,
    RoomAgent,
    RoomAgentDescriptor,
    RoomAgentRequest,
    RoomInfo,
    StartPolicy,
    check_position,
    publication,
)
from agentkit.rooms._patterns import matches
from agentkit.rooms._spec_agent import SpecRoomAgent, default_prompt
from agentkit.rooms._worker import AGENT_FAILED, WorkerStatus
from agentkit.stores import DelegationRecord, RoomEvent, RoomGrant, RoomNotFoundError

__all__ = [
    "AGENT_FAILED",
    "MAX_BATCH",
    "MAX_PAYLOAD_BYTES",
    "DelegatingRoomAgent",
    "DelegationNotFoundError",
    "DelegationRecord",
    "EventInput",
    "LocalRoomsClient",
    "Role",
    "RoomAccessError",
    "RoomAgent",
    "RoomAgentDescriptor",
    "RoomAgentError",
    "RoomAgentRequest",
    "RoomError",
    "RoomEvent",
    "RoomGrant",
    "RoomInfo",
    "RoomNotFoundError",
    "Rooms",
    "RoomsClient",
    "SpecRoomAgent",
    "StartPolicy",
    "WorkerStatus",
    "check_position",
    "default_prompt",
    "matches",
    "publication",
]
