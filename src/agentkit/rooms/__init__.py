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

from typing import TYPE_CHECKING

from agentkit._internal.lazy import lazy_exports

if TYPE_CHECKING:
    from agentkit.rooms._client import LocalRoomsClient, RoomsClient
    from agentkit.rooms._errors import (
        DelegationEndedError,
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
        RoomRun,
        StartPolicy,
        check_position,
        publication,
    )
    from agentkit.rooms._patterns import matches
    from agentkit.rooms._spec_agent import Overflow, SpecRoomAgent, default_prompt
    from agentkit.rooms._worker import AGENT_FAILED, INTERRUPTED, WorkerState, WorkerStatus
    from agentkit.stores import DelegationRecord, RoomEvent, RoomGrant, RoomNotFoundError

_EXPORTS: dict[str, str] = {
    "AGENT_FAILED": "agentkit.rooms._worker",
    "DelegatingRoomAgent": "agentkit.rooms._models",
    "DelegationEndedError": "agentkit.rooms._errors",
    "INTERRUPTED": "agentkit.rooms._worker",
    "RoomRun": "agentkit.rooms._models",
    "WorkerState": "agentkit.rooms._worker",
    "DelegationNotFoundError": "agentkit.rooms._errors",
    "DelegationRecord": "agentkit.stores",
    "EventInput": "agentkit.rooms._models",
    "LocalRoomsClient": "agentkit.rooms._client",
    "MAX_BATCH": "agentkit.rooms._models",
    "MAX_PAYLOAD_BYTES": "agentkit.rooms._models",
    "Role": "agentkit.rooms._host",
    "RoomAccessError": "agentkit.rooms._errors",
    "RoomAgent": "agentkit.rooms._models",
    "RoomAgentDescriptor": "agentkit.rooms._models",
    "RoomAgentError": "agentkit.rooms._errors",
    "RoomAgentRequest": "agentkit.rooms._models",
    "RoomError": "agentkit.rooms._errors",
    "RoomEvent": "agentkit.stores",
    "RoomGrant": "agentkit.stores",
    "RoomInfo": "agentkit.rooms._models",
    "RoomNotFoundError": "agentkit.stores",
    "Rooms": "agentkit.rooms._host",
    "RoomsClient": "agentkit.rooms._client",
    "Overflow": "agentkit.rooms._spec_agent",
    "SpecRoomAgent": "agentkit.rooms._spec_agent",
    "StartPolicy": "agentkit.rooms._models",
    "WorkerStatus": "agentkit.rooms._worker",
    "check_position": "agentkit.rooms._models",
    "default_prompt": "agentkit.rooms._spec_agent",
    "matches": "agentkit.rooms._patterns",
    "publication": "agentkit.rooms._models",
}

__all__ = [
    "AGENT_FAILED",
    "INTERRUPTED",
    "MAX_BATCH",
    "MAX_PAYLOAD_BYTES",
    "DelegatingRoomAgent",
    "DelegationEndedError",
    "DelegationNotFoundError",
    "DelegationRecord",
    "EventInput",
    "LocalRoomsClient",
    "Overflow",
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
    "RoomRun",
    "Rooms",
    "RoomsClient",
    "SpecRoomAgent",
    "StartPolicy",
    "WorkerState",
    "WorkerStatus",
    "check_position",
    "default_prompt",
    "matches",
    "publication",
]

# Hidden from type checkers: a module `__getattr__` would make every misspelt name
# imported from this package type as `Any` instead of an error.
if not TYPE_CHECKING:
    __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, __all__)
