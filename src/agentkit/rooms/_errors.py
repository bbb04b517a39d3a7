"""The errors of rooms (defined with every other in `agentkit.errors`)."""

from __future__ import annotations

from agentkit.errors import (
    DelegationEndedError,
    DelegationNotFoundError,
    RoomAccessError,
    RoomAgentError,
    RoomError,
)

__all__ = [
    "DelegationEndedError",
    "DelegationNotFoundError",
    "RoomAccessError",
    "RoomAgentError",
    "RoomError",
]
