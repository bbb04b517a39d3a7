"""Conversations: a machine that hosts agents and durable, private-or-shared conversations.

A [`Machine`][agentkit.conversations.Machine] is an async context manager over one
[`Runtime`][agentkit.runtime.Runtime] and one store. Its services, one per concern, take
the acting member: `machine.members` ([`Members`][agentkit.conversations.Members]),
`machine.agents` ([`AgentService`][agentkit.conversations.AgentService]),
`machine.conversations` ([`ConversationService`][agentkit.conversations.ConversationService]),
`machine.runs` ([`RunService`][agentkit.conversations.RunService]) and `machine.uploads`
([`UploadService`][agentkit.conversations.UploadService]). Members (owners,
editors, viewers) reach it through a client that implements
[`ConversationClient`][agentkit.conversations.ConversationClient]: `machine.client(member)`
in process, the services bound to that member. A conversation is a session of the core;
`prompt()` starts a run of the core that belongs to the machine; `follow()`, `watch()` and
the turns are views over the run logs. See the conversations guide (`docs/conversations.md`).
"""

from typing import TYPE_CHECKING

from agentkit._internal.lazy import lazy_exports

if TYPE_CHECKING:
    from agentkit.conversations._agent_service import AgentService
    from agentkit.conversations._agents import ROOL
    from agentkit.conversations._attachments import DEFAULT_ATTACHMENT_ROOTS
    from agentkit.conversations._client import (
        Conversation,
        ConversationClient,
        StopWatch,
        WatchCallback,
    )
    from agentkit.conversations._conversation_service import ConversationService
    from agentkit.conversations._errors import (
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
        RunNotFoundError,
        TurnNotFoundError,
        UploadError,
        UploadQuotaError,
        UploadTooLargeError,
    )
    from agentkit.conversations._local import LocalClient
    from agentkit.conversations._machine import (
        Machine,
        default_attachment_roots,
        default_machine_store,
    )
    from agentkit.conversations._members import Members
    from agentkit.conversations._models import (
        AgentDefinition,
        AgentInfo,
        AttachmentPart,
        ConversationDetails,
        ConversationSummary,
        ConversationView,
        FinalEvent,
        FinalStatus,
        FollowEvent,
        IfBusy,
        JsonPart,
        Member,
        OutputEvent,
        Part,
        PromptAccepted,
        QueuedPrompt,
        Role,
        TextDeltaPart,
        TextPart,
        ToolCallPart,
        ToolResultPart,
        Turn,
        TurnPart,
        TurnStatus,
        UploadedFile,
        Visibility,
    )
    from agentkit.conversations._queue import MAX_QUEUED
    from agentkit.conversations._results import MAX_WAIT, RunResult
    from agentkit.conversations._run_service import RunService
    from agentkit.conversations._stream import RunStream
    from agentkit.conversations._turns import INTERRUPTED_REASON
    from agentkit.conversations._uploads import (
        DEFAULT_MAX_UPLOAD_BYTES,
        DEFAULT_UPLOAD_QUOTA_BYTES,
        UploadService,
        local_source,
        member_folder,
    )

