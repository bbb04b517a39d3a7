"""A run without a conversation: a new private conversation of the caller's with the
agent, and its first run, in one call; a prompt that is refused leaves no conversation
behind."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import TypeVar

import anyio

from agentkit.conversations._conversation_service import ConversationService
from agentkit.conversations._models import Member

__all__ = ["in_new_conversation"]

_logger = logging.getLogger("agentkit.conversations")

StartedT = TypeVar("StartedT")


async def in_new_conversation(
    conversations: ConversationService,
    member: Member,
    agent: str,
    start: Callable[[str], Awaitable[StartedT]],
) -> StartedT:
    """Create a private conversation of `member` with `agent` and call `start` with its
    id (a prompt, a stream); should `start` fail, the conversation is deleted again.

    Creating checks the member's role and the agent (a viewer, an unknown agent: nothing
    is created); the prompt checks its options (attachments, effort, output schema) and
    its failure removes what was created.
    """
    conversation_id = await conversations.create(member, agent=agent)
    try:
        return await start(conversation_id)
    except BaseException:
        with anyio.CancelScope(shield=True):
            try:
                await conversations.delete(member, conversation_id)
            except Exception:  # the store failed: said, and the prompt's error goes up
                _logger.warning(
                    "could not delete conversation %s after its prompt was refused",
                    conversation_id,
                    exc_info=True,
                )
        raise
