"""The errors of the conversations API: each one a user's mistake, said in one line."""

from __future__ import annotations

__all__ = [
    "AccessDeniedError",
    "AgentExistsError",
    "AttachmentError",
    "ConversationBusyError",
    "ConversationError",
    "ConversationNotFoundError",
    "MachineAgentNotFoundError",
    "MemberError",
    "RunNotFoundError",
    "TurnNotFoundError",
]


class ConversationError(Exception):
    """Base class of every error the conversations API raises for a caller's request."""


class ConversationNotFoundError(ConversationError, LookupError):
    """No conversation with this id is visible to the member.

    Raised identically for an id that does not exist and for another member's private
    conversation, on every path, so that an id never reveals whether it exists.
    """

    def __init__(self, conversation_id: str) -> None:
        super().__init__(f"no conversation {conversation_id!r}")
        self.conversation_id = conversation_id


class ConversationBusyError(ConversationError, RuntimeError):
    """The conversation already has a run going: one run at a time per conversation."""


class AccessDeniedError(ConversationError, PermissionError):
    """The member's role does not allow this (a viewer prompting, an editor creating an
    agent, ...)."""


class AttachmentError(ConversationError, ValueError):
    """An attachment was refused (missing, not a file, or outside the attachment roots);
    nothing was started."""


class MachineAgentNotFoundError(ConversationError, LookupError):
    """The machine has no agent with this name."""


class AgentExistsError(ConversationError, ValueError):
    """An agent with this name exists already (use `replace_agent`)."""


class RunNotFoundError(ConversationError, LookupError):
    """The conversation has no run with this id."""


class TurnNotFoundError(ConversationError, LookupError):
    """The conversation has no user turn with this id (for `replace_turn`)."""


class MemberError(ConversationError, ValueError):
    """A member cannot be added, found or authenticated."""
