"""The errors of the conversations API (defined with every other in `agentkit.errors`): each
one a caller's mistake, said in one line."""

from __future__ import annotations

from agentkit.errors import (
    AccessDeniedError,
    AgentDeletedError,
    AgentExistsError,
    AttachmentError,
    ConversationBusyError,
    ConversationError,
    ConversationNotFoundError,
    InvalidPageError,
    MachineAgentNotFoundError,
    MemberError,
    QueuedPromptNotFoundError,
    QueuedPromptStartedError,
    RequestAlreadyDecidedError,
    RequestNotFoundError,
    RunNotFoundError,
    TurnNotFoundError,
    UploadError,
    UploadQuotaError,
    UploadTooLargeError,
)

__all__ = [
    "AccessDeniedError",
    "AgentDeletedError",
    "AgentExistsError",
    "AttachmentError",
    "ConversationBusyError",
    "ConversationError",
    "ConversationNotFoundError",
    "InvalidPageError",
    "MachineAgentNotFoundError",
    "MemberError",
    "QueuedPromptNotFoundError",
    "QueuedPromptStartedError",
    "RequestAlreadyDecidedError",
    "RequestNotFoundError",
    "RunNotFoundError",
    "TurnNotFoundError",
    "UploadError",
    "UploadQuotaError",
    "UploadTooLargeError",
]
