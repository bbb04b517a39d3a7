"""Conversations: a machine that hosts agents and durable, private-or-shared conversations.

A [`Machine`][agentkit.conversations.Machine] is an async context manager over one
[`Runtime`][agentkit.runtime.Runtime] and one store. Its services, one per concern, take
the acting member: `machine.members` ([`Members`][agentkit.conversations.Members]),
`machine.agents` ([`AgentService`][agentkit.conversations.AgentService]),
`machine.conversations` ([`ConversationService`][agentkit.conversations.ConversationService])
and `machine.runs` ([`RunService`][agentkit.conversations.RunService]). Members (owners,
editors, viewers) reach it through a client that implements
[`ConversationClient`][agentkit.conversations.ConversationClient]: `machine.client(member)`
in process, the services bound to that member. A conversation is a session of the core;
`prompt()` starts a run of the core that belongs to the machine; `follow()`, `watch()` and
the turns are views over the run logs. See the conversations guide (`docs/conversations.md`).
"""

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
    AgentExistsError,
    AttachmentError,
    ConversationBusyError,
    ConversationError,
    ConversationNotFoundError,
    MachineAgentNotFoundError,
    MemberError,
    RunNotFoundError,
    TurnNotFoundError,
)
from agentkit.conversations._local import LocalClient
from agentkit.conversations._machine import Machine, default_machine_store
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
    JsonPart,
    Member,
    OutputEvent,
    Part,
    PromptAccepted,
    Role,
    TextDeltaPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    Turn,
    TurnPart,
    TurnStatus,
    Visibility,
)
from agentkit.conversations._run_service import RunService
from agentkit.conversations._turns import INTERRUPTED_REASON

__all__ = [
    "DEFAULT_ATTACHMENT_ROOTS",
    "INTERRUPTED_REASON",
    "ROOL",
    "AccessDeniedError",
    "AgentDefinition",
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
    "Role",
    "RunNotFoundError",
    "RunService",
    "StopWatch",
    "TextDeltaPart",
    "TextPart",
    "ToolCallPart",
    "ToolResultPart",
    "Turn",
    "TurnNotFoundError",
    "TurnPart",
    "TurnStatus",
    "Visibility",
    "WatchCallback",
    "default_machine_store",
]