_EXPORTS: dict[str, str] = {
    "AccessDeniedError": "agentkit.conversations._errors",
    "AgentDeletedError": "agentkit.conversations._errors",
    "InvalidPageError": "agentkit.conversations._errors",
    "AgentDefinition": "agentkit.conversations._models",
    "AgentExistsError": "agentkit.conversations._errors",
    "AgentInfo": "agentkit.conversations._models",
    "AgentService": "agentkit.conversations._agent_service",
    "AttachmentError": "agentkit.conversations._errors",
    "AttachmentPart": "agentkit.conversations._models",
    "Conversation": "agentkit.conversations._client",
    "ConversationBusyError": "agentkit.conversations._errors",
    "ConversationClient": "agentkit.conversations._client",
    "ConversationDetails": "agentkit.conversations._models",
    "ConversationError": "agentkit.conversations._errors",
    "ConversationNotFoundError": "agentkit.conversations._errors",
    "ConversationService": "agentkit.conversations._conversation_service",
    "ConversationSummary": "agentkit.conversations._models",
    "ConversationView": "agentkit.conversations._models",
    "DEFAULT_ATTACHMENT_ROOTS": "agentkit.conversations._attachments",
    "FinalEvent": "agentkit.conversations._models",
    "FinalStatus": "agentkit.conversations._models",
    "FollowEvent": "agentkit.conversations._models",
    "INTERRUPTED_REASON": "agentkit.conversations._turns",
    "JsonPart": "agentkit.conversations._models",
    "LocalClient": "agentkit.conversations._local",
    "Machine": "agentkit.conversations._machine",
    "MachineAgentNotFoundError": "agentkit.conversations._errors",
    "Member": "agentkit.conversations._models",
    "MemberError": "agentkit.conversations._errors",
    "Members": "agentkit.conversations._members",
    "OutputEvent": "agentkit.conversations._models",
    "Part": "agentkit.conversations._models",
    "PromptAccepted": "agentkit.conversations._models",
    "QueuedPrompt": "agentkit.conversations._models",
    "MAX_QUEUED": "agentkit.conversations._queue",
    "IfBusy": "agentkit.conversations._models",
    "QueuedPromptNotFoundError": "agentkit.conversations._errors",
    "QueuedPromptStartedError": "agentkit.conversations._errors",
    "ROOL": "agentkit.conversations._agents",
    "Role": "agentkit.conversations._models",
    "RunNotFoundError": "agentkit.conversations._errors",
    "RunService": "agentkit.conversations._run_service",
    "MAX_WAIT": "agentkit.conversations._results",
    "RunResult": "agentkit.conversations._results",
    "RunStream": "agentkit.conversations._stream",
    "StopWatch": "agentkit.conversations._client",
    "TextDeltaPart": "agentkit.conversations._models",
    "TextPart": "agentkit.conversations._models",
    "ToolCallPart": "agentkit.conversations._models",
    "ToolResultPart": "agentkit.conversations._models",
    "Turn": "agentkit.conversations._models",
    "TurnNotFoundError": "agentkit.conversations._errors",
    "TurnPart": "agentkit.conversations._models",
    "TurnStatus": "agentkit.conversations._models",
    "UploadError": "agentkit.conversations._errors",
    "UploadQuotaError": "agentkit.conversations._errors",
    "UploadService": "agentkit.conversations._uploads",
    "UploadTooLargeError": "agentkit.conversations._errors",
    "UploadedFile": "agentkit.conversations._models",
    "Visibility": "agentkit.conversations._models",
    "WatchCallback": "agentkit.conversations._client",
    "DEFAULT_MAX_UPLOAD_BYTES": "agentkit.conversations._uploads",
    "DEFAULT_UPLOAD_QUOTA_BYTES": "agentkit.conversations._uploads",
    "default_attachment_roots": "agentkit.conversations._machine",
    "default_machine_store": "agentkit.conversations._machine",
    "local_source": "agentkit.conversations._uploads",
    "member_folder": "agentkit.conversations._uploads",
}

__all__ = [
    "DEFAULT_ATTACHMENT_ROOTS",
    "DEFAULT_MAX_UPLOAD_BYTES",
    "DEFAULT_UPLOAD_QUOTA_BYTES",
    "INTERRUPTED_REASON",
    "MAX_QUEUED",
    "MAX_WAIT",
    "ROOL",
    "AccessDeniedError",
    "AgentDefinition",
    "AgentDeletedError",
    "AgentExistsError",
    "AgentInfo",
    "AgentService",
    "AttachmentError",
    "AttachmentPart",
    "Conversation",
    "ConversationBusyError",
    "ConversationClient",
    "ConversationDetails",
    "ConversationError",
    "ConversationNotFoundError",
    "ConversationService",
    "ConversationSummary",
    "ConversationView",
    "FinalEvent",
    "FinalStatus",
    "FollowEvent",
    "IfBusy",
    "InvalidPageError",
    "JsonPart",
    "LocalClient",
    "Machine",
    "MachineAgentNotFoundError",
    "Member",
    "MemberError",
    "Members",
    "OutputEvent",
    "Part",
    "PromptAccepted",
    "QueuedPrompt",
    "QueuedPromptNotFoundError",
    "QueuedPromptStartedError",
    "Role",
    "RunNotFoundError",
    "RunResult",
    "RunService",
    "RunStream",
    "StopWatch",
    "TextDeltaPart",
    "TextPart",
    "ToolCallPart",
    "ToolResultPart",
    "Turn",
    "TurnNotFoundError",
    "TurnPart",
    "TurnStatus",
    "UploadError",
    "UploadQuotaError",
    "UploadService",
    "UploadTooLargeError",
    "UploadedFile",
    "Visibility",
    "WatchCallback",
    "default_attachment_roots",
    "default_machine_store",
    "local_source",
    "member_folder",
]

# Hidden from type checkers: a module `__getattr__` would make every misspelt name
# imported from this package type as `Any` instead of an error.
if not TYPE_CHECKING:
    __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, __all__)
